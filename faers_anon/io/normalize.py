"""Normalization of the QIDs of DEMO: age → years, weight → kg, sex → F / M / missing.

Source: SPEC §3 ("Normalization"); code lists of FORMAT.md §4 (ASC_NTS §D). Table-driven: the unit
tables below are the whole rule, and the tests run every code through them.

* Age in years = ``age × AGE_UNIT_YEARS[age_cod]``: DEC ×10, YR ×1, MON ÷12, WK ×7/365.25,
  DY ÷365.25, HR ÷8766 (= 365.25 × 24). The unit code is matched case-blind after stripping spaces.
* Weight in kg = ``wt × WEIGHT_UNIT_KG[wt_cod]``: KG ×1, LBS ×0.45359237 (the exact pound), GMS ÷1000.
* Sex: ``F`` and ``M`` are kept; ``UNK``, ``NS`` (not specified), blank and anything else (rare ``P``,
  ``I``, ``T``, ``YR``) are missing.

Edge cases and decisions:

* A present value with an unknown or blank unit (``age_cod`` not in the table) cannot be converted:
  the normalized value is null and the row is counted (``age_cod_known`` / ``wt_cod_known``).
* Implausible values become null and are counted (``age_plausible`` / ``weight_plausible``): age
  < 0 or > 120 years; weight ≤ 0 or > 650 kg. Age 0 is valid (FDA records unborn as 0, FAQ 52); a
  weight of 0 is no weight, so it counts as implausible.
* The verbatim ``age``, ``age_cod``, ``wt``, ``wt_cod`` stay beside the normalized columns.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

__all__ = [
    "AGE_UNIT_YEARS",
    "WEIGHT_UNIT_KG",
    "SEX_CODES",
    "AGE_MAX_YEARS",
    "WEIGHT_MAX_KG",
    "age_factor",
    "weight_factor",
    "age_years",
    "weight_kg",
    "sex",
]

#: Years per unit of ``age_cod``.
AGE_UNIT_YEARS: dict[str, float] = {
    "DEC": 10.0,
    "YR": 1.0,
    "MON": 1.0 / 12.0,
    "WK": 7.0 / 365.25,
    "DY": 1.0 / 365.25,
    "HR": 1.0 / 8766.0,
}
#: Kilograms per unit of ``wt_cod``.
WEIGHT_UNIT_KG: dict[str, float] = {"KG": 1.0, "LBS": 0.45359237, "GMS": 0.001}
#: Sex codes kept; every other code is missing.
SEX_CODES: dict[str, str] = {"F": "F", "M": "M"}

AGE_MAX_YEARS = 120.0
WEIGHT_MAX_KG = 650.0


def _code(raw: pl.Expr) -> pl.Expr:
    return raw.str.strip_chars().str.to_uppercase()


def age_factor(age_cod: pl.Expr) -> pl.Expr:
    """Years per unit of each row's ``age_cod``; null for unknown or blank codes."""
    return _code(age_cod).replace_strict(AGE_UNIT_YEARS, default=None, return_dtype=pl.Float64)


def weight_factor(wt_cod: pl.Expr) -> pl.Expr:
    """Kilograms per unit of each row's ``wt_cod``; null for unknown or blank codes."""
    return _code(wt_cod).replace_strict(WEIGHT_UNIT_KG, default=None, return_dtype=pl.Float64)


def _kept(value: pl.Expr, plausible: Callable[[pl.Expr], pl.Expr]) -> pl.Expr:
    """``value`` where ``plausible(value)`` holds, else null; ``value`` (a unit code's lookup, string
    work) computed once, as a struct field: written twice in one expression, polars computed it twice.
    """
    field = pl.field("_value")
    kept = pl.struct(value.alias("_value")).struct.with_fields(
        pl.when(plausible(field)).then(field).alias("_kept")
    )
    name = value.meta.output_name(raise_if_undetermined=False)
    return kept.struct.field("_kept") if name is None else kept.struct.field("_kept").alias(name)


def age_years(age: pl.Expr, age_cod: pl.Expr) -> pl.Expr:
    """Age in years, null when missing, not convertible or outside [0, 120].

    Args:
        age: Float64 age as reported.
        age_cod: its unit code.

    Returns:
        Float64 in [0, AGE_MAX_YEARS] or null.
    """
    return _kept(age * age_factor(age_cod), lambda years: years.is_between(0.0, AGE_MAX_YEARS))


def weight_kg(wt: pl.Expr, wt_cod: pl.Expr) -> pl.Expr:
    """Weight in kg, null when missing, not convertible, ≤ 0 or > 650 kg.

    Args:
        wt: Float64 weight as reported.
        wt_cod: its unit code.

    Returns:
        Float64 in (0, WEIGHT_MAX_KG] or null.
    """
    return _kept(wt * weight_factor(wt_cod), lambda kg: (kg > 0.0) & (kg <= WEIGHT_MAX_KG))


def sex(raw: pl.Expr) -> pl.Expr:
    """``F`` / ``M`` from the sex code (case-blind, spaces ignored); every other code is null."""
    return _code(raw).replace_strict(SEX_CODES, default=None, return_dtype=pl.Utf8)
