"""Multi-sensitive l-diversity and its top-down partitioning (hand-worked numbers)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from faers_anon.algorithms import QidHierarchies
from faers_anon.algorithms.mondrian import mondrian
from faers_anon.anonymize import metrics
from faers_anon.anonymize.pipeline import AnonymizeConfig, anonymize_folder
from faers_anon.errors import ConfigError
from faers_anon.models import CaseStats, GroupStats, LDiversity, MSKTheta
from faers_anon.models.l_diversity import value_key
from faers_anon.verify.verifier import verify_release
from hierarchies import mesh_age_tree


def _case(cid: int, indications: list[str], reactions: list[str]) -> CaseStats:
    values = {value_key("indications", v): 1.0 for v in indications}
    values.update({value_key("reactions", v): 1.0 for v in reactions})
    return CaseStats(cid, sensitive=values)


def test_distinct_values_per_attribute_and_cases() -> None:
    group = GroupStats.of([_case(1, ["A"], ["X", "Y"]), _case(2, ["B"], ["Z"]), _case(3, [], ["X"])])
    assert LDiversity(k=2).distinct(group) == {"indications": 2, "reactions": 3}
    assert LDiversity(k=2).is_valid(group)
    assert not LDiversity(k=3).is_valid(group)  # two distinct indications
    assert LDiversity(k=3, attributes=("reactions",)).is_valid(group)
    lone = GroupStats.of([_case(1, ["A", "B", "C"], ["X", "Y", "Z"])])
    assert not LDiversity(k=2).is_valid(lone)  # diverse, but one case alone
    assert LDiversity(k=2).requirements().algorithm == "mondrian"
    with pytest.raises(ConfigError, match="l-diversity attributes"):
        LDiversity(k=2, attributes=("diseases",))


def _cases(ages: list[float]) -> pl.DataFrame:
    frame = pl.DataFrame({"caseid": list(range(1, len(ages) + 1)), "age_min": ages, "age_max": ages})
    return frame.with_columns(
        pl.lit(None, pl.Float64).alias("wt_min"), pl.lit(None, pl.Float64).alias("wt_max")
    )


def _values(pairs: dict[int, list[str]]) -> pl.DataFrame:
    rows = [(c, v) for c, vs in pairs.items() for v in vs]
    return pl.DataFrame(
        {"caseid": [c for c, _ in rows], "value": [v for _, v in rows], "p": [1.0] * len(rows)}
    )


def _nil(frame: pl.DataFrame, cases: pl.DataFrame) -> float:
    return metrics.nil(metrics.information_loss(frame, cases, hierarchies=AGE_ONLY), qids=1)


AGE_ONLY = QidHierarchies(age=mesh_age_tree(), sex=None, weight=False)
DIVERSE = {
    1: ["indications:A", "reactions:P"],
    2: ["indications:B", "reactions:Q"],
    3: ["indications:C", "reactions:R"],
    4: ["indications:D", "reactions:S"],
}


def test_mondrian_cuts_at_the_node_boundary_while_both_halves_stay_diverse() -> None:
    # Ages 20, 22 (Young Adult) and 70, 72 (Aged, 65-79): with l = 2 the cut between the two nodes is
    # allowed (each half: 2 cases, 2 indications, 2 reactions); every group sits at a leaf, NIL = 0.
    cases = _cases([20.0, 22.0, 70.0, 72.0])
    part = mondrian(cases, probabilities=_values(DIVERSE), model=LDiversity(k=2), hierarchies=AGE_ONLY)
    assert part.groups == 2 and part.invalid_groups == 0
    assert part.frame.sort("caseid")["age_group"].to_list() == ["Young Adult"] * 2 + ["Aged, 65-79 years"] * 2
    assert _nil(part.frame, cases) == 0.0
    # l = 3: no half can hold 3 cases, so one group at the LCA "Adult" (height 2 of 3): NIL = 2/3.
    one = mondrian(cases, probabilities=_values(DIVERSE), model=LDiversity(k=3), hierarchies=AGE_ONLY)
    assert one.groups == 1 and one.frame["age_group"].unique().to_list() == ["Adult"]
    assert _nil(one.frame, cases) == 2 / 3


def test_mondrian_refuses_a_cut_that_leaves_a_half_without_diversity() -> None:
    same = dict(DIVERSE) | {2: ["indications:A", "reactions:Q"]}  # both young adults treat A only
    part = mondrian(_cases([20.0, 22.0, 70.0, 72.0]), probabilities=_values(same), model=LDiversity(k=2),
                    hierarchies=AGE_ONLY)  # fmt: skip
    assert part.groups == 1 and part.invalid_groups == 0


def test_mondrian_reports_an_infeasible_data_set_as_one_invalid_group() -> None:
    part = mondrian(_cases([20.0, 70.0]), probabilities=_values({1: ["indications:A"], 2: ["indications:A"]}),
                    model=LDiversity(k=2), hierarchies=AGE_ONLY, rng=np.random.default_rng(0))  # fmt: skip
    assert part.groups == 1 and part.invalid_groups == 1
    with pytest.raises(ConfigError, match="built by the greedy engine"):
        mondrian(_cases([20.0]), probabilities=_values({}), model=MSKTheta(k=2), hierarchies=AGE_ONLY)


def test_verifier_l_rule_names_the_attribute(small_ingested: Path, tmp_path: Path) -> None:
    config = AnonymizeConfig(model="l-diversity", k=3, on_infeasible="raise-theta", seed=1)
    anonymize_folder(small_ingested, tmp_path / "r", config=config)
    assert verify_release(tmp_path / "r").ok
    verdict = verify_release(tmp_path / "r", k=400)
    rules = set(verdict.violations["rule"])
    assert rules == {"k", "l", "stated"}  # the stated k = 400 differs from the release's 3: named
    assert (
        verdict.violations.filter(pl.col("rule") == "l")["detail"]
        .str.contains(r"^\d+ distinct (indi_pt|pt) values < l = 400$")
        .all()
    )
