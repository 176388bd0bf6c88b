"""Cumulative signals: the case frames of several ingested folders or releases, each case counted once.

Source: issue 14 item 5; FDA README §C (the latest version of a case is its current information);
the rule of :data:`faers_anon.io.cases.VERSION_ORDER`.

The folders are all ingested folders (raw ids) or all releases (pseudonymous ids: made with the same
agency key, a case keeps its pseudonym across releases, :mod:`faers_anon.release.pseudonyms`). Every DEMO
row of every folder is a candidate version of its case; the case's one row is the highest
``caseversion``, then the latest ``fda_dt``, then the highest ``primaryid``, then the later quarter
(the same report published twice: FAQ 29, the later extract; a ledgered series republishes a report
under its pseudonym). A column missing from a folder ranks lowest. In releases the one key before the
quarter is the report pseudonym: it orders a case's reports by (caseversion, fda_dt) in every release
(:mod:`faers_anon.release.pseudonyms`: a slot per version), while a release's ``fda_dt`` is its
group's generalized text (a year, a quarter or a month: ``2023``, ``2024Q1``, ``202406``), which does not
sort in time (``2024Q1`` after ``202411``), and its ``caseversion`` is dropped by the default policy.
Ordered by ``fda_dt`` first, the four 400k stand-alone releases of ``bench_series.py`` gave 59,088
cases an earlier version's drugs and events (docs/series.md §2). The drug and event rows are those of
the chosen version, joined on (folder, primaryid), so nothing of a superseded version is counted.

Deletions: the ``deleted.parquet`` caseids of every ingested folder remove the case from every
folder. A release publishes no DELETE list (it would name cases), so a case deleted after its
release stays counted when releases are combined; the ingest of the later quarter has it.

Memory: one frame per table per folder, scanned lazily; only the chosen versions' rows are
collected.

Streaming pair counts (:func:`series_pair_counts`, issue 16 item 4): the same cases, but the drug
and event rows are never collected together. The chosen versions (``caseid``, ``primaryid``, their
folder and quarter: 20 bytes a case) are split by (folder, quarter); each part reads only its own
quarter's DRUG and REAC rows (the row groups that hold the quarter, :func:`_quarter_spans`), counts
its cases' distinct (drug, event) pairs and the drug and event margins, and adds them to running
totals. A case's counted version lies in one part, so the parts' counts add up to the counts of
:mod:`signals.counts` over the whole series (``a``, ``b``, ``c``, ``d`` of one stratum, N = cases).
Memory: the case index, one quarter's rows and the pair totals (a UInt64 key and a count a pair).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.compute as pc
import pyarrow.parquet as pq

from faers_anon.analysis import tables as analysis
from faers_anon.errors import ConfigError, InputError
from signals import CaseTables
from signals.counts import ROLES, event_key

__all__ = ["PairCounts", "read_series_case_tables", "series_pair_counts"]

#: Version keys, ascending: the last row of a case is its latest version (module docstring).
_ORDER = ("caseversion", "fda_dt", "primaryid", "quarter")
#: The same in releases: the report pseudonym holds the version order (module docstring).
_RELEASE_ORDER = ("primaryid", "quarter")
_KEYS = {"caseversion": pl.Int64, "fda_dt": pl.Date, "quarter": pl.Utf8}
_FOLDER = "_folder"


def _tagged(frames: list[pl.LazyFrame]) -> pl.LazyFrame:
    return pl.concat([f.with_columns(pl.lit(i, pl.UInt32).alias(_FOLDER)) for i, f in enumerate(frames)],
                     how="diagonal_relaxed")  # fmt: skip


def _versions(folder: Path, layout: analysis.Layout) -> pl.LazyFrame:
    """Every DEMO row of ``folder`` with the version keys (a key the folder lacks is null)."""
    relative, required, optional = layout["cases"]
    frame = analysis.scan_columns(folder, relative, required, (*optional, *_KEYS))
    names = frame.collect_schema().names()
    return frame.with_columns(pl.lit(None, dtype).alias(n) for n, dtype in _KEYS.items() if n not in names)


def _deleted(folders: Sequence[Path]) -> pl.Series:
    """The caseids on any DELETE list of the ingested folders (``deleted.parquet``)."""
    lists = [pl.scan_parquet(f / "deleted.parquet").select("caseid") for f in folders
             if (f / "deleted.parquet").is_file()]  # fmt: skip
    if not lists:
        return pl.Series("caseid", [], pl.Int64)
    return pl.concat(lists).collect().get_column("caseid").unique()


def _layout(folders: Sequence[Path]) -> analysis.Layout:
    """The one layout of ``folders``; a mix of ingested folders and releases is refused."""
    layouts = [analysis.folder_layout(f) for f in folders]
    if len({id(layout) for layout in layouts}) > 1:
        kinds = ", ".join(f"{f} ({'ingested' if lay is analysis.INGESTED else 'release'})"
                          for f, lay in zip(folders, layouts, strict=True))  # fmt: skip
        raise InputError(f"cannot combine ingested folders with releases (their ids differ): {kinds}")
    return layouts[0]


def _latest(folders: Sequence[Path], layout: analysis.Layout) -> pl.LazyFrame:
    """Every case's latest version across ``folders`` (the rules of the module docstring)."""
    rows = _tagged([_versions(f, layout) for f in folders])
    rows = rows.filter(~pl.col("caseid").is_in(_deleted(folders).implode()))
    order = _RELEASE_ORDER if layout is analysis.RELEASE else _ORDER
    return rows.sort([*order, _FOLDER], nulls_last=False).group_by("caseid").last()


def read_series_case_tables(folders: Sequence[Path], /) -> CaseTables:
    """The case, drug and event frames of several folders, each case once at its latest version.

    Raises:
        InputError: a folder of neither layout, a mix of ingested folders and releases, or a
            missing file or column (:func:`faers_anon.analysis.tables.read_folder_tables`).
    """
    layout = _layout(folders)
    latest = _latest(folders, layout)
    keys = latest.select(_FOLDER, "primaryid", "caseid")

    def chosen(table: str, columns: tuple[str, ...]) -> pl.LazyFrame:
        scans = [analysis.scan_columns(f, *layout[table]) for f in folders]
        return _tagged(scans).join(keys, on=[_FOLDER, "primaryid"]).select("caseid", *columns)

    optional = [c for c in layout["cases"][2] if c in latest.collect_schema().names()]
    required = [c for c in layout["cases"][1] if c not in ("primaryid", "is_latest")]
    cases, drugs, events = pl.collect_all([
        latest.select(*required, *optional).sort("caseid"),
        chosen("drugs", ("drug_key", "role_cod")),
        chosen("events", ("pt",)),
    ])  # fmt: skip
    return CaseTables(cases=cases, drugs=drugs, events=events)


@dataclass(frozen=True, slots=True)
class PairCounts:
    """The 2×2 counts of every co-reported drug–event pair of a series, counted part by part.

    Attributes:
        table: ``drug``, ``event``, ``a``, ``b``, ``c``, ``d`` (Int64; cases, as in
            :mod:`signals.counts`), one row per pair with a ≥ ``min_a``, sorted by the pair's codes.
        cases: N, the cases counted (each case once, at its latest version).
        parts: the (folder, quarter) parts read one after the other.
    """

    table: pl.DataFrame
    cases: int
    parts: int


def _winners(folders: Sequence[Path], layout: analysis.Layout) -> pl.DataFrame:
    """``_folder``, ``quarter``, ``primaryid``, ``caseid`` of each case's counted version: one folder's
    own ``is_latest`` (as :func:`faers_anon.analysis.tables.read_folder_tables` reads it), or the
    latest across several folders (as :func:`read_series_case_tables`)."""
    relative, *_ = layout["cases"]
    if len(folders) == 1:
        rows = analysis.scan_columns(folders[0], relative, ("primaryid", "caseid", "is_latest"), ("quarter",))
        rows = rows.filter(pl.col("is_latest")).with_columns(pl.lit(0, pl.UInt32).alias(_FOLDER))
        if "quarter" not in rows.collect_schema().names():
            rows = rows.with_columns(pl.lit(None, pl.Utf8).alias("quarter"))
    else:
        rows = _latest(folders, layout)
    return rows.select(_FOLDER, pl.col("quarter").cast(pl.Utf8), "primaryid", "caseid").collect()


_Spans = dict[str, tuple[int, int]]


def _quarter_spans(path: Path) -> _Spans | None:
    """Per ``quarter`` value of ``path``, the rows [start, end) of the row groups holding it; None
    when the file has no ``quarter`` column.

    A cumulative ingest writes each quarter's rows in row groups of their own
    (:class:`faers_anon.io.outputs.Sink`), so a span reads one quarter. Reads the ``quarter``
    column one row group at a time.
    """
    file = pq.ParquetFile(path)
    if "quarter" not in file.schema_arrow.names:
        return None
    spans: _Spans = {}
    start = 0
    for group in range(file.num_row_groups):
        size = file.metadata.row_group(group).num_rows
        for quarter in pc.unique(file.read_row_group(group, columns=["quarter"]).column(0)).to_pylist():
            spans[quarter] = (spans.get(quarter, (start, 0))[0], start + size)
        start += size
    return spans


def _part_rows(
    folder: Path,
    layout: analysis.Layout,
    table: str,
    spans: _Spans | None,
    quarter: str | None,
    keys: pl.DataFrame,
) -> pl.LazyFrame:
    """The rows of ``table`` in ``folder``'s ``quarter`` whose report is among ``keys``, with the
    report's ``caseid``. ``spans`` (:func:`_quarter_spans` of the file) bound what is read; without
    them, or without a quarter, the whole file is read and the join on ``primaryid`` selects."""
    relative, required, _ = layout[table]
    rows = analysis.scan_columns(folder, relative, required, ("quarter",))
    if spans is not None and quarter is not None:
        start, end = spans.get(quarter, (0, 0))
        rows = rows.slice(start, end - start).filter(pl.col("quarter") == quarter)
    return rows.join(keys.lazy(), on="primaryid")


def _incidence(drugs: pl.LazyFrame, events: pl.LazyFrame, role: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Distinct (``caseid``, ``drug``) under ``role`` and distinct (``caseid``, ``event``), as
    :func:`signals.counts.prepare` makes them (event = :func:`signals.counts.event_key` of the PT)."""
    codes = ROLES[role]
    if codes is not None:
        drugs = drugs.filter(pl.col("role_cod").str.strip_chars().str.to_uppercase().is_in(codes))
    events = events.select("caseid", pl.col("pt").cast(pl.Utf8))
    terms = events.select(pl.col("pt").unique()).with_columns(event_key(pl.col("pt")).alias("event"))
    case_drugs, case_events = pl.collect_all([
        drugs.select("caseid", pl.col("drug_key").alias("drug")).drop_nulls().unique(),
        events.join(terms, on="pt").select("caseid", "event").drop_nulls().unique(),
    ])  # fmt: skip
    return case_drugs, case_events


class _Margin:
    """A growing dictionary of values (``name`` → ``{name}_id``, UInt32 in order of appearance) and
    the cases counted per value."""

    def __init__(self, name: str) -> None:
        self.name, self.column = name, f"{name}_id"
        self.names = pl.DataFrame(schema={name: pl.Utf8, self.column: pl.UInt32})
        self.cases = np.zeros(0, np.int64)

    def add(self, values: pl.DataFrame) -> pl.DataFrame:
        """``caseid``, ``{name}_id`` of ``values`` (distinct); their cases added to the margin."""
        new = values.select(pl.col(self.name).unique(maintain_order=True)).join(
            self.names, on=self.name, how="anti"
        )
        first = self.names.height
        ids = pl.int_range(first, first + new.height, dtype=pl.UInt32).alias(self.column)
        self.names = pl.concat([self.names, new.with_columns(ids)])
        coded = values.join(self.names, on=self.name).select("caseid", self.column)
        grown = np.zeros(self.names.height, np.int64)
        grown[: self.cases.size] = self.cases
        counts = coded.group_by(self.column).len()
        grown[counts.get_column(self.column).to_numpy()] += counts.get_column("len").to_numpy()
        self.cases = grown
        return coded


class _Totals:
    """Running sums of ``a`` per UInt64 pair key: parts wait in a list and are merged into the total
    once they hold as many rows as it (each row is merged O(1) times on average)."""

    def __init__(self) -> None:
        self.total = pl.DataFrame(schema={"key": pl.UInt64, "a": pl.Int64})
        self.waiting: list[pl.DataFrame] = []
        self.rows = 0

    def add(self, drugs: pl.DataFrame, events: pl.DataFrame) -> None:
        """Add the co-reported pairs of coded ``drugs`` and ``events`` (key = drug_id · 2³² + event_id)."""
        key = (pl.col("drug_id").cast(pl.UInt64) * (1 << 32) + pl.col("event_id")).alias("key")
        part = drugs.join(events, on="caseid").group_by(key).agg(pl.len().cast(pl.Int64).alias("a"))
        self.waiting.append(part)
        self.rows += part.height
        if self.rows >= max(self.total.height, 1 << 20):
            self.merged()

    def merged(self) -> pl.DataFrame:
        if self.waiting:
            self.total = pl.concat([self.total, *self.waiting]).group_by("key").agg(pl.col("a").sum())
            self.waiting, self.rows = [], 0
        return self.total


def series_pair_counts(folders: Sequence[Path], /, *, role: str = "ps", min_a: int = 1) -> PairCounts:
    """The 2×2 counts of every drug–event pair over ``folders``, streaming (module docstring).

    Args:
        folders: one ingested folder or release (a cumulative ingest of many quarters counts quarter
            by quarter), or several (each case once, at its latest version across them).
        role: ``ps``, ``suspect`` or ``any`` (:data:`signals.counts.ROLES`).
        min_a: keep the pairs with a ≥ min_a (≥ 1).

    Returns:
        :class:`PairCounts`: a = cases with drug and event, b = with the drug only, c = with the
        event only, d = N − a − b − c.

    Raises:
        ConfigError: an unknown role.
        InputError: as :func:`read_series_case_tables`.
    """
    if role not in ROLES:
        raise ConfigError(f"role must be one of {', '.join(ROLES)}; got {role!r}")
    layout = _layout(folders)
    winners = _winners(folders, layout)
    parts = winners.partition_by(_FOLDER, "quarter", as_dict=True, include_key=False)
    spans = {
        (i, t): _quarter_spans(f / layout[t][0]) for i, f in enumerate(folders) for t in ("drugs", "events")
    }
    drugs, events, totals = _Margin("drug"), _Margin("event"), _Totals()
    for (index, quarter), keys in parts.items():
        i = int(index)  # type: ignore[call-overload]
        q = None if quarter is None else str(quarter)
        case_drugs, case_events = _incidence(
            _part_rows(folders[i], layout, "drugs", spans[i, "drugs"], q, keys),
            _part_rows(folders[i], layout, "events", spans[i, "events"], q, keys),
            role,
        )
        totals.add(drugs.add(case_drugs), events.add(case_events))
    table = _table(totals.merged(), drugs, events, winners.height, min_a)
    return PairCounts(table, cases=winners.height, parts=len(parts))


def _table(totals: pl.DataFrame, drugs: _Margin, events: _Margin, cases: int, min_a: int) -> pl.DataFrame:
    """``drug``, ``event``, ``a``, ``b``, ``c``, ``d`` from the pair totals and the margins."""
    table = totals.filter(pl.col("a") >= max(min_a, 1)).sort("key")
    drug_id = (table.get_column("key") // (1 << 32)).cast(pl.UInt32)
    event_id = (table.get_column("key") % (1 << 32)).cast(pl.UInt32)
    nd, ne = pl.Series(drugs.cases).gather(drug_id), pl.Series(events.cases).gather(event_id)
    a = table.get_column("a")
    return pl.DataFrame({
        "drug": drugs.names.get_column("drug").gather(drug_id),
        "event": events.names.get_column("event").gather(event_id),
        "a": a, "b": nd - a, "c": ne - a, "d": cases - nd - ne + a,
    })  # fmt: skip
