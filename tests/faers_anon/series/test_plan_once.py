"""The placement made once per quarter (issue 14 item 7): re-plans and rounds reuse it, same plans.

Hand-built ledger (k = 2, θ DEATH 0.5); pseudonyms from a fixed test key.
"""

from __future__ import annotations

from functools import partial

import polars as pl

from faers_anon.anonymize.pipeline import AnonymizeConfig
from faers_anon.keys import AgencyKey
from faers_anon.series.placement import Memo, Planner, SeriesPlan, plan_series, pseudonym_ids
from faers_anon.series.step import exposed_probabilities

KEY = AgencyKey.from_secret(bytes(range(32)))
_LIST = pl.List(pl.Utf8)
_NO_E = pl.DataFrame(schema={"drug_key": pl.Utf8, "disease": pl.Utf8, "weight": pl.Float64})
_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "caseid": pl.Int64, "age_min": pl.Float64, "age_max": pl.Float64, "sex": pl.Utf8,
    "wt_min": pl.Float64, "wt_max": pl.Float64, "indications": _LIST, "reactions": _LIST, "drug_keys": _LIST,
}  # fmt: skip


def _ids(caseids: list[int]) -> dict[int, int]:
    return dict(pseudonym_ids(pl.DataFrame({"caseid": caseids}), KEY.pseudonym_key).rows())


P = _ids([11, 12, 13, 14, 15, 21, 22, 23])


def _entries(rows: list[tuple[int, int, list[str]]]) -> pl.DataFrame:
    """Release-1 ledger rows (raw caseid, group, reactions), all in one region."""
    return pl.DataFrame(
        [(1, P[c], g, "Adult", 25.0, 45.0, "F", None, None, reac, [], [], []) for c, g, reac in rows],
        orient="row",
        schema={"release": pl.UInt32, "caseid": pl.Int64, "group": pl.UInt32, "age_group": pl.Utf8,
                "age_min": pl.Float64, "age_max": pl.Float64, "sex": pl.Utf8, "wt_min": pl.Float64,
                "wt_max": pl.Float64, "reactions": _LIST, "indications": _LIST, "drug_keys": _LIST,
                "outcomes": _LIST},
    )  # fmt: skip


def _cases(rows: list[tuple[int, list[str]]], stored: bool = False) -> pl.DataFrame:
    frame = pl.DataFrame([(c, 30.0, 30.0, "F", None, None, [], reac, []) for c, reac in rows], orient="row",
                         schema=_SCHEMA)  # fmt: skip
    if not stored:
        return frame
    return frame.with_columns(
        pl.col("caseid").replace_strict(P, return_dtype=pl.Int64).alias("pseudonym"), pl.lit(1).alias("store")
    )


# Release 1: group 0 = 11..15 (12, 13 exposed DEATH: conf 2/5), group 1 = 21..23. Now 11 returns with
# DEATH (its group would read 3/5 > 0.5 through 12, 13, 15 left behind: withheld by the earlier
# check) and 21 returns with nothing (published with one stored mate of group 1).
ENTRIES = _entries([(11, 0, []), (12, 0, ["DEATH"]), (13, 0, ["DEATH"]), (14, 0, []), (15, 0, ["RASH"]),
                    (21, 1, []), (22, 1, []), (23, 1, [])])  # fmt: skip
STORED = _cases([(12, ["DEATH"]), (13, ["DEATH"]), (14, []), (15, ["RASH"]), (22, []), (23, [])], stored=True)
CASES = _cases([(11, ["DEATH"]), (21, [])])
THETAS = {"DEATH": 0.5}


def _counted() -> tuple[list[int], partial[pl.DataFrame]]:
    calls: list[int] = []
    inner = partial(exposed_probabilities, entries=ENTRIES, knowledge=_NO_E, config=AnonymizeConfig(),
                    outcomes=None)  # fmt: skip

    def probabilities(members: pl.DataFrame) -> pl.DataFrame:
        calls.append(members.height)
        return inner(members)

    return calls, partial(probabilities)


def _summary(plan: SeriesPlan) -> tuple[list[int], dict[str, int], list[tuple[int, int]]]:
    frozen = plan.frozen.sort("caseid").select("caseid", "bundle")
    return sorted(plan.withheld.to_list()), plan.counts, [(a, b) for a, b in frozen.iter_rows()]


def test_a_re_plan_reuses_the_placement_and_equals_a_plan_from_scratch() -> None:
    calls, probabilities = _counted()
    planner = Planner(CASES, ENTRIES, KEY.pseudonym_key, k=2, probabilities=probabilities, thetas=THETAS,
                      stored=STORED)  # fmt: skip
    first = planner.plan()
    withheld, counts, frozen = _summary(first)
    assert withheld == [11] and frozen == [(21, 2), (22, 2)]  # 22: the mate with the lower pseudonym
    assert (counts["withheld_earlier"], counts["published_returning"], counts["republished"]) == (1, 1, 1)
    assert P[22] < P[23]
    made = len(calls)
    again = planner.plan(frozenset({"1:1"}))  # a unit found over theta* by the recheck
    assert len(calls) == made  # no P(s | c) computed again: the placement and the earlier P are kept
    assert _summary(again)[0] == [11, 21] and again.frozen.is_empty()
    assert (again.counts["withheld_theta"], again.counts["withheld_earlier"]) == (2, 1)
    for withhold in (frozenset(), frozenset({"1:1"}), frozenset({"1:0"})):
        scratch = plan_series(CASES, ENTRIES, KEY.pseudonym_key, k=2, probabilities=_counted()[1],
                              thetas=THETAS, stored=STORED, withhold=withhold)  # fmt: skip
        assert _summary(planner.plan(withhold)) == _summary(scratch)


def test_memo_computes_each_case_once() -> None:
    seen: list[list[int]] = []

    def probabilities(frame: pl.DataFrame) -> pl.DataFrame:
        seen.append(sorted(frame.get_column("caseid").to_list()))
        return frame.select("caseid", pl.lit("X").alias("value"), (pl.col("caseid") / 10).alias("p"))

    memo = Memo(probabilities)
    assert memo(pl.DataFrame({"caseid": [1, 2]})).sort("caseid").get_column("p").to_list() == [0.1, 0.2]
    assert memo(pl.DataFrame({"caseid": [3, 2, 2]})).sort("caseid").get_column("p").to_list() == [0.2, 0.3]
    assert memo(pl.DataFrame({"caseid": [1]})).get_column("p").to_list() == [0.1]
    assert seen == [[1, 2], [3]]


def test_the_same_withhold_again_gives_the_last_plan_as_a_copy() -> None:
    """A pass that only leaves links out asks for the plan of the same withheld units: it comes back
    unchanged without a round of the earlier check, and the counts the step adds to one copy do not
    reach the next."""
    planner = Planner(CASES, ENTRIES, KEY.pseudonym_key, k=2, probabilities=_counted()[1], thetas=THETAS,
                      stored=STORED)  # fmt: skip
    first = planner.plan(frozenset({"1:1"}))
    first.counts["left_out_links"] = 3
    checks: list[int] = []
    check = planner.earlier
    planner.earlier = lambda published: checks.append(published.height) or check(published)  # type: ignore[method-assign]
    again = planner.plan(frozenset({"1:1"}))
    assert checks == [] and "left_out_links" not in again.counts
    assert _summary(again) == _summary(planner.plan(frozenset({"1:1"})))
    assert again.withheld.equals(first.withheld) and again.frozen.equals(first.frozen)
    other = planner.plan(frozenset())
    assert checks and _summary(other) == _summary(plan_series(CASES, ENTRIES, KEY.pseudonym_key, k=2,
                                                              probabilities=_counted()[1], thetas=THETAS,
                                                              stored=STORED))  # fmt: skip
