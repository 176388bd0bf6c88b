"""Journalist class sizes for K + 1 or 2 items by two sorts of packed words (issue 18: risk CPU)."""

from __future__ import annotations

import numpy as np
import pytest

from faers_anon._numba_cache import mode
from faers_anon.risk._covered import covered_minima
from faers_anon.risk._own import item_lists

# raw cases 1..5 with values 10, 20, 30, 40, 50 and items 1 {1, 2}, 2 {1, 2, 3}, 3 {2}, 4 {1, 3},
# 5 {1, 2, 3}; released cases 100 (tuple 0: values [10, 30]), 200 (tuple 1: [40, 50] and [10, 10]),
# 300 (tuple 0, no item), 400 (not asked). A raw row of case 9 (not a raw case) is ignored.
RAW = (np.array([1, 2, 3, 4, 5]), np.array([10, 20, 30, 40, 50]))
RAW_ITEMS = (np.array([1, 1, 2, 2, 2, 3, 4, 4, 5, 5, 5, 9]), np.array([1, 2, 1, 2, 3, 2, 1, 3, 1, 2, 3, 1]))
TARGETS = (np.array([100, 200, 300, 400]), np.array([0, 1, 0, -1]))
ITEMS = (np.array([100, 100, 200, 200, 400]), np.array([1, 2, 1, 3, 1]))
RANGES = (np.array([0, 1, 3]), np.array([10, 40, 10]), np.array([30, 50, 10]))
SIDES = (item_lists(TARGETS[0], *ITEMS), TARGETS[1]), (item_lists(RAW[0], *RAW_ITEMS), RAW[1])


@pytest.mark.parametrize("how", ["interpreted", "compiled"])
def test_items_by_hand(how: str) -> None:
    with mode(how):
        got = covered_minima(*SIDES, RANGES, 4, pairs=False)
    # 100 in [10, 30]: item 1 held by 1, 2 -> 2; item 2 by 1, 2, 3 -> 3: min 2
    # 200 in [40, 50] or [10, 10]: item 1 by 4, 5 and 1 -> 3; item 3 by 4, 5 -> 2: min 2
    assert got is not None and got.tolist() == [2, 2, -1, -1]


@pytest.mark.parametrize("how", ["interpreted", "compiled"])
def test_pairs_by_hand(how: str) -> None:
    with mode(how):
        got = covered_minima(*SIDES, RANGES, 4, pairs=True)
    # 100's pair (1, 2) in [10, 30]: cases 1, 2 -> 2; 200's pair (1, 3): 4, 5 in [40, 50], none at 10 -> 2
    assert got is not None and got.tolist() == [2, 2, -1, -1]


def test_a_tuple_without_ranges_counts_zero() -> None:
    ranges = (np.array([0, 0, 0]), np.zeros(0, np.int64), np.zeros(0, np.int64))
    got = covered_minima(*SIDES, ranges, 4, pairs=False)
    assert got is not None and got.tolist() == [0, 0, -1, -1]
