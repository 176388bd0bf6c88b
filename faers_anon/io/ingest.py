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

Decisions: the output is written to a sibling staging folder and renamed into place when complete;
an existing output folder is replaced only if it is empty or a previous ingest (it holds
``ingest_report.json``). Drug keys are computed once per distinct (prod_ai, drugname) pair.
"""

from __future__ import annotations

import json
import shutil
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
from knowledge.drug_names import drug_key_expr, load_drug_names

__all__ = ["IngestConfig", "ingest_quarters", "demo_source"]

_META = ("quarter", "source_file", "line")
_OUTPUT_EXTRA = {"demo": ("age_years", "weight_kg", "is_latest"), "drug": ("drug_key",)}
_REPORT_ORDER = (
    "primaryid", "caseid", "caseversion", "i_f_code", "fda_dt", "event_dt", "init_fda_dt", "mfr_dt",
    "rept_dt", "age", "age_cod", "age_grp", "age_years", "sex", "wt", "wt_cod", "weight_kg",
    "occr_country", "reporter_country", "rept_cod", "occp_cod", "mfr_num", "mfr_sndr", "auth_num",
    "lit_ref", "e_sub", "to_mfr", "is_latest",
)  # fmt: skip


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


def _status(row: pl.Expr, deleted: pl.Expr, link: dict[str, pl.Expr]) -> list[pl.Expr]:
    """Status and reason from the row rules' reason, the deletion test and the link rules."""
    row_ok = row.is_null()
    is_deleted = row_ok & deleted
    link_reason = rules.reason(link)
    return [
        pl.when(~row_ok)
        .then(pl.lit(QUARANTINED))
        .when(is_deleted)
        .then(pl.lit(DELETED_STATUS))
        .when(link_reason.is_not_null())
        .then(pl.lit(QUARANTINED))
        .otherwise(pl.lit(KEPT))
        .alias(STATUS),
        pl.when(~row_ok)
        .then(row)
        .when(is_deleted)
        .then(pl.lit(rules.DELETED))
        .otherwise(link_reason)
        .alias(REASON),
    ]


def _annotated_reports(scans: list[ScannedFile], deleted_ids: pl.Series) -> pl.LazyFrame:
    typed = _typed(pl.concat([s.frame for s in scans]), "demo").with_columns(
        pl.col("sex").alias(rules.raw_name("sex")),
        normalize.sex(pl.col("sex")).alias("sex"),
        normalize.age_years(pl.col("age"), pl.col("age_cod")).alias("age_years"),
        normalize.weight_kg(pl.col("wt"), pl.col("wt_cod")).alias("weight_kg"),
        pl.col("caseid").is_in(deleted_ids.implode()).alias("_on_delete_list"),
    )
    row = rules.reason(rules.row_rules("demo"))
    candidate = row.is_null() & ~pl.col("_on_delete_list")
    return typed.with_columns(candidate.alias(rules.CANDIDATE)).with_columns(
        _status(row, pl.col("_on_delete_list"), rules.report_link_rules())
    )


def _annotated_children(
    table: str,
    scans: list[ScannedFile],
    reports: pl.DataFrame,
    deleted_ids: pl.Series,
    lookup: pl.DataFrame | None,
) -> pl.LazyFrame:
    typed = _typed(pl.concat([s.frame for s in scans]), table)
    if table == "drug":
        names = typed.select("prod_ai", "drugname").unique()
        keys = names.with_columns(
            drug_key_expr(pl.col("prod_ai"), pl.col("drugname"), lookup=lookup).alias("drug_key")
        )
        typed = typed.join(
            keys, on=["prod_ai", "drugname"], how="left", nulls_equal=True, maintain_order="left"
        )
    linked = typed.join(reports.lazy(), on=["quarter", "primaryid"], how="left", maintain_order="left")
    row = rules.reason(rules.row_rules(table))
    case = pl.coalesce("_report_caseid", "caseid")
    return linked.with_columns(
        _status(row, case.is_in(deleted_ids.implode()), rules.child_link_rules())
    ).with_columns(pl.when(pl.col(STATUS) == KEPT).then(case).otherwise(pl.col("caseid")).alias("caseid"))


def _write_split(
    frame: pl.DataFrame, table: str, out: Path, *, columns: Sequence[str]
) -> tuple[int, int, int]:
    """Write kept rows and rejects of one annotated table; return (kept, rejected, deleted) rows."""
    name = OUTPUT_NAMES.get(table, table)
    kept = frame.filter(pl.col(STATUS) == KEPT).select(*columns, *_META)
    kept.write_parquet(out / f"{name}.parquet")
    raw = [
        (pl.col(rules.raw_name(c)) if rules.raw_name(c) in frame.columns else pl.col(c))
        .cast(pl.Utf8)
        .alias(c)
        for c in COLUMNS.get(table, {"caseid": Kind.ID})
    ]
    extra = [pl.col(EXTRA_FIELDS)] if EXTRA_FIELDS in frame.columns else []
    rejects = frame.filter(pl.col(STATUS) != KEPT).select(
        "source_file", "line", "quarter", REASON, *raw, *extra
    )
    rejects.write_parquet(out / "rejects" / f"{name}.parquet")
    deleted = int((rejects[REASON] == rules.DELETED).sum())
    return kept.height, rejects.height, deleted


def _file_info(scans: list[ScannedFile]) -> dict[tuple[str | None, str], dict[str, Any]]:
    return {
        (s.file.source.quarter, s.file.source.name): {
            "origin": str(s.file.source.origin),
            "encoding": s.file.encoding,
            "ignored_columns": list(s.ignored_columns),
            "missing_columns": list(s.missing_columns),
        }
        for s in scans
    }


def _table_report(
    frame: pl.DataFrame, table: str, written: tuple[int, int, int], *, scans: list[ScannedFile] | None = None
) -> dict[str, Any]:
    extra = {"padded_short_rows": pl.col(SHORT_ROW)} if SHORT_ROW in frame.columns else None
    files = file_counts(frame, extra=extra)
    kept, rejected, deleted = written
    check_accounting(table, files, kept=kept, rejected=rejected, deleted=deleted)
    info = _file_info(scans or [])
    for f in files:
        f.update(info.get((f["quarter"], f["source_file"]), {}))
    value_rules = rules.value_rules(table) if table in COLUMNS else {}
    return {
        "read": frame.height,
        "kept": kept,
        "quarantined": rejected - deleted,
        "deleted": deleted,
        "reasons": reason_counts(frame),
        "values_nulled": rule_failures(frame.filter(pl.col(STATUS) == KEPT), value_rules),
        "files": files,
    }


def _ingest_deleted(files: list[LocalFile], out: Path) -> tuple[pl.Series, dict[str, Any]]:
    empty = pl.DataFrame(
        schema={
            "quarter": pl.Utf8,
            "source_file": pl.Utf8,
            "line": pl.Int64,
            "raw_caseid": pl.Utf8,
            "caseid": pl.Int64,
        }
    )
    lists = pl.concat([scan_deleted(f) for f in files]).collect() if files else empty
    checks = rules.deleted_list_rules()
    frame = lists.with_columns(
        pl.when(rules.passes(checks)).then(pl.lit(KEPT)).otherwise(pl.lit(QUARANTINED)).alias(STATUS),
        rules.reason(checks).alias(REASON),
        pl.col("raw_caseid").alias(rules.raw_name("caseid")),
    )
    written = _write_split(frame, "deleted", out, columns=["caseid"])
    ids = frame.filter(pl.col(STATUS) == KEPT).get_column("caseid").unique()
    report = _table_report(frame, "deleted", written)
    report["distinct_caseids"] = ids.len()
    for f, local in zip(report["files"], files, strict=False):
        f.update(origin=str(local.source.origin), encoding=local.encoding)
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


def _staging(out: Path) -> Path:
    if out.exists() and (
        not out.is_dir() or (any(out.iterdir()) and not (out / "ingest_report.json").is_file())
    ):
        raise InputError(
            f"{out}: exists and is not an ingest folder "
            "(expected a new or empty folder, or a previous ingest)"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.partial"
    if staging.exists():
        shutil.rmtree(staging)
    (staging / "rejects").mkdir(parents=True)
    (staging / "_work").mkdir()
    return staging


def _run(locals_: list[LocalFile], out: Path, lookup: pl.DataFrame | None) -> dict[str, Any]:
    deleted_ids, deleted_report = _ingest_deleted([f for f in locals_ if f.source.table == "deleted"], out)
    tables: dict[str, Any] = {}
    report_status = pl.DataFrame(
        schema={
            "quarter": pl.Utf8,
            "primaryid": pl.Int64,
            "_report_caseid": pl.Int64,
            "_report_kept": pl.Boolean,
        }
    )
    demo_scans = [scan_table(f, "demo") for f in locals_ if f.source.table == "demo"]
    if demo_scans:
        frame = _annotated_reports(demo_scans, deleted_ids).collect()
        frame = frame.with_columns(
            (pl.col("primaryid") == latest_primaryid().over("caseid")).alias("is_latest")
        )
        written = _write_split(frame, "demo", out, columns=_REPORT_ORDER)
        tables["reports"] = _table_report(frame, "demo", written, scans=demo_scans)
        report_status = (
            frame.filter(pl.col(STATUS) != QUARANTINED)
            .select(
                "quarter",
                "primaryid",
                pl.col("caseid").alias("_report_caseid"),
                (pl.col(STATUS) == KEPT).alias("_report_kept"),
            )
            .sort("_report_kept", descending=True)
            .unique(subset=["quarter", "primaryid"], keep="first")
        )
        del frame
    missing: list[dict[str, str]] = []
    demo_quarters = {s.file.source.quarter for s in demo_scans if s.file.source.quarter is not None}
    for table in CHILD_TABLES:
        scans = [scan_table(f, table) for f in locals_ if f.source.table == table]
        absent = demo_quarters - {s.file.source.quarter for s in scans}
        missing += [{"quarter": q, "table": table} for q in sorted(absent)]
        if not scans:
            continue
        frame = _annotated_children(table, scans, report_status, deleted_ids, lookup).collect()
        columns = [*COLUMNS[table], *_OUTPUT_EXTRA.get(table, ())]
        tables[table] = _table_report(
            frame, table, _write_split(frame, table, out, columns=columns), scans=scans
        )
        del frame
    tables["deleted"] = deleted_report
    return {"tables": tables, "missing_tables": missing, "deleted_caseids": deleted_ids.len()}


def _empty_child(table: str) -> pl.DataFrame:
    column = {"drug": "drug_key", "reac": "pt", "indi": "indi_pt"}[table]
    return pl.DataFrame(schema={"caseid": pl.Int64, column: pl.Utf8})


def _cases(out: Path) -> dict[str, int]:
    def scan(table: str) -> pl.LazyFrame | pl.DataFrame:
        path = out / f"{table}.parquet"
        return pl.scan_parquet(path) if path.exists() else _empty_child(table)

    if not (out / "reports.parquet").exists():
        return {"cases": 0, "with_several_versions": 0}
    cases = merge_versions(pl.scan_parquet(out / "reports.parquet"), scan("drug"), scan("reac"), scan("indi"))
    cases.write_parquet(out / "cases.parquet")
    return {"cases": cases.height, "with_several_versions": int((cases["n_reports"] > 1).sum())}


def ingest_quarters(
    sources: Sequence[Path], out: Path, /, *, config: IngestConfig | None = None
) -> IngestResult:
    """Ingest FAERS quarters from zips, folders or files into the ingested folder ``out``.

    Args:
        sources: FDA zips, folders or FAERS text files (any mix of eras and quarters).
        out: the folder to write (see docs/architecture.md "The ingested folder").
        config: options; ``IngestConfig()`` when None.

    Returns:
        The folder and the content of its ``ingest_report.json``.

    Raises:
        InputError: a source is missing or unreadable, a quarter lacks DEMO, a header lacks a key
            column, or ``out`` is a folder that is neither empty nor a previous ingest.
        ConfigError: no source was given.
    """
    config = config or IngestConfig()
    paths = [Path(p) for p in sources] + ([demo_source()] if config.demo else [])
    if not paths:
        raise InputError("ingest: no sources given (expected FAERS zips or folders, or --demo)")
    found = discover(paths)
    lookup = load_drug_names(config.drug_names) if config.drug_names is not None else None
    staging = _staging(Path(out))
    try:
        locals_ = [materialize(f, staging / "_work") for f in found]
        _demo_missing(locals_)
        done = _run(locals_, staging, lookup)
        quarters = sorted({f.quarter for f in found if f.table in TABLES and f.quarter is not None})
        report = {
            "tool_version": __version__,
            "sources": [str(p) for p in paths],
            "quarters": quarters,
            "drug_names": str(config.drug_names) if config.drug_names else None,
            **done,
            "cases": _cases(staging),
        }
        shutil.rmtree(staging / "_work")
        (staging / "ingest_report.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
        if Path(out).exists():
            shutil.rmtree(out)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return IngestResult(out=Path(out), report=report)
