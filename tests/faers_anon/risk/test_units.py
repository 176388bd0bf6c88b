"""The numpy kernels of the risk stage's item knowledge, by hand (issue 18: the risk stage fast).

* :func:`faers_anon.risk._units.unit_minima`: prosecutor min over a case's units of the cases of
  its tuple holding the unit;
* :func:`faers_anon.risk._classes._holding_all`: the candidates holding every item of a set;
* :func:`faers_anon.risk._population.range_counts`: keys past 2^32 packed without re-ranking;
* :func:`faers_anon.risk._sets.set_ids`: hashed set ids, checked, with the exact fallback;
* :func:`faers_anon.risk._view.terms`: distinct canonical (case, term) rows by a packed key.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from faers_anon.risk import _sets
from faers_anon.risk._classes import _holding_all
from faers_anon.risk._population import range_counts
from faers_anon.risk._sets import set_ids, set_members
from faers_anon.risk._units import unit_minima
from faers_anon.risk._view import terms


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
    order = np.argsort(unit_case, kind="stable")  # rows in case order: the run-wise minimum, same sizes
    assert unit_minima(kt, case_ids, unit_case[order], unit[order], 4).tolist() == [2, 2, 1, 1, 0]


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


def _set_rows() -> tuple[pl.DataFrame, pl.DataFrame]:
    # targets 1 {3, 5}, 2 {5, 3} (same set, rows in another order, one repeated), 3 {3}, 4 {3, 5, 7};
    # population 10 {3, 5}, 11 {7}, 12 {3}
    targets = pl.DataFrame(
        {"caseid": [1, 1, 2, 2, 2, 3, 4, 4, 4], "item": [3, 5, 5, 3, 3, 3, 7, 5, 3]},
        schema={"caseid": pl.Int64, "item": pl.UInt32},
    )
    population = pl.DataFrame(
        {"p": [10, 10, 11, 12], "item": [5, 3, 7, 3]}, schema={"p": pl.Int64, "item": pl.UInt32}
    )
    return targets, population


def _ids(frames: tuple[pl.DataFrame, pl.DataFrame]) -> dict[int, int]:
    t_sets, p_sets = frames
    return dict(t_sets.iter_rows()) | dict(p_sets.iter_rows())


def _classes(sid: dict[int, int]) -> set[frozenset[int]]:
    """The cases grouped by their set id: equal ids exactly for equal sets."""
    return {frozenset(c for c, i in sid.items() if i == one) for one in set(sid.values())}


#: cases 1, 2 and 10 hold one set, 3 and 12 another, 4 and 11 sets of their own
_SAME_SETS = {frozenset({1, 2, 10}), frozenset({3, 12}), frozenset({4}), frozenset({11})}


def test_set_ids_by_hand() -> None:
    targets, population = _set_rows()
    assert _classes(_ids(set_ids(targets.lazy(), population.lazy()))) == _SAME_SETS


def test_set_ids_fall_back_to_the_lists_on_a_hash_collision(monkeypatch: pytest.MonkeyPatch) -> None:
    def colliding(case: np.ndarray, item: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        starts, hashes = summaries(case, item, words)
        return starts, np.zeros_like(hashes)  # every set the same summary: the check must catch it

    summaries = _sets._summaries
    monkeypatch.setattr(_sets, "_summaries", colliding)
    targets, population = _set_rows()
    assert _classes(_ids(set_ids(targets.lazy(), population.lazy()))) == _SAME_SETS


def test_set_members_one_row_per_set_and_item() -> None:
    targets, _ = _set_rows()
    t_sets, _ = set_ids(targets.lazy(), None)
    members = set_members(targets.lazy(), t_sets)
    sid = dict(t_sets.iter_rows())
    got = {(s, i) for s, i in members.iter_rows()}
    assert got == {(sid[1], 3), (sid[1], 5), (sid[3], 3), (sid[4], 3), (sid[4], 5), (sid[4], 7)}
    assert members.height == len(got)


def test_terms_are_the_distinct_canonical_case_terms(tmp_path: Path) -> None:
    # case 7: "aspirin" (key) and " Aspirin  " (name) are one term, "" is no term; case 9 holds
    # TYLENOL twice; a pseudonym-sized case id (past 2^50) keeps its value
    big = (1 << 50) + 3
    pl.DataFrame(
        {
            "caseid": [7, 7, 9, 9, big],
            "drug_key": ["aspirin", "IBUPROFEN", "TYLENOL", "tylenol", None],
            "drugname": [" Aspirin  ", "", "Tylenol", None, "heparin sodium"],
        }
    ).write_parquet(tmp_path / "drug.parquet")
    got = terms(tmp_path, "drug", ("drug_key", "drugname"))
    assert got.schema == pl.Schema({"caseid": pl.Int64, "term": pl.String})
    assert got.rows() == [  # in (caseid, term) order
        (7, "ASPIRIN"),
        (7, "IBUPROFEN"),
        (9, "TYLENOL"),
        (big, "HEPARIN SODIUM"),
    ]
    assert terms(tmp_path, "reac", ("pt",)).height == 0  # no such table
