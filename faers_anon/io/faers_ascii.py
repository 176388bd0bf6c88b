"""Reading one FAERS ``$``-delimited file as text: a lazy frame of raw fields with line numbers.

Source: SPEC §3 ("read with polars, as strings first, then type"); FORMAT.md §7 (parser checklist).

How a file is read, and why:

* The header line is read on its own: names are matched case-blind, a byte-order mark and spaces
  are removed, and era spellings are unified (:func:`~faers_anon.io.schema.canonical_header`).
  A header that ends with ``$`` (an empty last name) has that empty name dropped.
* Data lines are scanned by polars as one text field each (no quoting, FAERS has none) and split on
  every ``$`` into a list, so the field count of every row is known exactly, in one vectorized pass.
  A row must have the header's width. The trailing ``$``: ``$`` separates fields, so a modern line
  ending in ``$`` simply has an empty last field (REAC's ``drug_rec_act``) and the header's width;
  legacy AERS data lines end with one stray ``$`` their header lacks, so one more field *that is
  empty* is accepted in any era (it holds nothing). More fields (an embedded ``$``, two records on
  one line) fail the ``no_extra_fields`` rule; the surplus is kept as ``extra_fields`` for the
  restricted reject file. (A full split costs less than a bounded ``splitn``, whose substring
  search is slower than the single-byte one of ``split``.) A valid UTF-8 file of
  :data:`KERNEL_MIN_BYTES` or more is split instead by the compiled kernel of
  :mod:`faers_anon.io._split`, which gives the same frame without copying a field; it is compiled
  (≈ 0.1 CPU-s, once per process) when the first such frame is collected, or ahead, in a thread,
  when :func:`compile_kernel_soon` is called (the ingest calls it for the first file that
  :func:`uses_kernel`).
  ``kernel=False`` reads a file by polars whatever its size.
* Short rows (fewer fields than the header, e.g. ``1$2$3`` in DEMO) fail the ``enough_fields``
  rule and are quarantined: their missing fields cannot be told from a record cut short (FORMAT.md
  §7 notes that some loaders pad them; we do not publish a guess). A legacy record broken by an
  embedded newline thus gives two quarantined halves, visible in ``rejects/``.
* A file decided to be UTF-8 with invalid bytes (:mod:`faers_anon.io.sources`) is read with
  ``utf8-lossy``; the lines holding U+FFFD are flagged in :data:`INVALID_BYTES` (rule
  ``valid_encoding``). Other files have no invalid line.
* Blank lines are not records: they are skipped and neither read nor counted. ``line`` is the
  1-based physical line (header = 1), so skipped lines never shift the numbers. CRLF and LF both work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from faers_anon.errors import InputError
from faers_anon.io.parse import empty_to_null, parse_int
from faers_anon.io.schema import COLUMNS, REQUIRED, TABLES, canonical_header
from faers_anon.io.sources import LocalFile, SourceFile, materialize

__all__ = [
    "ScannedFile",
    "read_header",
    "scan_table",
    "uses_kernel",
    "compile_kernel_soon",
    "local_files",
    "scan_deleted",
    "scan_primaryids",
    "empty_frame",
    "EXTRA_FIELDS",
    "SHORT_ROW",
    "INVALID_BYTES",
]

#: Column holding the fields beyond the header's width (null when the width is right).
EXTRA_FIELDS = "extra_fields"
#: Column that is True for a short row (fewer fields than the header; its missing fields are null).
SHORT_ROW = "_short_row"
#: Column that is True for a line holding a byte sequence invalid in the file's encoding.
INVALID_BYTES = "_invalid_bytes"
#: Files of at least this many bytes (and below 2 GiB) are split by the kernel of
#: :mod:`faers_anon.io._split`; smaller ones, and files with invalid bytes, by polars.
KERNEL_MIN_BYTES = 16 << 20
_REPLACEMENT = "\ufffd"
_FIELDS = "_fields"


@dataclass(frozen=True, kw_only=True, slots=True)
class ScannedFile:
    """A FAERS data file as a lazy frame of raw text fields.

    Attributes:
        file: the local file read.
        frame: ``quarter``, ``source_file``, ``line`` (Int64), every canonical column of the table as
            Utf8 (``""`` for an empty field, null for a missing one or a column the era lacks),
            :data:`SHORT_ROW`, :data:`EXTRA_FIELDS` and :data:`INVALID_BYTES`.
        ignored_columns: header names the table does not use (legacy ``image``, ``confid`` …).
        missing_columns: canonical columns the file lacks (read as null).
    """

    file: LocalFile
    frame: pl.LazyFrame
    ignored_columns: tuple[str, ...]
    missing_columns: tuple[str, ...]


def read_header(file: LocalFile) -> list[str]:
    """The header names of a file as found (``\\r\\n`` and a trailing empty name removed).

    Raises:
        InputError: the file is empty.
    """
    errors = "replace" if file.invalid_bytes else "strict"
    with file.path.open("r", encoding="utf-8", errors=errors, newline="") as stream:
        first = stream.readline()
    line = first.rstrip("\r\n")
    if not line.strip():
        raise InputError(
            "empty header line (expected $-delimited column names)", path=file.source.name, line=1
        )
    names = line.split("$")
    if len(names) > 1 and not names[-1].strip():
        names = names[:-1]
    return names


def _scan_lines(file: LocalFile, *, skip_rows: int) -> pl.LazyFrame:
    """Every line after ``skip_rows`` as one Utf8 field ``_raw`` (invalid bytes → U+FFFD)."""
    return pl.scan_csv(
        file.path,
        separator="\x00",
        has_header=False,
        skip_rows=skip_rows,
        infer_schema=False,
        quote_char=None,
        schema={"_raw": pl.Utf8},
        truncate_ragged_lines=True,
        extra_columns="ignore",  # a NUL in the first line too (polars 2.1 refuses it there otherwise)
        raise_if_empty=False,
        encoding="utf8-lossy" if file.invalid_bytes else "utf8",
    )


def _lines(file: LocalFile) -> pl.LazyFrame:
    """Every line after the header as one Utf8 field ``_raw``, with its physical line number."""
    return _scan_lines(file, skip_rows=1).with_row_index("line", offset=2)


def _invalid_bytes(file: LocalFile) -> pl.Expr:
    if not file.invalid_bytes:
        return pl.lit(False).alias(INVALID_BYTES)
    return pl.col("_raw").str.contains(_REPLACEMENT, literal=True).alias(INVALID_BYTES)


def _meta(file: LocalFile) -> list[pl.Expr]:
    return [
        pl.lit(file.source.quarter, pl.Utf8).alias("quarter"),
        pl.lit(file.source.name, pl.Utf8).alias("source_file"),
        pl.col("line").cast(pl.Int64),
    ]


def scan_table(file: LocalFile, table: str, /, *, kernel: bool = True) -> ScannedFile:
    """Scan one data file of ``table`` into raw text columns (nothing is read until collected).

    Args:
        file: a local UTF-8 file of a FAERS data table.
        table: one of :data:`~faers_anon.io.schema.TABLES`.
        kernel: split a large valid file by the compiled kernel (module docstring); False: by polars.

    Returns:
        The scanned file; see :class:`ScannedFile`.

    Raises:
        InputError: the header is empty, repeats a name, or lacks a required column.
    """
    names = canonical_header(table, read_header(file))
    where = file.source.name
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InputError(f"header repeats column {repeated[0]!r} (expected unique names)", path=where, line=1)
    columns = COLUMNS[table]
    for required in REQUIRED[table]:
        if required not in names:
            raise InputError(
                f"{table.upper()} header lacks column {required!r} (expected {', '.join(REQUIRED[table])})",
                path=where,
                line=1,
            )
    width = len(names)
    fields = pl.col(_FIELDS)
    count = fields.list.len()
    by_name = {name: i for i, name in enumerate(names)}
    raw = [
        (fields.list.get(by_name[c], null_on_oob=True) if c in by_name else pl.lit(None, pl.Utf8)).alias(c)
        for c in columns
    ]
    over_ok = (count <= width) | ((count == width + 1) & (fields.list.last() == ""))
    if kernel and uses_kernel(file):
        frame = _split_by_kernel(file, width, {c: by_name[c] for c in columns if c in by_name}, list(columns))
    else:
        frame = (
            _lines(file)
            .filter(pl.col("_raw").is_not_null())
            .select(pl.col("line"), pl.col("_raw").str.split("$").alias(_FIELDS), _invalid_bytes(file))
            .select(
                *_meta(file),
                *raw,
                (count < width).alias(SHORT_ROW),
                pl.when(~over_ok).then(fields.list.slice(width).list.join("$")).alias(EXTRA_FIELDS),
                pl.col(INVALID_BYTES),
            )
        )
    return ScannedFile(
        file=file,
        frame=frame,
        ignored_columns=tuple(n for n in names if n not in columns),
        missing_columns=tuple(c for c in columns if c not in by_name),
    )


def uses_kernel(file: LocalFile, /) -> bool:
    """Whether :func:`scan_table` splits ``file`` by the compiled kernel: a valid UTF-8 file of
    :data:`KERNEL_MIN_BYTES` or more (and below 2 GiB: a view's offset is 32-bit)."""
    return not file.invalid_bytes and KERNEL_MIN_BYTES <= file.path.stat().st_size < 1 << 31


def compile_kernel_soon() -> None:
    """Start compiling the split kernel in a thread (:func:`faers_anon.io._split.compile_soon`)."""
    from faers_anon.io._split import compile_soon  # imports llvmlite: only when a file needs it

    compile_soon()


def local_files(found: Sequence[SourceFile], work: Path, /) -> list[LocalFile]:
    """Each found file made local (:func:`~faers_anon.io.sources.materialize`, in order); the split
    kernel's compile starts in a thread as soon as a data file needs it (:func:`compile_kernel_soon`),
    beside the rest of the ingest's start, instead of when the first large frame is collected."""
    files = []
    for file in found:
        files.append(local := materialize(file, work))
        if file.table in TABLES and uses_kernel(local):
            compile_kernel_soon()
    return files


def _split_by_kernel(
    file: LocalFile, width: int, fields: dict[str, int], columns: Sequence[str]
) -> pl.LazyFrame:
    """The frame of :func:`scan_table` from :func:`faers_anon.io._split.split_file` (a large valid
    UTF-8 file): the same columns and values, split (and the kernel compiled) when the frame is collected."""

    def split() -> pl.DataFrame:
        from faers_anon.io._split import split_file  # imports llvmlite: only for a file this large

        return split_file(file.path, width, fields)

    schema = {"line": pl.Int64, **dict.fromkeys(fields, pl.Utf8), "_count": pl.UInt32, "_surplus": pl.Utf8}
    return pl.defer(split, schema=schema).select(
        *_meta(file),
        *[(pl.col(c) if c in fields else pl.lit(None, pl.Utf8)).alias(c) for c in columns],
        (pl.col("_count") < width).alias(SHORT_ROW),
        pl.col("_surplus").alias(EXTRA_FIELDS),
        pl.lit(False).alias(INVALID_BYTES),
    )


def scan_deleted(file: LocalFile, /) -> pl.LazyFrame:
    """Scan a DELETE list: no header, one caseid per line, blank lines skipped (FORMAT.md §5).

    Returns:
        A lazy frame ``quarter``, ``source_file``, ``line`` (Int64), ``raw_caseid`` (the stripped text)
        and ``caseid`` (Int64, null where the text is not an integer).
    """
    lines = _scan_lines(file, skip_rows=0).with_row_index("line", offset=1)
    text = empty_to_null(pl.col("_raw").str.strip_chars())
    return (
        lines.with_columns(text.alias("raw_caseid"))
        .filter(pl.col("raw_caseid").is_not_null())
        .select(*_meta(file), pl.col("raw_caseid"), parse_int(pl.col("raw_caseid")).alias("caseid"))
    )


def scan_primaryids(file: LocalFile, /) -> pl.LazyFrame:
    """The typed ``primaryid`` (Int64) of every data line of a DEMO file, nothing else read.

    The field at the header's primaryid position of each line split on every ``$``, typed by
    :func:`~faers_anon.io.parse.parse_int`, as :func:`scan_table` and the ingest find and type it; read by
    polars' CSV reader with ``$`` as separator and no quoting (the lines' field counts are not needed).
    So every primaryid the ingest reads from the file is among these (blank, short and malformed lines
    included: a superset). A file whose header cannot be read, or lacks the column, gives no rows: the
    ingest of that file reports it.
    """
    try:
        names = canonical_header("demo", read_header(file))
    except InputError:
        names = []
    if "primaryid" not in names:
        return pl.LazyFrame(schema={"primaryid": pl.Int64})
    width = names.index("primaryid") + 1
    fields = pl.scan_csv(
        file.path,
        separator="$",
        has_header=False,
        skip_rows=1,
        schema={f"_f{i}": pl.Utf8 for i in range(width)},
        extra_columns="ignore",
        quote_char=None,
        truncate_ragged_lines=True,
        raise_if_empty=False,
        encoding="utf8-lossy" if file.invalid_bytes else "utf8",
    )
    return fields.select(parse_int(pl.col(f"_f{width - 1}")).alias("primaryid"))


def empty_frame(table: str, /) -> pl.LazyFrame:
    """The frame :func:`scan_table` gives for ``table``, with no rows: a table not in the source.

    Its columns and dtypes are those of a scanned file, so the ingest writes the absent table with
    the schema of a present one.
    """
    schema: dict[str, pl.DataType] = {"quarter": pl.Utf8(), "source_file": pl.Utf8(), "line": pl.Int64()}
    schema |= {column: pl.Utf8() for column in COLUMNS[table]}
    schema |= {SHORT_ROW: pl.Boolean(), EXTRA_FIELDS: pl.Utf8(), INVALID_BYTES: pl.Boolean()}
    return pl.LazyFrame(schema=schema)
