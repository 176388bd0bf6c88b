"""θ across a series: earlier intersections a follow-up's new values reach, value classes and OUTC codes.

Hand-built ledgers (k = 2) with worked answers; the pseudonyms come from a fixed test key.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import polars as pl
import pytest

from faers_anon import api
from faers_anon.anonymize.pipeline import AnonymizeConfig
from faers_anon.anonymize.value_classes import CLASS_PREFIX, OUTC_PREFIX
from faers_anon.keys import AgencyKey
from faers_anon.series.earlier import earlier_over_theta
from faers_anon.series.generate import make_series
from faers_anon.series.placement import plan_series, pseudonym_ids
from faers_anon.series.step import _release_inputs, exposed_probabilities

KEY = AgencyKey.from_secret(bytes(range(32)))
_LIST = pl.List(pl.Utf8)
_NO_E = pl.DataFrame(schema={"drug_key": pl.Utf8, "disease": pl.Utf8, "weight": pl.Float64})


def _ids(caseids: list[int]) -> dict[int, int]:
    return dict(pseudonym_ids(pl.DataFrame({"caseid": caseids}), KEY.pseudonym_key).rows())


def _entries(
    rows: list[tuple[int, int, int, list[str], list[str]]], p: dict[int, int],
    drugs: dict[int, list[str]] | None = None,
) -> pl.DataFrame:  # fmt: skip
    """Ledger rows (release, raw caseid, group, reactions, outcomes) in one region; ``drugs``: drug
    keys by raw caseid."""
    drugs = drugs or {}
    return pl.DataFrame(
        [(r, p[c], g, "Adult", 25.0, 45.0, "F", None, None, reac, [], drugs.get(c, []), outc)
         for r, c, g, reac, outc in rows],
        orient="row",
        schema={"release": pl.UInt32, "caseid": pl.Int64, "group": pl.UInt32, "age_group": pl.Utf8,
                "age_min": pl.Float64, "age_max": pl.Float64, "sex": pl.Utf8, "wt_min": pl.Float64,
                "wt_max": pl.Float64, "reactions": _LIST, "indications": _LIST, "drug_keys": _LIST,
                "outcomes": _LIST},
    )  # fmt: skip


def _cases(
    rows: list[tuple[int, list[str]]], p: dict[int, int] | None = None,
    drugs: dict[int, list[str]] | None = None,
) -> pl.DataFrame:  # fmt: skip
    """Super-records aged 30, F, with the given reactions (stored ones with pseudonym and store 1)."""
    drugs = drugs or {}
    frame = pl.DataFrame(
        [(c, 30.0, 30.0, "F", None, None, [], reac, drugs.get(c, [])) for c, reac in rows], orient="row",
        schema={"caseid": pl.Int64, "age_min": pl.Float64, "age_max": pl.Float64, "sex": pl.Utf8,
                "wt_min": pl.Float64, "wt_max": pl.Float64, "indications": _LIST, "reactions": _LIST,
                "drug_keys": _LIST},
    )  # fmt: skip
    if p is None:
        return frame
    return frame.with_columns(
        pl.col("caseid").replace_strict(p, return_dtype=pl.Int64).alias("pseudonym"), pl.lit(1).alias("store")
    )


def test_a_follow_up_may_not_tip_its_earlier_group_over_theta() -> None:
    # Release 1 group 0 = 11..15; 12 and 13 exposed DEATH: conf 2/5 = 0.4. Now 11 returns with
    # DEATH. Its bundle {11, 14} (14: the stored mate with the fewest values) has conf 1/2 = 0.5, but
    # 12, 13 and 15 stay in release 1 only, their intersection is still group 0 and now reads 3/5:
    # over theta 0.5, so 11 is withheld; at theta 0.6 (3/5 = 0.6) it is published.
    p = _ids([11, 12, 13, 14, 15])
    entries = _entries([(1, 11, 0, [], []), (1, 12, 0, ["DEATH"], []), (1, 13, 0, ["DEATH"], []),
                        (1, 14, 0, [], []), (1, 15, 0, ["RASH"], [])], p)  # fmt: skip
    stored = _cases([(12, ["DEATH"]), (13, ["DEATH"]), (14, []), (15, ["RASH"])], p)
    probabilities = partial(exposed_probabilities, entries=entries, knowledge=_NO_E, config=AnonymizeConfig(),
                            outcomes=None)  # fmt: skip
    cases = _cases([(11, ["DEATH"])])
    plans = {theta: plan_series(cases, entries, KEY.pseudonym_key, k=2, probabilities=probabilities,
                                thetas={"DEATH": theta}, stored=stored) for theta in (0.5, 0.6)}  # fmt: skip
    assert plans[0.5].withheld.to_list() == [11]
    assert plans[0.5].counts["withheld_earlier"] == 1 and plans[0.5].counts["withheld_theta"] == 1
    assert plans[0.6].withheld.is_empty() and plans[0.6].republish.rows() == [(14, 1)]


def test_earlier_intersections_outside_the_unit_are_checked() -> None:
    # c (pseudonym 1) has history 1:5|2:7 and returns with X. Its unit is 1:5 = {c, e1, e2, e3}:
    # conf 1/4 = 0.25 <= 0.3. But d1, d2 were first released in release 2's group 7 with c: their
    # intersection {c, d1, d2} now reads 1/3 > 0.3, so unit 1:5 fails.
    past = pl.DataFrame({"pseudonym": [1, 2, 3, 4, 5, 6],
                         "history": ["1:5|2:7", "2:7", "2:7", "1:5", "1:5", "1:5"]})  # fmt: skip
    published = pl.DataFrame({"caseid": [101], "pseudonym": [1], "unit": ["1:5"], "history": ["1:5|2:7"],
                              "indications": [[]], "reactions": [["X"]], "drug_keys": [[]]},
                             schema_overrides={"indications": _LIST, "drug_keys": _LIST})  # fmt: skip

    def probabilities(members: pl.DataFrame) -> pl.DataFrame:
        has = members.filter(pl.col("reactions").list.contains("X"))
        return has.select("caseid", pl.lit("X").alias("value"), pl.lit(1.0).alias("p"))

    assert earlier_over_theta(published, past, probabilities, {"X": 0.3}) == frozenset({"1:5"})
    assert earlier_over_theta(published, past, probabilities, {"X": 0.34}) == frozenset()
    # d1 and d2 published now too (nobody keeps 2:7 alone): only 1:5's intersection, 0.25, is checked
    alone = past.filter(pl.col("pseudonym") <= 1)
    assert earlier_over_theta(published, alone, probabilities, {"X": 0.3}) == frozenset()


def test_an_outcome_code_alone_can_withhold_a_follow_up() -> None:
    # Release 1 group 0 = 11, 12 (k = 2); 12 exposed outcome DE. 11 returns with outcome DE now:
    # the bundle {11, 12} reads outc:DE 2/2 = 1.0 > 0.6, a single value nowhere over theta.
    p = _ids([11, 12])
    entries = _entries([(1, 11, 0, ["RASH"], []), (1, 12, 0, ["PYREXIA"], ["DE"])], p)
    stored = _cases([(12, ["PYREXIA"])], p)
    now = pl.DataFrame({"caseid": [11], "outc_cod": ["DE"]})
    probabilities = partial(exposed_probabilities, entries=entries, knowledge=_NO_E, config=AnonymizeConfig(),
                            outcomes=now)  # fmt: skip
    thetas = {"RASH": 0.6, "PYREXIA": 0.6, f"{OUTC_PREFIX}DE": 0.6}
    plan = plan_series(_cases([(11, ["RASH"])]), entries, KEY.pseudonym_key, k=2, probabilities=probabilities,
                       thetas=thetas, stored=stored)  # fmt: skip
    assert plan.withheld.to_list() == [11] and plan.counts["withheld_theta"] == 1
    unbounded = {v: t for v, t in thetas.items() if not v.startswith(OUTC_PREFIX)}
    plan = plan_series(_cases([(11, ["RASH"])]), entries, KEY.pseudonym_key, k=2, probabilities=probabilities,
                       thetas=unbounded, stored=stored)  # fmt: skip
    assert plan.withheld.is_empty()


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("theta")
    raw = make_series(300, root / "raw", quarters=1, seed=3)[0]
    return api.ingest([raw], root / "ingested").out


def test_the_series_step_bounds_classes_and_outcome_codes_like_a_release(ingested: Path) -> None:
    # theta* the series step plans with is the release's: value classes and OUTC codes included
    # (faers_anon.anonymize.value_classes); with protect_outcomes off, no OUTC code is bounded.
    config = AnonymizeConfig(k=3)
    _, _, outcomes, thetas = _release_inputs(ingested, config)
    assert outcomes is not None and outcomes.height > 0
    assert any(v.startswith(OUTC_PREFIX) for v in thetas) and any(v.startswith(CLASS_PREFIX) for v in thetas)
    codes = set(outcomes.get_column("outc_cod").drop_nulls().unique().to_list())
    assert {v.removeprefix(OUTC_PREFIX) for v in thetas if v.startswith(OUTC_PREFIX)} <= codes
    *_, off = _release_inputs(ingested, AnonymizeConfig(k=3, protect_outcomes=False))
    assert not any(v.startswith(OUTC_PREFIX) for v in off)


#: Release 1 group 0 of the next two tests: 12 and 13 exposed X, 14 took drug D, 15 two other values.
_GROUP = [(11, []), (12, ["X", "RASH"]), (13, ["X", "RASH"]), (14, []), (15, ["RASH", "COUGH"])]
_DRUGS = {14: ["D"]}
#: This release's E: D indicates X, which no earlier release's E said.
_NEW_E = pl.DataFrame({"drug_key": ["D"], "disease": ["X"], "weight": [1.0]}, schema=dict(_NO_E.schema))


def _now_and_before() -> tuple[dict[int, int], pl.DataFrame, partial[pl.DataFrame], partial[pl.DataFrame]]:
    """Pseudonyms, ledger rows and P(s | c) through this release's E (now) and the earlier E (before)."""
    p = _ids([c for c, _ in _GROUP])
    entries = _entries([(1, c, 0, reac, []) for c, reac in _GROUP], p, _DRUGS)
    probabilities = partial(exposed_probabilities, entries=entries, config=AnonymizeConfig(), outcomes=None)
    return p, entries, partial(probabilities, knowledge=_NEW_E), partial(probabilities, knowledge=_NO_E)


def test_a_new_e_weight_on_a_republished_case_is_a_rise() -> None:
    # 11 returns with nothing new; its bundle {11, 14} (14: the stored mate with the fewest values)
    # reads X at (0 + 1) / 2 = 0.5 <= 0.5 through this release's E. 12, 13, 15 stay in release 1
    # only: their intersection, group 0, read X at 2/5 = 0.4 before (no earlier E links D to X) and
    # now reads 3/5 = 0.6 > 0.5 through 14's D (issue 14: a 4 x 400k series at 0.60025 > 0.6). The
    # check read "before" through the new E too (14 at 1 before and after: no rise) and published 11.
    p, entries, now, before = _now_and_before()
    stored = _cases(_GROUP[1:], p, _DRUGS)
    plan = plan_series(_cases([(11, [])]), entries, KEY.pseudonym_key, k=2, probabilities=now,
                       thetas={"X": 0.5}, stored=stored, before=before)  # fmt: skip
    assert plan.withheld.to_list() == [11]
    assert plan.counts["withheld_earlier"] == 1 and plan.republish.is_empty()
    # the same plan when this release's E says nothing new about D: 11 goes out with 14
    same = plan_series(_cases([(11, [])]), entries, KEY.pseudonym_key, k=2, probabilities=before,
                       thetas={"X": 0.5}, stored=stored, before=before)  # fmt: skip
    assert same.withheld.is_empty() and same.republish.rows() == [(14, 1)]


def test_the_earlier_check_reads_before_through_the_earlier_e() -> None:
    # 11 and 14 published (history 1:0, kept by 12, 13, 15): P(X | 14) is 0 before and 1 now, so
    # group 0 rises from 2/5 to 3/5 > 0.5 and unit 1:0 fails; with the new E on both sides (no
    # ``before``: the old reading) there is no rise and nothing fails.
    p, _, now, before = _now_and_before()
    published = _cases([(11, []), (14, [])], p, _DRUGS).select(
        "caseid", "pseudonym", "indications", "reactions", "drug_keys", unit=pl.lit("1:0"),
        history=pl.lit("1:0"),
    )
    past = pl.DataFrame({"pseudonym": list(p.values()), "history": ["1:0"] * len(p)})
    assert earlier_over_theta(published, past, now, {"X": 0.5}, before=before) == frozenset({"1:0"})
    assert earlier_over_theta(published, past, now, {"X": 0.6}, before=before) == frozenset()
    assert earlier_over_theta(published, past, now, {"X": 0.5}) == frozenset()
