"""Writing one annotated table: kept rows, rejects with their reason, and its counts.

Source: docs/architecture.md "The ingested folder" (``<table>.parquet``, ``rejects/<table>.parquet``,
``ingest_report.json``); STYLE §4. Rejects are built (with their reason text) only from the rows that
failed, so a table of good rows costs no string work for reasons.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import polars as pl

from faers_anon.io import rules
from faers_anon.io.faers_ascii import EXTRA_FIELDS, SHORT_ROW
from faers_anon.io.ingest_report import (
    KEPT,
    REASON,
    STATUS,
    check_accounting,
    file_counts,
    reason_counts,
    rule_failures,
)
from faers_anon.io.parse import empty_to_null
from faers_anon.io.schema import COLUMNS, OUTPUT_NAMES, Kind
from faers_anon.io.sources import LocalFile

__all__ = [
    "META",
    "COMPRESSION",
    "kept_columns",
    "normalization_counts",
    "write_split",
    "table_report",
    "file_meta",
]

#: Columns every output row carries (docs/architecture.md).
META = ("quarter", "source_file", "line")
#: Parquet codec of the large outputs: LZ4 encodes about a fifth faster than polars' default zstd
#: (encoding is the largest single cost of ingest) and every Parquet reader in use reads it.
COMPRESSION: Final = "lz4"


def write_split(
    frame: pl.DataFrame,
    table: str,
    out: Path,
    checks: rules.RuleSet,
    *,
    columns: Sequence[str],
) -> tuple[int, pl.DataFrame]:
    """Write the kept rows and the rejects (with their reason) of one annotated table.

    The kept rows are streamed into Parquet (filter, projection and ``""`` → null of text columns per
    batch), so the annotated frame is never copied whole; the reject file is small and built eagerly.

    Returns:
        (kept rows in the written file, read back from its metadata; the rejects as written).
    """
    name = OUTPUT_NAMES.get(table, table)
    path = out / f"{name}.parquet"
    text = {c for c, kind in COLUMNS.get(table, {}).items() if kind is Kind.TEXT}
    output = [empty_to_null(pl.col(c)).alias(c) if c in text else pl.col(c) for c in columns]
    kept = frame.lazy().filter(pl.col(STATUS) == KEPT).select(*output, *META)
    kept.sink_parquet(path, compression=COMPRESSION)
    raw = [
        empty_to_null(
            (pl.col(rules.raw_name(c)) if rules.raw_name(c) in frame.columns else pl.col(c)).cast(pl.Utf8)
        ).alias(c)
        for c in COLUMNS.get(table, {"caseid": Kind.ID})
    ]
    extra = [pl.col(EXTRA_FIELDS)] if EXTRA_FIELDS in frame.columns else []
    rejects = (
        frame.lazy()
        .filter(pl.col(STATUS) != KEPT)
        .select("source_file", "line", "quarter", checks.reason().alias(REASON), *raw, *extra)
        .collect()
    )
    rejects.write_parquet(out / "rejects" / f"{name}.parquet")
    return pl.scan_parquet(path).select(pl.len()).collect().item(), rejects


def kept_columns(frame: pl.DataFrame, columns: Sequence[str], /) -> pl.DataFrame:
    """The kept rows of an annotated frame, only ``columns`` (nothing else is copied)."""
    return frame.lazy().filter(pl.col(STATUS) == KEPT).select(columns).collect()


def table_report(
    frame: pl.DataFrame, table: str, written: tuple[int, pl.DataFrame], files: list[dict[str, Any]]
) -> dict[str, Any]:
    """The ``ingest_report.json`` entry of one table, after checking its accounting."""
    kept, rejects = written
    extra = {"padded_short_rows": pl.col(SHORT_ROW)} if SHORT_ROW in frame.columns else None
    counted = file_counts(frame, files, extra=extra)
    deleted = int((rejects.get_column(REASON) == rules.DELETED).sum())
    check_accounting(table, counted, kept=kept, rejected=rejects.height, deleted=deleted)
    value_rules = rules.value_rules(table) if table in COLUMNS else {}
    return {
        "read": frame.height,
        "kept": kept,
        "quarantined": rejects.height - deleted,
        "deleted": deleted,
        "reasons": reason_counts(rejects),
        "values_nulled": rule_failures(frame, value_rules, where=pl.col(STATUS) == KEPT),
        "files": counted,
    }


def file_meta(file: LocalFile, **more: Any) -> dict[str, Any]:
    source = file.source
    return {"quarter": source.quarter, "source_file": source.name, "origin": str(source.origin),
            "encoding": file.encoding, **more}  # fmt: skip


def normalization_counts(frame: pl.DataFrame, /) -> dict[str, Any]:
    """What SPEC §3 normalization did to the kept reports, for ``ingest_report.json``.

    Returns:
        ``age_unit_unknown`` / ``weight_unit_unknown`` (a value with an unknown or blank unit),
        ``age_implausible`` / ``weight_implausible`` (nulled by the limits), ``sex_codes_missing``
        (each non-blank sex code read as missing, with its count), and how many kept reports end
        with ``age_years``, ``weight_kg`` and ``sex`` missing.
    """
    value = rules.value_rules("demo")
    needed = ["age", "age_cod", "age_years", "wt", "wt_cod", "weight_kg", "sex", rules.raw_name("sex")]
    kept = kept_columns(frame, needed)
    names = {"age_cod_known": "age_unit_unknown", "age_plausible": "age_implausible",
             "wt_cod_known": "weight_unit_unknown", "weight_plausible": "weight_implausible"}  # fmt: skip
    counts: dict[str, Any] = {
        label: int(kept.select((~value[rule]).sum()).item()) for rule, label in names.items()
    }
    codes = (
        kept.filter(~value["sex_known"])
        .group_by(pl.col(rules.raw_name("sex")).alias("code"))
        .len()
        .sort("code")
    )
    counts["sex_codes_missing"] = dict(
        zip(codes.get_column("code").to_list(), codes.get_column("len").to_list(), strict=True)
    )
    missing = kept.select(pl.col("age_years", "weight_kg", "sex").null_count())
    counts |= {f"{column}_missing": int(missing.get_column(column).item()) for column in missing.columns}
    return counts
