"""The recheck's later attempts check only what changed, and find what a full check finds (issue 14 item 7).

:class:`Recheck` keeps the last attempt's E, θ*, P(s | c) and checked histories; a later attempt
computes P again only when E's rows changed (every member's then: the arrays of
:mod:`faers_anon.series.linked` cost less than renewing the holders' changed values did), and checks
only the changed values and θ, plus the histories it newly keeps. Hand-built cases with worked
answers, and random series of attempts against a full check of every attempt.
"""

from __future__ import annotations

import random
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import faers_anon.series.recheck as recheck_module
from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.series.composition import Mined, ReleaseInputs
from faers_anon.series.exposed import exposed_probabilities
from faers_anon.series.placement import SeriesPlan
from faers_anon.series.recheck import Recheck, changed_rows
from faers_anon.series.units import unit_of

_LIST = pl.List(pl.Utf8)
_E = {"drug_key": pl.Utf8, "disease": pl.Utf8, "weight": pl.Float64}


def _state(rows: list[tuple[int, str, list[str], list[str]]]) -> pl.DataFrame:
    """Ledger state rows (pseudonym, history, reactions, drug keys)."""
    return pl.DataFrame(
        [(c, h, reac, [], drugs, []) for c, h, reac, drugs in rows], orient="row",
        schema={"caseid": pl.Int64, "history": pl.Utf8, "reactions": _LIST, "indications": _LIST,
                "drug_keys": _LIST, "outcomes": _LIST},
    )  # fmt: skip


def _cases(rows: list[tuple[int, list[str], list[str]]]) -> pl.DataFrame:
    """The composition's super-records (raw caseid, reactions, drug keys)."""
    return pl.DataFrame(
        [(c, [], reac, drugs) for c, reac, drugs in rows], orient="row",
        schema={"caseid": pl.Int64, "indications": _LIST, "reactions": _LIST, "drug_keys": _LIST},
    )  # fmt: skip


def _plan(members: pl.DataFrame) -> SeriesPlan:
    """A plan publishing ``members`` (raw ``caseid``, ``unit``, ``history``) as one bundle per unit."""
    frozen = members.with_columns(pl.col("unit").rank("dense").cast(pl.Int64).alias("bundle"))
    return SeriesPlan(frozen, pl.Series([], dtype=pl.Int64), {})


def _inputs(cases: pl.DataFrame, knowledge: list[tuple[str, str, float]], thetas: dict[str, float]) -> Any:
    """What the composition mined: its cases, E and θ* (P(s | c) of the whole composition is not read)."""
    e = pl.DataFrame(knowledge, schema=_E, orient="row")
    return ReleaseInputs(cases, e, None, e.clear(), SimpleNamespace(thetas=thetas))  # type: ignore[arg-type]


def _recheck(state: pl.DataFrame, members: pl.DataFrame, config: AnonymizeConfig) -> Recheck:
    ledger: Any = SimpleNamespace(path=Path("."), meta={"releases": []}, state=state)
    past = state.select(pl.col("caseid").alias("pseudonym"), "history")
    known = members.select("caseid", "pseudonym")
    before = partial(exposed_probabilities, entries=state, knowledge=pl.DataFrame(schema=_E), config=config,
                     outcomes=None)  # fmt: skip
    return Recheck(ledger, past, known, config, before)


def test_changed_rows_compare_e_as_p_reads_it() -> None:
    # P reads "aspirin"/"headache" as ASPIRIN/HEADACHE, each pair at its largest weight: 0.7 both times
    before = pl.DataFrame([("aspirin", "headache", 0.5), ("ASPIRIN", "HEADACHE", 0.7), ("B", "X", 0.2)],
                          schema=_E, orient="row")  # fmt: skip
    after = pl.DataFrame(
        [("ASPIRIN", "Headache", 0.7), ("B", "X", 0.3), ("C", "Y", 0.1)], schema=_E, orient="row"
    )
    read = recheck_module.as_read
    rows = changed_rows(read(before), read(after)).sort("drug_key")
    assert rows.rows() == [("B", "X"), ("C", "Y")]


# Release 1: group 0 = pseudonyms 11..15, group 1 = 21..25, group 2 = 31..35, group 3 = 41..45 (raw
# caseid = pseudonym + 1000). 11, 21, 31, 41 return; each unit is published whole. X: 12, 13 had it,
# 14 took D1 (in an earlier version); Y: 22, 23 had it, 24 took D2; Z: 42, 43, 44 had it, 41 brings it.
_LEDGER = [
    (11, "1:0", [], []), (12, "1:0", ["X"], []), (13, "1:0", ["X"], []), (14, "1:0", [], ["D1"]),
    (15, "1:0", [], []), (21, "1:1", [], []), (22, "1:1", ["Y"], []), (23, "1:1", ["Y"], []),
    (24, "1:1", [], ["D2"]), (25, "1:1", [], []), *[(c, "1:2", [], []) for c in range(31, 36)],
    (41, "1:3", [], []), *[(c, "1:3", ["Z"], []) for c in (42, 43, 44)], (45, "1:3", [], []),
]  # fmt: skip
_NOW = {11: ["D1"], 21: ["D2"], 31: ["D3"]}


def _worked() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    state = _state(_LEDGER)
    # the stored rows republished carry no drug: 14's D1 and 24's D2 are in the ledger only
    cases = _cases([(c + 1000, ["Z"] if c == 41 else reac, _NOW.get(c, [])) for c, _, reac, _ in _LEDGER])
    members = state.select(
        (pl.col("caseid") + 1000).alias("caseid"), pl.col("caseid").alias("pseudonym"), "history",
        pl.col("history").alias("unit"),
    )  # fmt: skip
    return state, cases, members


def test_a_second_attempt_checks_what_changed_and_finds_what_a_full_check_finds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = AnonymizeConfig()
    state, cases, members = _worked()
    sizes: list[int] = []
    exposed = recheck_module.exposed_probabilities

    def counted(frame: pl.DataFrame, *args: Any, **kwargs: Any) -> pl.DataFrame:
        sizes.append(frame.height)
        return exposed(frame, *args, **kwargs)

    monkeypatch.setattr(recheck_module, "exposed_probabilities", counted)
    check = _recheck(state, members, config)
    # attempt 1: X (0.3 + 1 + 1 + 0.3) / 5 = 0.52, Y (0.5 + 1 + 1 + 0.5) / 5 = 0.6, W 0.1 / 5: pass;
    # Z 4 / 5 = 0.8 > 0.6: unit 1:3 fails
    first = _inputs(
        cases,
        [("D1", "X", 0.3), ("D2", "Y", 0.5), ("D3", "W", 0.1)],
        {"X": 0.6, "Y": 0.6, "W": 0.6, "Z": 0.6},
    )
    assert check(_plan(members), first) == {"1:3"}
    assert sizes == [20]  # every member's P
    # attempt 2, without 1:3: E makes D1 -> X 1.0 (X: 4 / 5 = 0.8 > 0.6) and θ_Y falls to 0.5
    # (0.6 > 0.5): both fail; 1:2 (D3 -> W unchanged) passes. E changed: P is computed again for
    # every member (as arrays, cheaper than renewing only the 2 holding D1).
    second = _inputs(
        cases,
        [("D1", "X", 1.0), ("D2", "Y", 0.5), ("D3", "W", 0.1)],
        {"X": 0.6, "Y": 0.5, "W": 0.6, "Z": 0.6},
    )
    kept = members.filter(pl.col("unit") != "1:3")
    assert check(_plan(kept), second) == {"1:0", "1:1"}
    assert sizes[1:] == [15]
    assert _recheck(state, kept, config)(_plan(kept), second) == {"1:0", "1:1"}  # a full check
    # attempt 3, without them: nothing changed, nothing computed again, 1:2 passes
    last, computed = kept.filter(pl.col("unit") == "1:2"), len(sizes)
    assert check(_plan(last), second) == frozenset()
    assert len(sizes) == computed


def test_the_same_plan_with_its_own_theta_checks_only_the_values_whose_theta_fell(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The series step checks a plan first with the composition's own E and the plan's θ* (a Mined, no
    # P(s | c) of the composition yet), then, that passing, with the composition's own θ*: E is the
    # same, so no P is computed again, and only the values whose θ fell are checked (a unit that passed
    # for s passes under a higher θ_s: its conf is the same).
    config = AnonymizeConfig()
    state, cases, members = _worked()
    sizes: list[int] = []
    checked: list[set[str]] = []
    exposed, over = recheck_module.exposed_probabilities, recheck_module.over_theta

    def counted(frame: pl.DataFrame, *args: Any, **kwargs: Any) -> pl.DataFrame:
        sizes.append(frame.height)
        return exposed(frame, *args, **kwargs)

    def seen(members: pl.DataFrame, probabilities: pl.DataFrame, thetas: dict[str, float]) -> frozenset[str]:
        checked.append(set(thetas))
        return over(members, probabilities, thetas)

    monkeypatch.setattr(recheck_module, "exposed_probabilities", counted)
    monkeypatch.setattr(recheck_module, "over_theta", seen)
    kept = members.filter(pl.col("unit") != "1:3")
    e = [("D1", "X", 0.3), ("D2", "Y", 0.5), ("D3", "W", 0.1)]
    check = _recheck(state, kept, config)
    # X (0.3 + 1 + 1 + 0.3) / 5 = 0.52, Y (0.5 + 1 + 1 + 0.5) / 5 = 0.6, W 0.1 / 5 = 0.02: all pass
    mined = Mined(cases, pl.DataFrame(e, schema=_E, orient="row"), None)
    assert check(_plan(kept), mined, {"X": 0.6, "Y": 0.6, "W": 0.6}) == frozenset()
    with pytest.raises(TypeError):
        check(_plan(kept), mined)  # a Mined holds no θ*
    # its own θ*: X rises to 0.7, Y falls to 0.55 (0.6 > 0.55: 1:1 fails), W falls to 0.5 (0.02 passes)
    own = _inputs(cases, e, {"X": 0.7, "Y": 0.55, "W": 0.5})
    assert check(_plan(kept), own) == {"1:1"}
    assert sizes == [15] and checked[-1] == {"W", "Y"}  # no P again; X (θ rose) not checked
    assert _recheck(state, kept, config)(_plan(kept), own) == {"1:1"}  # a full check


# Release 1 group 0 = a 1..4 and g 5, 6; release 2 group 0 = g 5, 6 and x 7..10. g5 returns with S, so
# does x7; x8, x9, x10 had S. Units: g's "1:0|2:0" = {5, 6}, x's "2:0" = {7..10}.
_KEPT_LATER: list[tuple[int, str, list[str], list[str]]] = [
    *[(c, "1:0", [], []) for c in range(1, 5)], (5, "1:0|2:0", [], []), (6, "1:0|2:0", [], []),
    (7, "2:0", [], []), *[(c, "2:0", ["S"], []) for c in (8, 9, 10)],
]  # fmt: skip


def test_a_history_kept_once_a_unit_is_withheld_is_checked_for_every_value() -> None:
    state = _state(_KEPT_LATER)
    cases = _cases([(c + 1000, ["S"] if c in (5, 7) else reac, []) for c, _, reac, _ in _KEPT_LATER[4:]])
    members = state.filter(pl.col("caseid") > 4).select(
        (pl.col("caseid") + 1000).alias("caseid"), pl.col("caseid").alias("pseudonym"), "history",
        pl.when(pl.col("caseid") < 7).then(pl.lit("1:0|2:0")).otherwise(pl.lit("2:0")).alias("unit"),
    )  # fmt: skip
    config, inputs = AnonymizeConfig(), _inputs(cases, [], {"S": 0.5})
    check = _recheck(state, members, config)
    # attempt 1: x's bundle reads S at 4 / 4 > 0.5 and fails; g's at 1 / 2 = 0.5 passes, and so does
    # the kept group "1:0" ({1..6}: 1 / 6); "2:0" is not kept (its four cases are all published)
    assert check(_plan(members), inputs) == {"2:0"}
    # attempt 2, x withheld, same E and θ: "2:0" is kept now, I = {5..10} reads S at (1 + 3) / 6 > 0.5,
    # raised from 3 / 6 by g5: g's unit fails, as in a full check
    g = members.filter(pl.col("unit") == "1:0|2:0")
    assert check(_plan(g), inputs) == {"1:0|2:0"}
    assert _recheck(state, g, config)(_plan(g), inputs) == {"1:0|2:0"}


def _random_series(rng: random.Random) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """A two-release ledger of 60 cases (release 2 regroups 30 of them), 12 returning cases; each unit's
    returning members and a random part of the others published."""
    values, drugs = ["A", "B", "C"], ["D1", "D2", "D3", "D4"]
    rows = []
    for c in range(60):
        history = f"1:{c // 5}" + (f"|2:{(c * 7) % 30 // 5}" if c < 30 else "")
        rows.append((c, history, rng.sample(values, rng.randint(0, 1)), rng.sample(drugs, rng.randint(0, 2))))
    state = _state(rows)
    returning, seed = rng.sample(range(60), 12), rng.randint(0, 9)
    of = dict(zip(state.get_column("caseid"), state.get_column("history"), strict=True))
    units = unit_of(state.get_column("history"), pl.Series([of[c] for c in returning]))
    members = (
        state.select(pl.col("caseid").alias("pseudonym"), "history").join(units, on="history")
        .filter(pl.col("pseudonym").is_in(returning) | (pl.int_range(pl.len()).shuffle(seed) % 3 > 0))
        .with_columns((pl.col("pseudonym") + 1000).alias("caseid"))
    )  # fmt: skip
    now = {c: (rng.sample(values, 1), rng.sample(drugs, 1)) for c in returning}
    stored = {
        c: (rng.sample(reac, rng.randint(0, len(reac))), rng.sample(d, rng.randint(0, len(d))))
        for c, _, reac, d in rows
    }
    cases = _cases([(c + 1000, *now.get(c, stored[c])) for c, _, _, _ in rows])
    return state, cases.join(members.select("caseid"), on="caseid", how="semi"), members


def _random_inputs(rng: random.Random, cases: pl.DataFrame, last: Any | None) -> Any:
    """E and θ* of an attempt: each (drug, value) weight and each θ kept from the last one or drawn again."""
    pairs = [(d, v) for d in ["D1", "D2", "D3", "D4"] for v in ["A", "B", "C"]]
    old = {} if last is None else {(d, v): w for d, v, w in last.knowledge.rows()}
    knowledge = [(d, v, old[(d, v)] if (d, v) in old and rng.random() < 0.6 else rng.choice([0.1, 0.4, 0.9]))
                 for d, v in pairs if rng.random() < 0.7 or (d, v) in old]  # fmt: skip
    kept = last.thresholds.thetas if last is not None and rng.random() < 0.7 else None
    thetas = {v: kept[v] if kept else rng.choice([0.4, 0.6]) for v in ["A", "B", "C", "class:ab"]}
    return _inputs(cases, knowledge, thetas)


@pytest.mark.parametrize("seed", range(12))
def test_every_attempt_finds_what_a_full_check_finds(seed: int, tmp_path: Path) -> None:
    classes = tmp_path / "classes.csv"
    classes.write_text("value,class\nA,ab\nB,ab\n")
    config = AnonymizeConfig(classes=classes)
    rng = random.Random(seed)
    state, cases, members = _random_series(rng)
    check, inputs = _recheck(state, members, config), None
    for _ in range(4):
        inputs = _random_inputs(rng, cases, inputs)
        failing = check(_plan(members), inputs)
        full = _recheck(state, members, config)
        assert failing == full(_plan(members), inputs)
        assert check._last is not None and full._last is not None
        assert_frame_equal(check._last.probabilities, full._last.probabilities)
        members = members.filter(~pl.col("unit").is_in(list(failing)))
