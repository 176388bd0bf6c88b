"""Splitting a FAERS file's lines into ``$`` fields in one pass over its bytes (a numba kernel).

Source: the reading rules of :mod:`faers_anon.io.faers_ascii` (its module docstring), which the
kernel reproduces for a valid UTF-8 file exactly as polars' line reader and ``str.split`` give them:
physical line numbers (header = 1); a line's text ends at its ``\\n`` or at its first NUL byte
(polars' line reader splits on NUL), less one ``\\r`` before that end; an empty text is a blank line
(skipped, counted); field ``i`` of ``text.split("$")`` is null beyond the row's field count; the
surplus of a row failing ``no_extra_fields`` is the text after the header width's ``$``.

Decision (speed): the polars path reads each line as text (cheap: views of the file), splits it into
a list of new strings and takes each field out of the list: on the realistic 400k quarter's DRUG
(1.76 M lines × 20 fields) ≈ 1.4 CPU-s, against ≈ 0.6 for this kernel, which writes each field's
Arrow string *view* (16 bytes: the length and up to 12 bytes inline, else a 4-byte prefix and the
offset into the file's mapped bytes), so no field is copied, and polars takes the views as they are.
Used for files of :data:`faers_anon.io.faers_ascii.KERNEL_MIN_BYTES` or more (below, importing numba
costs more than it saves); tests check that both paths give the same frame.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import numpy as np
import polars as pl
import pyarrow as pa

from faers_anon._numba_cache import mode, njit

__all__ = ["MAX_BYTES", "split_file"]

#: Largest file the kernel reads: a view's offset is 32-bit.
MAX_BYTES: Final = (1 << 31) - 1
_DOLLAR, _LF, _CR, _NUL = 36, 10, 13, 0


@njit(cache=True, inline="always")
def _view(data: Any, a: int, b: int) -> tuple[Any, Any]:
    """The Arrow view of ``data[a:b]`` as two little-endian words: (length | 4 bytes, 8 bytes inline)
    when at most 12 bytes long, else (length | prefix, buffer 0 | offset ``a``)."""
    n = b - a
    w0 = np.uint64(n)
    w1 = np.uint64(0)
    if n <= 12:
        m = n if n < 4 else 4
        for t in range(m):
            w0 |= np.uint64(data[a + t]) << np.uint64(32 + 8 * t)
        for t in range(4, n):
            w1 |= np.uint64(data[a + t]) << np.uint64(8 * (t - 4))
    else:
        for t in range(4):
            w0 |= np.uint64(data[a + t]) << np.uint64(32 + 8 * t)
        w1 = np.uint64(a) << np.uint64(32)
    return w0, w1


def _count_lines(data: np.ndarray, start: int) -> int:
    """Lines from byte ``start`` on (a last line without ``\\n`` counts).

    numpy's compare and count, 4 MiB at a time (no large temporary): 0.035 CPU-s for the realistic
    400k quarter's DRUG (160 MB), against 0.09 for a numba loop.
    """
    step = 1 << 22
    chunks = range(start, data.shape[0], step)
    return 1 + sum(int(np.count_nonzero(data[i : i + step] == _LF)) for i in chunks)


@njit(cache=True)
def _split(data: Any, start: int, width: int, slot: Any, views: Any, out: Any) -> int:
    """Split the lines of ``data`` from byte ``start`` (line 2); return the rows written.

    ``slot[f]``: the output column of header field ``f`` (-1: not kept). Per row, into zeroed
    arrays: the view of each kept field present in ``views[slot[f], row]``, of the surplus fields in
    ``views[-1, row]`` (only when they fail ``no_extra_fields``), the line number in ``out[0, row]``
    and the field count in ``out[1, row]``.
    """
    n_bytes = data.shape[0]
    extra = views.shape[0] - 1
    i = start
    row = 0
    line = 2
    while i < n_bytes:
        f = 0
        begin = i
        surplus = i
        end = n_bytes
        stop = -1
        p = i
        while p < n_bytes:
            b = data[p]
            if b == _DOLLAR:
                if stop < 0:
                    if f < width:
                        c = slot[f]
                        if c >= 0:
                            w0, w1 = _view(data, begin, p)
                            views[c, row, 0] = w0
                            views[c, row, 1] = w1
                    f += 1
                    begin = p + 1
                    if f == width:
                        surplus = begin
            elif b == _LF:
                end = p
                break
            elif b == _NUL:
                if stop < 0:
                    stop = p
            p += 1
        if stop < 0:
            stop = end
        if stop > i and data[stop - 1] == _CR:
            stop -= 1
        if stop > i:
            if f < width:
                c = slot[f]
                if c >= 0:
                    w0, w1 = _view(data, begin, stop)
                    views[c, row, 0] = w0
                    views[c, row, 1] = w1
            f += 1
            if f > width and not (f == width + 1 and data[stop - 1] == _DOLLAR):
                w0, w1 = _view(data, surplus, stop)
                views[extra, row, 0] = w0
                views[extra, row, 1] = w1
            out[0, row] = line
            out[1, row] = f
            row += 1
        line += 1
        i = end + 1
    return row


def _column(views: np.ndarray, valid: np.ndarray | None, data: pa.Buffer) -> pl.Series:
    """One Utf8 column of views over ``data``; ``valid`` None when no value is null."""
    rows = views.shape[0]
    nulls = 0 if valid is None else rows - int(np.count_nonzero(valid))
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls and valid is not None else None
    array = pa.Array.from_buffers(
        pa.string_view(), rows, [bitmap, pa.py_buffer(views), data], null_count=nulls
    )
    return pl.Series(array)


def split_file(path: Path, width: int, fields: dict[str, int]) -> pl.DataFrame:
    """The data lines of a valid UTF-8 file of at most :data:`MAX_BYTES` split on ``$``.

    Args:
        path: the file; its first line (the header) is skipped.
        width: the header's field count.
        fields: output column → its field index in the header.

    Returns:
        ``line`` (Int64), the ``fields`` columns (Utf8; null beyond a row's field count),
        ``_count`` (UInt32, the row's fields) and ``_surplus`` (Utf8: the text after the
        ``width``-th ``$`` of a row failing ``no_extra_fields``, else null); one row per non-blank line.
    """
    with path.open("rb") as stream:
        start = len(stream.readline())  # the header line with its newline
    mapped = pa.memory_map(str(path), "r")
    buffer = mapped.read_buffer()
    data = np.frombuffer(buffer, dtype=np.uint8)
    slot = np.full(max(width, 1), -1, dtype=np.int64)
    for c, f in enumerate(fields.values()):
        slot[f] = c
    lines = _count_lines(data, start) if start < data.shape[0] else 0
    with mode("compiled"):
        views = np.zeros((len(fields) + 1, lines, 2), dtype=np.uint64)
        out = np.zeros((2, lines), dtype=np.uint32)
        rows = _split(data, start, width, slot, views, out) if lines else 0
    count = out[1, :rows]
    fewest = int(count.min()) if rows else width
    columns = [
        _column(views[c, :rows], count > f if f >= fewest else None, buffer).alias(name)
        for c, (name, f) in enumerate(fields.items())
    ]
    surplus = views[-1, :rows]
    extra = _column(surplus, (surplus[:, 0] & np.uint64(0xFFFFFFFF)) > 0, buffer)
    return pl.DataFrame(
        [
            pl.Series("line", out[0, :rows]).cast(pl.Int64),
            *columns,
            pl.Series("_count", count),
            extra.alias("_surplus"),
        ]
    )
