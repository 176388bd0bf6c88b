"""Journalist class sizes for K + 1 or 2 items by two sorts (SPEC §11, :mod:`._population`).

size(t) = min over the released case's units u (items, or item pairs a < b) of n(q, u) = the raw
cases holding u whose value (:meth:`._population.Population.ranges`: key, age atom and weight rank
as one integer) lies in one of the ranges of the case's tuple q. Two word arrays, sorted by numpy:

* the raw cases' units: unit · 2^v + value (v the value bits), so a unit's raw holders are one
  sorted segment and a range of values two binary searches inside it;
* the released cases' units: unit · 2^(b + r) + q · 2^r + row, so each distinct (unit, q) is one run,
  counted once, and the runs come in unit order (the raw segment is found once per unit).

Both are written by :func:`._own.words` (pairs walked from each case's sorted items, no pair
table). None when a word would not fit in 64 bits: the caller then counts with polars.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon._numba_cache import njit, sized
from faers_anon.risk._own import words
from faers_anon.risk._population import Population
from faers_anon.risk._unique import unique_inverse

__all__ = ["covered_minima", "unit_sizes", "with_units"]

Ints = NDArray[np.int64]
Words = NDArray[np.uint64]


@njit(cache=True)
def _below(values: Words, first: int, last: int, needle: np.uint64) -> int:
    """The first index in values[first:last] (sorted) whose value is ≥ ``needle`` (``last``: none)."""
    while first < last:
        middle = (first + last) >> 1
        if values[middle] < needle:
            first = middle + 1
        else:
            last = middle
    return first


@njit(cache=True)
def _minima(raw: Words, v_bits: int, asked: Words, shifts: Ints, ranges: tuple[Ints, Ints, Ints],
            n_cases: int) -> Ints:  # fmt: skip
    """Per released case: min over its runs (unit, q) of n(q, unit); −1 for a case without a run."""
    start, lo, hi = ranges
    out = np.full(n_cases, -1, np.int64)
    row_mask = (np.uint64(1) << np.uint64(shifts[1])) - np.uint64(1)
    q_mask = (np.uint64(1) << np.uint64(shifts[0] - shifts[1])) - np.uint64(1)
    unit, first, last, i = np.uint64(0), 0, 0, 0
    while i < len(asked):
        key = asked[i] >> np.uint64(shifts[1])
        j = i + 1
        while j < len(asked) and (asked[j] >> np.uint64(shifts[1])) == key:
            j += 1
        if i == 0 or (key >> np.uint64(shifts[0] - shifts[1])) != unit:
            unit = key >> np.uint64(shifts[0] - shifts[1])
            first = _below(raw, last if i else 0, len(raw), unit << np.uint64(v_bits))
            last = _below(raw, first, len(raw), (unit + np.uint64(1)) << np.uint64(v_bits))
        q, base, n = key & q_mask, unit << np.uint64(v_bits), 0
        for r in range(start[q], start[q + 1]):
            n += _below(raw, first, last, base + np.uint64(hi[r] + 1)) - _below(
                raw, first, last, base + np.uint64(lo[r])
            )
        for k in range(i, j):
            c = asked[k] & row_mask
            if out[c] < 0 or n < out[c]:
                out[c] = n
        i = j
    return out


def covered_minima(
    targets: tuple[tuple[Ints, Ints], np.ndarray],
    population: tuple[tuple[Ints, Ints], np.ndarray],
    ranges: tuple[np.ndarray, np.ndarray, np.ndarray],
    width: int,
    *,
    pairs: bool,
) -> Ints | None:
    """size(t) of the module docstring per target, −1 for a target without a unit or not asked.

    Args:
        targets: the released cases' item lists (:func:`._own.item_lists`: distinct, sorted, every
            item < ``width``) and each case's tuple q (−1: not asked).
        population: the raw cases' item lists and each raw case's value (≥ 0).
        ranges: per tuple q, a CSR ``start`` over q into ``lo``/``hi``: its ranges of values.
        pairs: units are the pairs a < b of a case's items (else its items).
    """
    (t_start, t_item), tuple_of = targets
    (p_start, p_item), values = population
    n_cases = len(t_start) - 1
    start, lo, hi = (np.asarray(a, np.int64) for a in ranges)
    values = np.asarray(values, np.int64)
    units = max(width, 1) ** 2 if pairs else max(width, 1)
    unit_bits = max((units - 1).bit_length(), 1)
    v_bits = (max(int(values.max(initial=0)), int(hi.max(initial=0))) + 1).bit_length()
    q_bits = max(int(tuple_of.max(initial=0)).bit_length(), 1)
    row_bits = max((n_cases - 1).bit_length(), 1)
    if unit_bits + max(v_bits, q_bits + row_bits) > 64:
        return None
    with sized(n_cases):
        raw = np.sort(words(p_start, p_item, values, max(width, 1), np.array([v_bits, 0, 0]), pairs))
        shifts = np.array([q_bits + row_bits, row_bits, 1], np.int64)
        asked = np.sort(words(t_start, t_item, tuple_of.astype(np.int64), max(width, 1), shifts, pairs))
        return _minima(raw, v_bits, asked, shifts, (start, lo, hi), n_cases)  # type: ignore[no-any-return]


def unit_sizes(
    pop: Population,
    built: tuple[pl.DataFrame, pl.DataFrame, list[str]],
    t_units: pl.DataFrame,
    p_units: pl.DataFrame,
    width: int,
) -> pl.DataFrame:
    """``caseid``, ``size``: min over the case's units (items or pairs) of the raw cases covering it.

    A (tuple, unit) is packed into one UInt64 ``_qu`` = tuple · width + unit; each distinct one is
    counted once (:func:`._unique.unique_inverse` gives them and, per unit row, which one it is).
    """
    cases, tuples, exact = built
    case_ids, tuple_of = cases.get_column("caseid").to_numpy(), cases.get_column("_qt").to_numpy()
    if len(case_ids) > 1 and not bool(np.all(case_ids[1:] >= case_ids[:-1])):
        order = np.argsort(case_ids, kind="stable")
        case_ids, tuple_of = case_ids[order], tuple_of[order]
    unit_case, unit = t_units.get_column("caseid").to_numpy(), t_units.get_column("item").to_numpy()
    at = np.minimum(np.searchsorted(case_ids, unit_case), max(len(case_ids) - 1, 0))
    known = case_ids[at] == unit_case if len(case_ids) else np.zeros(len(unit_case), bool)
    packed = tuple_of[at[known]].astype(np.uint64) * np.uint64(width) + unit[known].astype(np.uint64)
    distinct, which, _ = unique_inverse(packed)
    wanted = pl.DataFrame(
        [
            pl.Series("_qt", distinct // np.uint64(width), pl.UInt32),
            pl.Series("_unit", distinct % np.uint64(width)),
        ]
    )
    sizes = pop.count(tuples, wanted, with_units(pop.raw_rows(exact), p_units), exact, extra=["_unit"],
                      widths={"_unit": width})[which.ravel()]  # fmt: skip
    owners = unit_case[known]
    if len(owners) and bool(np.all(owners[1:] >= owners[:-1])):  # unit rows in case order: runs
        firsts = np.flatnonzero(np.concatenate([[True], owners[1:] != owners[:-1]]))
        return pl.DataFrame(
            [pl.Series("caseid", owners[firsts]), pl.Series("size", np.minimum.reduceat(sizes, firsts))]
        )
    rows = pl.DataFrame([pl.Series("caseid", owners), pl.Series("size", sizes)])
    return rows.group_by("caseid").agg(pl.col("size").min())


def with_units(raw: pl.DataFrame, units: pl.DataFrame) -> pl.DataFrame:
    """The raw case rows once per unit they hold (``_unit``): a gather by binary search when the raw
    cases are in ``caseid`` order (as read), else a join."""
    ids = raw.get_column("caseid").to_numpy()
    if len(ids) == 0 or not bool(np.all(ids[1:] > ids[:-1])):
        return raw.join(units.rename({"item": "_unit"}), on="caseid")
    owner, unit = units.get_column("caseid").to_numpy(), units.get_column("item")
    at = np.minimum(np.searchsorted(ids, owner), len(ids) - 1)
    known = ids[at] == owner
    return raw[at[known]].with_columns(unit.filter(pl.Series(known)).alias("_unit"))
