"""Attribute inference's per-group sums of per-case maxima, by hand (issue 18: the risk stage fast).

* :func:`faers_anon.risk._sums.group_key_sums`: sigma(g, key) = Σ_{c ∈ g} max p over the case's rows
  counting for the key, summed in case-id order whatever the rows' order;
* :func:`faers_anon.risk._inference._key_map`: value v → key v and key width + i of its classes;
* :func:`faers_anon.risk._unique.unique_inverse`: ``numpy.unique`` with inverse and counts by one sort.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from faers_anon._numba_cache import mode
from faers_anon.risk._inference import _key_map
from faers_anon.risk._sums import group_key_sums
from faers_anon.risk._unique import unique_inverse

# cases 30, 40 in group 1, 10, 20 in group 0; values 0, 1, 2 count for keys 0, 1, 2; values 0 and 1
# also for key 3 (their class). Case 99 is in no group: its row is ignored.
CASES = (np.array([30, 10, 40, 20]), np.array([1, 0, 1, 0]))
ROWS = [(10, 0, 0.5), (10, 0, 0.25), (10, 1, 1.0), (20, 0, 0.75), (30, 2, 0.5), (30, 1, 0.25),
        (99, 0, 1.0), (40, 1, 0.5)]  # fmt: skip
KEYS = (np.array([0, 2, 4, 5]), np.array([0, 3, 1, 3, 2]))
# g0: key 0 = max(0.5, 0.25) + 0.75 = 1.25; key 1 = 1.0; key 3 = max(0.5, 0.25, 1.0) + 0.75 = 1.75
# g1: key 1 = 0.25 + 0.5 = 0.75; key 2 = 0.5; key 3 = 0.25 + 0.5 = 0.75
EXPECTED = [(0, 0, 1.25), (0, 1, 1.0), (0, 3, 1.75), (1, 1, 0.75), (1, 2, 0.5), (1, 3, 0.75)]


def _triples(rows: list[tuple[int, int, float]], cases: tuple[np.ndarray, np.ndarray] = CASES) -> list:
    arrays = (
        tuple(np.array(column) for column in zip(*rows, strict=True)) if rows else (np.zeros(0, int),) * 3
    )
    group, key, sigma = group_key_sums(cases, arrays, KEYS)  # type: ignore[arg-type]
    return sorted(zip(group.tolist(), key.tolist(), sigma.tolist(), strict=True))


@pytest.mark.parametrize("how", ["interpreted", "compiled"])
def test_group_key_sums_by_hand(how: str) -> None:
    with mode(how):
        assert _triples(ROWS) == EXPECTED
        assert _triples(ROWS[::-1]) == EXPECTED  # the rows' order does not matter
        assert _triples([]) == []


def test_group_key_sums_fixed_order() -> None:
    # one group, cases 1, 2, 3 with p 0.1, 0.2, 0.3: summed in case order (0.1 + 0.2) + 0.3 =
    # 0.6000000000000001 (not 0.1 + (0.2 + 0.3) = 0.6), whatever order the rows come in
    cases = (np.array([3, 1, 2]), np.array([0, 0, 0]))
    rows = [(3, 0, 0.3), (2, 0, 0.2), (1, 0, 0.1)]
    for order in (rows, rows[::-1], [rows[1], rows[0], rows[2]]):
        assert _triples(order, cases)[0][2] == (0.1 + 0.2) + 0.3 == 0.6000000000000001


def test_key_map_by_hand() -> None:
    # values A, B, C (codes 0, 1, 2); classes: A in "x" and "y", C in "x", D (not released) in "y"
    names = pl.DataFrame({"v": pl.Series([0, 1, 2], dtype=pl.UInt32), "value": ["A", "B", "C"]})
    members = pl.DataFrame({"value": ["A", "A", "C", "D"], "class": ["y", "x", "x", "y"]})
    starts, key_of, classes = _key_map(3, members, names)
    assert classes.to_list() == ["x", "y"]  # keys 3 and 4
    assert starts.tolist() == [0, 3, 4, 6]  # A → 0, 3, 4; B → 1; C → 2, 3
    assert key_of.tolist() == [0, 3, 4, 1, 2, 3]
    starts, key_of, classes = _key_map(3, None, names)
    assert (starts.tolist(), key_of.tolist(), classes.to_list()) == ([0, 1, 2, 3], [0, 1, 2], [])


def test_unique_inverse_by_hand() -> None:
    # keys 5, 3, 5, 0, 3, 3: distinct 0, 3, 5; rows' indices 2, 1, 2, 0, 1, 1; counts 1, 3, 2
    distinct, which, counts = unique_inverse(np.array([5, 3, 5, 0, 3, 3], np.uint64))
    assert (distinct.tolist(), which.tolist(), counts.tolist()) == ([0, 3, 5], [2, 1, 2, 0, 1, 1], [1, 3, 2])
    # a key of 64 bits leaves no room for the row number: numpy.unique's path, same answer
    distinct, which, counts = unique_inverse(np.array([2**63 + 5, 1, 2**63 + 5], np.uint64))
    assert (distinct.tolist(), which.tolist(), counts.tolist()) == ([1, 2**63 + 5], [1, 0, 1], [1, 2])
    assert [len(a) for a in unique_inverse(np.zeros(0, np.uint64))] == [0, 0, 0]
    keys = np.random.default_rng(1).integers(0, 50, 1_000).astype(np.uint64)
    for got, want in zip(
        unique_inverse(keys), np.unique(keys, return_inverse=True, return_counts=True), strict=True
    ):
        assert np.array_equal(got, want)
