"""Write a quarter's tables in the FDA layout: a folder or one zip, byte-identical for equal tables."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import polars as pl

from faers_anon.synthetic._plan import Quarter

__all__ = ["write_quarter", "quarter_files", "zip_name"]

_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def _quarter_of(tables: dict[str, pl.DataFrame]) -> Quarter:
    """The quarter of the latest ``fda_dt`` in DEMO (every report's fda_dt lies in its quarter)."""
    latest = tables["DEMO"].get_column("fda_dt").drop_nulls().max()
    if not isinstance(latest, str) or len(latest) < 6:
        raise ValueError("cannot infer the quarter: DEMO has no fda_dt; pass quarter=")
    return Quarter(int(latest[:4]), (int(latest[4:6]) - 1) // 3 + 1)


def zip_name(quarter: str) -> str:
    """``faers_ascii_2025q1.zip`` for ``2025Q1``."""
    q = Quarter.parse(quarter)
    return f"faers_ascii_{q.year}q{q.q}.zip"


def quarter_files(
    tables: dict[str, pl.DataFrame], *, quarter: str | None = None, line_terminator: str = "\r\n"
) -> dict[str, bytes]:
    """The files of the quarter as ``{"ASCII/DEMO25Q1.txt": bytes, ..., "Deleted/DELETE25Q1.txt": bytes}``.

    Data files: header line, ``$`` between fields, no quoting, empty field for null, ``line_terminator``
    after every line (recent FDA files use CRLF). The DELETE file has no header, starts with a line
    holding one space (as FDA's do) and lists one caseid per LF-terminated line.

    Args:
        tables: frames as returned by ``make_quarter``.
        quarter: label for the file names; by default the quarter of DEMO's latest ``fda_dt``.
        line_terminator: line end of the data files.
    """
    q = Quarter.parse(quarter) if quarter is not None else _quarter_of(tables)
    files: dict[str, bytes] = {}
    for name, frame in tables.items():
        if name == "DELETE":
            ids = frame.get_column("caseid").to_list()
            files[f"Deleted/DELETE{q.suffix}.txt"] = (" \n" + "".join(f"{i}\n" for i in ids)).encode("ascii")
            continue
        buffer = io.BytesIO()
        frame.write_csv(
            buffer, separator="$", quote_style="never", null_value="", line_terminator=line_terminator
        )
        files[f"ASCII/{name}{q.suffix}.txt"] = buffer.getvalue()
    return files


def write_quarter(
    tables: dict[str, pl.DataFrame],
    out_dir: str | Path,
    *,
    zip: bool = False,
    quarter: str | None = None,
    line_terminator: str = "\r\n",
) -> Path:
    """Write the quarter under ``out_dir``: ``ASCII/*.txt`` and ``Deleted/DELETE*.txt``, or one zip of them.

    Zip entries carry a fixed timestamp (1980-01-01) and fixed permissions, so equal tables give
    byte-identical zips.

    Args:
        tables: frames as returned by ``make_quarter``.
        out_dir: folder to write into (created if missing).
        zip: write ``faers_ascii_<year>q<n>.zip`` instead of the two folders.
        quarter: label for the names; by default inferred from DEMO's ``fda_dt``.
        line_terminator: line end of the data files.

    Returns:
        The zip's path, or ``out_dir``.
    """
    q = Quarter.parse(quarter) if quarter is not None else _quarter_of(tables)
    files = quarter_files(tables, quarter=q.label, line_terminator=line_terminator)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if not zip:
        for name, data in files.items():
            path = out / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return out
    target = out / zip_name(q.label)
    with zipfile.ZipFile(target, "w") as archive:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            info.create_system = 3
            archive.writestr(info, data, compresslevel=6)
    return target
