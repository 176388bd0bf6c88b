"""``faers-anon release``: one command from FAERS files to a publishable, verified release (SPEC §1, §10).

Stages, each reported through ``progress`` with its counts and elapsed time:

1. **ingest** the sources (zips, folders, the bundled demo) into a private *work* folder of typed tables;
2. **anonymize**: cases, E, P(s | c), θ*, the partition, and the release tables, written inside the
   work folder too;
3. **verify** that release from its files alone (:func:`faers_anon.verify.verifier.verify_release`);
   a failing verdict stops the run: nothing is published and :class:`VerificationError` says why;
4. **signals**: PRR/ROR/IC on the raw data and on the release, survival overall and per stratum,
   and the reference panel (:func:`signals.compare`); for a method that publishes the drug and reaction
   lists in its own form the release side is read through that form
   (:func:`faers_anon.anonymize.method_run.signal_inputs`);
5. **risk**: the attacks of SPEC §11 on the release, with the raw data (:func:`faers_anon.risk.assess_risk`);
6. **report**: ``report.json`` and ``report.html`` are added to the release, the manifest is
   re-hashed to cover them (and records the SHA-256 of every source file), and the finished release
   is moved into place in one atomic rename (:func:`faers_anon.io.workspace.publish_folder`).

Stages 3–5 and the report's plots need only the built release and the raw tables, not each other, so
they run on threads beside each other (:class:`faers_anon.release.stages.Stages`; issue 18: the 2 cores
of the reference machine, each stage mostly on one); ``FAERS_ANON_STAGES=sequential`` runs every stage
one after the other in this thread, in the order above, with the same files. Either way the verdict is
read first: a failing one raises before any other stage's outcome is used, and the stages still running
are stopped before the work folder is removed; a stage's exception surfaces as it would alone, the
earliest stage of the order above first.

Beside the engine (numba code holding no GIL: on 2 cores, what it leaves of the second one; started by
``anonymize_folder``'s ``beside`` hook, after its own two-core work of reading and encoding) run the
raw halves of signals and risk (:func:`signals.raw_side`, :func:`faers_anon.risk.raw_cases`), the
SHA-256 of the sources, and the import of the later stages' modules (:data:`LATER_MODULES`, ~0.6 s:
:meth:`~faers_anon.release.stages.Stages.preload`), which no longer delays ingest. With a ledger the
import starts before the series step (its child, :mod:`faers_anon.series.apart`, leaves part of the two
cores idle) and the rest beside the engine: the raw halves read the folder the step made, and a step
that fails has no stage to stop (a hash stopped inside a file read would leave that file to the
garbage collector).
Each stage imports its modules where used, in this thread: at once when loaded, with the
module's own error if the early import failed. The manifest keeps the writer's hashes of its files
(the verify stage re-read each).
Timing: ``seconds`` (and manifest.json ``timings``) holds each stage's own wall time, from its start
to its end in its own thread (``signals_raw``, ``risk_raw``: the raw halves, inside their stage when
sequential), ``series`` (a ledgered release: the series step, in its child process), and ``total``,
from the start of ingest to the manifest's writing. Overlapping stages share the cores, so their times
add up to more than ``total`` and each is longer than it would be alone; ``report`` counts the plots
drawn beside risk plus the writing after it. The ledger's update at publication comes after the
manifest is sealed: its time is printed (``[ledger]``), not recorded.

So a release folder exists only when it is complete and verified; an interrupted (SIGINT, SIGTERM,
SIGHUP) or failed run leaves no release and removes its work folder; a SIGKILLed run's work folder
is removed by the next run (:mod:`faers_anon.io.workspace`).

Decisions:
    Before anything is written, ``out`` is checked against every input (:mod:`faers_anon.io.targets`):
    it may not be, contain or lie inside a source, the demo zip or an option file, and an existing
    ``out`` is replaced only when it is an earlier release (its faers-anon ``manifest.json``) and
    ``force`` is set.
    The work folder holds raw data (exact ages); it is a 0700 folder under the system temp folder
    (or ``work``), never beside the release, and is removed at the end unless ``keep_work``. Only
    the anonymized, verified release is moved beside ``out`` (as ``.<out>.staging-<pid>``) and
    renamed.
    The raw side of signals, risk and the report's plots is the raw data of the cases the release
    publishes: the ingested quarter, or with a ledger the folder the series step made of it (the
    quarter's reports less the withheld cases, with the pending cases offered again and the earlier
    cases republished in frozen groups: :mod:`faers_anon.series.step`). Measured against the quarter
    alone, a ledgered release's republished cases read as signals "only on the release" and its
    quarter's signals as lost (the 400k quarter 4 of docs/series.md §2: Evans 5,539 of 8,988 raw
    signals survive, 7,020 new, against 12,559 of 12,559 of the release's own cases).
    The public report carries raw-data statistics only in aggregate (survival shares, rank
    correlations) and for the reference panel's few rules; the pair-level raw statistics stay out of
    the release (``faers-anon compare`` produces them for internal analysts).
"""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Final

from faers_anon import __version__
from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.method_run import item_form, signal_inputs
from faers_anon.anonymize.pipeline import anonymize_folder
from faers_anon.errors import InputError, VerificationError
from faers_anon.io.ingest import demo_source, ingest_quarters
from faers_anon.io.ingest_report import IngestResult
from faers_anon.io.targets import check_release_target, check_work_dir, key_inputs, resolved
from faers_anon.io.workspace import publish_release, signals_raise, work_folder
from faers_anon.keys import load_key
from faers_anon.release.certificate import seal
from faers_anon.release.config import ReleaseConfig
from faers_anon.release.manifest import rehash_manifest, sources_hashes
from faers_anon.release.result import ReleaseResult
from faers_anon.release.stages import Stages, Task
from faers_anon.release.writer import restricted_path

if TYPE_CHECKING:
    from faers_anon.risk import RawCases, RiskResult
    from faers_anon.series.step import SeriesStep
    from faers_anon.verify.verifier import Verdict
    from signals import Comparison, RawSide

__all__ = ["LATER_MODULES", "ReleaseResult", "release"]

log = logging.getLogger(__name__)

Progress = Callable[[str], None]

LATER_MODULES: Final = (
    "faers_anon.risk",
    "faers_anon.verify.verifier",
    "faers_anon.release.report_figures",
    "faers_anon.release.report",  # matplotlib
)
"""The modules of the stages after the engine, imported beside it (module docstring), in order of use."""


@contextlib.contextmanager
def _stage(name: str, seconds: dict[str, float], progress: Progress) -> Iterator[None]:
    progress(f"[{name}] …")
    start = time.perf_counter()
    yield
    seconds[name] = time.perf_counter() - start


def _check_target(sources: Sequence[Path], out: Path, config: ReleaseConfig) -> None:
    """The shared output guard (:mod:`faers_anon.io.targets`) for the release, restricted folder, work."""
    inputs = [*sources, demo_source() if config.ingest.demo else None, config.ingest.drug_names,
              config.anonymize.theta_file, config.anonymize.knowledge, config.compare.reference,
              config.compare.outcome_groups, *key_inputs(config.anonymize.key_file)]  # fmt: skip
    check_release_target(out, force=config.force, inputs=inputs)
    check_work_dir(config.work, outputs=[out, restricted_path(out)], inputs=inputs)
    out = resolved(out)
    if not out.parent.is_dir():
        raise InputError("parent folder does not exist (expected an existing folder)", path=out.parent)
    if not os.access(out.parent, os.W_OK):
        raise InputError("output folder is not writable", path=out.parent)


def release(
    sources: Sequence[Path], out: Path, /, *, config: ReleaseConfig, progress: Progress | None = None
) -> ReleaseResult:
    """Run every stage and publish ``out`` only when the release is complete and verified.

    Args:
        sources: FDA zips, folders or files (may be empty with ``config.ingest.demo``).
        out: the release folder to create.
        config: all options (see :mod:`faers_anon.release.config`).
        progress: called with one line per stage start and end.

    Returns:
        The published release and each stage's findings.

    Raises:
        ConfigError: ``out`` overlaps an input, exists and is not an earlier release, or exists without
            ``force``; an invalid option.
        InputError: unreadable sources or an unwritable output folder.
        InfeasibleThetaError: some θ_s below its share with ``on_infeasible = "error"``.
        VerificationError: the written release fails its privacy model (nothing is published).
        Interrupted: SIGINT, SIGTERM or SIGHUP (nothing is published, the work folder is removed).
    """
    say = progress or (lambda _line: None)
    _check_target(sources, Path(out), config)
    if config.ledger is not None:
        from faers_anon.series.ledger import check_apart

        check_apart(config.ledger, Path(out))
    out = resolved(out)
    with signals_raise(), work_folder("release", config.work, keep=config.keep_work) as work:
        if config.keep_work:
            say(f"work folder (raw data, kept after the run): {work}")
        return _run(sources, out, work, config, say)


def _run(
    sources: Sequence[Path], out: Path, work: Path, config: ReleaseConfig, say: Progress
) -> ReleaseResult:
    """The stages inside the private ``work`` folder, then the publication of ``out``."""
    begin = time.perf_counter()
    seconds: dict[str, float] = {}
    built = work / "release"
    with _stage("ingest", seconds, say):
        ingested = ingest_quarters(sources, work / "ingested", config=replace(config.ingest, work_dir=work))
    demo = ingested.report["tables"]["reports"]
    say(
        f"[ingest] {demo['read']:,} reports read, {demo['kept']:,} kept, "
        f"{demo['quarantined']:,} quarantined, {demo['deleted']:,} deleted; "
        f"{ingested.report['cases']['cases']:,} cases ({seconds['ingest']:.1f} s)"
    )
    with Stages(say) as stages:
        if config.ledger is not None:  # the series step's child leaves part of the two cores idle
            stages.preload(LATER_MODULES)
        series = _series(ingested, work, config, say, seconds)
        folder = ingested.out if series is None else series.ingested  # the raw data of the released cases
        started: list[Beside] = []  # by anonymize_folder, right before the engine starts

        def engine_side() -> None:  # once: called by anonymize_folder, and after it for a run that did not
            if not started:
                started.append(_beside_engine(stages, sources, folder, config))

        with _stage("anonymize", seconds, say):
            anonymized = anonymize_folder(
                folder, built, config=_with_force(config, series),
                beside=engine_side,
                known=None if series is None else series.inputs,
            )  # fmt: skip
        if series is not None:  # E, P(s | c) and θ* used: not held under the checks
            series = replace(series, inputs=None)
        say(
            f"[anonymize] {anonymized.measures.groups:,} released age/sex/weight tuples (DR's groups), "
            f"NIL {anonymized.nil:.4f}, "
            f"DR {anonymized.dr:.4f} ({seconds['anonymize']:.1f} s)"
        )
        engine_side()  # unless anonymize_folder called it
        hashed, raw, risk_raw = started[0]
        verdict, comparison, risk, figures = _checks(
            stages, (raw, risk_raw), folder, built, config, say, seconds
        )
        source_hashes = hashed.result()
    say("[report] …")
    report_start = time.perf_counter()
    from faers_anon.release.report_figures import build_report

    report = build_report(config=config, version=__version__, ingested=ingested, anonymized=anonymized,
                          verdict=verdict, comparison=comparison, risk=risk.figures)  # fmt: skip
    if series is not None:  # every report of the quarter accounted for (docs/series.md)
        counts = {name: series.plan.counts[name] for name in _SERIES_COUNTS}
        report["series"] = {"release": len(series.ledger.meta["releases"]) + 1, "republish": series.republish,
                            **counts}  # fmt: skip
    from faers_anon.release.report import write_report

    added = write_report(built, report, figures)
    seconds["report"] += time.perf_counter() - report_start
    seconds["total"] = time.perf_counter() - begin
    rehash_manifest(built, sources=source_hashes, timings=seconds, added=added)
    seal(built, load_key(config.anonymize.key_file))  # the manifest changed: sign it again
    if series is None:
        _publish(built, out, force=config.force)
    else:  # the release and the ledger: both or neither
        from faers_anon.series.apart import with_state
        from faers_anon.series.step import publish_with_ledger

        key, start, cpu = load_key(config.anonymize.key_file), time.perf_counter(), time.process_time()
        publish_with_ledger(with_state(series, key), built, out, key,
                            lambda: _publish(built, out, force=config.force))  # fmt: skip
        say(f"[ledger] {config.ledger}: release {len(series.ledger.meta['releases']) + 1} recorded "
            f"({time.perf_counter() - start:.1f} s, {time.process_time() - cpu:.1f} CPU-s)")  # fmt: skip
    say(f"[report] written ({seconds['report']:.1f} s; release {time.perf_counter() - begin:.1f} s)")
    return ReleaseResult(
        path=out,
        ingest=ingested,
        anonymized=anonymized,
        verdict=verdict,
        comparison=comparison,
        report=report,
        seconds=seconds,
    )


def _checks(
    stages: Stages, raws: tuple[Task[RawSide] | None, Task[RawCases]], folder: Path, built: Path,
    config: ReleaseConfig, say: Progress, seconds: dict[str, float],
) -> tuple[Verdict, Comparison, RiskResult, dict[str, str]]:  # fmt: skip
    """verify, signals and risk of the built release, and the report's figures (module docstring:
    how they overlap), against ``folder``, the raw data of the released cases (module docstring); a
    failing verdict raises before anything else is used. Each stage's module is imported here, in this
    thread, before the stage starts (loaded beside the engine already)."""
    from faers_anon.risk import RiskConfig, assess_risk

    raw, risk_raw = raws
    # SPEC §11: what an attacker who knows X can learn
    risk = stages.start(
        "risk", lambda: assess_risk(built, config=RiskConfig(raw=folder), raw_side=risk_raw.result())
    )
    signals = stages.start("signals", lambda: _compare(raw, folder, built, config))
    from faers_anon.verify.verifier import verify_release

    verify = stages.start(
        "verify", lambda: verify_release(built, public_key=load_key(config.anonymize.key_file).public_key)
    )
    verdict = verify.result()
    seconds["verify"] = verify.seconds
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
    comparison = signals.result()
    seconds["signals"] = signals.seconds
    if raw is not None:
        seconds["signals_raw"] = raw.seconds
    say(f"[signals] {comparison.summary().splitlines()[1].strip()} ({seconds['signals']:.1f} s)")
    from faers_anon.release.report import build_figures
    from faers_anon.release.report_figures import report_inputs

    figures = stages.start(  # the plots need neither risk nor the report: drawn while risk runs
        "figures", lambda: build_figures(report_inputs(folder, built, verdict, comparison, config)),
        announce=False,
    )  # fmt: skip
    assessed = risk.result()
    seconds["risk"], seconds["risk_raw"] = risk.seconds, risk_raw.seconds
    sets = len(assessed.figures["reidentification"])
    say(f"[risk] {sets} knowledge sets measured ({seconds['risk']:.1f} s)")
    drawn = figures.result()
    seconds["report"] = figures.seconds
    return verdict, comparison, assessed, drawn


Beside = tuple[Task[dict[str, str]], Task["RawSide"] | None, Task["RawCases"]]


def _beside_engine(stages: Stages, sources: Sequence[Path], folder: Path, config: ReleaseConfig) -> Beside:
    """What needs no partition, started beside the engine (module docstring): the later stages' modules
    (with a ledger imported before the series step already), the sources' SHA-256, and the raw halves of
    signals and risk, read from ``folder`` (the raw data of the released cases)."""
    if config.ledger is None:
        stages.preload(LATER_MODULES)
    inputs = [*sources, *([demo_source()] if config.ingest.demo else [])]
    hashed = stages.start("sources", lambda: sources_hashes(inputs), announce=False)
    return hashed, _raw_side(stages, folder, config), _risk_raw(stages, folder, config)


def _raw_side(stages: Stages, folder: Path, config: ReleaseConfig) -> Task[RawSide] | None:
    """The raw half of the signals stage (:func:`signals.raw_side`), started before the engine runs;
    None for a method with its own item form (its drug role is known from the release:
    :func:`faers_anon.anonymize.method_run.signal_inputs`)."""
    if item_form(config.anonymize.method) is not None:
        return None
    from faers_anon.analysis.signals import read_case_tables
    from signals import raw_side

    # the report reads survival and the panel, never a pair's EB05/EB95, Fisher or MH ROR: they
    # are not computed on the big tables (every criterion is decided all the same, signals.compare)
    return stages.start(
        "signals_raw",
        lambda: raw_side(read_case_tables(folder), config=config.compare, bounds=False),
        announce=False,
    )


def _risk_raw(stages: Stages, folder: Path, config: ReleaseConfig) -> Task[RawCases]:
    """The raw half of the risk stage (:func:`faers_anon.risk.raw_cases`), started before the engine
    runs; its drug items are those of the drug columns the release publishes (the column policy)."""
    from faers_anon.io.column_policy import load_policy
    from faers_anon.risk import raw_cases

    policy = load_policy(config.anonymize.column_policy)
    drugs = ("drug_key", *[c for c in ("drugname", "prod_ai") if policy.role("drug", c) != "drop"])
    return stages.start("risk_raw", lambda: raw_cases(folder, drug_columns=drugs), announce=False)


def _compare(raw: Task[RawSide] | None, folder: Path, built: Path, config: ReleaseConfig) -> Comparison:
    """The signals stage: raw (``folder``) vs released signals (:func:`signals.compare`), the raw half
    computed ahead or, for a method's item form, the release read through it (``signal_inputs``)."""
    from faers_anon.analysis.signals import read_case_tables
    from signals import compare

    if raw is not None:
        return compare(raw.result(), read_case_tables(built), config=config.compare, bounds=False)
    method, seed = config.anonymize.method, config.anonymize.seed
    raw_tables, released, options = signal_inputs(
        folder, built, compare=config.compare, method=method, seed=seed
    )
    return compare(raw_tables, released, config=options, bounds=False)


def _publish(built: Path, out: Path, *, force: bool) -> None:
    """Move the restricted folder (if any) and then the release into place, each in one rename
    (:func:`faers_anon.io.workspace.publish_release`, as the standalone ``anonymize`` does)."""
    publish_release(built, out, force=force)


_SERIES_COUNTS = (
    "returning",
    "published_returning",
    "withheld",
    "withheld_reports",
    "republished",
    "republished_reports",
    "retried",
    "retried_reports",
    "pending_waiting",
    "left_out_links",
    "left_out_indi_rows",
)  # E links left out: series/raised.py


def _with_force(config: ReleaseConfig, series: SeriesStep | None = None) -> AnonymizeConfig:
    """The anonymize options with ``force`` set: the folder it writes is inside our private work folder;
    with a series, the frozen bundles the engine must not place and E*_{t−1}, every earlier release's E
    (the release is bounded against and publishes max(E_t, E*_{t−1}): docs/series.md §4)."""
    if series is None:
        return replace(config.anonymize, force=True, frozen=None)
    earlier = series.earlier_knowledge
    return replace(config.anonymize, force=True, frozen=series.frozen, earlier_knowledge=earlier,
                   republish=series.republish)  # stated in the manifest: verify --series reads it


def _series(
    ingested: IngestResult, work: Path, config: ReleaseConfig, say: Progress, seconds: dict[str, float]
) -> SeriesStep | None:
    """The series step before anonymization (:mod:`faers_anon.series.step`); None without a ledger.
    Its wall time goes to ``seconds["series"]``; its line names its child's CPU seconds (user + system:
    the one child process the release starts then), the part of a ledgered release's cost that is the
    step's (issue 14 item 7)."""
    if config.ledger is None:
        return None
    from faers_anon.series.apart import prepare_apart as prepare  # in a child process (its module)

    key = load_key(config.anonymize.key_file)
    start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    step = prepare(config.ledger, ingested.out, ingested.report["quarters"], work, config.anonymize, key,
                   config.republish)
    seconds["series"], after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    c = step.plan.counts
    say(f"[series] ledger {config.ledger}: {len(step.ledger.meta['releases'])} earlier release(s); "
        f"{c['returning']:,} returning cases: {c['published_returning']:,} in {c['bundles']:,} frozen "
        f"group(s) with {c['republished']:,} earlier cases republished, {c['withheld']:,} withheld "
        f"({c['withheld_small']:,} below k, {c['withheld_theta']:,} over theta); {c['fresh']:,} fresh "
        f"({seconds['series']:.1f} s; step process {cpu:.1f} CPU-s)")  # fmt: skip
    return step
