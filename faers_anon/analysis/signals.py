"""Signal analysis of an ingested folder or a release folder (SPEC §9; docs/architecture.md contracts).

The driver reads the three case frames the :mod:`signals` library needs, one row per case (its
latest version, ``is_latest``), and writes what the library returns:

* ingested folder (``reports.parquet``, ``drug.parquet``, ``reac.parquet``): cases carry the exact
  ``age_years``, ``sex`` (F/M/null) and ``weight_kg``;
* release folder (``parquet/demo.parquet``, ``parquet/drug.parquet``, ``parquet/reac.parquet``):
  cases carry the released ranges ``age_min``, ``age_max`` (max exclusive), ``sex`` (F/M/``*``/null),
  ``wt_min``, ``wt_max``.

DRUG and REAC rows are those of the latest report of each case (joined on ``primaryid``), so a
follow-up that dropped a drug or a reaction is read as the case now stands. Several folders (the
quarters of a series, all ingested or all releases) count each case once, at its latest version
across them (:mod:`faers_anon.analysis.cumulative`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import polars as pl

from faers_anon.analysis.cumulative import read_series_case_tables
from faers_anon.analysis.tables import read_folder_tables
from faers_anon.errors import InputError
from faers_anon.json_data import json_data
from signals import CaseTables, CompareConfig, Comparison, SignalConfig, SignalTable, compare, signal_table

__all__ = [
    "SignalsRun",
    "ComparisonRun",
    "read_case_tables",
    "run_signals",
    "run_compare",
    "COMPARE_FILES",
]

COMPARE_FILES = (
    "summary.json",
    "survival.csv",
    "correlation.csv",
    "new_signals.csv",
    "panel.csv",
    "pairs.parquet",
)


def read_case_tables(folder: Path | Sequence[Path], /) -> CaseTables:
    """Read the case, drug and event frames of an ingested folder or a release folder.

    Args:
        folder: an ingested folder (has ``reports.parquet``) or a release (has ``parquet/demo.parquet``)
            (:func:`faers_anon.analysis.tables.read_folder_tables`), or several (the quarters of a
            series: :func:`faers_anon.analysis.cumulative.read_series_case_tables`).

    Returns:
        :class:`signals.CaseTables` of the latest version of every case.

    Raises:
        InputError: neither layout, a missing or unreadable file, or a missing column.
    """
    if isinstance(folder, Path):
        return read_folder_tables(folder)
    if len(folder) == 1:
        return read_folder_tables(folder[0])
    return read_series_case_tables(folder)


@dataclass(frozen=True, slots=True)
class SignalsRun:
    """A signal table written to ``output``."""

    table: SignalTable
    output: Path

    def summary(self) -> str:
        """The table's summary and where it was written."""
        return f"{self.table.summary()}\nwritten: {self.output}"


def run_signals(
    data: Path | Sequence[Path], output: Path, /, *, config: SignalConfig | None = None
) -> SignalsRun:
    """Compute the signal table of ``data`` (one folder or a series) and write it to ``output``
    (``.csv``, else Parquet).

    With ``measures="all"`` the MGPS prior used (fitted or given) is printed in the summary and, in
    a Parquet output, stored in the key-value metadata under ``ebgm_prior`` as JSON
    ``{"alpha1", "beta1", "alpha2", "beta2", "p"}`` (read it with ``pyarrow.parquet.read_metadata``).

    Raises:
        InputError: unreadable input (see :func:`read_case_tables`) or an unwritable output.
        SignalsError: bad options.
    """
    table = signal_table(read_case_tables(data), config=config or SignalConfig())
    prior = table.ebgm_prior
    _write(table.frame, output, metadata=None if prior is None else {"ebgm_prior": prior.to_json()})
    return SignalsRun(table=table, output=output)


@dataclass(frozen=True, slots=True)
class ComparisonRun:
    """A comparison written into ``folder`` (files named in :data:`COMPARE_FILES`)."""

    comparison: Comparison
    folder: Path

    def summary(self) -> str:
        """The comparison's summary and where it was written."""
        return f"{self.comparison.summary()}\nwritten: {self.folder}/ ({', '.join(COMPARE_FILES)})"


def run_compare(
    raw: Path | Sequence[Path],
    release: Path | Sequence[Path],
    out: Path,
    /,
    *,
    config: CompareConfig | None = None,
) -> ComparisonRun:
    """Compare the signals of ``raw`` (ingested) with those of ``release``; write tidy files into ``out``.

    Each side may be a series of folders (each case once, at its latest version across them).

    Files: ``summary.json`` (options and :meth:`signals.Comparison.as_dict`), ``survival.csv``,
    ``correlation.csv``, ``new_signals.csv``, ``panel.csv`` and ``pairs.parquet``.

    Raises:
        InputError: unreadable input or an unwritable output.
        SignalsError: bad options, or ``raw`` holding ranges.
    """
    config = config or CompareConfig()
    result = compare(read_case_tables(raw), read_case_tables(release), config=config)
    summary = {
        "raw": json_data(raw, strict=True),
        "release": json_data(release, strict=True),
        "config": json_data(asdict(config), strict=True),
        **result.as_dict(),
    }
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(
            json.dumps(summary, indent=2, allow_nan=False) + "\n", encoding="utf-8"
        )
    except OSError as exc:
        raise InputError(f"cannot write ({exc.strerror})", path=out) from exc
    _write(result.survival, out / "survival.csv")
    _write(result.correlation, out / "correlation.csv")
    _write(result.new_signals, out / "new_signals.csv")
    _write(result.panel, out / "panel.csv")
    _write(result.pairs, out / "pairs.parquet")
    return ComparisonRun(comparison=result, folder=out)


def _write(frame: pl.DataFrame, path: Path, *, metadata: dict[str, str] | None = None) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix.lower() == ".csv":
            frame.write_csv(path)
        else:
            # row groups of fixed rows: without the size polars cuts them where its chunks end (the
            # chunks depend on its thread count), as faers_anon/release/writer_tables.py write_parquet
            frame.write_parquet(path, compression="zstd", metadata=metadata, row_group_size=1 << 18)
    except OSError as exc:
        raise InputError(f"cannot write ({exc.strerror})", path=path) from exc
