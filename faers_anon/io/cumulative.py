"""Cumulative ingest of consecutive quarters: the per-quarter accounting and the era boundary.

Source: issue 14 item 1; FDA README §C and FAQ 1 (a case's latest version is its current
information), FAQ 29 (the same report in two extracts: the later one is used), ASC_NTS §G (legacy
``ISR``/``CASE`` → ``PRIMARYID``/``CASEID``); FORMAT.md §3 "Carry-over" (in 2012 FDA carried AERS
cases into FAERS under the same case number, ``caseversion`` counting on from the AERS versions).

How several quarters become one database (each quarter's rows checked by
:mod:`faers_anon.io.annotate`, the quarters joined here, :func:`ingest_series`):

* **Latest version** (:data:`faers_anon.io.cases.VERSION_ORDER`): among a case's kept reports of every
  quarter, the highest ``caseversion``, then the latest ``fda_dt``, then the highest ``primaryid``.
  The quarter a report came in plays no part; the same primaryid in two quarters is one report, the
  later extract's row kept (rule ``primaryid_latest_quarter``).
* **Era boundary** (2012Q3 → 2012Q4): legacy ``CASE`` is read as ``caseid`` and ``ISR`` as
  ``primaryid``, so a legacy case and its FAERS follow-ups share a caseid. A legacy report has no
  ``caseversion``; a missing caseversion ranks below every present one, so any FAERS version
  supersedes every AERS one (FAERS continued the AERS case's version count), and legacy ISRs of one
  case are ordered by ``fda_dt`` then ISR (FDA: the latest ISR is the most current).
  Assumption (not seen in the samples): an ISR never equals a FAERS primaryid of another case
  (ISRs have at most 8 digits; a FAERS primaryid is the caseid followed by the version).
* **Deletion**: a caseid on the DELETE list of any quarter given is removed from every quarter.

Accounting per quarter (DEMO rows, :func:`quarter_accounting`): ``read`` = ``latest`` +
``superseded`` + ``deleted`` + ``quarantined``, checked; ``superseded_by_later_quarter`` counts the
superseded reports whose case's latest version came in a later quarter.

Quarter by quarter (:func:`ingest_series`): each quarter is ingested alone, *latest first*, by the
very steps of a one-quarter ingest, so each file is read once and memory holds one quarter plus the
case index; every table's rows are appended to its one output file (:class:`~faers_anon.io.outputs.Sink`),
grouped by quarter, latest quarter first. The DELETE lists of every quarter are read before any
quarter. Latest first, a quarter's reports meet the primaryids of every later quarter already read,
so ``primaryid_latest_quarter``, and with it the status of every row, is final when the quarter is
read. Only the latest version needs every quarter (an earlier quarter may hold the latest
version: FDA's rule ignores the quarter), so it is decided on the **case index** — caseid,
primaryid, caseversion, fda_dt, status and quarter of every DEMO row, 34 bytes a row — and DEMO's
kept rows, staged per quarter, are written with it at the end. The super-records
(``cases.parquet``) merge the quarters' staged versions and value lists (each list the sorted union
of the quarters' lists).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.ipc

from faers_anon.io.cases import TERM_LISTS, combine, latest_primaryid, version_summary
from faers_anon.io.faers_ascii import scan_primaryids
from faers_anon.io.ingest_report import DELETED_STATUS, KEPT, QUARANTINED, STATUS
from faers_anon.io.outputs import ROW_GROUP, Sink
from faers_anon.io.rules import CANDIDATE, QUARTER_CODE
from faers_anon.io.schema import CHILD_TABLES, TABLES
from faers_anon.io.sources import LocalFile

__all__ = [
    "FIRST_FAERS",
    "QuarterRun",
    "era",
    "quarter_accounting",
    "quarter_gaps",
    "check_quarters",
    "index_columns",
    "ingest_series",
    "repeated_primaryids",
    "stage_case_parts",
]

#: Ingest of one quarter's data files (``files``, ``quarter``, ``sink``, ``stage``, ``later``: the later
#: quarters' candidate primaryids among those read in several quarters):
#: the report parts of ``faers_anon.io.ingest`` plus ``index`` (:func:`index_columns`).
QuarterRun = Callable[[list[LocalFile], str, Sink, Path, pl.Series], dict[str, Any]]
_STATUS = pl.Enum([KEPT, QUARANTINED, DELETED_STATUS])
_VERSIONS = ("caseid", "primaryid", "caseversion", "fda_dt", "age_years", "sex", "weight_kg")
#: Suffix of the staged files of a quarter of a series (uncompressed Arrow IPC, ``_work/series/<quarter>``).
_STAGED = ".arrow"

#: The first quarter of FAERS (the extract of 2012-08-28 … 2012-12-31); earlier ones are AERS.
FIRST_FAERS = "2012Q4"


def era(quarter: str) -> str:
    """``"AERS"`` for a quarter before 2012Q4, else ``"FAERS"`` (README §A)."""
    return "AERS" if quarter < FIRST_FAERS else "FAERS"


def _index(quarter: str) -> int:
    return int(quarter[:4]) * 4 + int(quarter[-1]) - 1


def quarter_gaps(quarters: list[str], /) -> list[str]:
    """The quarters missing between the first and last of ``quarters`` (``yyyyQq`` strings)."""
    if not quarters:
        return []
    have = {_index(q) for q in quarters}
    first, last = min(have), max(have)
    return [f"{i // 4}Q{i % 4 + 1}" for i in range(first, last + 1) if i not in have]


def quarter_accounting(frame: pl.DataFrame, quarters: list[str], /) -> list[dict[str, Any]]:
    """Per quarter, what became of its DEMO reports in the cumulative database.

    Args:
        frame: the annotated DEMO frame (``STATUS``, ``is_latest``, ``caseid``, the quarter code).
        quarters: the quarters, indexed by quarter code.

    Returns:
        One dict per quarter: ``quarter``, ``era``, ``read``, ``latest``, ``superseded``,
        ``superseded_by_later_quarter``, ``deleted``, ``quarantined``, ``cases`` (distinct caseids
        of its kept reports), ``cases_spanning_eras`` (of those, cases with a kept report in the
        other era).

    Raises:
        AssertionError: read ≠ latest + superseded + deleted + quarantined (a bug, not a user error).
    """
    status, code = pl.col(STATUS), pl.col(QUARTER_CODE)
    kept = status == KEPT
    faers = code >= sum(q < FIRST_FAERS for q in quarters)  # quarter codes sort like the quarters
    latest_code = pl.when(pl.col("is_latest")).then(code).max().over("caseid")
    spans = (pl.when(kept).then(faers).drop_nulls().n_unique().over("caseid") > 1) & kept  # eras of kept rows
    if len(quarters) == 1:  # no later quarter, no other era: the two windows are known (0.3 s at 400k)
        latest_code, spans = code, pl.lit(False)
    counts = (
        frame.lazy()
        .select(STATUS, "is_latest", "caseid", QUARTER_CODE)
        .with_columns(latest_code.alias("_latest_code"), spans.alias("_spans"))
        .group_by(QUARTER_CODE)
        .agg(
            read=pl.len(),
            latest=(kept & pl.col("is_latest")).sum(),
            superseded=(kept & ~pl.col("is_latest")).sum(),
            superseded_by_later_quarter=(kept & ~pl.col("is_latest") & (pl.col("_latest_code") > code)).sum(),
            deleted=(status == DELETED_STATUS).sum(),
            quarantined=(status == QUARANTINED).sum(),
            cases=pl.col("caseid").filter(kept).n_unique(),
            cases_spanning_eras=pl.col("caseid").filter(pl.col("_spans")).n_unique(),
        )
        .collect()
    )
    by_code = {row.pop(QUARTER_CODE): row for row in counts.to_dicts()}
    accounting = []
    for i, quarter in enumerate(quarters):
        row = {k: int(v) for k, v in by_code.get(i, {}).items()}
        if not row:
            continue  # a quarter with only a DELETE list
        if row["read"] != row["latest"] + row["superseded"] + row["deleted"] + row["quarantined"]:
            raise AssertionError(f"{quarter}: read != latest + superseded + deleted + quarantined")
        accounting.append({"quarter": quarter, "era": era(quarter), **row})
    return accounting


def check_quarters(quarters: list[str], /) -> list[str]:
    """Warnings about the quarters of a cumulative ingest: a gap between the first and the last.

    A gap is allowed (an analyst may ingest a sample) but the latest version and the DELETE lists
    of a missing quarter are then unknown, so the cumulative database may keep superseded or
    deleted versions; the warning names the missing quarters.
    """
    gaps = quarter_gaps(quarters)
    if not gaps:
        return []
    return [
        f"quarters not consecutive: {', '.join(gaps)} missing between {quarters[0]} and {quarters[-1]} "
        "(their follow-ups and DELETE lists are not applied)"
    ]


def index_columns(frame: pl.DataFrame, /) -> pl.DataFrame:
    """The case-index rows of one quarter's annotated DEMO frame: ``caseid``, ``primaryid``,
    ``caseversion``, ``fda_dt``, the status (an Enum) and whether the row was a candidate."""
    return frame.select(
        "caseid", "primaryid", "caseversion", "fda_dt", pl.col(STATUS).cast(_STATUS), pl.col(CANDIDATE)
    )


def _with_latest(index: pl.DataFrame) -> pl.DataFrame:
    """``is_latest`` of every index row: its primaryid is its caseid's latest kept version
    (:func:`faers_anon.io.cases.latest_primaryid`, as :func:`faers_anon.io.annotate.annotated_reports`
    decides it within one run)."""
    kept = index.lazy().filter(pl.col(STATUS) == KEPT)
    latest = kept.group_by("caseid").agg(latest_primaryid().alias("_latest"))
    return (
        index.lazy()
        .join(latest, on="caseid", how="left", maintain_order="left")
        .with_columns((pl.col("primaryid") == pl.col("_latest")).fill_null(False).alias("is_latest"))
        .drop("_latest")
        .collect()
    )


def ingest_series(files: list[LocalFile], out: Path, run: QuarterRun, /) -> dict[str, Any]:
    """Ingest the quarters of ``files`` one at a time, latest first, into the one folder ``out``.

    Args:
        files: the data files of every quarter (DELETE lists are read by the caller first).
        out: the folder being written (its ``_work/series`` holds the staged quarters).
        run: the ingest of one quarter (:data:`QuarterRun`).

    Returns:
        ``tables``, ``by_quarter``, ``missing_tables``, ``normalization`` and ``cases``, as one run
        over all quarters reports them (each table's ``files`` in quarter order).
    """
    quarters = sorted({f.source.quarter for f in files if f.source.table == "demo" and f.source.quarter})
    sink, stage = Sink(), out / "_work" / "series"
    repeated = repeated_primaryids([f for f in files if f.source.table == "demo"]).implode()
    later = pl.Series("primaryid", [], pl.Int64)
    indexes, done = [], {}
    for code in reversed(range(len(quarters))):
        quarter = quarters[code]
        (stage / quarter).mkdir(parents=True)
        chosen = [f for f in files if f.source.quarter == quarter and f.source.table in TABLES]
        done[quarter] = run(chosen, quarter, sink, stage / quarter, later)
        index = done[quarter].pop("index").with_columns(pl.lit(code, pl.UInt32).alias(QUARTER_CODE))
        again = index.filter(pl.col(CANDIDATE) & pl.col("primaryid").is_in(repeated))
        later = pl.concat([later, again.get_column("primaryid")])
        indexes.append(index.drop(CANDIDATE))
    index = _with_latest(pl.concat(indexes))
    staged = [stage / q / f"reports{_STAGED}" for q in reversed(quarters)]
    written = _write_reports(sink, out / "reports.parquet", staged, index)
    sink.close()
    parts = [done[q] for q in quarters]
    tables = {name: _merged_table([p["tables"][name] for p in parts]) for name in parts[0]["tables"]}
    if written != tables["reports"]["kept"]:
        raise AssertionError(f"reports: {written} rows written, {tables['reports']['kept']} kept")
    missing = sorted(
        (m for p in parts for m in p["missing_tables"]),
        key=lambda m: (CHILD_TABLES.index(m["table"]), m["quarter"]),
    )
    return {"tables": tables, "by_quarter": quarter_accounting(index, quarters), "missing_tables": missing,
            "normalization": _summed([p["normalization"] for p in parts]),
            "cases": _merge_cases(out, stage, quarters, _ranges(index, RANGE_REPORTS))}  # fmt: skip


def repeated_primaryids(demo_files: list[LocalFile], /) -> pl.Series:
    """The primaryids read in the DEMO files of more than one quarter (FDA FAQ 29: rare), from one
    pass over the files' primaryid fields (:func:`faers_anon.io.faers_ascii.scan_primaryids`, a
    superset of the primaryids the ingest reads).

    Only these can fail ``primaryid_latest_quarter``, so :func:`ingest_series` hands each quarter the
    later quarters' candidates among them: checking every report against every later quarter's
    candidates built a hash set of all of them per quarter (quadratic in the quarters: 0.28 s CPU per
    quarter at 16 quarters of 400k reports, 3 s at 90).
    """
    by_quarter: dict[str, list[LocalFile]] = {}
    for file in demo_files:
        by_quarter.setdefault(file.source.quarter or "", []).append(file)
    ids = [
        pl.concat([scan_primaryids(f) for f in chosen]).drop_nulls().unique()
        for chosen in by_quarter.values()
    ]
    if len(ids) < 2:
        return pl.Series("primaryid", [], pl.Int64)
    return (
        pl.concat(ids).filter(pl.col("primaryid").is_duplicated()).unique().collect().get_column("primaryid")
    )


def _write_reports(sink: Sink, path: Path, staged: list[Path], index: pl.DataFrame) -> int:
    """Append the staged kept reports of each quarter to ``path`` with their final ``is_latest``
    (kept primaryids are unique across the quarters, so membership among the quarter's own winners
    decides; ``staged`` is latest quarter first, quarter codes ascend with the quarters)."""
    winners = index.filter(pl.col("is_latest") & (pl.col(STATUS) == KEPT)).select(QUARTER_CODE, "primaryid")
    by_code = winners.partition_by(QUARTER_CODE, as_dict=True, include_key=False)
    none = winners.select("primaryid").head(0)
    rows = 0
    for code, part in zip(reversed(range(len(staged))), staged, strict=True):
        latest = by_code.get((code,), none).get_column("primaryid")
        frame = pl.read_ipc(part).with_columns(pl.col("primaryid").is_in(latest.implode()).alias("is_latest"))
        rows += sink.write(path, frame, frame.iter_slices(ROW_GROUP))
    return rows


#: Kept reports per caseid range of the super-records' merge: about a 400k quarter's, so the merge
#: never holds more than one quarter's worth of versions and value lists.
RANGE_REPORTS = 1 << 19


def _ranges(index: pl.DataFrame, size: int, /) -> list[tuple[int, int]]:
    """Consecutive caseid ranges [low, high) holding about ``size`` kept reports each, from the
    case index (a caseid lies in one range, so its versions and lists are merged together)."""
    caseids = index.filter(pl.col(STATUS) == KEPT).get_column("caseid").drop_nulls().sort()
    if caseids.is_empty():
        return [(0, 1)]
    cuts = caseids.gather_every(size).unique().sort().to_list()[1:]
    edges = [int(caseids[0]), *cuts, int(caseids[-1]) + 1]
    return list(zip(edges[:-1], edges[1:], strict=True))


def stage_case_parts(stage: Path, versions: pl.DataFrame, lists: Mapping[str, pl.DataFrame], /) -> None:
    """Stage one quarter's parts of the super-records in ``stage``: its kept reports' versions
    (:data:`_VERSIONS`) and each value list of :func:`faers_anon.io.cases.term_lists`, each sorted by
    caseid and written as one uncompressed Arrow IPC record batch, so :func:`_merge_cases` reads a
    caseid range of it as a slice of the mapped file (no Parquet encoding, no decoding)."""
    for kind, frame in {"versions": versions.select(_VERSIONS), **lists}.items():
        ordered = frame if frame.get_column("caseid").is_sorted() else frame.sort("caseid")
        ordered.rechunk().write_ipc(stage / f"{kind}{_STAGED}", compression="uncompressed")


def _merge_cases(
    out: Path, stage: Path, quarters: list[str], ranges: list[tuple[int, int]]
) -> dict[str, int]:
    """Write ``cases.parquet``: the versions of every quarter's kept reports, and per value list
    the sorted union of the quarters' lists of a case; one caseid range at a time (``ranges``,
    ascending), each range's super-records appended to the file in caseid order.

    A range's rows of each quarter's staged part (:func:`stage_case_parts`, sorted by caseid) are a
    slice found by binary search in the memory-mapped file: each staged row is read once, whatever
    the number of ranges, and memory holds one range (the files are mapped again for each range, so
    the pages read for one range are let go with it). The merge does not depend on the order of the
    rows (:func:`faers_anon.io.cases.version_summary` sorts them, lists are sorted unions).
    """
    kinds = {kind: [stage / q / f"{kind}{_STAGED}" for q in quarters] for kind in ("versions", *TERM_LISTS)}
    sink, path = Sink(), out / "cases.parquet"
    cases = several = 0
    for low, high in ranges:
        part = {
            kind: _range_rows([f for f in files if f.is_file()], low, high) for kind, files in kinds.items()
        }
        versions = version_summary(part.pop("versions"))
        lists = {name: _union(frame, name) for name, frame in part.items()}
        merged = combine(versions, lists)
        sink.write(path, merged, merged.iter_slices(ROW_GROUP))
        cases += merged.height
        several += int((merged.get_column("n_reports") > 1).sum())
    sink.close()
    return {"cases": cases, "with_several_versions": several}


def _range_rows(files: list[Path], low: int, high: int) -> pl.DataFrame:
    """The rows of the staged files (sorted by caseid) whose caseid lies in [low, high)."""
    parts: list[pl.DataFrame] = []
    for file in files:
        with pa.memory_map(str(file)) as mapped:
            table = pa.ipc.open_file(mapped).read_all()
            caseids = table.column("caseid").combine_chunks().to_numpy(zero_copy_only=False)
            first, last = np.searchsorted(caseids, [low, high], side="left")
            parts.append(pl.DataFrame(table.slice(int(first), int(last - first))))
            del table, caseids
    return pl.concat(parts)


def _union(lists: pl.DataFrame, name: str) -> pl.DataFrame:
    """One row per caseid: a case in one quarter keeps its list (unique and sorted already), the
    lists of a case in several quarters are merged (their values' sorted union)."""
    several = pl.col("caseid").is_duplicated()
    merged = (
        lists.lazy().filter(several).group_by("caseid").agg(pl.col(name).explode().unique().sort()).collect()
    )
    return pl.concat([lists.filter(~several), merged])


def _summed(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts added key by key across ``parts`` (nested dicts too, their keys sorted)."""
    total: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, Mapping):
                total[key] = _summed([total.get(key, {}), value])
            else:
                total[key] = total.get(key, 0) + value
    return total


def _merged_table(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One table's report entry from its entries of each quarter (quarter order)."""
    counts = _summed([{k: v for k, v in p.items() if k != "files"} for p in parts])
    counts["reasons"] = dict(sorted(counts["reasons"].items()))
    return counts | {"files": [f for p in parts for f in p["files"]]}
