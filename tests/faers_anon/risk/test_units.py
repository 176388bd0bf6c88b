"""The numpy kernels of the risk stage's item knowledge, by hand (issue 18: the risk stage fast).

* :func:`faers_anon.risk._units.unit_minima`: prosecutor min over a case's units of the cases of
  its tuple holding the unit;
* :func:`faers_anon.risk._classes._holding_all`: the candidates holding every item of a set;
* :func:`faers_anon.risk._population.range_counts`: keys past 2^32 packed without re-ranking.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from faers_anon.risk._classes import _holding_all
from faers_anon.risk._population import range_counts
from faers_anon.risk._units import unit_minima


def test_unit_minima_by_hand() -> None:
    # tuple 0: cases 10, 20, 30; tuple 1: cases 40, 50. Units: 10 {1, 2}, 20 {1}, 30 {2, 3}, 40 {1},
    # 50 none; case 99 is not a target. n(0,1) = 2 (10, 20), n(0,2) = 2 (10, 30), n(0,3) = 1, n(1,1) = 1
    # (case 99 would make it 2 if it counted).
    case_ids = np.array([10, 20, 30, 40, 50])
    kt = np.array([0, 0, 0, 1, 1], np.uint32)
    unit_case = np.array([30, 10, 99, 20, 10, 30, 40])
    unit = np.array([2, 1, 1, 1, 2, 3, 1])
    got = unit_minima(kt, case_ids, unit_case, unit, 4)
    assert got.tolist() == [2, 2, 1, 1, 0]


def test_unit_minima_without_units_is_zero() -> None:
    got = unit_minima(np.array([0, 0]), np.array([1, 2]), np.array([], np.int64), np.array([], np.int64), 1)
    assert got.tolist() == [0, 0]


def test_holding_all_keeps_the_candidates_with_every_item() -> None:
    # set qs 0 = {5, 7, 9} (rarest first), qs 2 = {5, 7}, qs 3 = {8, 9}; the candidates hold the first
    # two items. Case ids are pseudonym-sized (past 2^50): they are indexed, not packed as they are.
    big = 1 << 50
    people = {big + 1: (5, 7, 9), big + 2: (5, 7), big + 3: (11, 5, 7, 9)}
    p_items = pl.DataFrame(
        [(p, i) for p, items in people.items() for i in items],
        schema={"p": pl.Int64, "item": pl.UInt32},
        orient="row",
    )
    multi = pl.DataFrame(
        {"qs": [0, 2, 3], "order": [[5, 7, 9], [5, 7], [8, 9]]},
        schema={"qs": pl.UInt32, "order": pl.List(pl.UInt32)},
    )
    candidates = pl.DataFrame(
        {"qs": [0, 0, 0, 2, 2], "p": [big + 1, big + 2, big + 3, big + 1, big + 2]},
        schema={"qs": pl.UInt32, "p": pl.Int64},
    )
    got = _holding_all(candidates, multi, p_items)
    assert dict(got.iter_rows()) == {0: 2, 2: 2, 3: 0}  # qs 0: big+2 lacks 9


def test_range_counts_with_keys_past_2_to_the_32() -> None:
    high = 1 << 40
    raw_keys = np.array([high, high, high + 1, 5], np.uint64)
    raw_w = np.array([1, 3, 2, 2], np.uint32)
    keys = np.array([high, high + 1, 5, 7], np.uint64)
    lo, hi = np.array([1, 0, 3, 0], np.uint32), np.array([2, 5, 3, 9], np.uint32)
    assert range_counts(raw_keys, raw_w, keys, lo, hi).tolist() == [1, 1, 0, 0]
    # keys too large for the weight bits: re-ranked first, same counts
    huge = np.uint64(1 << 62)
    assert range_counts(raw_keys + huge, raw_w, keys + huge, lo, hi).tolist() == [1, 1, 0, 0]
