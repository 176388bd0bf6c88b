"""The "all" knowledge's candidate budget, counted from the sorted item rows (issue 18: risk CPU)."""

from __future__ import annotations

import polars as pl

from faers_anon.risk._classes import _rarest_total

# targets 1..4 (kt 0, 0, 1, 0); sets: 1 = {5, 7} (sid 10), 2 = {5, 7} (sid 10), 3 = {5, 7} (sid 10,
# another kt), 4 = {9} (one item: no candidates). Population holders: item 5 by 4 cases, 7 by 2, 9 by 1.
SETS = pl.DataFrame({"caseid": [1, 2, 3, 4], "kt": [0, 0, 1, 0], "sid": [10, 10, 10, 11]})
T_ITEMS = pl.DataFrame({"caseid": [1, 1, 2, 2, 3, 3, 4], "item": [5, 7, 5, 7, 7, 5, 9]})
P_ITEMS = pl.DataFrame({"p": [20, 21, 22, 23, 20, 21, 24], "item": [5, 5, 5, 5, 7, 7, 9]})


def test_rarest_total_by_hand() -> None:
    # distinct (kt, set) of several items: (0, 10) and (1, 10); each's rarest item is 7 (2 holders)
    assert _rarest_total(SETS, T_ITEMS, P_ITEMS) == 2 + 2


def test_rarest_total_item_never_held_counts_zero() -> None:
    # item 8 is held by no population case: the set {5, 8} has no candidate at all
    t_items = pl.DataFrame({"caseid": [1, 1], "item": [8, 5]})
    assert _rarest_total(SETS.head(1), t_items, P_ITEMS) == 0
