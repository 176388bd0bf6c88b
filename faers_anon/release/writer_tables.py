"""The release's table rows: pseudonymized and in release order (:func:`released_rows`), then written as
Parquet and FAERS ascii with their row counts (:func:`write_tables`), for
:func:`faers_anon.release.writer.write_release` (layout and row order: its module docstring).

Cost (issue 18 item 6; realistic 400k quarter, ~4.6 M rows over the seven tables): re-ordering the rows
is a gather of every column, so it is done once, on the ingested columns the release can publish
(a dropped column is an empty stand-in: its name is all the manifest needs), after the ids are mapped
on the id columns alone; the sort runs on one Int64 key packing the dense ranks of the order's keys
(:func:`sort_key`) instead of four columns, two of them text. In the ascii text, a text column
without ``$``, CR or LF and an integer column are written as they are: their ascii text
(:func:`faers_anon.io.column_policy.ascii_text`) is the value itself and the CSV writer's decimal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.io.column_policy import ASCII_NAMES, PARQUET_ONLY, ColumnPolicy, ShapedTable, ascii_text
from faers_anon.release.pseudonyms import IdMap

__all__ = [
    "ORDER",
    "PACKED_BITS",
    "published",
    "published_columns",
    "release_quarters",
    "released_rows",
    "sort_key",
    "write_parquet",
    "write_table",
    "write_tables",
]

ORDER = ("quarter", "primaryid", "source_file", "line")
"""Release row order (ties in input order); ``primaryid`` is the report pseudonym."""
PACKED_BITS = 62
"""Bits :func:`sort_key` may pack; more, and the keys are sorted as they are."""
_KEEP = frozenset({"primaryid", "caseid", "quarter", "source_file", "line", "caseversion", "fda_dt"})
_SPECIAL = r"[$\r\n]"


#: Rows per row group of the release's Parquet files (polars' nominal default, given).
ROW_GROUP = 1 << 18


def write_parquet(frame: pl.DataFrame, path: Path) -> None:
    """Parquet with the release's fixed settings (same inputs, same bytes).

    The row-group size is given: without it polars cuts a large frame's row groups and pages where
    its chunks end, and its chunks depend on its thread count (a 436,767-row DRUG chunked 4 ways:
    4 different files, a 105,948-row DEMO 3); with it, the same bytes for every chunking
    (tests/faers_anon/release/test_writer_tables.py). A frame of one chunk under :data:`ROW_GROUP`
    rows is written as before.
    """
    frame.write_parquet(
        path, compression="zstd", compression_level=3, statistics=True, row_group_size=ROW_GROUP
    )


def published(table: str, names: Sequence[str], policy: ColumnPolicy) -> list[str]:
    """The columns of an ingested table (``names``) the writer reads: all but those the policy drops.

    Kept whatever their action: ids, the order's keys, DEMO's ``caseversion`` and ``fda_dt`` (report
    slots, :mod:`faers_anon.release.pseudonyms`), and every OUTC column (its released rows keep its
    schema)."""
    return [c for c in names if table == "outc" or c in _KEEP or policy.action(table, c) != "drop"]


def published_columns(
    table: str, names: Sequence[str], policy: ColumnPolicy, frame: pl.DataFrame
) -> pl.DataFrame:
    """``frame`` (the :func:`published` columns) with every other name of ``names`` as an empty (Null)
    stand-in, in the order of ``names``: the manifest lists the dropped columns by name."""
    kept = set(published(table, names, policy))
    return frame.select(pl.col(c) if c in kept else pl.lit(None, pl.Null).alias(c) for c in names)


def sort_key(frame: pl.DataFrame, keys: Sequence[str], *, bits: int = PACKED_BITS) -> list[pl.Expr]:
    """Expressions sorting ``frame`` as ``keys`` do (ascending; ties left to the caller's stable sort).

    Each key becomes its dense rank among the frame's values (text in polars' order; an integer key
    its offset from the least value when that spans fewer bits than its rank would), and the ranks are
    packed, first key highest, into one Int64: order-preserving maps, so the packed order is the keys'
    order and the same rows tie. The keys themselves when a key has nulls, is neither text nor
    integer, or the ranks need more than ``bits`` bits.
    """
    plain = [pl.col(k) for k in keys]
    if frame.height == 0:
        return plain
    codes: list[tuple[pl.Expr, int]] = []
    for name in keys:
        column = frame.get_column(name)
        if column.null_count() or not (column.dtype == pl.String or column.dtype.is_integer()):
            return plain
        if column.dtype == pl.String:
            values = column.unique().sort()
            code = pl.col(name).replace_strict(
                values, pl.int_range(values.len(), eager=True), return_dtype=pl.Int64
            )
            codes.append((code, values.len() - 1))
            continue
        low, high = int(column.min()), int(column.max())  # type: ignore[arg-type]
        distinct = column.n_unique()
        if (high - low).bit_length() <= (distinct - 1).bit_length():
            codes.append(((pl.col(name).cast(pl.Int64) - low), high - low))
        else:
            codes.append(((pl.col(name).rank("dense").cast(pl.Int64) - 1), distinct - 1))
    if sum(top.bit_length() for _, top in codes) > bits:
        return plain
    packed: pl.Expr = pl.lit(0, pl.Int64)
    for code, top in codes:
        packed = packed * (1 << top.bit_length()) + code
    return [packed]


def released_rows(frame: pl.DataFrame, ids: IdMap) -> pl.DataFrame:
    """``frame`` (an ingested table, :func:`published_columns`) with its ids replaced by their pseudonyms
    (:meth:`IdMap.apply`) and its rows in release order (:data:`ORDER`): one gather (module docstring)."""
    id_columns = [c for c in ("primaryid", "caseid") if c in frame.columns]
    keyed = frame.with_columns(ids.apply(frame.select(id_columns)).get_columns()) if id_columns else frame
    keys = [c for c in ORDER if c in keyed.columns]
    return keyed.sort(sort_key(keyed, keys), maintain_order=True) if keys else keyed


def _ascii_frame(shown: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """The ascii text of a public frame (with ``quarter``), and the text cells whose ``$``, CR or LF
    became a space (module docstring: columns passed as they are)."""
    columns = [c for c in shown.columns if c not in PARQUET_ONLY]
    strings = [c for c in columns if shown.schema[c] == pl.String]
    counts = (
        shown.select(pl.col(c).str.contains(_SPECIAL).fill_null(False).sum() for c in strings).row(0)
        if strings
        else ()
    )
    special = {c for c, n in zip(strings, counts, strict=True) if n}
    as_is = {c for c in columns if (c in strings and c not in special) or shown.schema[c].is_integer()}
    text = shown.select(
        pl.col("quarter").cast(pl.String),
        *(pl.col(c) if c in as_is else ascii_text(c, shown.schema[c]) for c in columns),
    )
    return text, int(sum(counts))


def release_quarters(tables: Mapping[str, pl.DataFrame]) -> list[str]:
    """Every quarter of any table, sorted: each gets all seven ascii files (header only when empty)."""
    return sorted(set().union(*(set(f["quarter"].cast(pl.String).unique()) for f in tables.values())))


def write_table(
    root: Path,
    table: str,
    shape: ShapedTable,
    rows: pl.DataFrame,
    quarters: Sequence[str],
    left_out: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Write ``parquet/<table>.parquet`` and the table's ascii file of each of ``quarters`` under ``root``
    (folders ``ascii`` and ``parquet`` exist); returns its manifest counts (rows in, from ``rows`` and the
    superseded rows ``left_out`` per quarter: rows_in = rows read = ``rows.height`` + left out; out, per
    quarter too; ``superseded_left_out``; replaced ascii cells)."""
    shown = shape.public
    write_parquet(shown, root / "parquet" / f"{table}.parquet")
    text, replaced = _ascii_frame(shown)
    left = dict(left_out or {})
    rows_in = dict(rows.group_by(pl.col("quarter").cast(pl.String)).len().iter_rows())
    rows_out = dict(text.group_by("quarter").len().iter_rows())
    per_quarter = {}
    for quarter in quarters:
        chunk = (
            text.drop("quarter")
            if rows_out.get(quarter) == text.height
            else (text.filter(pl.col("quarter") == quarter).drop("quarter"))
        )
        chunk.write_csv(
            root / "ascii" / f"{ASCII_NAMES[table]}{quarter[2:]}.txt",
            separator="$",
            quote_style="never",
            null_value="",
            line_terminator="\n",
        )
        per_quarter[quarter] = {
            "rows_in": rows_in.get(quarter, 0) + left.get(quarter, 0),
            "rows_out": rows_out.get(quarter, 0),
            "superseded_left_out": left.get(quarter, 0),
        }
    return {
        "rows_in": rows.height + sum(left.values()),
        "rows_out": shown.height,
        "superseded_left_out": sum(left.values()),
        "quarters": per_quarter,
        "ascii_replaced_cells": replaced,
    }


def write_tables(
    root: Path, shaped: Mapping[str, ShapedTable], tables: Mapping[str, pl.DataFrame]
) -> dict[str, Any]:
    """Write ``parquet/<table>.parquet`` and one ascii file per quarter and table under ``root``; returns
    the manifest's counts per table (rows in and out, per quarter too, replaced ascii cells)."""
    (root / "ascii").mkdir()
    (root / "parquet").mkdir()
    quarters = release_quarters(tables)
    return {
        table: write_table(root, table, shape, tables[table], quarters) for table, shape in shaped.items()
    }
