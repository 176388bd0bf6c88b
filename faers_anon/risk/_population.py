"""Journalist risk's population: which raw cases agree with a released tuple (SPEC §11).

A raw case (latest version, raw values) agrees with a released tuple on K when every field of K
covers the raw value:

* age (``age_group``/``age_min``/``age_max`` in K): the released range [age_min, age_max) holds
  ``age_years`` (an open top band, age_max empty, holds every age ≥ age_min); a missing released
  age holds only a missing raw age; the root [0, ∞) holds every age, missing included;
* weight (``wt_min``/``wt_max``): [wt_min, wt_max], inclusive, read likewise;
* ``sex``: ``*`` holds F, M and missing; F, M and missing hold themselves;
* any other field: the same value (missing equals missing); a field the raw data lacks, or holds
  with another type than the release (a generalized date released as text), makes the knowledge set
  unmeasurable there (None).

Computation: both sides are bucketed (age by 10 years, weight by 25 kg, a bucket of its own for
missing); a released tuple is expanded over every bucket its ranges overlap, then joined with the
raw cases on (bucket, sex, exact fields) and filtered by the exact ranges. No row loops.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

__all__ = ["journalist_members"]

_AGE_STEP, _AGE_TOP = 10.0, 130.0
_WT_STEP, _WT_TOP = 25.0, 675.0
_MISSING = -1


def _buckets(lo: str, hi: str, step: float, top: float) -> pl.Expr:
    """The buckets a released range overlaps: [floor(lo/step), floor(hi/step)]; missing → [-1]."""
    first = (pl.col(lo) / step).floor().cast(pl.Int32)
    last = (pl.col(hi).fill_null(top) / step).floor().cast(pl.Int32)
    root = (pl.col(lo) == 0) & pl.col(hi).is_null()
    spread = pl.int_ranges(first, last + 1)
    return (
        pl.when(pl.col(lo).is_null())
        .then(pl.lit([_MISSING], dtype=pl.List(pl.Int32)))
        .when(root)
        .then(pl.concat_list(pl.lit([_MISSING], dtype=pl.List(pl.Int32)), spread.cast(pl.List(pl.Int32))))
        .otherwise(spread.cast(pl.List(pl.Int32)))
    )


def _point_bucket(value: str, step: float) -> pl.Expr:
    return (
        pl.when(pl.col(value).is_null())
        .then(pl.lit(_MISSING))
        .otherwise((pl.col(value) / step).floor())
        .cast(pl.Int32)
    )


def _holds(value: str, lo: str, hi: str, *, inclusive_hi: bool) -> pl.Expr:
    below = pl.col(value) <= pl.col(hi) if inclusive_hi else pl.col(value) < pl.col(hi)
    inside = (pl.col(value) >= pl.col(lo)) & (pl.col(hi).is_null() | below)
    root = (pl.col(lo) == 0) & pl.col(hi).is_null()
    return (
        pl.when(pl.col(lo).is_null())
        .then(pl.col(value).is_null())
        .when(root)
        .then(pl.lit(True))
        .otherwise(inside.fill_null(False))
    )


def journalist_members(tuples: pl.DataFrame, raw: pl.DataFrame, knows: Sequence[str]) -> pl.DataFrame | None:
    """``kt``, ``p``: raw case p agrees with released tuple kt on ``knows`` (module docstring).

    Args:
        tuples: the released tuples, ``kt`` and the fields of ``knows``.
        raw: the raw case view: ``caseid``, ``age_years``, ``weight_kg``, ``sex`` and other fields.
        knows: the fields of K.

    Returns:
        The membership frame, or None when the raw data lacks a field of K.
    """
    age = any(f in knows for f in ("age_group", "age_min", "age_max"))
    weight = any(f in knows for f in ("wt_min", "wt_max"))
    exact = [f for f in knows if f not in {"age_group", "age_min", "age_max", "wt_min", "wt_max", "sex"}]
    if any(f not in raw.columns or raw.schema[f] != tuples.schema[f] for f in exact):
        return None  # a field the raw data lacks, or releases generalized (another type): not comparable
    left, right = tuples.lazy(), raw.lazy().rename({"caseid": "p"})
    keys = list(exact)
    if "sex" in knows:
        left = left.with_columns(
            pl.when(pl.col("sex") == "*")
            .then(pl.lit(["F", "M", "?"]))
            .otherwise(pl.concat_list(pl.col("sex").fill_null("?")))
            .alias("_sex")
        ).explode("_sex")
        right = right.with_columns(pl.col("sex").fill_null("?").alias("_sex"))
        keys.append("_sex")
    checks = []
    if age:
        left = left.with_columns(_buckets("age_min", "age_max", _AGE_STEP, _AGE_TOP).alias("_ab")).explode(
            "_ab"
        )
        right = right.with_columns(_point_bucket("age_years", _AGE_STEP).alias("_ab"))
        keys.append("_ab")
        checks.append(_holds("age_years", "age_min", "age_max", inclusive_hi=False))
    if weight:
        left = left.with_columns(_buckets("wt_min", "wt_max", _WT_STEP, _WT_TOP).alias("_wb")).explode("_wb")
        right = right.with_columns(_point_bucket("weight_kg", _WT_STEP).alias("_wb"))
        keys.append("_wb")
        checks.append(_holds("weight_kg", "wt_min", "wt_max", inclusive_hi=True))
    needed = ["p", *keys, *(["age_years"] if age else []), *(["weight_kg"] if weight else [])]
    ranges = [
        c
        for c in ("age_min", "age_max", "wt_min", "wt_max")
        if (age and c.startswith("age")) or (weight and c.startswith("wt"))
    ]
    left = left.select("kt", *keys, *ranges)
    if keys:
        joined = left.join(right.select(needed), on=keys, nulls_equal=True)
    else:
        joined = left.join(right.select(needed), how="cross")
    if checks:
        joined = joined.filter(pl.all_horizontal(checks))
    return joined.select("kt", "p").unique().collect()
