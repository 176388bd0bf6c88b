"""Writing one annotated table: kept rows, rejects with their reason, and its counts.

Source: docs/architecture.md "The ingested folder" (``<table>.parquet``, ``rejects/<table>.parquet``,
``ingest_report.json``); STYLE §4. Rejects are built (with their reason text) only from the rows that
failed, so a table of good rows costs no string work for reasons.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from polars._typing import PolarsDataType

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
    "Sink",
    "write_table",
    "write_rows",
    "kept_columns",
    "normalization_counts",
    "write_split",
    "table_report",
    "file_meta",
]

#: Columns every output row carries (docs/architecture.md).
META = ("quarter", "source_file", "line")
#: Parquet codec of the outputs: LZ4 encodes faster than zstd and every Parquet reader in use reads it.
COMPRESSION: Final = "lz4"
#: Rows per row group of the tables written slice by slice (:func:`write_rows`), as polars' default.
ROW_GROUP: Final = 1 << 18
#: Values Arrow's column writer encodes per call (its default 1,024): larger batches spend less per
#: batch on levels and validity (DRUG's kept rows: 1.05–1.09 → 0.99–1.00 CPU-s, 5 runs each).
WRITE_BATCH: Final = 1 << 16
#: Rows per data page (Arrow's default, pinned): the one page boundary of the files, at fixed rows.
PAGE_ROWS: Final = 20_000
#: The byte limits of a data page and of a dictionary (Arrow's default 1 MiB each), never reached.
PAGE_BYTES: Final = 1 << 30
#: Text columns of (nearly) one value per row, never dictionary-encoded: hashing them saves nothing.
UNIQUE_TEXT: Final = frozenset({"mfr_num"})


def _arrow_table(frame: pl.DataFrame) -> pa.Table:
    """The frame as an Arrow table without a copy, column by column and chunk by chunk.

    ``DataFrame.to_arrow`` first copies every column into aligned chunks when the columns are
    chunked differently (as columns added by later queries are); Arrow tables allow that as it is.
    """
    level = pl.CompatLevel.newest()
    return pa.Table.from_arrays(
        [
            pa.chunked_array(
                [chunk.to_arrow(compat_level=level) for chunk in column.get_chunks()],
                type=column.head(0).to_arrow(compat_level=level).type,
            )
            for column in frame.get_columns()
        ],
        names=frame.columns,
    )


def write_table(frame: pl.DataFrame, path: Path, /) -> int:
    """Write one output table as Parquet; return the rows in the written file, read from its footer.

    Decision: Parquet encoding is the largest single cost of ingest, and Arrow's C++ encoder, fed the
    frame without a copy (string views stay views), takes about half the CPU time of polars' encoder
    for these text-heavy tables and writes smaller files. Encodings by column type
    (:func:`_parquet_options`): text (and lists of text) and floats in dictionary pages (ages,
    weights and their units repeat), integers and dates (and lists of integers) as deltas
    (``DELTA_BINARY_PACKED``: ids and line numbers mostly grow by small steps), all pages LZ4.
    Column statistics are not written: no reader filters on them. Polars reads the files back with
    the same dtypes.

    Decision (numbers, not text): with plain pages, LZ4 spent most of its time on the integer columns
    (DRUG's ``line`` 0.043 CPU-s and 7.0 MB against 0.020 and 0.01 MB as deltas; ``primaryid``,
    ``caseid``, ``drug_seq`` 2.1-2.6 MB each, 0.4-1.1 as deltas). The seven tables of the realistic
    400k quarter, written as the ingest writes them (7 interleaved rounds, load ≈ 6-7): 2.73 CPU-s
    and 96.6 MB with plain numbers, 2.21 and 49.9 MB now (without LZ4: 2.31 and 58.4 MB).

    Same rows, same bytes, however polars chunked the frame (its chunks depend on its thread count):
    Arrow writes each chunk by itself and checks its byte limits only where a write batch or a chunk
    ends, so a page cut by bytes (1 MiB: e.g. a list column's text) and a dictionary's fallback to
    plain values (a dictionary of 1 MiB: e.g. ``mfr_num``) fell where a chunk ended. Pages are cut by
    rows only (:data:`PAGE_ROWS`, exact wherever chunks end) and a text column keeps its dictionary
    through the row group (:data:`PAGE_BYTES`), without the copy a rechunk would make; a text
    column of one value per row (:data:`UNIQUE_TEXT`) is not dictionary-encoded at all (it fell
    back anyway: keeping its dictionary cost ~0.1 CPU-s at 400k cases).
    """
    pq.write_table(_arrow_table(frame), path, **_parquet_options(frame))
    return int(pq.read_metadata(path).num_rows)


def _value_path(name: str, dtype: pl.DataType) -> tuple[str, PolarsDataType]:
    """The Parquet path of a column's values and their dtype: ``<name>.list.element`` for a list."""
    return (f"{name}.list.element", dtype.inner) if isinstance(dtype, pl.List) else (name, dtype)


def _parquet_options(frame: pl.DataFrame) -> dict[str, Any]:
    """Arrow's writer options for ``frame`` (encodings: :func:`write_table`), each encoding given by the
    Parquet path of a column's values (a list's values are ``<name>.list.element``: its bare name, as
    given before, matched nothing, so the lists of ``cases.parquet`` were written plain: 9.6 MB of LZ4
    pages for ``drug_keys`` at 400k cases, 0.14 CPU-s; dictionary pages 3.2 MB, 0.08-0.12 CPU-s, read
    back in 0.07 against 0.10)."""
    values = [_value_path(name, dtype) for name, dtype in frame.schema.items()]
    text = [path for path, dtype in values if dtype == pl.Utf8 and path not in UNIQUE_TEXT]
    dictionary = text + [path for path, dtype in values if dtype == pl.Float64]
    deltas = {path: "DELTA_BINARY_PACKED" for path, dtype in values if dtype.is_integer() or dtype == pl.Date}
    return {
        "compression": COMPRESSION,
        "use_dictionary": dictionary,
        "column_encoding": deltas,
        "write_statistics": False,
        "write_batch_size": WRITE_BATCH,
        "max_rows_per_page": PAGE_ROWS,
        "data_page_size": PAGE_BYTES,
        "dictionary_pagesize_limit": PAGE_BYTES,
    }


class Sink:
    """The open Parquet writers of one ingest: each output file is written by several calls (one per
    quarter of a cumulative ingest, :mod:`faers_anon.io.cumulative`) and closed once.

    A file is opened by its first write, with that write's schema (every quarter's frame of a table
    has the same columns and dtypes); row groups are appended in the order of the writes. Different
    files may be written from different threads; one file is written by one thread at a time.
    """

    def __init__(self) -> None:
        self._writers: dict[Path, pq.ParquetWriter] = {}
        self._rows: dict[Path, int] = {}
        self._lock = threading.Lock()

    def write(self, path: Path, schema: pl.DataFrame, frames: Iterable[pl.DataFrame], /) -> int:
        """Append ``frames`` (one row group each, made one at a time) to ``path``; return their rows.

        ``schema`` (a frame with the columns of ``frames``, e.g. none of their rows) opens the file.
        """
        with self._lock:
            writer = self._writers.get(path)
            if writer is None:
                head = schema.head(0)
                writer = pq.ParquetWriter(path, _arrow_table(head).schema, **_parquet_options(head))
                self._writers[path], self._rows[path] = writer, 0
        rows = 0
        for frame in frames:
            if frame.height:
                writer.write_table(_arrow_table(frame))
                rows += frame.height
        with self._lock:
            self._rows[path] += rows
        return rows

    def close(self) -> dict[Path, int]:
        """Close every file; return its rows, read from its footer.

        Raises:
            AssertionError: a footer disagrees with the rows written (a bug, never a user error).
        """
        for writer in self._writers.values():
            writer.close()
        footers = {path: int(pq.read_metadata(path).num_rows) for path in self._writers}
        for path, rows in footers.items():
            if rows != self._rows[path]:
                raise AssertionError(f"{path.name}: {rows} rows in the file, {self._rows[path]} written")
        self._writers.clear()
        return footers


def write_rows(
    frame: pl.DataFrame,
    path: Path,
    /,
    *,
    where: pl.Expr,
    columns: Sequence[pl.Expr],
    sink: Sink | None = None,
) -> int:
    """Write ``columns`` of the rows of ``frame`` where ``where`` holds, as :func:`write_table` does.

    The rows are selected, converted and encoded :data:`ROW_GROUP` rows at a time (one row group
    each), so the memory of one slice is reused for the next, instead of a copy of the whole
    table being allocated at once (fresh memory costs the kernel more than the copy itself).
    With ``sink``, the rows are appended to its file ``path``, which stays open.

    Returns:
        The rows written: without ``sink``, read from the written file's footer.
    """

    def selected(rows: pl.DataFrame) -> pl.DataFrame:
        return rows.lazy().filter(where).select(columns).collect()

    if sink is not None:
        return sink.write(path, selected(frame.head(0)), map(selected, frame.iter_slices(ROW_GROUP)))
    empty = selected(frame.head(0))
    with pq.ParquetWriter(path, _arrow_table(empty).schema, **_parquet_options(empty)) as writer:
        for rows in frame.iter_slices(ROW_GROUP):
            writer.write_table(_arrow_table(selected(rows)))
    return int(pq.read_metadata(path).num_rows)


def write_split(
    frame: pl.DataFrame,
    table: str,
    out: Path,
    checks: rules.RuleSet,
    *,
    columns: Sequence[str],
    sink: Sink | None = None,
    kept_to: Path | None = None,
) -> tuple[int, pl.DataFrame]:
    """Write the kept rows and the rejects (with their reason) of one annotated table.

    The kept rows are selected (filter, projection and ``""`` → null of text columns in one query)
    and written slice by slice (:func:`write_rows`); the reject file is small and built from the
    failed rows only. With ``sink`` both are appended to its files (one quarter of several);
    ``kept_to`` stages the kept rows in a file of their own instead, as uncompressed Arrow IPC (read
    back whole by a later pass: no Parquet encoding and decoding).

    Returns:
        (kept rows written, without ``sink`` read back from the file's metadata; the rejects).
    """
    name = OUTPUT_NAMES.get(table, table)
    path = out / f"{name}.parquet"
    text = {c for c, kind in COLUMNS.get(table, {}).items() if kind is Kind.TEXT}
    output = [empty_to_null(pl.col(c)).alias(c) if c in text else pl.col(c) for c in columns]
    kept, selected = pl.col(STATUS) == KEPT, [*output, *map(pl.col, META)]
    if kept_to is not None:
        staged = frame.lazy().filter(kept).select(selected).collect()
        staged.write_ipc(kept_to, compression="uncompressed")
        written = staged.height
    else:
        written = write_rows(frame, path, where=kept, columns=selected, sink=sink)
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
    if sink is None:
        write_table(rejects, out / "rejects" / f"{name}.parquet")
    else:
        sink.write(out / "rejects" / f"{name}.parquet", rejects, [rejects])
    return written, rejects


def kept_columns(frame: pl.DataFrame, columns: Sequence[str], /) -> pl.DataFrame:
    """The kept rows of an annotated frame, only ``columns`` (nothing else is copied)."""
    return frame.lazy().filter(pl.col(STATUS) == KEPT).select(columns).collect()


def table_report(
    frame: pl.DataFrame, table: str, written: tuple[int, pl.DataFrame], files: list[dict[str, Any]]
) -> dict[str, Any]:
    """The ``ingest_report.json`` entry of one table, after checking its accounting."""
    kept, rejects = written
    extra = {"short_rows": pl.col(SHORT_ROW)} if SHORT_ROW in frame.columns else None
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


_QIDS = ("age_years", "weight_kg", "sex")


def normalization_counts(frame: pl.DataFrame, values_nulled: dict[str, int], /) -> dict[str, Any]:
    """What SPEC §3 normalization did to the kept reports, for ``ingest_report.json``.

    Args:
        frame: the annotated DEMO rows.
        values_nulled: the value-rule failures of the kept rows (the report's ``values_nulled``).

    Returns:
        ``age_unit_unknown`` / ``weight_unit_unknown`` (a value with an unknown or blank unit),
        ``age_implausible`` / ``weight_implausible`` (nulled by the limits), ``sex_codes_missing``
        (each non-blank sex code read as missing, with its count), and how many kept reports end
        with ``age_years``, ``weight_kg`` and ``sex`` missing.
    """
    names = {"age_cod_known": "age_unit_unknown", "age_plausible": "age_implausible",
             "wt_cod_known": "weight_unit_unknown", "weight_plausible": "weight_implausible"}  # fmt: skip
    counts: dict[str, Any] = {label: values_nulled[rule] for rule, label in names.items()}
    kept = frame.lazy().filter(pl.col(STATUS) == KEPT)
    codes = (
        kept.filter(~rules.value_rules("demo")["sex_known"])
        .group_by(pl.col(rules.raw_name("sex")).alias("code"))
        .len()
        .sort("code")
    )
    missing = kept.select(**{f"{c}_missing": pl.col(c).null_count() for c in _QIDS})
    code_counts, totals = pl.collect_all([codes, missing])
    counts["sex_codes_missing"] = dict(
        zip(code_counts.get_column("code").to_list(), code_counts.get_column("len").to_list(), strict=True)
    )
    return counts | {label: int(totals.get_column(label).item()) for label in totals.columns}
