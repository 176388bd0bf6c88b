"""Path-level twins of the CLI commands (dashes become underscores).

Each function takes paths and a frozen config dataclass, does the work through the library modules
and returns a result object with a ``summary()`` the CLI prints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from faers_anon.analysis import ComparisonRun, SignalsRun, run_compare, run_signals
from faers_anon.anonymize import AnonymizeConfig, AnonymizeResult, anonymize_folder
from faers_anon.fetch import FetchConfig, FetchResult, fetch_quarters
from faers_anon.io.ingest import IngestConfig, ingest_quarters
from faers_anon.io.ingest_report import IngestResult
from faers_anon.verify import Verdict, VerifyConfig, verify_release
from signals import CompareConfig, SignalConfig

__all__ = ["fetch", "ingest", "anonymize", "verify", "signals", "compare"]


def fetch(
    quarters: Sequence[str],
    out: Path,
    /,
    *,
    config: FetchConfig | None = None,
    progress: Callable[[str], None] | None = None,
) -> FetchResult:
    """Download the FDA's quarterly ASCII zips into ``out``; see :func:`faers_anon.fetch.fetch_quarters`."""
    return fetch_quarters(quarters, out, config=config, progress=progress)


def ingest(sources: Sequence[Path], out: Path, /, *, config: IngestConfig | None = None) -> IngestResult:
    """Read FAERS quarters (zips, folders) into the ingested folder ``out``.

    See :func:`faers_anon.io.ingest.ingest_quarters` and docs/architecture.md "The ingested folder".
    """
    return ingest_quarters(sources, out, config=config)


def verify(release: Path, /, *, config: VerifyConfig | None = None) -> Verdict:
    """Re-check a written release from its files alone; see :func:`faers_anon.verify.verify_release`."""
    cfg = config or VerifyConfig()
    return verify_release(
        release,
        k=cfg.k,
        sensitive=cfg.sensitive,
        qids=cfg.qids,
        tolerance=cfg.tolerance,
        check_hashes=cfg.check_hashes,
    )


def signals(data: Path, output: Path, /, *, config: SignalConfig | None = None) -> SignalsRun:
    """PRR/ROR/IC/χ² and criteria for every drug–event pair of an ingested folder or a release.

    Writes ``output`` (``.csv``, else Parquet); see :func:`faers_anon.analysis.run_signals`.
    """
    return run_signals(data, output, config=config)


def compare(raw: Path, release: Path, out: Path, /, *, config: CompareConfig | None = None) -> ComparisonRun:
    """Signal survival from an ingested folder to its release, with the reference panel, into ``out``.

    See :func:`faers_anon.analysis.run_compare`.
    """
    return run_compare(raw, release, out, config=config)


def anonymize(ingested: Path, out: Path, /, *, config: AnonymizeConfig | None = None) -> AnonymizeResult:
    """Anonymize an ingested folder into the release ``out`` (:func:`.anonymize.anonymize_folder`)."""
    return anonymize_folder(ingested, out, config=config or AnonymizeConfig())
