"""Typing FAERS text fields: integers, numbers, partial dates and the flag for unreadable values."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import polars as pl
import pytest

from faers_anon.io.parse import cast_failed, parse_date, parse_float, parse_int

INTS = [("61", 61), ("61.0", 61), (" 7 ", 7), ("100115733", 100115733), ("-3", -3), ("61.5", None),
        ("abc", None), ("2512345X1", None), ("", None), (None, None), ("1.0.0", None), ("+7", 7),
        ("\t12\t", 12), ("   ", None), ("6.1e1", None)]  # fmt: skip
FLOATS = [("61", 61.0), ("61.0", 61.0), (" 2.5 ", 2.5), ("abc", None), ("", None), ("nan", None),
          ("inf", None), (None, None)]  # fmt: skip
DATES = [
    ("20141226", dt.date(2014, 12, 26)),
    ("20141226.0", dt.date(2014, 12, 26)),  # pandas float artefact (nico8270-2025q4)
    ("201202", dt.date(2012, 2, 1)),  # partial: first of the month
    ("2012", dt.date(2012, 1, 1)),  # partial: first of the year
    ("20120231", None),  # impossible day
    ("201213", None),  # impossible month
    ("2012-1-1", None),
    ("12", None),
    ("", None),
    (None, None),
    (" 20141226 ", dt.date(2014, 12, 26)),
    ("\t4505027", None),  # 8 bytes but 7 digits: not a full date (``to_date`` alone would read it)
    ("201202.0", dt.date(2012, 2, 1)),
    ("2012.0", dt.date(2012, 1, 1)),
    ("0000", None),
]


def _one(expr_of: Callable[[pl.Expr], pl.Expr], value: str | None) -> object:
    frame = pl.DataFrame({"raw": [value]}, schema={"raw": pl.Utf8})
    return frame.select(expr_of(pl.col("raw"))).item()


@pytest.mark.parametrize(("raw", "expected"), INTS)
def test_parse_int(raw: str | None, expected: int | None) -> None:
    assert _one(parse_int, raw) == expected


@pytest.mark.parametrize(("raw", "expected"), FLOATS)
def test_parse_float(raw: str | None, expected: float | None) -> None:
    assert _one(parse_float, raw) == expected


@pytest.mark.parametrize(("raw", "expected"), DATES)
def test_parse_date(raw: str | None, expected: dt.date | None) -> None:
    assert _one(parse_date, raw) == expected


def test_cast_failed_flags_only_non_blank_values_turned_null() -> None:
    raw = pl.Series("raw", ["20120101", "2012013x", "", "  ", None])
    flagged = pl.DataFrame(raw).select(cast_failed(pl.col("raw"), parse_date(pl.col("raw")))).to_series()
    assert flagged.to_list() == [False, True, False, False, False]


def test_parsers_keep_the_column_name_and_read_a_mixed_column_row_by_row() -> None:
    # Full, partial, padded and float-artefact dates side by side in one column: each row is read
    # by its own rule (the full rules run on the rows the plain cast left null), the name is kept.
    raw = ["20250105", "202502", "2025", " 2024 ", "20241226.0", "0000", "20250231", "", None, "+123"]
    frame = pl.DataFrame({"fda_dt": raw})
    got = frame.select(parse_date(pl.col("fda_dt")))
    assert got.columns == ["fda_dt"]
    assert got.to_series().to_list() == [
        dt.date(2025, 1, 5), dt.date(2025, 2, 1), dt.date(2025, 1, 1), dt.date(2024, 1, 1),
        dt.date(2024, 12, 26), None, None, None, None, dt.date(123, 1, 1),
    ]  # fmt: skip
    numbers = pl.DataFrame({"age": ["61", " 61.0 ", "6.1e1", ""]})
    assert numbers.select(parse_int(pl.col("age"))).columns == ["age"]
    assert numbers.select(parse_float(pl.col("age"))).to_series().to_list() == [61.0, 61.0, 61.0, None]
