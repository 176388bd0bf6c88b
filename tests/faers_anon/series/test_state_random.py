"""``advance`` on random states and releases: the same frame as the join, filters and sort it replaced."""

from __future__ import annotations

import random

import polars as pl
import pytest

from faers_anon.series.state import _OLD, _REGION, LISTS, STATE_SCHEMA, advance, state_from_entries


def _reference(state: pl.DataFrame, entries: pl.DataFrame, index: int) -> pl.DataFrame:
    """``advance`` as it was before the fourteenth session (docs/series.md, "The ledger's update cheaper")."""
    new = entries.select(
        "caseid",
        pl.concat_str([pl.lit(str(index)), pl.col("group").cast(pl.Utf8)], separator=":").alias("history"),
        pl.lit(index, pl.UInt32).alias("last"),
        *_REGION,
        *LISTS,
    )
    published = pl.col("caseid").is_in(new.get_column("caseid").implode())
    before = state.filter(published).select("caseid", pl.col("history").alias("_history"),
                                            *[pl.col(n).alias(o) for n, o in _OLD.items()])  # fmt: skip
    again = new.join(before, on="caseid").with_columns(
        pl.concat_str(["_history", "history"], separator="|").alias("history"),
        pl.any_horizontal(pl.col(n).list.set_difference(o).list.len() > 0 for n, o in _OLD.items()).alias(
            "_grown"
        ),
    )
    same = again.filter(~pl.col("_grown")).with_columns(pl.col(o).alias(n) for n, o in _OLD.items())
    grown = again.filter("_grown").with_columns(
        pl.concat_list(o, n).list.unique().list.sort().alias(n) for n, o in _OLD.items()
    )
    fresh = new.filter(~pl.col("caseid").is_in(before.get_column("caseid").implode()))
    parts = (state.filter(~published), fresh, same, grown)
    return (
        pl.concat([part.select(list(STATE_SCHEMA)) for part in parts], how="vertical_relaxed")
        .cast(STATE_SCHEMA)  # type: ignore[arg-type]
        .sort("caseid")
    )


def _entries(rng: random.Random, cases: list[int], index: int) -> pl.DataFrame:
    values = ["A", "B", "C", "D", None]

    def listed() -> list[str | None]:
        return sorted(set(rng.sample(values, rng.randint(0, 3))), key=lambda v: (v is not None, v or ""))

    rows = [
        {"release": index, "caseid": c, "group": rng.randrange(4), "age_group": rng.choice(["x", None]),
         "age_min": rng.choice([1.0, None]), "age_max": 2.0, "sex": rng.choice(["F", "M"]), "wt_min": None,
         "wt_max": None, **{n: listed() for n in LISTS}}
        for c in rng.sample(cases, rng.randint(0, len(cases)))
    ]  # fmt: skip
    schema = {"release": pl.UInt32, "caseid": pl.Int64, "group": pl.UInt32,
              **{c: STATE_SCHEMA[c] for c in _REGION}, **{n: pl.List(pl.Utf8) for n in LISTS}}  # fmt: skip
    return pl.DataFrame(rows, schema=schema).sort("caseid")


@pytest.mark.parametrize("seed", range(30))
def test_advance_is_the_reference_frame(seed: int) -> None:
    rng = random.Random(seed)
    cases = rng.sample(range(-(10**12), 10**12), 40)
    state = pl.DataFrame(schema=STATE_SCHEMA)
    for index in range(1, 5):
        entries = _entries(rng, cases, index)
        after = advance(state, entries, index)
        assert after.equals(_reference(state, entries, index))
        state = after
    assert state_from_entries(pl.DataFrame(schema=entries.schema)).is_empty()
