""":func:`faers_anon.series.placement._trim` ordered on its key columns: the frame the sort of every
column gave (the rule before twelfth session), rows and order, on random units."""

from __future__ import annotations

import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from faers_anon.series.placement import _LISTS, _trim
from faers_anon.series.units import intersection_pairs


def _sorted_whole(members: pl.DataFrame, target: int) -> pl.DataFrame:
    """_trim as it was: every column sorted, ranked, joined with the quotas."""
    is_returning = pl.col("store").is_null()
    classes = members.group_by("unit", "history").agg(pl.len().alias("n"), is_returning.sum().alias("r"))
    sup = (
        intersection_pairs(classes)
        .join(classes.select("unit", pl.col("history").alias("e_history"), "r"), on=["unit", "e_history"])
        .group_by("unit", "d_history")
        .agg(pl.col("r").sum().alias("sup"))
    )
    short = (target - pl.col("sup").cast(pl.Int64)).clip(lower_bound=0)
    added = pl.min_horizontal(pl.col("n") - pl.col("r"), short)
    quota = classes.join(sup, left_on=["unit", "history"], right_on=["unit", "d_history"]).select(
        "unit", "history", pl.when(pl.col("r") > 0).then(pl.col("r") + added).otherwise(0).alias("quota")
    )
    exposed = sum(pl.col(name).list.len() for name in _LISTS)
    order = ["unit", "history", pl.col("store").is_not_null(), exposed, "pseudonym"]
    ranked = members.sort(order).with_columns(pl.int_range(pl.len()).over("unit", "history").alias("_rank"))
    chosen = ranked.join(quota, on=["unit", "history"], maintain_order="left")
    return chosen.filter(pl.col("_rank") < pl.col("quota")).drop("_rank", "quota")


def _members(seed: int) -> pl.DataFrame:
    rng = random.Random(seed)
    rows = []
    for unit in range(40):
        base = f"1:{unit}"
        histories = [base, f"{base}|2:{unit}", f"{base}|2:{unit}|3:{unit % 7}", f"{base}|3:{unit}"]
        for pseudonym in rng.sample(range(10**6), rng.randint(1, 30)):
            returning = rng.random() < 0.3
            store = None if returning else rng.randint(1, 3)
            lists = {name: [f"V{rng.randint(0, 9)}" for _ in range(rng.randint(0, 3))] for name in _LISTS}
            row = {"pseudonym": pseudonym, "caseid": pseudonym + 7, "store": store, "unit": base}
            rows.append({**row, "history": rng.choice(histories), **lists})
    schema = {"pseudonym": pl.Int64, "caseid": pl.Int64, "store": pl.Int64, "unit": pl.Utf8,
              "history": pl.Utf8, **{name: pl.List(pl.Utf8) for name in _LISTS}}  # fmt: skip
    return pl.DataFrame(rows, schema=schema).sample(fraction=1.0, shuffle=True, seed=seed)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("target", [1, 5, 10, 100])
def test_trim_on_its_keys_gives_the_whole_sorted_frame(seed: int, target: int) -> None:
    members = _members(seed)
    got = _trim(members, target)
    assert_frame_equal(got, _sorted_whole(members, target))
    assert 0 < got.height <= members.height
