"""Field levels computed once per distinct value (issue 18 item 6): hand-worked texts and dense codes."""

from __future__ import annotations

from datetime import date as D  # noqa: N812

import polars as pl

from faers_anon.io.qid_fields import level_keys, value_levels


def test_date_levels_and_codes_of_the_distinct_values() -> None:
    dates = pl.Series("fda_dt", [D(2024, 1, 20), D(2024, 1, 5), None, D(2024, 3, 1), D(2024, 1, 5)])
    table = value_levels(dates, level_keys("fda_dt", "date", {})).sort("fda_dt", nulls_last=True)
    assert table.height == 4  # three dates and the missing value, each once
    assert table["t0"].to_list() == ["20240105", "20240120", "20240301", None]
    assert table["t1"].to_list() == ["202401", "202401", "202403", None]
    assert table["t2"].to_list() == ["2024Q1"] * 3 + [None]
    # dense ranks from 1 among the texts present; missing has no code
    assert table["c0"].to_list() == [1, 2, 3, None]
    assert table["c1"].to_list() == [1, 1, 2, None]
    assert table["c2"].to_list() == [1, 1, 1, None]
    assert table["c3"].to_list() == [1, 1, 1, None]


def test_tree_levels_rank_the_parents() -> None:
    tree = {"MD": "health", "PH": "health", "CN": "lay"}
    values = pl.Series("occp_cod", ["PH", "CN", "MD", "XX"])
    table = value_levels(values, level_keys("occp_cod", "occupation", {"occupation": tree})).sort("occp_cod")
    assert table["t1"].to_list() == ["lay", "health", "health", "*"]  # CN, MD, PH, XX (unlisted: *)
    assert table["c0"].to_list() == [1, 2, 3, 4]
    assert table["c1"].to_list() == [3, 2, 2, 1]  # "*" < "health" < "lay"
