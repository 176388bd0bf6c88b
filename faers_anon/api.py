"""Path-level twins of the CLI commands (dashes become underscores).

Each function takes paths and a frozen config dataclass, does the work through the library modules
and returns a result object with a ``summary()`` the CLI prints.

Decision (start-up): each function imports the modules it calls when it is called, so that importing
this module (every command does) costs nothing; ``faers-anon --version`` or ``fetch`` does not load
polars, numba, scipy and matplotlib (:mod:`faers_anon.cli`, issue 18 item 6).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from faers_anon.analysis.signals import ComparisonRun, SignalsRun
    from faers_anon.anonymize.config import AnonymizeConfig
    from faers_anon.anonymize.result import AnonymizeResult
    from faers_anon.evaluate.pipeline import EvaluateConfig, EvaluationResult
    from faers_anon.io.fetch import FetchConfig, FetchResult
    from faers_anon.io.ingest import IngestConfig
    from faers_anon.io.ingest_report import IngestResult
    from faers_anon.release.config import ReleaseConfig
    from faers_anon.release.pipeline import ReleaseResult
    from faers_anon.risk import RiskConfig, RiskResult
    from faers_anon.verify.verifier import Verdict, VerifyConfig
    from signals import CompareConfig, SignalConfig

__all__ = [
    "release",
    "release_config",
    "fetch",
    "ingest",
    "anonymize",
    "verify",
    "signals",
    "compare",
    "evaluate",
    "risk",
]


def fetch(
    quarters: Sequence[str],
    out: Path,
    /,
    *,
    config: FetchConfig | None = None,
    progress: Callable[[str], None] | None = None,
) -> FetchResult:
    """Download the FDA's quarterly ASCII zips into ``out``; see :func:`.io.fetch.fetch_quarters`."""
    from faers_anon.io.fetch import fetch_quarters

    return fetch_quarters(quarters, out, config=config, progress=progress)


def ingest(sources: Sequence[Path], out: Path, /, *, config: IngestConfig | None = None) -> IngestResult:
    """Read FAERS quarters (zips, folders) into the ingested folder ``out``.

    See :func:`faers_anon.io.ingest.ingest_quarters` and docs/architecture.md "The ingested folder".
    """
    from faers_anon.io.ingest import ingest_quarters

    return ingest_quarters(sources, out, config=config)


def verify(release: Path, /, *, config: VerifyConfig | None = None) -> Verdict:
    """Re-check a written release from its files alone; see :func:`.verify.verifier.verify_release`."""
    from faers_anon.verify.verifier import VerifyConfig, verify_release

    cfg = config or VerifyConfig()
    return verify_release(
        release,
        k=cfg.k,
        sensitive=cfg.sensitive,
        qids=cfg.qids,
        tolerance=cfg.tolerance,
        check_hashes=cfg.check_hashes,
        public_key=cfg.public_key,
        thresholds=cfg.thresholds,
        knowledge=cfg.knowledge,
        policy=cfg.policy,
    )


def signals(
    data: Path | Sequence[Path], output: Path, /, *, config: SignalConfig | None = None
) -> SignalsRun:
    """PRR/ROR/IC/χ² and criteria for every drug–event pair of an ingested folder or a release
    (or a series of them: each case once, at its latest version).

    Writes ``output`` (``.csv``, else Parquet); see :func:`faers_anon.analysis.signals.run_signals`.
    """
    from faers_anon.analysis.signals import run_signals
    from faers_anon.io.targets import check_outputs

    check_outputs([output], [data] if isinstance(data, Path) else list(data))
    return run_signals(data, output, config=config)


def compare(
    raw: Path | Sequence[Path],
    release: Path | Sequence[Path],
    out: Path,
    /,
    *,
    config: CompareConfig | None = None,
) -> ComparisonRun:
    """Signal survival from an ingested folder to its release, with the reference panel, into ``out``
    (either side may be a series of folders).

    See :func:`faers_anon.analysis.signals.run_compare`.
    """
    from faers_anon.analysis.signals import run_compare
    from faers_anon.io.targets import check_outputs
    from signals import CompareConfig

    cfg = config or CompareConfig()
    sides = [p for side in (raw, release) for p in ([side] if isinstance(side, Path) else side)]
    check_outputs([out], [*sides, cfg.reference, cfg.outcome_groups])
    return run_compare(raw, release, out, config=cfg)


def anonymize(ingested: Path, out: Path, /, *, config: AnonymizeConfig | None = None) -> AnonymizeResult:
    """Anonymize an ingested folder into the release ``out`` (:func:`.pipeline.anonymize_release`)."""
    from faers_anon.anonymize.config import AnonymizeConfig
    from faers_anon.anonymize.pipeline import anonymize_release
    from faers_anon.io.targets import check_release_target, key_inputs, resolved

    cfg = config or AnonymizeConfig()
    inputs = [ingested, cfg.theta_file, cfg.knowledge, *key_inputs(cfg.key_file)]
    check_release_target(out, force=cfg.force, inputs=inputs)
    return anonymize_release(ingested, resolved(out), config=cfg)


def release_config(config_file: Path | None, flags: Mapping[str, Any], /) -> ReleaseConfig:
    """The release options: defaults, then the TOML file (if any), then the flags given.

    The options are those of :data:`faers_anon.release.options.OPTIONS`; ``theta_rule`` defaults to
    ``level`` when a θ file is given, as for ``anonymize``.
    """
    from faers_anon.release.config import build_release_config, load_toml

    options = dict(flags)
    file_options = load_toml(config_file) if config_file is not None else {}
    if "theta_rule" not in options and "theta_rule" not in file_options:
        if "theta_file" in options or "theta_file" in file_options:
            options["theta_rule"] = "level"
    return build_release_config(file_options=file_options, flag_options=options)


def release(
    sources: Sequence[Path],
    out: Path,
    /,
    *,
    config: ReleaseConfig | None = None,
    progress: Callable[[str], None] | None = None,
) -> ReleaseResult:
    """Ingest, anonymize, verify, compare and report into the release folder ``out``.

    See :func:`faers_anon.release.pipeline.release`.
    """
    from faers_anon.release.config import ReleaseConfig
    from faers_anon.release.pipeline import release as run_release

    return run_release(sources, out, config=config or ReleaseConfig(), progress=progress)


def evaluate(
    sources: Sequence[Path],
    out: Path,
    /,
    *,
    config: EvaluateConfig | None = None,
    progress: Callable[[str], None] | None = None,
) -> EvaluationResult:
    """Every model (and method) on every quarter, k, θ and θ* setting: results.csv, figures, HTML in ``out``.

    See :func:`faers_anon.evaluate.pipeline.evaluate_sources`.
    """
    from faers_anon.evaluate.pipeline import EvaluateConfig, evaluate_sources
    from faers_anon.io.ingest import demo_source
    from faers_anon.io.targets import check_outputs

    cfg = config or EvaluateConfig()
    check_outputs([out], [*sources, demo_source() if cfg.demo else None, cfg.theta_file, cfg.knowledge])
    return evaluate_sources(sources, out, config=cfg, progress=progress)


def risk(release: Path, output: Path, /, *, config: RiskConfig | None = None) -> RiskResult:
    """What an attacker who knows X can learn from ``release`` (SPEC §11), written to ``output`` (risk.json).

    See :func:`faers_anon.risk.assess_risk`.
    """
    from faers_anon.io.targets import check_outputs
    from faers_anon.risk import RiskConfig, assess_risk, write_risk

    cfg = config or RiskConfig()
    check_outputs([output], [release, cfg.raw, *cfg.series, cfg.classes])
    result = assess_risk(release, config=cfg)
    write_risk(result, output)
    return result
