"""The 2×2 sums of :mod:`signals.counts`, taken over the cases' few distinct QID profiles.

A case's weight in a stratum (:func:`signals.strata.memberships`) depends only on the QID values the
stratum's predicates read: its *profile* (``age_min``, ``age_max``, ``sex`` of a release: a few
dozen; ``age_years``, ``sex`` of raw data: a few thousand; the weight columns too when a stratum
reads weight). With n_t(·) the number of cases of profile t holding a pair, a drug, an event, and
w_t(s) the weight of profile t in stratum s:

    a(s, D, E) = Σ_t n_t(D, E) · w_t(s)     nd(s, D) = Σ_t n_t(D) · w_t(s)
    ne(s, E) = Σ_t n_t(E) · w_t(s)          N(s) = Σ_t n_t · w_t(s)

(b, c, d follow as in :func:`signals.counts.count_2x2`). The counts n are made once per side
(:func:`incidence`: one group-by of the co-reported pairs), the weights once per profile, and each
stratum then costs a sparse product over the profiles instead of a join of the co-reported pairs
with every case's weight.

Numbers: each sum is rounded to 9 decimals as :func:`signals.counts.weight_sum` rounds it. With
weights 0 and 1 (the readings ``exact``, ``certain``, ``possible``) every sum is a whole number and
equal to :func:`signals.counts.count_2x2`'s. With the ``expected`` reading's fractional weights a
sum of many cases' weights in double precision carries round-off: a stratum's N of ~40,000 cases,
added by a parallel group-by in an order that changes from run to run, was off by up to ~2e-10 and
so, rounded to 9 decimals, came out 1e-9 apart from one run to the next (measured at 400k cases).
Here each sum has one product n · w per profile, taken in extended precision (:data:`_SUM`) and
rounded once to double: the exact sum of the cases' weights to the nearest double, the same on
every run, then rounded to 9 decimals.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from scipy import sparse

from signals.counts import COMPLEMENT_CELLS, ROUNDED_CELLS, CoReports, named_cells
from signals.strata import Interval, Missing, Stratum, has_ranges, weight_columns

__all__ = ["Incidence", "Profiles", "count_profiles", "incidence", "profiles", "strata_variables", "weights"]

_COLUMNS = {
    "age": ("age_years", "age_min", "age_max"),
    "sex": ("sex",),
    "weight": ("weight_kg", "wt_min", "wt_max"),
}
_DECIMALS = 9  # as signals.counts.weight_sum
#: The sums' precision: x87 extended (64-bit significand) where numpy has it, so that each sum of
#: products n · w is the exact one to the nearest double (module docstring); else double.
_SUM = np.longdouble


def strata_variables(strata: Iterable[Stratum]) -> frozenset[str]:
    """The QID variables (``age``, ``sex``, ``weight``) the predicates of ``strata`` read."""
    found: set[str] = set()
    for stratum in strata:
        for predicate in stratum.predicates:
            found.add(predicate.variable if isinstance(predicate, Interval | Missing) else "sex")
    return frozenset(found)


@dataclass(frozen=True, slots=True)
class Profiles:
    """The distinct profiles of a side's cases.

    Attributes:
        frame: one row per profile: ``caseid`` = its number 0..T-1, then its QID columns.
        cases: ``caseid``, ``profile`` (UInt32): each case's profile.
        sizes: cases per profile (length T).
        ranges: whether the side holds released ranges (:func:`signals.strata.has_ranges` of its cases).
    """

    frame: pl.DataFrame
    cases: pl.DataFrame
    sizes: np.ndarray
    ranges: bool


def profiles(cases: pl.DataFrame, variables: Collection[str]) -> Profiles:
    """The profiles of ``cases`` over the columns of ``variables`` the frame has."""
    columns = [c for v in sorted(variables) for c in _COLUMNS[v] if c in cases.columns]
    if columns:
        frame = cases.select(columns).unique(maintain_order=True).with_row_index("profile")
        coded = cases.select("caseid", *columns).join(frame, on=columns, how="left", nulls_equal=True)
        frame = frame.rename({"profile": "caseid"})
    else:  # strata without predicates: one profile
        frame = pl.DataFrame({"caseid": [0] if cases.height else []}, schema={"caseid": pl.UInt32})
        coded = cases.select("caseid", pl.lit(0, pl.UInt32).alias("profile"))
    sizes = np.bincount(coded.get_column("profile").to_numpy(), minlength=frame.height).astype(np.float64)
    return Profiles(frame, coded.select("caseid", "profile"), sizes, has_ranges(cases))


def weights(
    found: Profiles,
    strata: list[Stratum] | tuple[Stratum, ...],
    /,
    *,
    reading: str,
    caps: Mapping[str, float],
) -> np.ndarray:
    """w_t(s): the (profiles × strata) weights of :func:`signals.strata.memberships`, 0 outside."""
    columns = weight_columns(found.frame, strata, reading=reading, caps=caps, ranges=found.ranges)
    w = columns.to_numpy().reshape(found.frame.height, len(strata))
    return np.where(w > 0.0, w, 0.0)  # as memberships keeps w > 0 only (a NaN weight too is left out)


@dataclass(frozen=True, slots=True)
class Incidence:
    """n_t(·) of the module docstring: sparse (rows × profiles) case counts of one :class:`CoReports`.

    Attributes:
        keys: the co-reported pairs' keys drug_id · n_events + event_id, increasing (one per row of
            ``pairs``).
        pairs, drugs, events: CSR counts per pair, per drug code, per event code.
        sizes: cases per profile.
    """

    keys: np.ndarray
    pairs: sparse.csr_matrix
    drugs: sparse.csr_matrix
    events: sparse.csr_matrix
    sizes: np.ndarray


def _counts(
    frame: pl.DataFrame, key: pl.Expr, rows: int | None, n_profiles: int
) -> tuple[np.ndarray, sparse.csr_matrix]:
    """Cases per (key, profile) as CSR over the distinct keys (``rows`` None) or codes 0..rows-1."""
    joint = (key.cast(pl.UInt64) * max(n_profiles, 1) + pl.col("profile")).alias("joint")
    counted = frame.select(joint).group_by("joint").len().sort("joint")  # one integer key: polars' fast path
    joints = counted.get_column("joint").to_numpy()
    keys, profile = joints // max(n_profiles, 1), joints % max(n_profiles, 1)
    if rows is None:
        distinct, row = np.unique(keys, return_inverse=True)
    else:
        distinct, row = np.arange(rows), keys
    n = counted.get_column("len").to_numpy().astype(np.float64)
    return distinct, sparse.csr_matrix((n, (row, profile)), shape=(len(distinct), n_profiles))


def incidence(co: CoReports, found: Profiles) -> Incidence:
    """Count the cases of every profile holding each co-reported pair, drug and event of ``co``."""
    ne, t = co.event_names.height, found.frame.height
    coded = found.cases
    pair = pl.col("drug_id").cast(pl.UInt64) * max(ne, 1) + pl.col("event_id")
    keys, pairs = _counts(co.pairs.join(coded, on="caseid"), pair, None, t)
    _, drugs = _counts(co.drugs.join(coded, on="caseid"), pl.col("drug_id"), co.drug_names.height, t)
    _, events = _counts(co.events.join(coded, on="caseid"), pl.col("event_id"), ne, t)
    return Incidence(keys.astype(np.uint64), pairs, drugs, events, found.sizes)


def _product(counts: Any, weights: np.ndarray) -> np.ndarray:
    """counts @ weights in the weights' precision, to the nearest double (one rounding)."""
    return np.asarray(counts.astype(weights.dtype) @ weights, dtype=np.float64)


def _rounded(values: np.ndarray) -> pl.Series:
    """Sums (to the nearest double) rounded to 9 decimals as :func:`weight_sum` does."""
    return pl.Series(values, dtype=pl.Float64).round(_DECIMALS)


def count_profiles(
    co: CoReports,
    counts: Incidence,
    w: np.ndarray,
    /,
    *,
    first_id: int = 0,
    min_a: float,
    wanted: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """:func:`signals.counts.count_2x2` of the strata whose profile weights are the columns of ``w``.

    Same arguments and result (``stratum_id`` = ``first_id`` + column), the sums taken over profiles
    (module docstring).
    """
    ne = max(co.event_names.height, 1)
    # weights 0 and 1 give whole sums, exact in double; fractional ones are summed in _SUM
    kind = np.float64 if bool(np.all((w == 0.0) | (w == 1.0))) else _SUM
    weights = w.astype(kind)
    a_all, nd_all, ne_all, n_all = (
        _product(m, weights) for m in (counts.pairs, counts.drugs, counts.events, counts.sizes)
    )
    present: np.ndarray = np.asarray((w > 0).any(axis=0))  # some member (memberships keeps w > 0)
    # every stratum's rows at once (stratum by stratum, keys increasing): one frame, each column
    # rounded by one polars round over all of them (element by element: as stratum by stratum)
    if wanted is None:  # rounding moves a sum by < 1e-9: round only those that may pass
        near = [np.flatnonzero(a_all[:, s] >= min_a - 1e-6) for s in range(w.shape[1])]
        column = np.repeat(np.arange(w.shape[1]), [len(rows) for rows in near])
        rows = np.concatenate([np.zeros(0, np.int64), *near])
        a = _rounded(a_all[rows, column])
        chosen = ((a >= min_a) & (a > 0.0)).arg_true().to_numpy()
        keys, column, a = counts.keys[rows[chosen]], column[chosen], a.gather(chosen)
    else:
        wanted_keys = np.unique(_wanted_keys(co, wanted, ne))
        column = np.repeat(np.flatnonzero(present), len(wanted_keys))
        keys = np.tile(wanted_keys, int(present.sum()))
        a = _rounded(_gathered(counts.keys, a_all, keys, column))
    drug, event = keys // ne, keys % ne
    parts = [
        pl.DataFrame(
            {
                "stratum_id": pl.Series(first_id + column, dtype=pl.UInt32),
                "drug_id": pl.Series(drug, dtype=pl.UInt32),
                "event_id": pl.Series(event, dtype=pl.UInt32),
                "a": a,
                "nd": _rounded(nd_all[drug.astype(np.int64), column]),
                "ne": _rounded(ne_all[event.astype(np.int64), column]),
                "n": _rounded(n_all[column]),
            }
        )
    ]
    schema = {"stratum_id": pl.UInt32, "drug_id": pl.UInt32, "event_id": pl.UInt32,
              **dict.fromkeys(("a", "nd", "ne", "n"), pl.Float64)}  # fmt: skip
    counted = pl.concat([pl.DataFrame(schema=schema), *parts]).with_columns(COMPLEMENT_CELLS)
    return named_cells(counted.with_columns(ROUNDED_CELLS), co)


def _gathered(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray, column: np.ndarray) -> np.ndarray:
    """``values[row, column]`` at the row whose key is each of ``wanted`` (``keys`` increasing); 0 for an
    absent key."""
    if not len(keys):
        return np.zeros(len(wanted))
    at = np.searchsorted(keys, wanted).clip(max=len(keys) - 1)
    return np.where(keys[at] == wanted, values[at, column], 0.0)


def _wanted_keys(co: CoReports, wanted: pl.DataFrame, ne: int) -> np.ndarray:
    """The keys drug_id · n_events + event_id of the ``wanted`` pairs whose names ``co`` codes."""
    ids = (
        wanted.select("drug", "event")
        .unique()
        .join(co.drug_names, on="drug")
        .join(co.event_names, on="event")
        .select(pl.col("drug_id").cast(pl.UInt64) * ne + pl.col("event_id"))
    )
    return ids.to_series().to_numpy().astype(np.uint64)
