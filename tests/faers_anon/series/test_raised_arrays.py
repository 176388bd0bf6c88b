"""Rule 6's raise check as arrays (:mod:`faers_anon.series.raised_arrays`; docs/series.md §6, twelfth
session): a hand-built ledger with the answer worked out by hand, and random small ledgers compared with
the check written out case by case (tests/faers_anon/series/raise_reference.py), one pass and pass after
pass with the step's shared arrays.
"""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest

from faers_anon import _numba_cache
from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.series.raised import Step, check
from faers_anon.series.raised_passes import RaiseCheck
from tests.faers_anon.series.raise_reference import reference

_LIST = pl.List(pl.Utf8)
_E = {"drug_key": pl.Utf8, "disease": pl.Utf8, "weight": pl.Float64}
_STATE = {
    "caseid": pl.Int64,
    "history": pl.Utf8,
    "reactions": _LIST,
    "indications": _LIST,
    "drug_keys": _LIST,
}
_PUBLISHED = {"caseid": pl.Int64, "pseudonym": pl.Int64, "unit": pl.Utf8, "history": pl.Utf8,
              "indications": _LIST, "reactions": _LIST, "drug_keys": _LIST}  # fmt: skip


def _config(tmp_path: Path, classes: dict[str, list[str]]) -> AnonymizeConfig:
    path = tmp_path / "classes.csv"
    path.write_text("value,class\n" + "".join(f"{v},{c}\n" for c, vs in classes.items() for v in vs))
    return AnonymizeConfig(k=3, classes=path)


def _e(rows: list[tuple[str, str, float]]) -> pl.DataFrame:
    return pl.DataFrame(rows, orient="row", schema=_E)


def _hand_built() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(state, past, published, E*_{t−1}, E_t) of the worked example (test below)."""
    cases = [(1, "1:0", ["a1"], [], []), (2, "1:0", [], ["X"], []), (3, "1:0", [], [], ["D"]),
             (4, "1:0", [], [], ["G"]), (5, "1:0|2:1", [], [], ["D", "F"]),
             (6, "1:0|2:1", [], [], [])]  # fmt: skip
    state = pl.DataFrame(cases, orient="row", schema=_STATE)
    past = state.select(pl.col("caseid").alias("pseudonym"), "history")
    published = pl.DataFrame([(60, 6, "u", "1:0|2:1", [], [], ["D"])], orient="row", schema=_PUBLISHED)
    earlier = _e([("D", "A1", 0.2), ("F", "X", 0.5)])
    current = _e([("D", "A1", 0.9), ("F", "X", 0.5), ("G", "A2", 0.4), ("D", "X", 0.3)])
    return state, past, published, earlier, current


def test_a_hand_built_ledger_with_classes_own_values_and_a_risen_weight(tmp_path: Path) -> None:
    # Histories 1:0 (cases 1–4) and 1:0|2:1 (5, 6): I(1:0) = cases 1–6, I(1:0|2:1) = {5, 6}; case 6 is
    # published now with drug D (kept: one of the two cases of 1:0|2:1). Class ARTH = {A1, A2}, θ 0.5 for
    # A1, A2, X and class:ARTH. E*_{t−1}: (D, A1) 0.2, (F, X) 0.5; E_t raises (D, A1) to 0.9, adds (G, A2)
    # 0.4 and (D, X) 0.3. P before / mid / now:
    #   A1: case 1 own "a1" 1/1/1; 3 and 5 (D) 0.2/0.2/0.9; 6 (D now) 0/0.2/0.9 (raised: 3, 5, 6).
    #       I(1:0): 3.7 / 6 = 0.617 > 0.5, before 1.4: fails; I(1:0|2:1): 1.8 / 2 = 0.9 > 0.5: fails.
    #   A2: case 4 (G) 0/0/0.4: 0.4 / 6 passes. X: case 2 own 1; 5: F 0.5 (D's 0.3 lower); 3 and 6: 0.3
    #       now: I(1:0) 2.1 / 6 = 0.35, I(1:0|2:1) 0.8 / 2 = 0.4: both pass.
    #   class:ARTH: 1 (case 1) + 0.9 (3) + 0.4 (4) + 0.9 (5) + 0.9 (6) = 4.1 / 6 = 0.683 fails; 1.8 / 2
    #       fails.
    # Left out: the raised members' raised pairs above their P before (0.2, case 4's 0): (D, A1) and, through
    # the class, (G, A2); (D, X) stays (X does not fail).
    config = _config(tmp_path, {"ARTH": ["A1", "A2"]})
    state, past, published, earlier, current = _hand_built()
    thetas = {"A1": 0.5, "A2": 0.5, "X": 0.5, "class:ARTH": 0.5, "Y": 0.1}
    pairs, failing = check(published, past, state, earlier, current, thetas, config, Step())
    assert pairs.rows() == [("D", "A1"), ("G", "A2")]
    expected = {("1:0", "A1"), ("1:0|2:1", "A1"), ("1:0", "class:ARTH"), ("1:0|2:1", "class:ARTH")}
    assert set(failing.rows()) == expected
    assert reference(published, past, state, earlier, current, thetas, config) == (pairs.rows(), expected)
    # θ_A1 at 0.62 (over 3.7 / 6 = 0.617, under 0.9): only the smaller intersection fails for A1
    thetas["A1"] = 0.62
    _, failing = check(published, past, state, earlier, current, thetas, config, Step())
    assert {f for f in failing.rows() if f[1] == "A1"} == {("1:0|2:1", "A1")}
    # case 6 not published: it reads 0 for A1 (no drug in the ledger): I(1:0) 2.8 / 6 = 0.467 and
    # I(1:0|2:1) 0.9 / 2 = 0.45 pass θ 0.5 and fail θ 0.45 (0.45 is not over it) and 0.44
    nobody = published.clear()
    for theta, failing_now in [
        (0.5, set()),
        (0.45, {("1:0", "A1")}),
        (0.44, {("1:0", "A1"), ("1:0|2:1", "A1")}),
    ]:
        found = check(nobody, past, state, earlier, current, {"A1": theta}, config, Step())
        assert set(found[1].rows()) == failing_now
        assert found[0].rows() == ([("D", "A1")] if failing_now else [])
        assert reference(nobody, past, state, earlier, current, {"A1": theta}, config) == (
            found[0].rows(),
            failing_now,
        )


def _random_ledger(rng: random.Random) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A ledger of 20–60 cases over releases 1–3 (2–3 groups each), small vocabularies."""
    terms = ["a", "b", " c ", "C", "d", "e", "", None]
    drugs = ["D1", "D2", "D3", "D4", "D5", None]
    rows = []
    for caseid in range(1, rng.randint(20, 60)):
        releases = [r for r in (1, 2, 3) if rng.random() < 0.6] or [rng.randint(1, 3)]
        history = "|".join(f"{r}:{rng.randint(0, 2)}" for r in releases)
        pick = [rng.sample(terms, rng.randint(0, 2)) for _ in range(2)] + [
            rng.sample(drugs, rng.randint(0, 3))
        ]
        rows.append((caseid, history, *pick))
    state = pl.DataFrame(rows, orient="row", schema=_STATE)
    return state, state.select(pl.col("caseid").alias("pseudonym"), "history")


def _random_e(rng: random.Random, drugs: list[str], values: list[str], n: int) -> pl.DataFrame:
    return _e([(rng.choice(drugs), rng.choice(values), round(rng.uniform(0.05, 1.0), 2)) for _ in range(n)])


def _random_pass(
    rng: random.Random, state: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, float]]:
    """(published, E_t, θ*) of one pass: a random subset of the ledger published with lists of its own
    (new terms and drugs among them)."""
    cases = state.sample(fraction=rng.uniform(0.0, 0.6), seed=rng.randint(0, 10**6))
    extra = [rng.sample(["a", "B", "f", "zz"], rng.randint(0, 2)) for _ in range(cases.height)]
    published = cases.select(
        "caseid", pl.col("caseid").alias("pseudonym"), pl.lit("u").alias("unit"), "history",
        pl.Series("indications", extra, _LIST), "reactions",
        pl.Series("drug_keys", [rng.sample(["D1", "D2", "D6", "d7"], rng.randint(0, 2)) for _ in extra],
                  _LIST),
    )  # fmt: skip
    current = _random_e(
        rng, ["D1", "D2", "D3", "D6", "d7", "D8"], ["A", "B", "C", "F", "G"], rng.randint(3, 12)
    )
    thetas = {v: round(rng.uniform(0.2, 0.95), 2) for v in ["A", "B", "C", "E", "F", "class:K", "class:L"]}
    return published, current, thetas


@pytest.mark.parametrize("seed", range(40))
def test_random_ledgers_give_the_reference_pairs_pass_after_pass(seed: int, tmp_path: Path) -> None:
    # each pass of one RaiseCheck (the step's arrays kept) and a fresh check give the reference's pairs and
    # failing (history, value) pairs; some seeds leave pairs out, some do not
    rng = random.Random(seed)
    config = _config(tmp_path, {"K": ["A", "B"], "L": ["C", "E", "G"]})
    state, past = _random_ledger(rng)
    earlier = _random_e(rng, ["D1", "D2", "D3", "D4"], ["A", "B", "C", "E"], rng.randint(0, 8))
    passes = RaiseCheck()
    for _ in range(3):
        published, current, thetas = _random_pass(rng, state)
        if rng.random() < 0.2:
            published = published.clear()
        args = (published, past, state, earlier, current, thetas, config)
        want_pairs, want_failing = reference(*args)
        got = passes(*args)
        assert got.rows() == want_pairs
        assert set(passes.failing.rows()) == want_failing
        assert check(*args, Step())[0].rows() == want_pairs


def test_compiled_and_interpreted_kernels_agree(tmp_path: Path) -> None:
    # the kernels run interpreted on small ledgers (faers_anon._numba_cache): compiled, the same pairs
    rng = random.Random(7)
    config = _config(tmp_path, {"K": ["A", "B"], "L": ["C", "E", "G"]})
    state, past = _random_ledger(rng)
    earlier = _random_e(rng, ["D1", "D2", "D3", "D4"], ["A", "B", "C", "E"], 8)
    published, current, thetas = _random_pass(rng, state)
    args = (published, past, state, earlier, current, thetas, config)
    with _numba_cache.mode("interpreted"):
        interpreted = check(*args, Step())
    with _numba_cache.mode("compiled"):
        compiled = check(*args, Step())
    assert interpreted[0].equals(compiled[0]) and interpreted[1].sort("history", "value").equals(
        compiled[1].sort("history", "value"))  # fmt: skip


def _nudged(rng: random.Random, current: pl.DataFrame) -> pl.DataFrame:
    """E_t of the next pass: a row dropped, a weight changed or a row added (or nothing), as leaving links
    out and mining again does."""
    rows = current.rows()
    pick = rng.random()
    if pick < 0.3 and rows:
        rows.pop(rng.randrange(len(rows)))
    elif pick < 0.6 and rows:
        at = rng.randrange(len(rows))
        rows[at] = (rows[at][0], rows[at][1], round(rng.uniform(0.05, 1.0), 2))
    elif pick < 0.9:
        rows.append((rng.choice(["D1", "D2", "D3", "D6", "d7"]), rng.choice(["A", "B", "C", "G"]), 0.9))
    return _e(rows)


@pytest.mark.parametrize("seed", range(40))
def test_passes_with_the_same_published_cases_keep_the_unchanged_values(seed: int, tmp_path: Path) -> None:
    # the step's later passes: the same published cases, E_t nudged (some values keep their inputs and
    # their last results, the others are checked again), a θ lowered or raised, now and then another
    # published set (a re-plan withholds units); every pass gives the reference's and a fresh check's pairs
    rng = random.Random(1000 + seed)
    config = _config(tmp_path, {"K": ["A", "B"], "L": ["C", "E", "G"]})
    state, past = _random_ledger(rng)
    earlier = _random_e(rng, ["D1", "D2", "D3", "D4"], ["A", "B", "C", "E"], rng.randint(0, 8))
    published, current, thetas = _random_pass(rng, state)
    passes = RaiseCheck()
    for _ in range(6):
        args = (published, past, state, earlier, current, thetas, config)
        want_pairs, want_failing = reference(*args)
        assert passes(*args).rows() == want_pairs
        assert set(passes.failing.rows()) == want_failing
        assert check(*args, Step())[0].rows() == want_pairs
        current = _nudged(rng, current)
        if rng.random() < 0.3:
            value = rng.choice(sorted(thetas))
            thetas = {**thetas, value: round(rng.uniform(0.2, 0.95), 2)}
        if rng.random() < 0.2 and published.height:
            published = published.sample(fraction=0.7, seed=rng.randint(0, 10**6))
        else:  # the same cases in a new frame, as the step makes it every pass
            published = published.clone()
