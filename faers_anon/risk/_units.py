"""Prosecutor class sizes for K + 1 or 2 items: min over a case's units of the cases holding them.

A *unit* is one item, or one pair of items packed as a · width + b (:func:`._reidentify._pairs`).
For a case c with K-tuple id kt(c) and units U(c), the prosecutor class on K + the unit u is
n(kt, u) = |{c' : kt(c') = kt(c), u ∈ U(c')}| (the release is the population) and the class of c is
min_{u ∈ U(c)} n(kt(c), u) (k^m-anonymity's reading, :mod:`._classes`). A case without units has
none (0 here; the caller falls back to fewer items, then to K alone).

Computation: (kt, u) packed into one UInt64 (kt · unit width + u; two key columns when that could
overflow), n by one value sort (:func:`._unique.unique_inverse`), the minimum per case over its run
of rows (the item lists are sorted by case; a group-by on the case's row otherwise). Shared by the
1- and 2-item knowledge sets of the same K (the 1-item sizes are the 2-item sets' fallback).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from faers_anon.risk._unique import unique_inverse

__all__ = ["unit_minima"]


def unit_minima(
    kt: np.ndarray, case_ids: np.ndarray, unit_case: np.ndarray, unit: np.ndarray, width: int
) -> np.ndarray:
    """Per case of ``case_ids`` (sorted): min over its units of n(kt, u), 0 when it has no unit.

    Args:
        kt: each case's K-tuple id (aligned with ``case_ids``); unit_case, unit: one row per distinct
            (case, unit); units of cases not in ``case_ids`` are ignored; width: every unit < width.
    """
    out = np.zeros(len(case_ids), np.int64)
    if len(case_ids) == 0 or len(unit_case) == 0:
        return out
    at = np.minimum(np.searchsorted(case_ids, unit_case), len(case_ids) - 1)
    known = case_ids[at] == unit_case
    row, unit = at[known], unit[known]
    tuple_of = kt[row].astype(np.uint64)
    if (int(kt.max(initial=0)) + 1) * max(width, 1) < 1 << 63:
        _, which, counts = unique_inverse(tuple_of * np.uint64(max(width, 1)) + unit.astype(np.uint64))
        n = counts[which]
    else:  # pragma: no cover - tuple ids and units too large to pack
        keys = pl.DataFrame([pl.Series("kt", tuple_of), pl.Series("unit", unit.astype(np.uint64))])
        n = keys.select(pl.len().over(["kt", "unit"])).to_series().to_numpy()
    if bool(np.all(row[1:] >= row[:-1])):  # rows in case order (the lists are sorted): runs, no hashing
        firsts = np.flatnonzero(np.concatenate([[True], row[1:] != row[:-1]]))
        out[row[firsts]] = np.minimum.reduceat(n, firsts)
        return out
    counted = pl.DataFrame([pl.Series("row", row), pl.Series("n", n)]).group_by("row").agg(pl.col("n").min())
    out[counted.get_column("row").to_numpy()] = counted.get_column("n").to_numpy()
    return out
