"""Normalization of age, weight and sex (SPEC §3), driven by tables of every code with worked answers."""

from __future__ import annotations

import polars as pl
import pytest

from faers_anon.io import normalize

# (age, age_cod, expected years or None): one row per code, worked by hand.
AGE_CASES = [
    (4.0, "DEC", 40.0),
    (42.0, "YR", 42.0),
    (18.0, "MON", 1.5),
    (26.0, "WK", 26 * 7 / 365.25),
    (10957.5, "DY", 30.0),
    (8766.0, "HR", 1.0),
    (42.0, " yr ", 42.0),  # case-blind, spaces ignored
    (0.0, "YR", 0.0),  # unborn / neonate: 0 is valid
    (120.0, "YR", 120.0),  # the limit itself is plausible
    (121.0, "YR", None),  # implausible
    (13.0, "DEC", None),  # 130 years
    (-1.0, "YR", None),  # negative
    (45.0, "YRS", None),  # unknown unit
    (45.0, None, None),  # no unit
    (None, "YR", None),  # no age
]

WEIGHT_CASES = [
    (70.0, "KG", 70.0),
    (154.0, "LBS", 154 * 0.45359237),
    (3500.0, "GMS", 3.5),
    (70.0, "kg", 70.0),
    (650.0, "KG", 650.0),
    (651.0, "KG", None),
    (1500.0, "LBS", None),  # 680 kg
    (0.0, "KG", None),  # no weight
    (-5.0, "KG", None),
    (70.0, "ST", None),  # unknown unit
    (70.0, None, None),
    (None, "KG", None),
]

SEX_CASES = [("F", "F"), ("M", "M"), (" f ", "F"), ("UNK", None), ("NS", None), ("", None), (None, None),
             ("P", None), ("I", None), ("T", None), ("YR", None)]  # fmt: skip


def test_every_age_unit_is_in_the_table() -> None:
    assert set(normalize.AGE_UNIT_YEARS) == {"DEC", "YR", "MON", "WK", "DY", "HR"}
    assert {code for _, code, years in AGE_CASES if years is not None} >= {" yr ", *normalize.AGE_UNIT_YEARS}


@pytest.mark.parametrize(("age", "code", "expected"), AGE_CASES)
def test_age_years(age: float | None, code: str | None, expected: float | None) -> None:
    frame = pl.DataFrame({"age": [age], "age_cod": [code]}, schema={"age": pl.Float64, "age_cod": pl.Utf8})
    got = frame.select(normalize.age_years(pl.col("age"), pl.col("age_cod"))).item()
    assert got == pytest.approx(expected) if expected is not None else got is None


@pytest.mark.parametrize(("wt", "code", "expected"), WEIGHT_CASES)
def test_weight_kg(wt: float | None, code: str | None, expected: float | None) -> None:
    frame = pl.DataFrame({"wt": [wt], "wt_cod": [code]}, schema={"wt": pl.Float64, "wt_cod": pl.Utf8})
    got = frame.select(normalize.weight_kg(pl.col("wt"), pl.col("wt_cod"))).item()
    assert got == pytest.approx(expected) if expected is not None else got is None


def test_weight_units_cover_the_faers_codes() -> None:
    assert normalize.WEIGHT_UNIT_KG == {"KG": 1.0, "LBS": 0.45359237, "GMS": 0.001}


@pytest.mark.parametrize(("code", "expected"), SEX_CASES)
def test_sex(code: str | None, expected: str | None) -> None:
    frame = pl.DataFrame({"sex": [code]}, schema={"sex": pl.Utf8})
    assert frame.select(normalize.sex(pl.col("sex"))).item() == expected


def test_normalized_values_at_the_limits_keep_their_column_name() -> None:
    frame = pl.DataFrame(
        {
            "age": [0.0, 120.0, 1440.0, 1441.0, -1.0, 12.0],
            "age_cod": ["YR", "YR", "MON", "MON", "YR", " dec "],
            "wt": [650.0, 650.1, 0.0, 1433.0, 1.0, 5.0],
            "wt_cod": ["KG", "KG", "KG", "LBS", "GMS", "zz"],
        }
    )
    got = frame.select(
        normalize.age_years(pl.col("age"), pl.col("age_cod")),
        normalize.weight_kg(pl.col("wt"), pl.col("wt_cod")),
    )
    assert got.columns == ["age", "wt"]
    assert got.get_column("age").to_list() == [0.0, 120.0, 120.0, None, None, 120.0]
    assert got.get_column("wt").to_list() == [650.0, None, None, 1433.0 * 0.45359237, 0.001, None]
