"""Rule 6's raise check after another published set (a re-plan): each value whose inputs did not change is
checked again only where the published cases moved (:meth:`faers_anon.series.raised_arrays.Ledger._moved`;
docs/series.md §6, "The raise check after a re-plan"). Random ledgers, pass after pass with published sets
changed every way (cases withheld, added, their lists changed, rows reordered or repeated): each pass gives
the reference's pairs (tests/faers_anon/series/raise_reference.py) and a fresh check's, and keeps per value
the very arrays a full check finds (failing histories, raised members and their P, in the same order).
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from faers_anon.series.raised import Step, check
from faers_anon.series.raised_arrays import Ledger
from faers_anon.series.raised_passes import RaiseCheck
from tests.faers_anon.series.raise_reference import reference
from tests.faers_anon.series.test_raised_arrays import (
    _LIST,
    _config,
    _nudged,
    _random_e,
    _random_ledger,
    _random_pass,
)


def _moved(rng: random.Random, published: pl.DataFrame, state: pl.DataFrame) -> pl.DataFrame:
    """Another published set: some cases withheld (the order kept, as a re-plan gives it), some added from
    the ledger, a case's lists changed, the rows shuffled or a row repeated, or the same rows."""
    pick = rng.random()
    if pick < 0.35 and published.height:
        return published.sample(fraction=rng.uniform(0.5, 0.95), seed=rng.randint(0, 10**6), shuffle=False)
    if pick < 0.55:
        more = state.join(published.select(pl.col("pseudonym").alias("caseid")), on="caseid", how="anti")
        more = more.sample(n=min(more.height, rng.randint(1, 4)), seed=rng.randint(0, 10**6))
        added = more.select(
            "caseid", pl.col("caseid").alias("pseudonym"), pl.lit("u").alias("unit"), "history",
            "indications", "reactions", "drug_keys",
        )  # fmt: skip
        return pl.concat([published, added])
    if pick < 0.75 and published.height:
        at = rng.randrange(published.height)
        drugs = [rng.sample(["D1", "D2", "D3", "D6"], rng.randint(0, 2)) if i == at else d
                 for i, d in enumerate(published.get_column("drug_keys").to_list())]  # fmt: skip
        return published.with_columns(pl.Series("drug_keys", drugs, _LIST))
    if pick < 0.85:
        return published.sample(fraction=1.0, shuffle=True, seed=rng.randint(0, 10**6))
    if pick < 0.92 and published.height:
        return pl.concat([published, published.slice(rng.randrange(published.height), 1)])
    return published.clone()


def _memo(ledger: Ledger, wanted: list[str]) -> list[tuple[list[int], list[int], list[float]]]:
    found = []
    for value in wanted:
        m = ledger._memo[value]
        found.append((m.fail_h.tolist(), m.up_at.tolist(), m.up_mid.tolist()))
    return found


@pytest.mark.parametrize("seed", range(60))
def test_another_published_set_checks_again_only_where_it_moved(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(5000 + seed)
    config = _config(tmp_path, {"K": ["A", "B"], "L": ["C", "E", "G"]})
    state, past = _random_ledger(rng)
    earlier = _random_e(rng, ["D1", "D2", "D3", "D4"], ["A", "B", "C", "E"], rng.randint(0, 8))
    published, current, thetas = _random_pass(rng, state)
    moved: list[int] = []
    run = Ledger._moved

    def counted(self: Ledger, stale: np.ndarray, *args: object) -> object:
        moved.append(stale.size)
        return run(self, stale, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Ledger, "_moved", counted)
    passes = RaiseCheck()
    for _ in range(8):
        args = (published, past, state, earlier, current, thetas, config)
        want_pairs, want_failing = reference(*args)
        assert passes(*args).rows() == want_pairs
        assert set(passes.failing.rows()) == want_failing
        fresh = Step()
        assert check(*args, fresh)[0].rows() == want_pairs
        ledger = passes._step.ledger[2] if passes._step.ledger else None
        if ledger is not None and fresh.ledger is not None:
            wanted = sorted(fresh.ledger[2]._memo)
            assert _memo(ledger, wanted) == _memo(fresh.ledger[2], wanted)
        if rng.random() < 0.3:
            current = _nudged(rng, current)
        if rng.random() < 0.15:
            value = rng.choice(sorted(thetas))
            thetas = {**thetas, value: round(rng.uniform(0.2, 0.95), 2)}
        published = _moved(rng, published, state)
    assert sum(moved) > 0  # values checked again through the moved path (1,633 over the 60 seeds)


def test_the_moved_path_is_taken_and_agrees_on_a_larger_ledger(tmp_path: Path) -> None:
    # many passes over one ledger, each withholding a few cases: every pass after the first goes through
    # the moved path for the values whose inputs stayed, with the full check's arrays
    rng = random.Random(11)
    config = _config(tmp_path, {"K": ["A", "B"], "L": ["C", "E", "G"]})
    state, past = _random_ledger(rng)
    state = pl.concat([state, _random_ledger(random.Random(12))[0].with_columns(pl.col("caseid") + 1000)])
    past = state.select(pl.col("caseid").alias("pseudonym"), "history")
    earlier = _random_e(rng, ["D1", "D2", "D3", "D4"], ["A", "B", "C", "E"], 8)
    published, current, thetas = _random_pass(rng, state)
    passes = RaiseCheck()
    for _ in range(6):
        args = (published, past, state, earlier, current, thetas, config)
        assert passes(*args).rows() == reference(*args)[0]
        fresh = Step()
        check(*args, fresh)
        assert passes._step.ledger is not None and fresh.ledger is not None
        wanted = sorted(fresh.ledger[2]._memo)
        assert _memo(passes._step.ledger[2], wanted) == _memo(fresh.ledger[2], wanted)
        published = published.sample(fraction=0.9, seed=rng.randint(0, 10**6), shuffle=False)
