""":func:`faers_anon.series.placement.over_theta` (one kernel, :func:`faers_anon.series.units.over`) and
:func:`faers_anon.series.placement._members` (joins on the keys, rows gathered once) against the frames
they replaced (fourteenth session), on random units: the same failing units, the same rows in the same
order."""

from __future__ import annotations

import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from faers_anon.series.ledger import REGION
from faers_anon.series.placement import _LISTS, _QIDS, _members, _sizes, over_theta
from faers_anon.series.units import intersection_pairs, pair_key, pair_parts, unit_of


def _over_theta_frames(
    members: pl.DataFrame, probabilities: pl.DataFrame, thetas: dict[str, float]
) -> frozenset:
    """over_theta as it was (thirteenth session): one lazy query joining the value strings with θ*."""
    pairs = intersection_pairs(members)
    sizes = _sizes(members, pairs).lazy()
    theta = pl.LazyFrame({"value": list(thetas), "theta": list(thetas.values())},
                         schema={"value": pl.Utf8, "theta": pl.Float64}).with_row_index("_v")  # fmt: skip
    keyed = members.select("unit", "history").unique().with_row_index("_h").lazy()
    d_ids = keyed.select("unit", pl.col("history").alias("d_history"), pl.col("_h").alias("_d"))
    e_ids = keyed.select("unit", pl.col("history").alias("e_history"), "_h")
    protected = probabilities.lazy().join(theta.select("value", "_v"), on="value").select("caseid", "_v", "p")
    sums = members.lazy().join(keyed, on=["unit", "history"]).select("_h", "caseid").join(protected, "caseid")
    over = (
        pairs.lazy().join(d_ids, on=["unit", "d_history"])
        .join(e_ids, on=["unit", "e_history"]).select("_d", "_h")
        .join(sums.group_by(pair_key("_h")).agg(pl.col("p").sum()).select(*pair_parts("_h"), "p"), on="_h")
        .group_by(pair_key("_d")).agg(pl.col("p").sum()).select(*pair_parts("_d"), "p")
        .join(sizes.join(d_ids, on=["unit", "d_history"]).select("_d", "size", "unit"), "_d")
        .join(theta.select("_v", "theta"), on="_v")
        .filter(pl.col("p") / pl.col("size") > pl.col("theta") + 1e-12)
        .select("unit").collect()
    )  # fmt: skip
    return frozenset(over.get_column("unit").unique().to_list())


def _random_check(seed: int) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, float]]:
    rng = random.Random(seed)
    rows, probs = [], []
    values = [f"V{i}" for i in range(12)] + ["class:A", "outc:DE"]
    for unit in range(rng.randint(1, 60)):
        base = f"1:{unit}"
        histories = [
            base,
            f"{base}|2:{unit}",
            f"{base}|2:{unit}|3:{unit % 7}",
            f"{base}|3:{unit}",
            f"{base}|2:9",
        ]
        for caseid in rng.sample(range(10**6), rng.randint(1, 12)):
            rows.append(
                {"caseid": caseid, "unit": base, "history": rng.choice(histories[: rng.randint(1, 5)])}
            )
            for value in rng.sample(values, rng.randint(0, 3)):  # weights that sum to θ exactly, often
                probs.append(
                    {"caseid": caseid, "value": value, "p": rng.choice([1.0, 0.5, 0.2, 0.6, 0.25, 0.1])}
                )
    thetas = {v: rng.choice([0.6, 0.5, 0.75, 1.0, 0.3]) for v in values if rng.random() < 0.8}
    members = pl.DataFrame(rows, schema={"caseid": pl.Int64, "unit": pl.Utf8, "history": pl.Utf8})
    probabilities = pl.DataFrame(probs, schema={"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})
    return members, probabilities.sample(fraction=1.0, shuffle=True, seed=seed), thetas


@pytest.mark.parametrize("seed", range(40))
def test_over_theta_gives_the_frames_units(seed: int) -> None:
    members, probabilities, thetas = _random_check(seed)
    assert over_theta(members, probabilities, thetas) == _over_theta_frames(members, probabilities, thetas)
    assert over_theta(members, probabilities, {}) == frozenset()
    assert over_theta(members.clear(), probabilities.clear(), thetas) == frozenset()


def test_over_theta_finds_some_units() -> None:
    checks = [_random_check(seed) for seed in range(40)]
    found = sum(len(over_theta(*check)) for check in checks)
    assert 40 < found < sum(check[0].get_column("unit").n_unique() for check in checks) * 0.8


def _members_frames(returning: pl.DataFrame, past: pl.DataFrame, stored: pl.DataFrame,
                    deleted: pl.Series) -> pl.DataFrame:  # fmt: skip
    """_members as it was (thirteenth session): every join carrying the members' whole rows."""
    units = unit_of(past.get_column("history"), returning.get_column("history"))
    again = stored.join(returning.select("pseudonym"), on="pseudonym", how="anti").select(
        "pseudonym", "caseid", "store", *[pl.col(c).alias(f"case_{c}") for c in _QIDS], *_LISTS
    )
    now = returning.select("pseudonym", "caseid", pl.lit(None, pl.Int64).alias("store"),
                           *[f"case_{c}" for c in _QIDS], *_LISTS)  # fmt: skip
    members = pl.concat([now, again], how="vertical_relaxed").filter(
        ~pl.col("pseudonym").is_in(deleted.implode())
    )
    members = members.join(past.select("pseudonym", "history"), on="pseudonym").join(units, on="history")
    base = returning.join(units, on="history").filter(pl.col("history") == pl.col("unit"))
    region = base.group_by("unit").agg(pl.col(c).first() for c in REGION)
    return members.join(region, on="unit").with_columns(
        pl.col("unit").rank("dense").cast(pl.Int64).alias("bundle")
    )


def _random_members(seed: int, n: int) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.Series]:
    rng = random.Random(seed)
    region = {"age_group": pl.Utf8, "age_min": pl.Float64, "age_max": pl.Float64, "sex": pl.Utf8,
              "wt_min": pl.Float64, "wt_max": pl.Float64}  # fmt: skip
    assert tuple(region) == REGION
    past = []
    for pseudonym in rng.sample(range(10**9), n):
        g1, g2 = rng.randint(0, n // 8), rng.randint(0, n // 8)
        history = rng.choice([f"1:{g1}", f"1:{g1}|2:{g2}", f"2:{g2}", f"1:{g1}|3:{g2 % 5}"])
        past.append({"pseudonym": pseudonym, "history": history, "age_group": rng.choice(["20-29", "*"]),
                     "age_min": 20.0, "age_max": rng.choice([30.0, None]), "sex": rng.choice(["F", "M"]),
                     "wt_min": None, "wt_max": 80.0})  # fmt: skip
    past_frame = pl.DataFrame(past, schema={"pseudonym": pl.Int64, "history": pl.Utf8, **region})

    def case(row: dict[str, object]) -> dict[str, object]:
        lists = {name: [f"T{rng.randint(0, 30)}" for _ in range(rng.randint(0, 4))] for name in _LISTS}
        qids = {c: rng.choice([1.0, 50.0, None]) for c in _QIDS if c != "sex"}
        return {"caseid": rng.randint(0, 10**8), **qids, "sex": rng.choice(["F", None]), **lists,
                "pseudonym": row["pseudonym"]}  # fmt: skip

    chosen = [row for row in past if rng.random() < 0.2]
    returning = pl.DataFrame([{**{f"case_{k}" if k in _QIDS else k: v for k, v in case(row).items()},
                               **row} for row in chosen])  # fmt: skip
    stored = pl.DataFrame([{**case(row), "store": rng.randint(1, 3)} for row in past if rng.random() < 0.8])
    deleted = pl.Series([row["pseudonym"] for row in past if rng.random() < 0.05], dtype=pl.Int64)
    return returning, past_frame, stored.sample(fraction=1.0, shuffle=True, seed=seed), deleted


@pytest.mark.parametrize(("seed", "n"), [(seed, n) for seed in range(6) for n in (200, 5_000)])
def test_members_gives_the_frames_rows_in_their_order(seed: int, n: int) -> None:
    returning, past, stored, deleted = _random_members(seed, n)
    got = _members(returning, past, stored, deleted)
    assert got.height > 0
    assert_frame_equal(got, _members_frames(returning, past, stored, deleted))
