"""Ingest: FAERS quarterly files → typed, normalized Parquet tables, rejects, cases and a report.

Source: SPEC §3–§4; docs/architecture.md "The ingested folder" (the output contract).

One lazy chain per table, collected once: the raw text of every file of the table (all quarters),
typed (:mod:`faers_anon.io.parse`), normalized (:mod:`faers_anon.io.normalize`, DEMO), checked by the
named rules of :mod:`faers_anon.io.rules`, and given a status: *quarantined* when a row rule fails,
*deleted* when its case is on a DELETE list (of any quarter given), *quarantined* when a link rule
fails, else *kept*. Kept rows go to ``<table>.parquet``; the others to ``rejects/<table>.parquet``
with ``source_file``, ``line``, ``reason`` and their raw text. DEMO is done first; child rows are
joined to its kept (or deleted) reports by (quarter, primaryid), and legacy child rows take their
caseid from there. Then ``cases.parquet`` (:func:`faers_anon.cases.merge_versions`) and
``ingest_report.json``.

Decisions: drug keys are computed once per distinct (prod_ai, drugname) pair; quarter and file are
carried as small integer codes inside the chain (joins, windows and counts on integers), and as the
contract's Utf8 columns in the output.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon import __version__
from faers_anon._paths import bundled
from faers_anon.cases import latest_primaryid, merge_versions
from faers_anon.errors import InputError
from faers_anon.io import normalize, rules
from faers_anon.io.faers_ascii import EXTRA_FIELDS, SHORT_ROW, ScannedFile, scan_deleted, scan_table
from faers_anon.io.ingest_report import (
    DELETED_STATUS,
    FILE_CODE,
    KEPT,
    QUARANTINED,
    REASON,
    STATUS,
    IngestResult,
    check_accounting,
    file_counts,
    reason_counts,
    rule_failures,
)
from faers_anon.io.parse import empty_to_null, parse
from faers_anon.io.schema import CHILD_TABLES, COLUMNS, OUTPUT_NAMES, TABLES, Kind
from faers_anon.io.sources import LocalFile, discover, materialize
from faers_anon.io.staging import REPORT_NAME, discard, open_staging, publish
from knowledge.drug_names import drug_key_expr, load_drug_names

__all__ = ["IngestConfig", "ingest_quarters", "demo_source"]

_META = ("quarter", "source_file", "line")
_OUTPUT_EXTRA = {"drug": ("drug_key",)}
_REPORT_ORDER = (
    "primaryid", "caseid", "caseversion", "i_f_code", "fda_dt", "event_dt", "init_fda_dt", "mfr_dt",
    "rept_dt", "age", "age_cod", "age_grp", "age_years", "sex", "wt", "wt_cod", "weight_kg",
    "occr_country", "reporter_country", "rept_cod", "occp_cod", "mfr_num", "mfr_sndr", "auth_num",
    "lit_ref", "e_sub", "to_mfr", "is_latest",
)  # fmt: skip
_CASE_COLUMNS = {
    "demo": ("caseid", "primaryid", "caseversion", "fda_dt", "quarter", "age_years", "sex", "weight_kg"),
    "drug": ("caseid", "drug_key"),
    "reac": ("caseid", "pt"),
    "indi": ("caseid", "indi_pt"),
}


@dataclass(frozen=True, kw_only=True, slots=True)
class IngestConfig:
    """Options of ``faers-anon ingest``.

    Attributes:
        demo: also ingest the bundled demo quarter (``faers_anon/data/demo/*.zip``).
        drug_names: optional brand → ingredient lookup for ``drug_key``
            (``knowledge.drug_names.load_drug_names``), e.g. FDA's ``unii_names_bn_of.tsv``.
    """

    demo: bool = False
    drug_names: Path | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class _Scan:
    """A scanned file with the integer codes of its file (index in its table) and quarter."""

    scan: ScannedFile
    file_code: int
    quarter_code: int


def demo_source() -> Path:
    """The bundled demo quarter: the zip in ``faers_anon/data/demo``.

    Raises:
        InputError: no zip is bundled there.
    """
    zips = sorted(bundled("demo").glob("*.zip"))
    if not zips:
        raise InputError(f"{bundled('demo')}: bundled demo quarter not found (expected one *.zip there)")
    return zips[0]


def _typed(frame: pl.LazyFrame, table: str) -> pl.LazyFrame:
    """Type every column; keep the verbatim text of typed columns as ``_raw_<name>``."""
    exprs: list[pl.Expr] = []
    for column, kind in COLUMNS[table].items():
        if kind is not Kind.TEXT:
            exprs.append(empty_to_null(pl.col(column)).alias(rules.raw_name(column)))
        exprs.append(parse(pl.col(column), kind).alias(column))
    return frame.with_columns(exprs)


def _checked(frame: pl.LazyFrame, checks: rules.RuleSet, on_delete_list: pl.Expr) -> pl.LazyFrame:
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


def _raw_frame(scans: list[_Scan]) -> pl.LazyFrame:
    return pl.concat(
        [
            s.scan.frame.with_columns(
                pl.lit(s.file_code, pl.UInt32).alias(FILE_CODE),
                pl.lit(s.quarter_code, pl.UInt32).alias(rules.QUARTER_CODE),
            )
            for s in scans
        ]
    )


def _annotated_reports(scans: list[_Scan], deleted_ids: pl.Series) -> pl.LazyFrame:
    typed = _typed(_raw_frame(scans), "demo").with_columns(
        pl.col("sex").alias(rules.raw_name("sex")),
        normalize.sex(pl.col("sex")).alias("sex"),
        normalize.age_years(pl.col("age"), pl.col("age_cod")).alias("age_years"),
        normalize.weight_kg(pl.col("wt"), pl.col("wt_cod")).alias("weight_kg"),
    )
    checks = rules.RuleSet(row=rules.row_rules("demo"), link=rules.report_link_rules())
    checked = _checked(typed, checks, pl.col("caseid").is_in(deleted_ids.implode()))
    return checked.with_columns((pl.col("primaryid") == latest_primaryid().over("caseid")).alias("is_latest"))


def _annotated_children(
    table: str,
    scans: list[_Scan],
    reports: pl.DataFrame,
    deleted_ids: pl.Series,
    lookup: pl.DataFrame | None,
) -> pl.LazyFrame:
    typed = _typed(_raw_frame(scans), table)
    if table == "drug":
        names = typed.select("prod_ai", "drugname").unique()
        key = drug_key_expr(pl.col("prod_ai"), pl.col("drugname"), lookup=lookup)
        typed = typed.join(
            names.with_columns(key.alias("drug_key")),
            on=["prod_ai", "drugname"],
            how="left",
            nulls_equal=True,
            maintain_order="left",
        )
    linked = typed.join(
        reports.lazy(), on=[rules.QUARTER_CODE, "primaryid"], how="left", maintain_order="left"
    )
    case = pl.coalesce("_report_caseid", "caseid")
    checks = rules.RuleSet(row=rules.row_rules(table), link=rules.child_link_rules())
    checked = _checked(linked, checks, case.is_in(deleted_ids.implode()))
    return checked.with_columns(
        pl.when(pl.col(STATUS) == KEPT).then(case).otherwise("caseid").alias("caseid")
    )


def _write_split(
    frame: pl.DataFrame, table: str, out: Path, checks: rules.RuleSet, *, columns: Sequence[str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Write the kept rows and the rejects (with their reason) of one annotated table."""
    name = OUTPUT_NAMES.get(table, table)
    rejected = int((frame.get_column(STATUS) != KEPT).sum())
    kept = frame if rejected == 0 else frame.filter(pl.col(STATUS) == KEPT)  # no copy when all are kept
    kept = kept.select(*columns, *_META)
    kept.write_parquet(out / f"{name}.parquet")
    raw = [
        (pl.col(rules.raw_name(c)) if rules.raw_name(c) in frame.columns else pl.col(c))
        .cast(pl.Utf8)
        .alias(c)
        for c in COLUMNS.get(table, {"caseid": Kind.ID})
    ]
    extra = [pl.col(EXTRA_FIELDS)] if EXTRA_FIELDS in frame.columns else []
    rejects = frame.filter(pl.col(STATUS) != KEPT).select(
        "source_file", "line", "quarter", checks.reason().alias(REASON), *raw, *extra
    )
    rejects.write_parquet(out / "rejects" / f"{name}.parquet")
    return kept, rejects


def _table_report(
    frame: pl.DataFrame, table: str, written: tuple[pl.DataFrame, pl.DataFrame], files: list[dict[str, Any]]
) -> dict[str, Any]:
    kept, rejects = written
    extra = {"padded_short_rows": pl.col(SHORT_ROW)} if SHORT_ROW in frame.columns else None
    counted = file_counts(frame, files, extra=extra)
    deleted = int((rejects.get_column(REASON) == rules.DELETED).sum())
    check_accounting(table, counted, kept=kept.height, rejected=rejects.height, deleted=deleted)
    value_rules = rules.value_rules(table) if table in COLUMNS else {}
    return {
        "read": frame.height,
        "kept": kept.height,
        "quarantined": rejects.height - deleted,
        "deleted": deleted,
        "reasons": reason_counts(rejects),
        "values_nulled": rule_failures(frame, value_rules, where=pl.col(STATUS) == KEPT),
        "files": counted,
    }


def _file_meta(file: LocalFile, **more: Any) -> dict[str, Any]:
    source = file.source
    return {"quarter": source.quarter, "source_file": source.name, "origin": str(source.origin),
            "encoding": file.encoding, **more}  # fmt: skip


def _ingest_deleted(files: list[LocalFile], out: Path) -> tuple[pl.Series, dict[str, Any]]:
    scans = [scan_deleted(f).with_columns(pl.lit(i, pl.UInt32).alias(FILE_CODE)) for i, f in enumerate(files)]
    schema = {"quarter": pl.Utf8, "source_file": pl.Utf8, "line": pl.Int64, "raw_caseid": pl.Utf8,
              "caseid": pl.Int64, FILE_CODE: pl.UInt32}  # fmt: skip
    lists = pl.concat(scans) if scans else pl.LazyFrame(schema=schema)
    checks = rules.RuleSet(row=rules.deleted_list_rules())
    frame = _checked(
        lists.with_columns(pl.col("raw_caseid").alias(rules.raw_name("caseid"))), checks, pl.lit(False)
    )
    frame_df = frame.collect()
    written = _write_split(frame_df, "deleted", out, checks, columns=["caseid"])
    ids = written[0].get_column("caseid").unique()
    report = _table_report(frame_df, "deleted", written, [_file_meta(f) for f in files])
    report["distinct_caseids"] = ids.len()
    return ids, report


def _demo_missing(files: list[LocalFile]) -> None:
    with_data = {f.source.quarter for f in files if f.source.table in TABLES}
    with_demo = {f.source.quarter for f in files if f.source.table == "demo"}
    for quarter in sorted(q for q in with_data - with_demo if q is not None):
        names = sorted({f.source.name for f in files if f.source.quarter == quarter})
        raise InputError(
            f"{quarter}: DEMO file missing "
            f"(expected DEMO{quarter[2:4]}Q{quarter[-1]}.txt beside {', '.join(names)})"
        )


def _scans(files: list[LocalFile], table: str, quarters: list[str]) -> list[_Scan]:
    chosen = [f for f in files if f.source.table == table]
    return [
        _Scan(scan=scan_table(f, table), file_code=i, quarter_code=quarters.index(f.source.quarter or ""))
        for i, f in enumerate(chosen)
    ]


def _meta(scans: list[_Scan]) -> list[dict[str, Any]]:
    return [
        _file_meta(
            s.scan.file,
            ignored_columns=list(s.scan.ignored_columns),
            missing_columns=list(s.scan.missing_columns),
        )
        for s in scans
    ]


def _run(
    files: list[LocalFile], out: Path, lookup: pl.DataFrame | None, quarters: list[str]
) -> dict[str, Any]:
    case_inputs: dict[str, pl.DataFrame] = {}
    deleted_ids, deleted_report = _ingest_deleted([f for f in files if f.source.table == "deleted"], out)
    tables: dict[str, Any] = {}
    report_status = pl.DataFrame(schema={rules.QUARTER_CODE: pl.UInt32, "primaryid": pl.Int64,
                                         "_report_caseid": pl.Int64, "_report_kept": pl.Boolean})  # fmt: skip
    demo_scans = _scans(files, "demo", quarters)
    if demo_scans:
        frame = _annotated_reports(demo_scans, deleted_ids).collect()
        checks = rules.RuleSet(row=rules.row_rules("demo"), link=rules.report_link_rules())
        written = _write_split(frame, "demo", out, checks, columns=_REPORT_ORDER)
        tables["reports"] = _table_report(frame, "demo", written, _meta(demo_scans))
        case_inputs["demo"] = written[0].select(_CASE_COLUMNS["demo"])
        report_status = (
            frame.lazy()
            .filter(pl.col(STATUS) != QUARANTINED)
            .select(
                rules.QUARTER_CODE,
                "primaryid",
                pl.col("caseid").alias("_report_caseid"),
                (pl.col(STATUS) == KEPT).alias("_report_kept"),
            )  # fmt: skip
            .sort("_report_kept", descending=True)
            .unique(subset=[rules.QUARTER_CODE, "primaryid"], keep="first")
            .collect()
        )
        del frame, written
    missing: list[dict[str, str]] = []
    demo_quarters = {s.scan.file.source.quarter for s in demo_scans}
    for table in CHILD_TABLES:
        scans = _scans(files, table, quarters)
        absent = demo_quarters - {s.scan.file.source.quarter for s in scans}
        missing += [{"quarter": q, "table": table} for q in sorted(q for q in absent if q is not None)]
        if not scans:
            continue
        frame = _annotated_children(table, scans, report_status, deleted_ids, lookup).collect()
        checks = rules.RuleSet(row=rules.row_rules(table), link=rules.child_link_rules())
        columns = [*COLUMNS[table], *_OUTPUT_EXTRA.get(table, ())]
        written = _write_split(frame, table, out, checks, columns=columns)
        tables[table] = _table_report(frame, table, written, _meta(scans))
        if table in _CASE_COLUMNS:
            case_inputs[table] = written[0].select(_CASE_COLUMNS[table])
        del frame, written
    tables["deleted"] = deleted_report
    return {"tables": tables, "missing_tables": missing, "deleted_caseids": deleted_ids.len(),
            "cases": _cases(out, case_inputs)}  # fmt: skip


def _cases(out: Path, inputs: dict[str, pl.DataFrame]) -> dict[str, int]:
    """Write ``cases.parquet`` from the kept rows; a missing child table contributes empty lists."""
    if "demo" not in inputs:
        return {"cases": 0, "with_several_versions": 0}
    empty = {
        t: pl.DataFrame(schema={c: pl.Int64 if c == "caseid" else pl.Utf8 for c in _CASE_COLUMNS[t]})
        for t in ("drug", "reac", "indi")
    }
    cases = merge_versions(inputs["demo"], *(inputs.get(t, empty[t]) for t in ("drug", "reac", "indi")))
    cases.write_parquet(out / "cases.parquet")
    return {"cases": cases.height, "with_several_versions": int((cases.get_column("n_reports") > 1).sum())}


def ingest_quarters(
    sources: Sequence[Path], out: Path, /, *, config: IngestConfig | None = None
) -> IngestResult:
    """Ingest FAERS quarters from zips, folders or files into the ingested folder ``out``.

    Args:
        sources: FDA zips, folders or FAERS text files (any mix of eras and quarters).
        out: the folder to write (see docs/architecture.md "The ingested folder"); it appears only
            when complete (:mod:`faers_anon.io.staging`).
        config: options; ``IngestConfig()`` when None.

    Returns:
        The folder and the content of its ``ingest_report.json``.

    Raises:
        InputError: no source given, a source missing or unreadable, a quarter without DEMO, a header
            without a key column, or ``out`` a folder that is neither empty nor a previous ingest.
        KnowledgeError: the drug-name lookup cannot be read.
    """
    config = config or IngestConfig()
    paths = [Path(p) for p in sources] + ([demo_source()] if config.demo else [])
    if not paths:
        raise InputError("ingest: no sources given (expected FAERS zips or folders, or --demo)")
    found = discover(paths)
    lookup = load_drug_names(config.drug_names) if config.drug_names is not None else None
    quarters = sorted({f.quarter for f in found if f.quarter is not None})
    staging = open_staging(Path(out))
    try:
        files = [materialize(f, staging / "_work") for f in found]
        _demo_missing(files)
        done = _run(files, staging, lookup, quarters)
        report = {
            "tool_version": __version__,
            "sources": [str(p) for p in paths],
            "quarters": sorted({f.quarter for f in found if f.table in TABLES and f.quarter is not None}),
            "drug_names": str(config.drug_names) if config.drug_names else None,
            **done,
        }
        (staging / REPORT_NAME).write_text(json.dumps(report, indent=2, default=str) + "\n")
        publish(staging, Path(out))
    except BaseException:
        discard(staging)
        raise
    return IngestResult(out=Path(out), report=report)
