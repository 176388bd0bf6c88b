"""Reading small delimited text tables (CSV, TSV, ``;`` or ``|``) as strings, with line numbers."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from knowledge.errors import KnowledgeError

__all__ = ["LINE", "read_text_table", "sniff_separator"]

#: Name of the 1-based physical line column added by ``read_text_table`` (header = line 1).
LINE = "__line__"
_CANDIDATES = ("\t", ",", ";", "|")


def sniff_separator(header: str) -> str:
    """The separator of a header line: the most frequent of tab, comma, semicolon and pipe.

    Ties go to the earlier candidate (tab first: names with commas are common in medical tables,
    tabs inside names are not). A header with none of them is a one-column table: comma.
    """
    counts = [header.count(c) for c in _CANDIDATES]
    best = max(range(len(_CANDIDATES)), key=lambda i: (counts[i], -i))
    return _CANDIDATES[best] if counts[best] > 0 else ","


def read_text_table(path: str | Path) -> pl.DataFrame:
    """Read a delimited file as Utf8 columns plus ``LINE`` (Int64, the physical line, header = 1).

    The separator is sniffed from the header line; ``"`` quotes fields; empty fields are null;
    header names are stripped. Line numbers assume no quoted field spans two lines.

    Raises:
        KnowledgeError: the file is missing, empty, not UTF-8, or has ragged rows.
    """
    path = Path(path)
    if not path.is_file():
        raise KnowledgeError(f"{path}: file not found (expected a CSV or TSV file)")
    try:
        with path.open(encoding="utf-8-sig") as handle:
            header = handle.readline()
    except UnicodeDecodeError as exc:
        raise KnowledgeError(f"{path}:1: not UTF-8 text ({exc.reason}) (expected a CSV or TSV file)") from exc
    if not header.strip():
        raise KnowledgeError(f"{path}:1: empty file (expected a header line)")
    try:
        frame = pl.read_csv(
            path,
            separator=sniff_separator(header),
            infer_schema=False,
            encoding="utf8-lossy",
            row_index_name=LINE,
            row_index_offset=2,
        )
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise KnowledgeError(f"{path}: unreadable table: {first} (expected a CSV or TSV file)") from exc
    return frame.rename({c: c.strip().lstrip("\ufeff") for c in frame.columns if c != LINE}).with_columns(
        pl.col(LINE).cast(pl.Int64)
    )
