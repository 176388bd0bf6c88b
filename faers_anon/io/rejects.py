"""``rejects/rejects.csv``: every rejected row in words, for a reviewer without Python.

Source: issue 12 item 4; STYLE §4 (quarantine with a named reason). The Parquet reject files of a
folder (``rejects/<table>.parquet``: ``quarter``, ``source_file``, ``line``, ``reason`` …) are listed
in one comma-separated file, one line per rejected row:

``file,line,table,reason,rules`` — the source file and its 1-based physical line (header = 1), the
FAERS table (``DEMO`` … ``RPSR``, ``DELETE``), the reason in words (:data:`faers_anon.io.rules.REASON_WORDS`,
``; ``-joined when several rules failed) and the failed rule names (``;``-joined), sorted by table,
file and line.

Decision: the CSV holds no field of the rejected rows: raw rows carry un-anonymized values (exact
ages, dates, countries), so it is safe beside a public release as well as in an ingested folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.io.ingest_report import REASON
from faers_anon.io.rules import reason_words
from faers_anon.io.schema import OUTPUT_NAMES

__all__ = ["CSV_NAME", "NOT_IN_SOURCE", "note_absence", "write_rejects_csv"]

#: File name of the listing inside ``rejects/``.
CSV_NAME = "rejects.csv"
#: Why a table has no rows because its file is absent (``ingest_report.json`` ``missing_tables``).
NOT_IN_SOURCE = "not in the source"

_FAERS_NAMES = {output: table.upper() for table, output in OUTPUT_NAMES.items()} | {"deleted": "DELETE"}
_ORDER = [*OUTPUT_NAMES.values(), "deleted"]
_SCHEMA = {"file": pl.Utf8, "line": pl.Int64, "table": pl.Utf8, "reason": pl.Utf8, "rules": pl.Utf8}


def _listing(path: Path) -> pl.LazyFrame:
    name = path.stem
    return pl.scan_parquet(path).select(
        pl.col("source_file").cast(pl.Utf8).alias("file"),
        pl.col("line").cast(pl.Int64),
        pl.lit(_FAERS_NAMES.get(name, name.upper())).alias("table"),
        reason_words(pl.col(REASON)).alias("reason"),
        pl.col(REASON).alias("rules"),
        pl.lit(_ORDER.index(name) if name in _ORDER else len(_ORDER)).alias("_order"),
    )


def write_rejects_csv(folder: Path, /) -> int:
    """Write ``folder/rejects.csv`` from the ``*.parquet`` reject files in ``folder``.

    Args:
        folder: a ``rejects/`` folder (of an ingested folder or of a release).

    Returns:
        The number of rows listed (every row of every reject file).
    """
    files = sorted(folder.glob("*.parquet"))
    listed = (
        pl.concat([_listing(p) for p in files]).sort("_order", "file", "line").drop("_order").collect()
        if files
        else pl.DataFrame(schema=_SCHEMA)
    )
    listed.write_csv(folder / CSV_NAME, null_value="", line_terminator="\n")
    return listed.height


def note_absence(entry: dict[str, Any], quarters: list[str], /) -> None:
    """Mark a table entry of the report with the quarters lacking its file, and a note in words."""
    if quarters:
        entry["not_in_source"] = quarters
        entry["note"] = NOT_IN_SOURCE if not entry["files"] else f"{NOT_IN_SOURCE} for {', '.join(quarters)}"
