"""The integer encodings risk's counts rest on, against their plain definitions on random data."""

from __future__ import annotations

import numpy as np
import polars as pl

from faers_anon.risk._classes import item_pairs, set_ids
from faers_anon.risk._codes import _encode
from faers_anon.risk._inference import _max_per_case_value
from faers_anon.risk._view import _outcome_sets


def _random_items(seed: int, rows: int = 400) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {"caseid": rng.integers(0, 60, rows), "item": rng.integers(0, 12, rows).astype(np.uint32)}
    )  # repeated (case, item) rows included


def test_item_pairs_are_the_self_join_pairs() -> None:
    for seed in range(5):
        items = _random_items(seed)
        joined = (
            items.unique().join(items.unique(), on="caseid", suffix="_b")
            .filter(pl.col("item") < pl.col("item_b")).sort(pl.all())
        )  # fmt: skip
        assert item_pairs(items, "caseid").sort(pl.all()).equals(joined)


def test_item_pairs_of_one_case_by_hand() -> None:
    items = pl.DataFrame({"caseid": [7, 7, 7, 3], "item": [5, 1, 3, 2]}, schema_overrides={"item": pl.UInt32})
    pairs = item_pairs(items, "caseid").rows()
    assert sorted(pairs) == [(7, 1, 3), (7, 1, 5), (7, 3, 5)]  # case 3 has one item: no pair
    assert item_pairs(items.head(0), "caseid").height == 0


def test_set_ids_equal_exactly_for_equal_sets() -> None:
    targets = _random_items(1, 120).unique()
    population = _random_items(2, 120).unique().rename({"caseid": "p"})
    t_sets, p_sets = set_ids(targets.lazy(), population.lazy())
    sets = {
        **{("t", c): frozenset(i) for c, i in targets.group_by("caseid").agg("item").iter_rows()},
        **{("p", c): frozenset(i) for c, i in population.group_by("p").agg("item").iter_rows()},
    }
    sid = {("t", c): s for c, s in t_sets.select("caseid", "sid").iter_rows()}
    sid |= {("p", c): s for c, s in p_sets.iter_rows()}
    assert sid.keys() == sets.keys()
    for a in sets:
        for b in sets:
            assert (sid[a] == sid[b]) == (sets[a] == sets[b])


def test_text_codes_are_the_dense_rank() -> None:
    released = pl.Series(["b", None, "a", "*", "b", ""])
    raw = pl.Series(["c", "a", None, "ä"])
    codes, raw_codes, width = _encode(released, raw)
    expected = pl.concat([released, raw]).rank("dense").fill_null(0).cast(pl.UInt32)
    assert raw_codes is not None
    assert pl.concat([codes, raw_codes]).to_list() == expected.to_list()
    assert codes.to_list() == [4, 0, 3, 2, 4, 1]  # "" < "*" < "a" < "b" (bytes), null 0
    assert width == 6


def test_outcome_sets_are_sorted_comma_joined_codes() -> None:
    outc = pl.DataFrame({"caseid": [1, 1, 2, 3, 3, 3], "term": ["HO", "DE", "LT", "OT", "DE", "HO"]})
    sets = dict(_outcome_sets(outc).iter_rows())
    assert sets == {1: "DE,HO", 2: "LT", 3: "DE,HO,OT"}
    empty = _outcome_sets(outc.head(0))
    assert empty.height == 0 and empty.columns == ["caseid", "outc_cod"]


def test_largest_p_per_case_and_value_packed_or_not() -> None:
    rows = pl.DataFrame(
        {"caseid": [3, 3, 3, 9, 9], "v": [1, 1, 0, 1, 1], "p": [0.2, 1.0, 0.5, 0.3, 0.1]},
        schema_overrides={"v": pl.UInt8},
    )
    expected = {(3, 1): 1.0, (3, 0): 0.5, (9, 1): 0.3}
    for ids in (
        [3, 3, 3, 9, 9],
        [-3, -3, -3, 9, 9],
        [3, 3, 3, 1 << 61, 1 << 61],
    ):  # packed, signed, too large
        frame = rows.with_columns(pl.Series("caseid", ids))
        got = {(c, v): p for c, v, p in _max_per_case_value(frame, 2).iter_rows()}
        assert got == {(ids[0] if c == 3 else ids[3], v): p for (c, v), p in expected.items()}
        assert _max_per_case_value(frame, 2).schema["v"] == pl.UInt8
