"""The lazy chain of one table: raw text → typed → normalized → rules as columns → status.

The DELETE lists are checked and written here too (:func:`deleted_lists`).

Source: SPEC §3; docs/architecture.md "The ingested folder"; the rule order of
:mod:`faers_anon.io.rules`. DEMO's chain is returned lazy, for :mod:`faers_anon.io.ingest` to collect;
a child table is collected twice: its typed text once, then the columns added to it in one pass.

Decisions: quarter and file are carried as small integer codes (``_quarter_code``, ``_file_code``) so
lookups, windows and counts work on integers; drug keys are computed once per distinct name and
looked up per row; a child row finds its report by one integer key per (quarter, primaryid)
(:func:`report_key`, binary search in the sorted keys) and takes the caseid of that report (legacy
child files have none).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from faers_anon.io import normalize, rules
from faers_anon.io.cases import term_codes
from faers_anon.io.faers_ascii import ScannedFile, empty_frame, scan_deleted
from faers_anon.io.ingest_report import DELETED_STATUS, FILE_CODE, KEPT, QUARANTINED, STATUS
from faers_anon.io.outputs import file_meta, kept_columns, table_report, write_split
from faers_anon.io.parse import empty_to_null, parse
from faers_anon.io.schema import COLUMNS, Kind
from faers_anon.io.sources import LocalFile
from knowledge.drug_names import name_key_expr

__all__ = [
    "Scan",
    "annotated_reports",
    "typed_rows",
    "with_is_latest",
    "annotated_children",
    "checked",
    "report_key",
    "report_rules",
    "child_rules",
    "deleted_lists",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class Scan:
    """A scanned file with the integer codes of its file (index in its table) and quarter."""

    scan: ScannedFile
    file_code: int
    quarter_code: int


def report_rules(later: pl.Series | None = None, *, one_quarter: bool = False) -> rules.RuleSet:
    """The rules of DEMO rows; ``later``: primaryids of the later quarters' candidate reports;
    ``one_quarter``: all rows of one quarter (:func:`faers_anon.io.rules.report_link_rules`)."""
    return rules.RuleSet(
        row=rules.row_rules("demo"), link=rules.report_link_rules(later, one_quarter=one_quarter)
    )


def child_rules(table: str) -> rules.RuleSet:
    """The rules of the rows of a child table."""
    return rules.RuleSet(row=rules.row_rules(table), link=rules.child_link_rules())


def _typed(frame: pl.LazyFrame, table: str) -> pl.LazyFrame:
    """Type the typed columns, keeping their verbatim text as ``_raw_<name>``.

    Text columns are left as read (an empty field is ``""``): turning ``""`` into null is done
    where rows are written (:func:`faers_anon.io.outputs.write_split`), batch by batch, instead of
    copying every text column of the whole table here.
    """
    exprs: list[pl.Expr] = []
    for column, kind in COLUMNS[table].items():
        if kind is not Kind.TEXT:
            exprs.append(pl.col(column).alias(rules.raw_name(column)))
            exprs.append(parse(pl.col(column), kind).alias(column))
    return frame.with_columns(exprs)


def checked(frame: pl.LazyFrame, checks: rules.RuleSet, on_delete_list: pl.Expr) -> pl.LazyFrame:
    """Evaluate the rules as boolean columns and derive each row's status (order: module docstring)."""
    deleted = pl.col(rules.ROW_OK) & on_delete_list
    return (
        frame.with_columns(**checks.row_columns())
        .with_columns(checks.row_ok().alias(rules.ROW_OK))
        .with_columns(deleted.alias(rules.IS_DELETED))
        .with_columns((pl.col(rules.ROW_OK) & ~pl.col(rules.IS_DELETED)).alias(rules.CANDIDATE))
        .with_columns(**checks.link_columns())
        .with_columns(
            pl.when(~pl.col(rules.ROW_OK))
            .then(pl.lit(QUARANTINED))
            .when(pl.col(rules.IS_DELETED))
            .then(pl.lit(DELETED_STATUS))
            .when(~checks.link_ok())
            .then(pl.lit(QUARANTINED))
            .otherwise(pl.lit(KEPT))
            .alias(STATUS)
        )
    )


def _codes(file_code: int, quarter_code: int) -> tuple[pl.Expr, pl.Expr]:
    file = pl.lit(file_code, pl.UInt32).alias(FILE_CODE)
    return file, pl.lit(quarter_code, pl.UInt32).alias(rules.QUARTER_CODE)


def _raw_frame(scans: list[Scan], table: str) -> pl.LazyFrame:
    """The raw rows of every file of ``table``; no file (a table not in the source): no rows."""
    if not scans:
        return empty_frame(table).with_columns(*_codes(0, 0))
    return pl.concat([s.scan.frame.with_columns(*_codes(s.file_code, s.quarter_code)) for s in scans])


def annotated_reports(
    scans: list[Scan], deleted_ids: pl.Series, later: pl.Series | None = None
) -> pl.LazyFrame:
    typed = _typed(_raw_frame(scans, "demo"), "demo").with_columns(
        empty_to_null(pl.col("sex")).alias(rules.raw_name("sex")),
        normalize.sex(pl.col("sex")).alias("sex"),
        normalize.age_years(pl.col("age"), pl.col("age_cod")).alias("age_years"),
        normalize.weight_kg(pl.col("wt"), pl.col("wt_cod")).alias("weight_kg"),
    )
    checks = report_rules(later, one_quarter=len({s.quarter_code for s in scans}) <= 1)
    return checked(typed, checks, pl.col("caseid").is_in(deleted_ids.implode()))


def with_is_latest(frame: pl.DataFrame) -> pl.DataFrame:
    """The collected :func:`annotated_reports` with ``is_latest`` (:func:`_with_is_latest`'s rule).

    Decision (issue 16 item 3): DEMO files list a case's versions together (FDA sorts them by
    primaryid, caseid × 100 + version), so when the caseids are sorted and none is null each case is
    a run of rows, and the three maxima are ``reduceat`` over the runs (numpy, ≈ 0.02 CPU-s at 400k
    cases) instead of three windows over caseid, which hash it (0.11 of DEMO's 0.53 CPU-s chain, on
    the main thread before any child table is annotated). Other frames take the windows.
    """
    caseid = frame.get_column("caseid")
    if caseid.null_count() or not caseid.is_sorted():
        return _with_is_latest(frame.lazy()).collect()
    ids = caseid.to_numpy()
    starts = np.flatnonzero(np.diff(ids, prepend=ids[:1] - 1))  # each case's first row
    lengths = np.diff(starts, append=ids.shape[0])

    def top(column: str, among: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row: its value is known; its case has a known value among ``among`` rows; the row's
        value is known and that case's maximum of them."""
        values = frame.get_column(column).to_physical().cast(pl.Int64)
        known, value = values.is_not_null().to_numpy(), values.fill_null(0).to_numpy()
        present = among & known
        if not ids.shape[0]:
            return known, present, present
        low = np.iinfo(np.int64).min
        best = np.repeat(np.maximum.reduceat(np.where(present, value, low), starts), lengths)
        has = np.repeat(np.logical_or.reduceat(present, starts), lengths)
        return known, has, has & known & (value == best)

    tied = (frame.get_column(STATUS) == KEPT).to_numpy()  # only kept rows compete (_with_is_latest)
    for key in ("caseversion", "fda_dt"):  # tied at the case's maximum, or all unknown when none is known
        known, has, at_top = top(key, tied)
        tied = tied & (at_top | (~known & ~has))
    _, _, latest = top("primaryid", tied)  # the highest primaryid of the tied rows, on every row with it
    return frame.with_columns(pl.Series("is_latest", latest, dtype=pl.Boolean))


def _with_is_latest(frame: pl.LazyFrame) -> pl.LazyFrame:
    """Add ``is_latest``: the row's primaryid is its caseid's latest version (as
    :func:`faers_anon.io.cases.latest_primaryid`: :data:`~faers_anon.io.cases.VERSION_ORDER`, nulls lowest).

    The lexicographic maximum is found key by key (FDA's rule): the rows of a case tied at the
    maximum of ``caseversion`` (all rows when it is missing in all), then among them at the maximum
    ``fda_dt``; the latest is the highest primaryid of the rows still tied. The quarter plays no
    part (:mod:`faers_anon.io.cumulative`). Only kept rows take part, so a quarantined (or
    deleted) newer row never leaves a case's kept reports without a latest one; other rows get
    ``False``. One window per key costs less than ordering the rows by all three.
    """
    tied = pl.col(STATUS) == KEPT  # only kept rows compete: a quarantined newer row is no version
    for i, key in enumerate((pl.col("caseversion"), pl.col("fda_dt"))):
        top = pl.when(tied).then(key).max().over("caseid")
        frame = frame.with_columns((tied & key.eq_missing(top)).alias(f"_tied_{i}"))
        tied = pl.col(f"_tied_{i}")
    latest = pl.when(tied).then(pl.col("primaryid")).max().over("caseid")
    return frame.with_columns((pl.col("primaryid") == latest).fill_null(False).alias("is_latest"))


def report_key(n_quarters: int) -> pl.Expr:
    """One Int64 per (quarter, primaryid): ``primaryid × n_quarters + quarter code``.

    Null for a missing, non-positive or huge primaryid (one that would overflow), so such a row
    matches no report.
    """
    limit = (2**62) // max(n_quarters, 1)
    primaryid = pl.col("primaryid")
    return pl.when((primaryid > 0) & (primaryid < limit)).then(
        primaryid * n_quarters + pl.col(rules.QUARTER_CODE)
    )


def _drug_key(frame: pl.DataFrame, lookup: pl.DataFrame | None) -> pl.Series:
    """``drug_key`` of each row, each distinct name keyed once (``knowledge.drug_names``).

    ``drug_key_expr(prod_ai, drugname)`` is the coalesce of the two names' keys: the keys of the
    distinct ``prod_ai`` values are computed once and looked up per row; ``drugname`` is keyed only
    for the rows whose ``prod_ai`` gave no key, since the coalesce reads it nowhere else (on the
    realistic 400k synthetic quarter: 10% of the rows, 10,944 of 29,112 distinct names).
    """
    prod_ai = _looked_up(frame, pl.col("prod_ai"), lookup)
    drugname = _looked_up(frame, pl.when(prod_ai.is_null()).then(pl.col("drugname")), lookup)
    return prod_ai.fill_null(drugname)


def _looked_up(frame: pl.DataFrame, names: pl.Expr, lookup: pl.DataFrame | None) -> pl.Series:
    """The key of each of ``names`` (null where it is null), each distinct name keyed once and
    gathered by the name's code (:func:`faers_anon.io.cases.term_codes`: one hash per row)."""
    codes, distinct = term_codes(frame.select(names.alias("name")).to_series())
    keys = pl.DataFrame({"name": distinct}).select(name_key_expr(pl.col("name"), lookup=lookup)).to_series()
    return keys.cast(pl.Utf8).gather(codes)


def _with_report(frame: pl.DataFrame, reports: pl.DataFrame, n_quarters: int) -> list[pl.Series]:
    """``_report_caseid`` and ``_report_kept`` of each row's report (null when it has none).

    A binary search of the row's key (:func:`report_key`) in the sorted keys of ``reports`` (unique
    on the key, none null): a join would copy every column of the table, and ``replace_strict``
    with a mapping of every report costs about ten times as much. The search is numpy's
    ``searchsorted`` (0.02 s for DRUG's 1.76 M rows among 424 k reports, against 0.2 s for polars'
    ``search_sorted`` expression, which walks the sorted keys chunk by chunk through an iterator).
    Only the first row of each run of equal keys is searched (a report's child rows are consecutive
    in FAERS files): DRUG 46 → 24 ms, REAC 34 → 22 ms at 400k cases (any order gives the same result).
    """
    if reports.is_empty():
        return [
            pl.Series("_report_caseid", [None] * frame.height, pl.Int64),
            pl.Series("_report_kept", [None] * frame.height, pl.Boolean),
        ]
    ordered = reports.sort("_report_key")
    keys = ordered.get_column("_report_key").to_numpy()
    wanted = frame.select(report_key(n_quarters).fill_null(-1)).to_series().to_numpy()
    starts = np.flatnonzero(np.diff(wanted, prepend=wanted[:1] - 1))  # a report's rows are consecutive
    position = np.repeat(np.searchsorted(keys, wanted[starts]), np.diff(starts, append=wanted.shape[0]))
    position = position.clip(0, ordered.height - 1)
    found = pl.Series(keys[position] == wanted)
    return [
        pl.select(pl.when(found).then(pl.Series(ordered.get_column(name).to_numpy()[position])))
        .to_series()
        .alias(name)
        for name in ("_report_caseid", "_report_kept")
    ]


def typed_rows(table: str, scans: list[Scan]) -> pl.DataFrame:
    """The typed rows of a child table (its text fields and their typed columns), collected.

    They need nothing from DEMO, so they can be read while DEMO is annotated.
    """
    return _typed(_raw_frame(scans, table), table).collect()


def annotated_children(
    table: str,
    rows: pl.DataFrame,
    reports: pl.DataFrame,
    deleted_ids: pl.Series,
    lookup: pl.DataFrame | None,
    *,
    n_quarters: int,
) -> pl.DataFrame:
    """The annotated rows of a child table.

    Args:
        table: a child table name.
        rows: its :func:`typed_rows`.
        reports: ``_report_key`` (:func:`report_key`), ``_report_caseid``, ``_report_kept`` of the
            kept and deleted DEMO rows, unique on the key.
        deleted_ids: caseids on the DELETE lists.
        lookup: drug-name lookup for DRUG (or None).
        n_quarters: number of quarters coded in ``_quarter_code``.

    Returns:
        The annotated frame. DRUG's drug-name vocabulary is taken from the rows in memory; every
        later step adds columns in one pass over them, which keeps the chunks of all columns
        aligned (an unaligned frame is copied whole by the next query on it).
    """
    keyed = rows.lazy()
    if table == "drug":
        keyed = keyed.with_columns(_drug_key(rows, lookup).alias("drug_key"))
    linked = keyed.with_columns(_with_report(rows, reports, n_quarters))
    case = pl.coalesce("_report_caseid", "caseid")
    annotated = checked(linked, child_rules(table), case.is_in(deleted_ids.implode()))
    return annotated.with_columns(
        pl.when(pl.col(STATUS) == KEPT).then(case).otherwise("caseid").alias("caseid")
    ).collect()


def deleted_lists(files: list[LocalFile], out: Path) -> tuple[pl.Series, dict[str, Any]]:
    """Check and write the DELETE lists (``deleted.parquet``, its rejects); return the distinct deleted
    caseids and the table's report entry."""
    scans = [scan_deleted(f).with_columns(pl.lit(i, pl.UInt32).alias(FILE_CODE)) for i, f in enumerate(files)]
    schema = {"quarter": pl.Utf8, "source_file": pl.Utf8, "line": pl.Int64, "raw_caseid": pl.Utf8,
              "caseid": pl.Int64, FILE_CODE: pl.UInt32}  # fmt: skip
    lists = pl.concat(scans) if scans else pl.LazyFrame(schema=schema)
    checks = rules.RuleSet(row=rules.deleted_list_rules())
    frame = checked(
        lists.with_columns(pl.col("raw_caseid").alias(rules.raw_name("caseid"))), checks, pl.lit(False)
    )
    frame_df = frame.collect()
    written = write_split(frame_df, "deleted", out, checks, columns=["caseid"])
    ids = kept_columns(frame_df, ["caseid"]).get_column("caseid").unique()
    report = table_report(frame_df, "deleted", written, [file_meta(f) for f in files])
    report["distinct_caseids"] = ids.len()
    return ids, report
