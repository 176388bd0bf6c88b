"""E weights a later release raises (issue 14 item 3; :mod:`faers_anon.series.raised`, docs/series.md §4).

Hand-built ledgers and tables with worked answers. The history of the first tests is the one the
4 × 400k series showed: six cases grouped together in releases 1 and 2 (history ``1:0|2:3``), none
of them in release 3, three exposing X, one taking drug D that releases 1–2's E link to X at 0.25:
conf = (3 + 0.25) / 6 = 0.5417 <= θ 0.6. Release 3's data gives w(D, X) = 1.0: with every release's
E applied the intersection reads (3 + 1) / 6 = 0.667 > 0.6.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

import faers_anon.series.step as step_module
from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.risk._composition import composition
from faers_anon.risk._view import CaseData
from faers_anon.series.composition import Composition, left_out, without_links
from faers_anon.series.earlier import earlier_over_theta
from faers_anon.series.ledger import history
from faers_anon.series.raised import left_out_rows, links_over_theta, raised_rows
from faers_anon.series.recheck import Recheck
from knowledge import mine_from_indications
from tests.faers_anon.series import test_attempts
from tests.faers_anon.series.test_theta import _NO_E

_LIST = pl.List(pl.Utf8)
#: A generated series' quarter 2 and its ledger (k 3), and the step run on it: test_attempts.py's.
quarter_two, _prepare = test_attempts.quarter_two, test_attempts._prepare
_E = dict(_NO_E.schema)
#: Releases 1–2's E (largest weight per pair): D indicates X at 0.25.
_EARLIER = pl.DataFrame({"drug_key": ["D"], "disease": ["X"], "weight": [0.25]}, schema=_E)
#: The six cases of history 1:0|2:3 (pseudonyms 1..6): reactions, drugs.
_Case = tuple[int, list[str], list[str]]
_HISTORY: list[_Case] = [
    (1, ["X"], []), (2, ["X"], []), (3, ["X"], []), (4, [], ["D"]), (5, [], []), (6, [], [])
]
#: A case first released in release 2's group 7, also on D, alone with two mates that expose nothing.
_OTHER: list[_Case] = [(7, [], ["D"]), (8, [], []), (9, [], [])]


def _state() -> pl.DataFrame:
    """The ledger's state after release 2 (pseudonym = caseid; one region)."""
    rows = [(c, "1:0|2:3", reac, drugs) for c, reac, drugs in _HISTORY]
    rows += [(c, "2:7", reac, drugs) for c, reac, drugs in _OTHER]
    return pl.DataFrame(
        [(c, h, 2, reac, [], drugs, []) for c, h, reac, drugs in rows], orient="row",
        schema={"caseid": pl.Int64, "history": pl.Utf8, "last": pl.UInt32, "reactions": _LIST,
                "indications": _LIST, "drug_keys": _LIST, "outcomes": _LIST},
    )  # fmt: skip


def _nobody() -> pl.DataFrame:
    """Release 3 publishes no ledger case (its cases are all fresh)."""
    return pl.DataFrame(schema={"caseid": pl.Int64, "pseudonym": pl.Int64, "unit": pl.Utf8,
                                "history": pl.Utf8, "indications": _LIST, "reactions": _LIST,
                                "drug_keys": _LIST})  # fmt: skip


def _check(weight: float) -> pl.DataFrame:
    state = _state()
    past = state.select(pl.col("caseid").alias("pseudonym"), "history")
    current = pl.DataFrame({"drug_key": ["D"], "disease": ["X"], "weight": [weight]}, schema=_E)
    return links_over_theta(_nobody(), past, state, _EARLIER, current, {"X": 0.6}, AnonymizeConfig())


def test_a_raised_weight_lifting_a_history_no_release_holds_is_left_out() -> None:
    # release 3's E: w(D, X) = 1.0 > 0.25. History 1:0|2:3 reads (3 + 1) / 6 = 0.667 > 0.6, before
    # (3 + 0.25) / 6 = 0.542: the link (D, X) is left out. History 2:7 reads 1/3 <= 0.6 (no failure there).
    assert raised_rows(_EARLIER, pl.DataFrame({"drug_key": ["D"], "disease": ["X"], "weight": [1.0]},
                                              schema=_E)).select("drug_key", "disease").rows() == [("D", "X")]
    assert _check(1.0).rows() == [("D", "X")]
    # rule 4's earlier check (the only one before) sees nothing: no published case reaches the history
    state = _state()
    past = state.select(pl.col("caseid").alias("pseudonym"), "history")
    assert earlier_over_theta(_nobody(), past, lambda m: m, {"X": 0.6}) == frozenset()


def test_a_harmless_raise_leaves_nothing_out() -> None:
    # w(D, X) = 0.5 > 0.25 is raised, but the history reads (3 + 0.5) / 6 = 0.583 <= 0.6; at 0.6 it would
    # read 3.6 / 6 = 0.6 (not over); a weight under the earlier one is no raise at all
    assert _check(0.5).is_empty()
    assert _check(0.6).is_empty()
    assert _check(0.2).is_empty() and raised_rows(_EARLIER, pl.DataFrame(
        {"drug_key": ["D"], "disease": ["X"], "weight": [0.2]}, schema=_E)).is_empty()  # fmt: skip
    assert _check(0.61).rows() == [("D", "X")]  # (3 + 0.61) / 6 = 0.6017 > 0.6


def _ingested(folder: Path) -> Path:
    """An ingested folder: cases 1–3 take D (suspect) for X, 4–6 take F for Y, 7 takes D for Y; case 1
    also takes C (concomitant) for X: E = {(D, X): 3/4, (F, Y): 3/3} (mining: >= 3 cases, lift >= 1)."""
    folder.mkdir()
    suspects = [(1, "D"), (2, "D"), (3, "D"), (4, "F"), (5, "F"), (6, "F"), (7, "D")]
    drug = [(c, c, 1, "PS", d) for c, d in suspects] + [(1, 1, 2, "C", "C")]
    ids = {"primaryid": pl.Int64, "caseid": pl.Int64}
    pl.DataFrame(drug, orient="row", schema={**ids, "drug_seq": pl.Int64, "role_cod": pl.Utf8,
                                             "drug_key": pl.Utf8}).with_columns(
        pl.col("drug_key").alias("drugname"), pl.col("drug_key").alias("prod_ai")
    ).write_parquet(folder / "drug.parquet")  # fmt: skip
    linked = [(1, "X"), (2, "X"), (3, "X"), (4, "Y"), (5, "Y"), (6, "Y"), (7, "Y")]
    indi = [(c, c, 1, s) for c, s in linked] + [(1, 1, 2, "X")]
    schema = {**ids, "indi_drug_seq": pl.Int64, "indi_pt": pl.Utf8}
    pl.DataFrame(indi, orient="row", schema=schema).write_parquet(folder / "indi.parquet")
    return folder


def _mined(composition: Composition) -> pl.DataFrame:
    """E of a composition, as :func:`faers_anon.series.composition.mine` mines it (INDI ⋈ DRUG)."""
    return mine_from_indications(composition.table("drug"), composition.table("indi"))


def test_leaving_out_links_removes_the_pair_from_the_mined_e(tmp_path: Path) -> None:
    # without the three INDI rows linking D to X (cases 1-3, suspect D), (D, X) has no case; case 1's
    # concomitant C -> X row stays; (F, Y) keeps 3/3 = 1.0; (D, Y) has one case: not in E either way
    folder = _ingested(tmp_path / "ingested")
    whole = Composition(folder, pl.Series("caseid", [], pl.Int64))
    weights = pl.col("weight").round(4)
    before = pl.read_parquet(folder / "indi.parquet")
    assert _mined(whole).select("drug_key", "disease", weights).sort("drug_key").rows() == [
        ("D", "X", 0.75), ("F", "Y", 1.0)]  # fmt: skip
    cut = without_links(whole, pl.DataFrame({"drug_key": ["D"], "disease": ["X"]}))
    assert _mined(cut).select("drug_key", "disease", weights).rows() == [("F", "Y", 1.0)]
    kept = cut.table("indi").collect()
    assert kept.height == before.height - 3 and left_out_rows(cut) == 3 and left_out_rows(whole) == 0
    assert kept.select("caseid", "indi_drug_seq", "indi_pt").sort("caseid", "indi_drug_seq").rows()[:2] == [
        (1, 2, "X"), (4, 1, "Y")]  # fmt: skip


def _release(folder: Path, knowledge: pl.DataFrame) -> Path:
    """A release folder with only its ``knowledge.csv`` (the attack reads the rest from CaseData)."""
    folder.mkdir()
    knowledge.write_csv(folder / "knowledge.csv")
    return folder


def _data(cases: list[tuple[int, str, list[str], list[str]]]) -> CaseData:
    """CaseData of (caseid, sex (the one QID), reactions, drugs)."""
    view = pl.DataFrame({"caseid": [c for c, *_ in cases], "sex": [s for _, s, *_ in cases]})
    pairs = [(c, t) for c, _, reac, _ in cases for t in reac]
    drugs = [(c, t) for c, *_, ds in cases for t in ds]
    schema = {"caseid": pl.Int64, "term": pl.String}
    return CaseData(view=view, fields=("sex",), drugs=pl.DataFrame(drugs, orient="row", schema=schema),
                    reactions=pl.DataFrame(pairs, orient="row", schema=schema),
                    reports=view.with_columns(primaryid=pl.col("caseid")))  # one report a case  # fmt: skip


def test_the_composition_attack_reads_every_release_through_every_e(tmp_path: Path) -> None:
    # release 1: the six cases in one group (sex F), E links D to X at 0.25: 3.25 / 6 = 0.542.
    # release 2: five other cases (sex M), none of the six, E links D to X at 1.0. The attacker applies
    # release 2's E to release 1's cases: 4 / 6 = 0.667 > 0.6 (read through each release's own E: 0.542)
    first = _data([(c, "F", reac, drugs) for c, reac, drugs in _HISTORY])
    second = _data([(c, "M", [], []) for c in range(20, 25)])
    one = _release(tmp_path / "r1", _EARLIER)
    two = _release(tmp_path / "r2", pl.DataFrame({"drug_key": ["D"], "disease": ["X"], "weight": [1.0]}))
    thetas = pl.DataFrame({"value": ["X"], "theta": [0.6]})
    found = composition([(two, second), (one, first)], qids=["sex"], k=5, thetas=thetas)
    assert found["intersections_above_theta"] == 1 and round(found["max_conf"], 4) == 0.6667
    # with release 2's E left without the (D, X) links, the pair is absent there: 0.542 again
    (two / "knowledge.csv").write_text("drug_key,disease,weight\n")
    found = composition([(two, second), (one, first)], qids=["sex"], k=5, thetas=thetas)
    assert found["intersections_above_theta"] == 0 and round(found["max_conf"], 4) == 0.5417


def test_the_step_leaves_links_out_until_no_kept_history_rises(
    quarter_two: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A generated series' quarter 2 (k 3): every pair a check asked to leave out has no INDI link in
    # the folder the release is written from, the counts say how many, and a fresh check of the final
    # plan and composition (its own E and θ*) finds nothing more to leave out.
    asked: list[pl.DataFrame] = []
    links = Recheck.links

    def recorded(self: Recheck, *args: Any) -> pl.DataFrame:
        found = links(self, *args)
        asked.append(found)
        return found

    monkeypatch.setattr(Recheck, "links", recorded)
    step = _prepare(quarter_two, quarter_two["root"] / "work-raised")
    counts, pairs = step.plan.counts, pl.concat(asked).unique()
    assert counts["left_out_links"] == pairs.height > 0 and counts["left_out_indi_rows"] >= pairs.height
    assert counts["left_out_passes"] == sum(found.height > 0 for found in asked)
    drug, indi = (pl.scan_parquet(step.ingested / f"{t}.parquet") for t in ("drug", "indi"))
    assert left_out(indi, drug, pairs).collect().height == 0
    mined = mine_from_indications(drug, indi)
    assert mined.join(pairs, on=["drug_key", "disease"], how="semi").is_empty()
    monkeypatch.setattr(Recheck, "links", links)
    ledger = step.ledger
    past = history(ledger.state).rename({"caseid": "pseudonym"})
    known = step.ids.join(step.plan.frozen.select("caseid"), on="caseid", how="semi")
    before = step_module._before(ledger, AnonymizeConfig(k=3), step.inputs.outcomes)
    fresh = Recheck(ledger, past, known, AnonymizeConfig(k=3), before)
    assert fresh.links(step.plan, step.inputs).is_empty()
