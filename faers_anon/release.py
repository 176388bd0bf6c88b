"""``faers-anon release``: one command from FAERS files to a publishable, verified release (SPEC §1, §10).

Stages, each reported through ``progress`` with its counts and elapsed time:

1. **ingest** the sources (zips, folders, the bundled demo) into a *work* folder of typed tables;
2. **anonymize**: cases, E, P(s | c), θ*, the partition, and the release tables written to a
   *staging* folder beside the target (``.<name>.staging-<pid>``);
3. **verify** the staging release from its files alone (:func:`faers_anon.verify.verify_release`);
   a failing verdict stops the run: nothing is published and :class:`VerificationError` says why;
4. **signals**: PRR/ROR/IC on the raw data and on the release, survival overall and per stratum,
   and the reference panel (:func:`signals.compare`); for a disassociation release the release side
   is one reconstruction of its drug and reaction lists (:mod:`faers_anon.disassociation_release`);
5. **report**: ``report.json`` and ``report.html`` are added to the staging folder, the manifest is
   re-hashed to cover them (and records the SHA-256 of every source file), and the staging folder is
   renamed to the target in one step.

So a release folder exists only when it is complete and verified; an interrupted or failed run
leaves no release (and removes its staging and work folders). An existing target is replaced only
with ``force``.

Decisions:
    The work folder holds raw data (exact ages); it is created beside the target (or where
    ``work`` says) and removed at the end unless ``keep_work``. It is never inside the release.
    The public report carries raw-data statistics only in aggregate (survival shares, rank
    correlations) and for the reference panel's few rules; the pair-level raw statistics stay out of
    the release (``faers-anon compare`` produces them for internal analysts).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from faers_anon import __version__
from faers_anon._release_report import build_report, report_inputs
from faers_anon.anonymize import AnonymizeConfig, AnonymizeResult, anonymize_folder
from faers_anon.disassociation_release import signal_inputs
from faers_anon.errors import ConfigError, InputError, VerificationError
from faers_anon.io.ingest import demo_source, ingest_quarters
from faers_anon.io.ingest_report import IngestResult
from faers_anon.manifest import (
    MANIFEST_NAME,
    TIMINGS_FIELD,
    dump_manifest,
    hash_tree,
    read_manifest,
    sha256_file,
)
from faers_anon.release_config import ReleaseConfig
from faers_anon.report import build_figures, render_html, write_json
from faers_anon.verify import Verdict, verify_release
from signals import Comparison, compare

__all__ = ["ReleaseResult", "release"]

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


@dataclass(frozen=True, kw_only=True, slots=True)
class ReleaseResult:
    """A published release and what each stage found.

    Attributes:
        path: the release folder.
        ingest: the ingest counts; anonymized: partition, θ*, NIL, DR; verdict: the verifier's answer;
        comparison: the raw-vs-release signal comparison; report: the content of report.json;
        seconds: wall time per stage.
    """

    path: Path
    ingest: IngestResult
    anonymized: AnonymizeResult
    verdict: Verdict
    comparison: Comparison
    report: dict[str, Any]
    seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        """The closing lines for the terminal."""
        privacy, utility, signals = self.report["privacy"], self.report["utility"], self.report["signals"]
        counts = self.report["counts"]
        survival = signals.get("survival_overall")
        share = "n/a" if survival is None else f"{survival:.1%}"
        return "\n".join(
            [
                f"Release written to {self.path} (verified: {self.verdict.label} holds)",
                f"  reports in {counts['reports_read']:,}: out {counts['reports_out']:,}, "
                f"quarantined {counts['reports_quarantined']:,}, deleted {counts['reports_deleted']:,}; "
                f"cases {counts['cases']:,}",
                f"  groups {privacy['groups']:,}, smallest {privacy['k_achieved']}, DR {privacy['dr']:.4f}; "
                f"NIL {utility['nil']:.4f}",
                f"  signals ({signals['criterion']}): {share} of raw signals survive overall, "
                f"{signals['n_new_overall']} new; panel {signals['panel_survived']} of "
                f"{signals['panel_raw_signals']} raw rules survive",
                f"  report: {self.path / 'report.html'}",
            ]
        )


@contextlib.contextmanager
def _stage(name: str, seconds: dict[str, float], progress: Progress) -> Iterator[None]:
    progress(f"[{name}] …")
    start = time.perf_counter()
    yield
    seconds[name] = time.perf_counter() - start


def _sources_hashes(sources: Sequence[Path], demo: bool) -> dict[str, str]:
    """SHA-256 of every source file (zips, or the files inside source folders)."""
    paths = [Path(s) for s in sources] + ([demo_source()] if demo else [])
    hashes: dict[str, str] = {}
    for path in paths:
        if path.is_dir():
            for name, digest in hash_tree(path).items():
                hashes[f"{path.name}/{name}"] = digest
        elif path.is_file():
            hashes[path.name] = sha256_file(path)
    return dict(sorted(hashes.items()))


def _check_target(out: Path, force: bool) -> None:
    if out.exists() and not force:
        raise ConfigError(f"{out}: release folder exists (use --force to replace it)")
    if not out.parent.exists():
        raise InputError("parent folder does not exist", path=out.parent)
    if not os.access(out.parent, os.W_OK):
        raise InputError("output folder is not writable", path=out.parent)


def _publish(staging: Path, out: Path) -> None:
    """Rename the finished staging folder to ``out``, replacing an old release only at the last step."""
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        out.rename(old)
    staging.rename(out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def release(
    sources: Sequence[Path], out: Path, /, *, config: ReleaseConfig, progress: Progress | None = None
) -> ReleaseResult:
    """Run every stage and publish ``out`` only when the release is complete and verified.

    Args:
        sources: FDA zips, folders or files (may be empty with ``config.ingest.demo``).
        out: the release folder to create.
        config: all options (see :mod:`faers_anon.release_config`).
        progress: called with one line per stage start and end.

    Returns:
        The published release and each stage's findings.

    Raises:
        ConfigError: ``out`` exists without ``force``, or an invalid option.
        InputError: unreadable sources or an unwritable output folder.
        InfeasibleThetaError: some θ_s below its share with ``on_infeasible = "error"``.
        VerificationError: the written release fails its privacy model (nothing is published).
    """
    say = progress or (lambda _line: None)
    out = Path(out).absolute()
    _check_target(out, config.force)
    seconds: dict[str, float] = {}
    work_parent = config.work or out.parent
    try:
        work_parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{out.name}.work-", dir=work_parent))
    except OSError as exc:
        raise InputError(f"cannot create the work folder ({exc.strerror})", path=work_parent) from exc
    staging = out.with_name(f".{out.name}.staging-{os.getpid()}")
    try:
        with _stage("ingest", seconds, say):
            ingested = ingest_quarters(sources, work / "ingested", config=config.ingest)
        demo = ingested.report["tables"]["reports"]
        say(
            f"[ingest] {demo['read']:,} reports read, {demo['kept']:,} kept, "
            f"{demo['quarantined']:,} quarantined, {demo['deleted']:,} deleted; "
            f"{ingested.report['cases']['cases']:,} cases ({seconds['ingest']:.1f} s)"
        )
        with _stage("anonymize", seconds, say):
            anonymized = anonymize_folder(ingested.out, staging, config=_with_force(config))
        say(
            f"[anonymize] {anonymized.partition.groups:,} groups, NIL {anonymized.nil:.4f}, "
            f"DR {anonymized.dr:.4f} ({seconds['anonymize']:.1f} s)"
        )
        with _stage("verify", seconds, say):
            verdict = verify_release(staging)
        say(
            f"[verify] {'OK' if verdict.ok else 'FAILED'}: {verdict.n_groups:,} QID-groups, "
            f"DR {verdict.dr:.4f} ({seconds['verify']:.1f} s)"
        )
        if not verdict.ok:
            raise VerificationError(
                f"release fails verification ({verdict.violations.height} violations; first: "
                + "; ".join(f"{r}: {d}" for _, _, r, d in verdict.violations.head(3).iter_rows())
                + "); nothing was published"
            )
        with _stage("signals", seconds, say):
            raw_tables, released_tables, compare_config = signal_inputs(ingested.out, staging, config)
            comparison = compare(raw_tables, released_tables, config=compare_config)
        say(f"[signals] {comparison.summary().splitlines()[1].strip()} ({seconds['signals']:.1f} s)")
        with _stage("report", seconds, say):
            report_start = time.perf_counter()
            report = build_report(
                config=config,
                version=__version__,
                ingested=ingested,
                anonymized=anonymized,
                verdict=verdict,
                comparison=comparison,
            )
            figures = build_figures(report_inputs(ingested.out, staging, verdict, comparison, config))
            report_json = write_json(report)
            (staging / "report.json").write_bytes(report_json)
            # The page shows the figures exactly as report.json holds them (rounded, deterministic).
            page = render_html(json.loads(report_json), figures)
            (staging / "report.html").write_text(page, encoding="utf-8")
            seconds["report"] = time.perf_counter() - report_start
            _rehash(staging, sources=_sources_hashes(sources, config.ingest.demo), timings=seconds)
            _publish(staging, out)
        say(f"[report] written ({seconds['report']:.1f} s)")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if config.keep_work:
            say(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return ReleaseResult(
        path=out,
        ingest=ingested,
        anonymized=anonymized,
        verdict=verdict,
        comparison=comparison,
        report=report,
        seconds=seconds,
    )


def _with_force(config: ReleaseConfig) -> AnonymizeConfig:
    """The anonymize options with ``force`` set: the staging folder is ours to replace."""
    return replace(config.anonymize, force=True)


def _rehash(staging: Path, *, sources: dict[str, str], timings: dict[str, float]) -> None:
    """Re-hash the release's files into its manifest (the report was added after the writer ran)."""
    manifest = read_manifest(staging)
    if manifest is None:
        raise VerificationError(f"{staging}: manifest.json missing after writing the release")
    manifest["outputs"] = hash_tree(staging, exclude=frozenset({MANIFEST_NAME}))
    manifest["sources"] = sources
    manifest[TIMINGS_FIELD] = {stage: round(s, 3) for stage, s in timings.items()}
    (staging / MANIFEST_NAME).write_bytes(dump_manifest(manifest))
