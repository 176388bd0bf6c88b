"""Counting what ingest did: per table and file, read = kept + quarantined + deleted, exactly.

Source: STYLE §4 ("every step that drops or moves rows checks rows_in == kept + quarantined");
docs/architecture.md ``ingest_report.json``. The counts come from the status column of the one
annotated frame per table, and are checked against the rows actually written; a mismatch is a bug
and raises ``AssertionError`` (it is not a user error).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

__all__ = [
    "KEPT",
    "QUARANTINED",
    "DELETED_STATUS",
    "STATUS",
    "REASON",
    "DELETED_REASON",
    "FILE_CODE",
    "IngestResult",
    "file_counts",
    "reason_counts",
    "rule_failures",
    "check_accounting",
]

KEPT, QUARANTINED, DELETED_STATUS = "kept", "quarantined", "deleted"
#: Status column of an annotated frame (one of the three values above).
STATUS = "_status"
#: Reason column: failed rule names, ``;``-joined; null for kept rows.
REASON = "reason"
#: Reason of the rows of deleted cases.
DELETED_REASON = "caseid_deleted"
#: Column with the index of the file a row was read from.
FILE_CODE = "_file_code"


def file_counts(
    frame: pl.DataFrame, files: Sequence[Mapping[str, Any]], /, *, extra: Mapping[str, pl.Expr] | None = None
) -> list[dict[str, Any]]:
    """Counts per file, in the order the files were read; files without rows count zeros.

    Args:
        frame: an annotated frame with :data:`FILE_CODE` (index into ``files``) and :data:`STATUS`.
        files: one metadata dict per file (``quarter``, ``source_file`` first), indexed by file code.
        extra: more per-file sums, name → boolean expression.

    Returns:
        One dict per file: its metadata's quarter and source_file, read, kept, quarantined, deleted,
        the extras, then the rest of its metadata.
    """
    status = pl.col(STATUS)
    sums = {
        "read": pl.len().cast(pl.Int64),
        "kept": (status == KEPT).sum().cast(pl.Int64),
        "quarantined": (status == QUARANTINED).sum().cast(pl.Int64),
        "deleted": (status == DELETED_STATUS).sum().cast(pl.Int64),
    }
    sums |= {name: expr.sum().cast(pl.Int64) for name, expr in (extra or {}).items()}
    # Lazy, so only the counted columns are read, chunk by chunk (no copy of the table).
    grouped = frame.lazy().group_by(FILE_CODE).agg(**sums).collect()
    by_code = {row.pop(FILE_CODE): row for row in grouped.to_dicts()}
    zeros = dict.fromkeys(sums, 0)
    counted = []
    for code, meta in enumerate(files):
        head = {"quarter": meta.get("quarter"), "source_file": meta.get("source_file")}
        counted.append({**head, **by_code.get(code, zeros), **meta})
    return counted


def reason_counts(rejects: pl.DataFrame, /) -> dict[str, int]:
    """How many quarantined rows failed each rule (a row failing two rules counts for both).

    Args:
        rejects: rejected rows with their ``reason``; deleted rows (``caseid_deleted``) are skipped.
    """
    failed = (
        rejects.lazy()
        .filter(pl.col(REASON) != DELETED_REASON)
        .select(pl.col(REASON).str.split(";").alias("rule"))
        .explode("rule")
        .group_by("rule")
        .len()
        .sort("rule")
        .collect()
    )
    return dict(zip(failed["rule"].to_list(), failed["len"].to_list(), strict=True))


def rule_failures(
    frame: pl.DataFrame, rules: Mapping[str, pl.Expr], /, *, where: pl.Expr | None = None
) -> dict[str, int]:
    """How many rows of ``frame`` (those where ``where`` holds, if given) fail each rule; 0 if none."""
    if not rules:
        return {}
    mask = pl.lit(True) if where is None else where
    sums = {name: (mask & ~rule).sum().cast(pl.Int64) for name, rule in rules.items()}
    counts = frame.lazy().select(**sums).collect()
    return {name: int(counts[name][0] or 0) for name in rules}


def check_accounting(
    table: str, files: list[dict[str, Any]], *, kept: int, rejected: int, deleted: int
) -> None:
    """Check read == kept + quarantined + deleted per file and against the rows written.

    Args:
        table: table name, for the message.
        files: :func:`file_counts` of the table.
        kept: rows written to the table.
        rejected: rows written to its reject file (quarantined and deleted).
        deleted: of those, rows with reason ``caseid_deleted``.

    Raises:
        AssertionError: the counts disagree (a bug in ingest, never a user error).
    """
    for f in files:
        if f["read"] != f["kept"] + f["quarantined"] + f["deleted"]:
            raise AssertionError(f"{f['source_file']}: read {f['read']} != kept + quarantined + deleted")
    read = sum(f["read"] for f in files)
    if read != kept + rejected or sum(f["kept"] for f in files) != kept:
        raise AssertionError(f"{table}: read {read} != kept {kept} + rejected {rejected}")
    if sum(f["deleted"] for f in files) != deleted:
        raise AssertionError(f"{table}: deleted rows disagree with the reject file")


@dataclass(frozen=True, kw_only=True, slots=True)
class IngestResult:
    """What one ingest produced.

    Attributes:
        out: the ingested folder.
        report: the content of ``ingest_report.json``.
    """

    out: Path
    report: dict[str, Any]

    def summary(self) -> str:
        """A few lines for the terminal: quarters, per-table counts, cases, where the report is."""
        quarters = ", ".join(self.report["quarters"]) or "none"
        lines = [f"Ingested {len(self.report['quarters'])} quarter(s) ({quarters}) into {self.out}"]
        for name, table in self.report["tables"].items():
            note = table.get("note")
            if note and not table["files"]:
                lines.append(f"  {name.upper()}: {note}")
                continue
            lines.append(
                f"  {name:<8} read {table['read']:>9,}  kept {table['kept']:>9,}  "
                f"quarantined {table['quarantined']:>7,}  deleted {table['deleted']:>7,}"
                + (f"  ({name.upper()} {note})" if note else "")
            )
        for q in self.report.get("by_quarter", []) if len(self.report.get("by_quarter", [])) > 1 else []:
            lines.append(
                f"  {q['quarter']} ({q['era']}) read {q['read']:>9,}  latest {q['latest']:>9,}  "
                f"superseded {q['superseded']:>7,}  deleted {q['deleted']:>7,}  "
                f"quarantined {q['quarantined']:>7,}"
            )
        cases = self.report["cases"]
        lines.append(
            f"  cases    {cases['cases']:,} ({cases['with_several_versions']:,} with several versions)"
        )
        lines += [f"Warning: {w}" for w in self.report.get("warnings", [])]
        lines.append(f"Report: {self.out / 'ingest_report.json'}")
        return "\n".join(lines)
