"""The release's own class sizes for K + 1 or 2 items by one sort of packed words (issue 18: risk CPU)."""

from __future__ import annotations

import numpy as np
import pytest

from faers_anon._numba_cache import mode
from faers_anon.risk._own import item_lists, own_minima

# cases 10, 20, 30 in tuple 0; 40 in tuple 1; 50 has no item. Items: 10 {1, 2, 3}, 20 {1, 2},
# 30 {2, 3}, 40 {1, 2}; a row of case 99 (not a target) is ignored.
KT = np.array([0, 0, 0, 1, 0])
CASES = np.array([10, 20, 30, 40, 50])
ROWS = (np.array([10, 10, 10, 20, 20, 30, 30, 40, 40, 99]), np.array([1, 2, 3, 1, 2, 2, 3, 1, 2, 1]))


@pytest.mark.parametrize("how", ["interpreted", "compiled"])
def test_one_item_by_hand(how: str) -> None:
    with mode(how):
        got = own_minima(KT, item_lists(CASES, *ROWS), 4, pairs=False)
    # tuple 0 holders: item 1 {10, 20} 2, item 2 {10, 20, 30} 3, item 3 {10, 30} 2; tuple 1: item 1 1
    assert got is not None and got.tolist() == [2, 2, 2, 1, 0]


@pytest.mark.parametrize("how", ["interpreted", "compiled"])
def test_two_items_by_hand(how: str) -> None:
    with mode(how):
        got = own_minima(KT, item_lists(CASES, *ROWS), 4, pairs=True)
    # tuple 0 pairs: (1,2) {10, 20} 2, (1,3) {10} 1, (2,3) {10, 30} 2 -> 10: 1, 20: 2, 30: 2; 40: (1,2) 1
    assert got is not None and got.tolist() == [1, 2, 2, 1, 0]
