"""A bundle is filled up to the target, never beyond its returning cases (issue 14 item 7)."""

from __future__ import annotations

import polars as pl

from faers_anon.series.placement import _trim


def _unit(returning: int, stored: int, history: str = "1:7") -> pl.DataFrame:
    n = returning + stored
    return pl.DataFrame(
        {
            "unit": ["1:7"] * n,
            "history": [history] * n,
            "pseudonym": list(range(n)),
            "store": [None] * returning + [1] * stored,
            "indications": [[]] * n,
            "reactions": [["Nausea"]] * n,
            "drug_keys": [[]] * n,
        },
        schema_overrides={"store": pl.Int64, "indications": pl.List(pl.Utf8), "drug_keys": pl.List(pl.Utf8)},
    )


def test_a_unit_with_more_returning_cases_than_the_target_republishes_none() -> None:
    # 28 of a released group's 140 cases return; filled to k = 5 the bundle is the 28 returning cases
    # (sup 28 > 5: nothing to add). The counts are unsigned, and 5 - 28 wrapped around to 2^32 - 23:
    # the whole group of 140 was republished (112 stored cases; 96k of a 400k quarter's 185k).
    bundle = _trim(_unit(28, 112), 5)
    assert bundle.height == 28
    assert bundle.get_column("store").null_count() == 28


def test_a_unit_with_fewer_returning_cases_is_filled_to_the_target() -> None:
    # 2 returning, 10 stored, target 5: 3 stored cases are added (fewest exposed values, then pseudonym).
    bundle = _trim(_unit(2, 10), 5)
    assert bundle.height == 5
    assert bundle.filter(pl.col("store").is_not_null()).get_column("pseudonym").to_list() == [2, 3, 4]
