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

__all__ = ["journalist_members", "Journalist"]

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


_AGE = ("age_group", "age_min", "age_max")
_WEIGHT = ("wt_min", "wt_max")


class Journalist:
    """Journalist class sizes for many knowledge sets over one released view and one raw view.

    The range part of K (age, sex, weight: :func:`journalist_members`) is matched once per distinct
    set of QID fields and kept; each knowledge set then only adds its exact fields, by a group-by of
    the covering raw cases on (released tuple, field values). An age or weight field stands for the
    whole released range (``age_min`` alone is read with ``age_max`` and ``age_group``).
    """

    def __init__(self, view: pl.DataFrame, raw: pl.DataFrame) -> None:
        self.view = view
        # raw cases share few distinct (age, sex, weight) points: the ranges are matched per point
        points = [c for c in ("age_years", "sex", "weight_kg") if c in raw.columns]
        self.points = raw.select(points).unique().with_row_index("caseid")
        self.raw = raw.join(self.points.rename({"caseid": "point"}), on=points, nulls_equal=True)
        self._covers: dict[tuple[str, ...], tuple[pl.DataFrame, pl.DataFrame] | None] = {}

    def _cover(self, qids: tuple[str, ...]) -> tuple[pl.DataFrame, pl.DataFrame] | None:
        """(caseid, kt) of the released cases and (kt, p) of the raw *points* each tuple covers."""
        if qids not in self._covers:
            if qids:
                tuples = self.view.select(qids).unique().with_row_index("kt")
                targets = self.view.join(tuples, on=list(qids), nulls_equal=True).select("caseid", "kt")
                members = journalist_members(tuples, self.points, qids)
            else:
                targets = self.view.select("caseid", pl.lit(0, pl.UInt32).alias("kt"))
                members = self.points.select(pl.lit(0, pl.UInt32).alias("kt"), pl.col("caseid").alias("p"))
            self._covers[qids] = None if members is None else (targets, members)
        return self._covers[qids]

    def sizes(self, knows: Sequence[str]) -> pl.DataFrame | None:
        """``caseid``, ``size``: raw cases agreeing with a released case on ``knows``; None: unmeasurable.

        A released ``*`` (a field generalized to "any", SPEC §11 / issue 18) covers every raw value: a
        case is matched on the fields it does not release as ``*`` (one pass per pattern of ``*``
        fields). A field released with another type than the raw one (a date released as a month) or
        with a value the raw field never takes (an occupation class) is not comparable: None.
        """
        qids: list[str] = []
        for family in (_AGE, ("sex",), _WEIGHT):
            if any(f in knows for f in family):
                qids += [f for f in family if f in self.view.columns]
        exact = [f for f in knows if f not in qids]
        if not all(self._comparable(f) for f in exact):
            return None
        cover = self._cover(tuple(qids))
        if cover is None:
            return None
        flags = [(pl.col(f) == "*").fill_null(False) if self.view.schema[f] == pl.String else pl.lit(False)
                 for f in exact]  # fmt: skip
        patterns = self.view.select(
            "caseid",
            pl.concat_str([f.cast(pl.UInt8).cast(pl.String) for f in flags] or [pl.lit("")]).alias("wild"),
        )
        parts = []
        for pattern in patterns.get_column("wild").unique().sort().to_list():
            fields = [f for f, wild in zip(exact, pattern, strict=False) if wild != "1"]
            chosen = patterns.filter(pl.col("wild") == pattern).select("caseid")
            parts.append(self._sizes(cover, chosen, fields))
        return pl.concat(parts)

    def _comparable(self, field: str) -> bool:
        if field not in self.raw.columns or self.raw.schema[field] != self.view.schema[field]:
            return False
        released = self.view.select(pl.col(field).drop_nulls().unique())
        if self.view.schema[field] == pl.String:
            released = released.filter(pl.col(field) != "*")
        return released.join(self.raw.select(pl.col(field).unique()), on=field, how="anti").height == 0

    def _sizes(
        self, cover: tuple[pl.DataFrame, pl.DataFrame], chosen: pl.DataFrame, exact: list[str]
    ) -> pl.DataFrame:
        """Class sizes of the ``chosen`` cases matched on the QID cover and the ``exact`` fields."""
        targets, members = cover
        own = targets.join(chosen, on="caseid").join(self.view.select("caseid", *exact), on="caseid")
        per_point = self.raw.group_by("point", *exact).agg(pl.len().alias("n")).rename({"point": "p"})
        if exact and self._selective(own, exact, per_point.height, members.height):
            # few raw cases share a target's exact values: join on them, then keep the covered points
            return (
                own.join(per_point.rename({"p": "point"}), on=exact, nulls_equal=True)
                .join(members, left_on=["kt", "point"], right_on=["kt", "p"], how="semi")
                .group_by("caseid")
                .agg(pl.col("n").sum().alias("size"))
                .join(own.select("caseid"), on="caseid", how="right")
                .select("caseid", pl.col("size").fill_null(0))
            )
        fields = ["kt", *exact]
        population = members.join(per_point, on="p").group_by(fields).agg(pl.col("n").sum().alias("size"))
        return own.join(population, on=fields, how="left", nulls_equal=True).select(
            "caseid", pl.col("size").fill_null(0)
        )

    def _selective(self, own: pl.DataFrame, exact: list[str], per_point: int, members: int) -> bool:
        """Whether joining on the exact fields first makes fewer rows than expanding the cover."""
        on_fields = (
            own.group_by(exact).len()
            .join(self.raw.group_by(exact).len(), on=exact, nulls_equal=True)
            .select((pl.col("len") * pl.col("len_right")).sum())
            .item()
        )  # fmt: skip
        return bool((on_fields or 0) < members * per_point / max(self.points.height, 1))
