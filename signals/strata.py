"""Strata on age, weight and sex, read on exact values (raw data) or on released ranges (SPEC §9).

A stratum is a conjunction of predicates (``age>=18``, ``sex=F``, an age band, "age missing").
Each case gets a weight w in [0, 1] per stratum and *reading*:

* raw data holds point values (``age_years``, ``weight_kg``, ``sex`` F/M): the one reading is
  ``exact`` and w is 1 when the value satisfies the predicate, else 0;
* a release holds ranges (``age_min``/``age_max`` in years, max exclusive, null max = unbounded;
  ``wt_min``/``wt_max`` in kg, max inclusive; ``sex`` F/M/``*``), so a predicate has three readings:
  ``certain`` (w = 1 when the whole range satisfies it), ``possible`` (w = 1 when some of the range
  does) and ``expected`` (w = the share of the range that does, the value taken uniform on the
  range). An open range [lo, ∞) is read as [lo, cap) for ``expected`` (cap 120 years or 650 kg,
  SPEC §3's plausibility limits). For sex = F: certain if F, possible if F or ``*``, expected 1 for
  F, 0.5 for ``*`` (and symmetrically for M).

A missing value (null ``age_years``/``age_min``, null sex) satisfies no condition in any reading: a
case that told nothing is not counted in "age ≥ 18", neither on raw data nor on the release, so the
two stay comparable. It has its own ``missing`` level when stratifying by bands. A conjunction
multiplies the weights of its predicates (for ``expected``: age and sex taken independent).
Sex values other than F, M and ``*`` (after upper-casing) are read as missing, as SPEC §3 does for
UNK and NS.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from signals.errors import SignalsError

__all__ = [
    "Interval",
    "SexIs",
    "Missing",
    "Predicate",
    "Stratum",
    "OVERALL",
    "EXACT_READINGS",
    "RANGE_READINGS",
    "STRATIFY_VARIABLES",
    "parse_condition",
    "band_strata",
    "has_ranges",
    "memberships",
    "weight_columns",
]

EXACT_READINGS = ("exact",)
RANGE_READINGS = ("certain", "possible", "expected")
STRATIFY_VARIABLES = ("age", "sex")
_CAPS = {"age": 120.0, "weight": 650.0}
_EXACT_COLUMN = {"age": "age_years", "weight": "weight_kg"}
_RANGE_COLUMNS = {"age": ("age_min", "age_max"), "weight": ("wt_min", "wt_max")}
_RANGE_HI_CLOSED = {"age": False, "weight": True}  # architecture.md: age max exclusive, weight max inclusive


@dataclass(frozen=True, slots=True)
class Interval:
    """A numeric predicate: ``variable`` lies in the interval (lo, hi) with the given closedness."""

    variable: str
    lo: float = -math.inf
    hi: float = math.inf
    lo_closed: bool = True
    hi_closed: bool = False


@dataclass(frozen=True, slots=True)
class SexIs:
    """The predicate sex = ``value`` (``F`` or ``M``)."""

    value: str


@dataclass(frozen=True, slots=True)
class Missing:
    """The predicate "``variable`` is missing" (the ``missing`` level of a stratification)."""

    variable: str


Predicate = Interval | SexIs | Missing


@dataclass(frozen=True, slots=True)
class Stratum:
    """A named conjunction of predicates; ``columns`` are its tidy output columns (e.g. sex = F)."""

    label: str
    predicates: tuple[Predicate, ...] = ()
    columns: tuple[tuple[str, str], ...] = ()


OVERALL = Stratum(label="all")

_ATOM = re.compile(r"^\s*(age|weight|sex)\s*(>=|<=|==|=|>|<)\s*(\S+)\s*$", re.IGNORECASE)


def parse_condition(text: str) -> Stratum:
    """Read a condition such as ``age>=18``, ``age<18``, ``sex=F`` or ``sex=F&age>=60``.

    Grammar: atoms ``VAR OP VALUE`` joined by ``&``; VAR is ``age`` (years), ``weight`` (kg) or
    ``sex``; age and weight take ``>=``, ``>``, ``<=``, ``<``; sex takes ``=`` with F or M.

    Returns:
        A stratum whose label is the canonical text (``age>=18``, ``sex=F&age>=60``) and whose one
        tidy column is ``condition``.

    Raises:
        SignalsError: the text does not follow the grammar.
    """
    predicates: list[Predicate] = []
    labels: list[str] = []
    for part in text.split("&"):
        match = _ATOM.match(part)
        if match is None:
            raise SignalsError(
                f"condition {text!r}: cannot read {part.strip()!r} (expected e.g. age>=18, age<18, sex=F)"
            )
        variable, op, value = match.group(1).lower(), match.group(2), match.group(3)
        if variable == "sex":
            if op not in ("=", "==") or value.upper() not in ("F", "M"):
                raise SignalsError(f"condition {text!r}: sex takes =F or =M; got {part.strip()!r}")
            predicates.append(SexIs(value.upper()))
            labels.append(f"sex={value.upper()}")
            continue
        try:
            bound = float(value)
        except ValueError:
            raise SignalsError(f"condition {text!r}: {value!r} is not a number") from None
        if op in ("=", "==") or not math.isfinite(bound):
            raise SignalsError(f"condition {text!r}: {variable} takes >=, >, <= or < with a finite number")
        predicates.append(_half_line(variable, op, bound))
        labels.append(f"{variable}{op}{bound:g}")
    label = "&".join(labels)
    return Stratum(label=label, predicates=tuple(predicates), columns=(("condition", label),))


def _half_line(variable: str, op: str, bound: float) -> Interval:
    if op == ">=":
        return Interval(variable, lo=bound, lo_closed=True)
    if op == ">":
        return Interval(variable, lo=bound, lo_closed=False)
    if op == "<=":
        return Interval(variable, hi=bound, hi_closed=True)
    return Interval(variable, hi=bound, hi_closed=False)


def band_strata(variables: Sequence[str], /, *, age_bands: Sequence[float]) -> tuple[Stratum, ...]:
    """The strata of a stratification by ``age`` bands, ``sex`` or both (their cross product).

    Age levels are [0, e1), [e1, e2), …, [ek, ∞) for the edges ``age_bands`` (years) plus
    ``missing``; sex levels are F, M and ``missing``. On raw data every case lies in exactly one
    stratum; on a release the ``expected`` weights of a case sum to 1 over the strata.

    Raises:
        SignalsError: an unknown variable.
    """
    levels: list[list[tuple[Predicate, str, str]]] = []
    for variable in variables:
        if variable == "age":
            edges = [0.0, *age_bands, math.inf]
            age_levels: list[tuple[Predicate, str, str]] = [
                (Interval("age", lo=lo, hi=hi), f"[{lo:g},{hi:g})", "age_band")
                for lo, hi in itertools.pairwise(edges)
            ]
            levels.append([*age_levels, (Missing("age"), "missing", "age_band")])
        elif variable == "sex":
            levels.append(
                [(SexIs("F"), "F", "sex"), (SexIs("M"), "M", "sex"), (Missing("sex"), "missing", "sex")]
            )
        else:
            raise SignalsError(
                f"stratify: unknown variable {variable!r} (expected {', '.join(STRATIFY_VARIABLES)})"
            )
    strata = []
    for combo in itertools.product(*levels):
        label = "&".join(f"{name.removesuffix('_band')}={level}" for _, level, name in combo)
        strata.append(
            Stratum(
                label=label,
                predicates=tuple(p for p, _, _ in combo),
                columns=tuple((name, level) for _, level, name in combo),
            )
        )
    return tuple(strata)


def has_ranges(cases: pl.DataFrame) -> bool:
    """True when the case frame holds released ranges (``age_min`` or ``wt_min``), not exact values."""
    return "age_min" in cases.columns or "wt_min" in cases.columns


@dataclass(frozen=True, slots=True)
class _Span:
    lo: pl.Expr  # null when missing
    hi: pl.Expr  # +inf when unbounded; equal to lo for a point value
    hi_closed: bool
    cap: float


def _span(cases: pl.DataFrame, variable: str, *, ranges: bool, caps: Mapping[str, float]) -> _Span:
    if not ranges:
        column = _EXACT_COLUMN[variable]
        _require_columns(cases, (column,), variable)
        value = pl.col(column).cast(pl.Float64)
        return _Span(lo=value, hi=value, hi_closed=True, cap=caps[variable])
    lo_name, hi_name = _RANGE_COLUMNS[variable]
    _require_columns(cases, (lo_name, hi_name), variable)
    lo = pl.col(lo_name).cast(pl.Float64)
    hi = pl.when(lo.is_not_null()).then(pl.col(hi_name).cast(pl.Float64).fill_null(math.inf))
    return _Span(lo=lo, hi=hi, hi_closed=_RANGE_HI_CLOSED[variable], cap=caps[variable])


def _require_columns(cases: pl.DataFrame, names: Sequence[str], variable: str) -> None:
    for name in names:
        if name not in cases.columns:
            raise SignalsError(f"cases: column {name!r} is needed for {variable} strata")


def _contains(iv: Interval, x: pl.Expr) -> pl.Expr:
    """x lies in the interval (null x → null)."""
    ok = pl.lit(True)
    if iv.lo != -math.inf:
        ok = ok & ((x >= iv.lo) if iv.lo_closed else (x > iv.lo))
    if iv.hi != math.inf:
        ok = ok & ((x <= iv.hi) if iv.hi_closed else (x < iv.hi))
    return ok


def _inside(iv: Interval, s: _Span) -> pl.Expr:
    """The whole range [lo, hi⟩ lies in the interval."""
    ok = pl.lit(True)
    if iv.lo != -math.inf:
        ok = ok & ((s.lo >= iv.lo) if iv.lo_closed else (s.lo > iv.lo))
    if iv.hi != math.inf:
        ok = ok & ((s.hi <= iv.hi) if (iv.hi_closed or not s.hi_closed) else (s.hi < iv.hi))
    return ok


def _overlaps(iv: Interval, s: _Span) -> pl.Expr:
    """Some value of the range [lo, hi⟩ lies in the interval."""
    below = pl.lit(False)
    if iv.lo != -math.inf:
        below = (s.hi < iv.lo) if (s.hi_closed and iv.lo_closed) else (s.hi <= iv.lo)
    above = pl.lit(False)
    if iv.hi != math.inf:
        above = (s.lo > iv.hi) if iv.hi_closed else (s.lo >= iv.hi)
    return ~below & ~above


def _share(iv: Interval, s: _Span) -> pl.Expr:
    """Share of the range inside the interval, the value uniform on [lo, min(hi, cap)); lo ≥ cap → a point."""
    hi = pl.when(s.hi.is_infinite()).then(pl.max_horizontal(s.lo, pl.lit(s.cap))).otherwise(s.hi)
    overlap = pl.min_horizontal(hi, pl.lit(iv.hi)) - pl.max_horizontal(s.lo, pl.lit(iv.lo))
    return (
        pl.when(hi == s.lo)
        .then(_contains(iv, s.lo).cast(pl.Float64))
        .otherwise(overlap.clip(lower_bound=0.0) / (hi - s.lo))
    )


def _interval_weight(iv: Interval, s: _Span, reading: str) -> pl.Expr:
    if reading == "exact":
        w = _contains(iv, s.lo).cast(pl.Float64)
    elif reading == "expected":
        w = _share(iv, s)
    else:
        test = _inside(iv, s) if reading == "certain" else _overlaps(iv, s)
        w = pl.when(s.hi == s.lo).then(_contains(iv, s.lo)).otherwise(test).cast(pl.Float64)
    return pl.when(s.lo.is_null()).then(0.0).otherwise(w)


def _sex_weight(value: str, reading: str) -> pl.Expr:
    sex = pl.col("sex")
    if reading == "possible":
        w = sex.is_in([value, "*"]).cast(pl.Float64)
    elif reading == "expected":
        w = pl.when(sex == value).then(1.0).when(sex == "*").then(0.5).otherwise(0.0)
    else:
        w = (sex == value).cast(pl.Float64)
    return w.fill_null(0.0)


def _weight(
    predicate: Predicate, cases: pl.DataFrame, reading: str, *, ranges: bool, caps: Mapping[str, float]
) -> pl.Expr:
    if isinstance(predicate, SexIs):
        _require_columns(cases, ("sex",), "sex")
        return _sex_weight(predicate.value, reading)
    if isinstance(predicate, Missing):
        if predicate.variable == "sex":
            _require_columns(cases, ("sex",), "sex")
            return pl.col("sex").is_null().cast(pl.Float64)
        return _span(cases, predicate.variable, ranges=ranges, caps=caps).lo.is_null().cast(pl.Float64)
    return _interval_weight(predicate, _span(cases, predicate.variable, ranges=ranges, caps=caps), reading)


def memberships(
    cases: pl.DataFrame,
    strata: Sequence[Stratum],
    /,
    *,
    reading: str,
    first_id: int = 0,
    caps: Mapping[str, float] | None = None,
    ranges: bool | None = None,
) -> pl.DataFrame:
    """The weight of every case in every stratum under one reading.

    Args:
        cases: one row per case: ``caseid`` plus the QID columns the strata need, with ``sex``
            already upper-cased (F, M, ``*`` or null).
        strata: the strata; stratum i gets ``stratum_id`` = ``first_id`` + i.
        reading: ``exact`` for raw data, or ``certain``, ``possible``, ``expected`` for ranges.
        first_id: id of the first stratum.
        caps: upper ends used for open ranges under ``expected`` (default 120 years, 650 kg).
        ranges: whether the data holds released ranges; default :func:`has_ranges` of ``cases`` (a
            frame of some of the cases' columns, such as :mod:`signals.profiles`', gives its side's).

    Returns:
        ``caseid``, ``stratum_id`` (UInt32), ``w`` (Float64 in (0, 1]); rows with w = 0 are left out.

    Raises:
        SignalsError: a column a stratum needs is absent, or the reading does not fit the data.
    """
    parts = [
        cases.lazy()
        .select("caseid", pl.lit(first_id + offset, dtype=pl.UInt32).alias("stratum_id"), weight.alias("w"))
        .filter(pl.col("w") > 0.0)
        for offset, weight in enumerate(_stratum_weights(cases, strata, reading, caps, ranges))
    ]
    if not parts:
        return pl.DataFrame(schema={"caseid": pl.Int64, "stratum_id": pl.UInt32, "w": pl.Float64})
    return pl.concat(parts).collect()


def weight_columns(
    cases: pl.DataFrame,
    strata: Sequence[Stratum],
    /,
    *,
    reading: str,
    caps: Mapping[str, float] | None = None,
    ranges: bool | None = None,
) -> pl.DataFrame:
    """:func:`memberships` as one Float64 column per stratum (``w0``, ``w1``, …), a row per case, w = 0
    kept: one query, for a frame of few rows (the profiles of :mod:`signals.profiles`)."""
    weights = _stratum_weights(cases, strata, reading, caps, ranges)
    # caseid keeps a constant weight (the stratum ``all``) one row per case
    return cases.select("caseid", *(weight.alias(f"w{i}") for i, weight in enumerate(weights))).drop("caseid")


def _stratum_weights(
    cases: pl.DataFrame,
    strata: Sequence[Stratum],
    reading: str,
    caps: Mapping[str, float] | None,
    ranges: bool | None,
) -> list[pl.Expr]:
    """Each stratum's weight expression (a product over its predicates); checks the reading first."""
    ranges = has_ranges(cases) if ranges is None else ranges
    allowed = RANGE_READINGS if ranges else EXACT_READINGS
    trivial = all(not s.predicates for s in strata)  # e.g. the stratum ``all``: exact on any data
    if reading not in allowed and not (trivial and reading == "exact"):
        raise SignalsError(f"reading {reading!r} does not apply to this data (expected {', '.join(allowed)})")
    limits = {**_CAPS, **(caps or {})}
    found = []
    for stratum in strata:
        weight = pl.lit(1.0)
        for predicate in stratum.predicates:
            weight = weight * _weight(predicate, cases, reading, ranges=ranges, caps=limits)
        found.append(weight)
    return found
