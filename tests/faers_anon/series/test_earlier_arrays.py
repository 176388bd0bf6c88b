"""Rule 4's earlier check on numbered cases (:mod:`faers_anon.series.earlier_arrays`) decides as the polars
check (:func:`faers_anon.series.earlier.check_histories` with the arrays turned off) on random ledgers:
the same failing units and histories, and the array path answers (no fallback) whenever the published
cases are the ledger's; a published case the ledger lacks falls back to the joins.
"""

from __future__ import annotations

import random

import numpy as np
import polars as pl
import pytest

from faers_anon.series import earlier, earlier_arrays
from faers_anon.series.earlier import (
    _histories,
    check_histories,
    earlier_over_theta,
    kept_histories,
)
from tests.faers_anon.series.test_check_keys import _VALUES, _ledger, _p, _published


def _polars(monkeypatch: pytest.MonkeyPatch) -> None:
    """The arrays off: :func:`.earlier.check_histories` runs its joins (it calls the name it imported)."""
    monkeypatch.setattr(earlier, "check_numbered", lambda *a, **k: None)


@pytest.mark.parametrize("seed", range(30))
def test_numbered_check_equals_the_joins(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    past = _ledger(rng)
    published = _published(rng, past)
    before = _p(rng, past.get_column("pseudonym").to_list(), 0.35)
    raw = dict(published.select("pseudonym", "caseid").iter_rows())
    now = pl.concat([
        before.filter(pl.col("caseid").is_in(list(raw))).with_columns(
            pl.col("caseid").replace_strict(raw, return_dtype=pl.Int64)),
        _p(rng, published.get_column("caseid").to_list(), 0.3),
    ]).unique(["caseid", "value"], keep="last")  # fmt: skip
    thetas = {v: rng.choice([0.2, 0.3, 0.5, 0.6]) for v in rng.sample(_VALUES, rng.randint(1, len(_VALUES)))}
    sizes = past.group_by("history").agg(pl.len().alias("n"))

    def earlier(frame: pl.DataFrame) -> pl.DataFrame:
        return before.join(frame.select("caseid"), on="caseid", how="semi")

    def now_of(frame: pl.DataFrame) -> pl.DataFrame:
        return now.join(frame.select("caseid"), on="caseid", how="semi")

    cases = []
    for subset in (published, published.filter(pl.col("unit") != published.get_column("unit").min())):
        kept = kept_histories(sizes, subset)
        numbered = earlier_arrays.check_numbered(_histories(past).numbered(), subset, thetas, now, kept,
                                                 earlier, now_of)  # fmt: skip
        assert numbered is not None
        cases.append(
            (subset, kept, numbered, earlier_over_theta(subset, past, now_of, thetas, before=earlier))
        )
    _polars(monkeypatch)
    for subset, kept, numbered, units in cases:
        joined = check_histories(subset, past, now_of, thetas, now, kept, earlier)
        assert numbered[0] == joined[0] == units
        assert sorted(numbered[1].get_column("history")) == sorted(joined[1].get_column("history"))


def test_a_case_the_ledger_lacks_falls_back() -> None:
    past = pl.DataFrame({"pseudonym": [1, 2, 3], "history": ["1:0", "1:0", "1:0"]})
    published = pl.DataFrame({"caseid": [11, 19], "pseudonym": [1, 9], "history": ["1:0", "1:0"],
                              "unit": ["1:0", "1:9"]})  # fmt: skip
    before = pl.DataFrame({"caseid": [2, 3], "value": ["X"] * 2, "p": [0.5, 0.5]})
    now = pl.DataFrame({"caseid": [11, 19], "value": ["X", "X"], "p": [1.0, 1.0]})
    kept = pl.DataFrame({"history": ["1:0"]})

    def earlier(frame: pl.DataFrame) -> pl.DataFrame:
        return before.join(frame.select("caseid"), on="caseid", how="semi")

    numbered = _histories(past).numbered()
    assert earlier_arrays.check_numbered(numbered, published, {"X": 0.6}, now, kept, earlier, earlier) is None
    units, failing = check_histories(published, past, earlier, {"X": 0.6}, now, kept, earlier)
    assert failing.get_column("history").to_list() == ["1:0"] and "1:0" in units


@pytest.mark.parametrize("seed", range(30))
def test_p_before_kept_across_calls(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """One ``earlier`` over a sequence of checks (smaller published sets, other θ values, one no P frame
    holds, P now given or asked, a case's rows together or apart): the same units and histories as the
    joins, each ledger case asked of ``earlier`` once (:class:`.earlier_arrays._Before`)."""
    rng = random.Random(1000 + seed)
    past = _ledger(rng)
    published = _published(rng, past)
    before = _p(rng, past.get_column("pseudonym").to_list(), 0.35)
    if seed % 2:  # a case's rows apart (not the memo's order)
        before = before.sample(fraction=1.0, shuffle=True, seed=seed)
    now = _p(rng, published.get_column("caseid").to_list(), 0.5)
    sizes = past.group_by("history").agg(pl.len().alias("n"))
    asked: list[int] = []

    def earlier(frame: pl.DataFrame) -> pl.DataFrame:
        asked.extend(frame.get_column("caseid").to_list())
        return before.join(frame.select("caseid"), on="caseid", how="semi")

    def now_of(frame: pl.DataFrame) -> pl.DataFrame:
        return now.join(frame.select("caseid"), on="caseid", how="semi")

    units = published.get_column("unit").unique().sort().to_list()
    calls = []
    for step in range(6):
        subset = published.filter(~pl.col("unit").is_in(units[: step // 2]))
        values = rng.sample(_VALUES, rng.randint(1, len(_VALUES))) + (["NEVER"] if step % 3 == 2 else [])
        thetas = {v: rng.choice([0.2, 0.3, 0.5]) for v in values}
        kept = kept_histories(sizes, subset)
        given = now if step % 2 else None
        numbered = earlier_arrays.check_numbered(_histories(past).numbered(), subset, thetas, given, kept,
                                                 earlier, now_of)  # fmt: skip
        assert numbered is not None
        calls.append((subset, thetas, given, kept, numbered))
    assert len(asked) == len(set(asked))
    _polars(monkeypatch)
    for subset, thetas, given, kept, numbered in calls:
        joined = check_histories(subset, past, now_of, thetas, given, kept, earlier)
        assert numbered[0] == joined[0]
        assert sorted(numbered[1].get_column("history")) == sorted(joined[1].get_column("history"))


def test_a_callable_no_weak_reference_holds_is_asked_each_time() -> None:
    past = pl.DataFrame({"pseudonym": [1, 2, 3], "history": ["1:0", "1:0", "1:1"]})
    before = pl.DataFrame({"caseid": [1, 2, 3], "value": ["X"] * 3, "p": [0.5, 1.0, 0.25]})

    class Slotted:
        __slots__ = ()

        def __call__(self, frame: pl.DataFrame) -> pl.DataFrame:
            return before.join(frame.select("caseid"), on="caseid", how="semi")

    numbered = _histories(past).numbered()
    for _ in range(2):
        cached = numbered.earlier(Slotted())
        at, value, p = cached(numbered, np.array([2, 0]), Slotted(), {"X": 0.5})
        assert at.tolist() == [0, 1] and value.tolist() == [0, 0] and p.tolist() == [0.25, 0.5]
