"""The top-down Mondrian partitioning (faers_anon/algorithms/mondrian.py), on hand-worked cases.

The model is a stub declaring only ``Requirements(min_size=m, algorithm="mondrian")``: Mondrian reads
nothing else of a model, so every answer below follows from the module docstring's cut rules alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl
import pytest

from faers_anon.algorithms.mondrian import mondrian
from faers_anon.algorithms.types import QidHierarchies
from faers_anon.anonymize.partition import PARTITION_SCHEMA
from faers_anon.errors import ConfigError, InputError
from faers_anon.models.base import CaseStats, GroupModel, GroupStats, Requirements
from hierarchies import mesh_age_tree, sex_tree

WEIGHT_ONLY = QidHierarchies(age=None, sex=None, weight=True)
SEX_WEIGHT = QidHierarchies(age=None, sex=sex_tree(), weight=True)
NONE = pl.DataFrame(schema={"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})


@dataclass(frozen=True)
class MinSize:
    """A top-down model whose only rule is ``size`` cases per group (a :class:`GroupModel`)."""

    size: int
    algorithm: Literal["greedy", "mondrian"] = "mondrian"
    name: str = "min-size"

    def is_valid(self, group: GroupStats) -> bool:
        return group.cases >= self.size

    def risk(self, group: GroupStats, case: CaseStats) -> float:
        return 1.0

    def describe(self) -> dict[str, object]:
        return {"model": self.name, "size": self.size}

    def requirements(self) -> Requirements:
        return Requirements(min_size=self.size, algorithm=self.algorithm)


def test_the_stub_is_a_group_model() -> None:
    model = MinSize(2)
    assert isinstance(model, GroupModel)
    assert model.is_valid(GroupStats.of([CaseStats(1), CaseStats(2)])) and not model.is_valid(GroupStats())


def _cases(weights: list[float | None], sexes: list[str | None] | None = None) -> pl.DataFrame:
    n = len(weights)
    return pl.DataFrame(
        {
            "caseid": list(range(1, n + 1)),
            "sex": sexes or ["F"] * n,
            "wt_min": weights,
            "wt_max": weights,
        },
        schema={"caseid": pl.Int64, "sex": pl.Utf8, "wt_min": pl.Float64, "wt_max": pl.Float64},
    )


def _groups(frame: pl.DataFrame) -> list[list[int]]:
    """Members of each group, groups in group_id order."""
    by = frame.group_by("group_id").agg(pl.col("caseid").sort()).sort("group_id")
    return by.get_column("caseid").to_list()


def test_weight_is_cut_at_the_median_rank_until_no_half_could_be_valid() -> None:
    """8 weights 10..80, 2 per group: 8 → 4 + 4 → 2+2+2+2; groups numbered depth-first, left first."""
    part = mondrian(_cases([10, 20, 30, 40, 50, 60, 70, 80]), probabilities=NONE, model=MinSize(2),
                    hierarchies=WEIGHT_ONLY)  # fmt: skip
    assert _groups(part.frame) == [[1, 2], [3, 4], [5, 6], [7, 8]]
    ranges = part.frame.group_by("group_id").agg(pl.col("wt_min").first(), pl.col("wt_max").first())
    assert sorted(ranges.select("wt_min", "wt_max").rows()) == [(10, 20), (30, 40), (50, 60), (70, 80)]
    assert (part.groups, part.invalid_groups, part.leftovers, part.forced, part.first_seed) == (
        4,
        0,
        0,
        0,
        -1,
    )
    assert dict(part.frame.schema) == dict(PARTITION_SCHEMA)


def test_an_odd_group_keeps_the_extra_case_on_the_right() -> None:
    """5 cases, 2 per group: the median rank 5 // 2 = 2 gives {10, 20} | {30, 40, 50}; 3 cannot split."""
    part = mondrian(
        _cases([50, 10, 40, 20, 30]), probabilities=NONE, model=MinSize(2), hierarchies=WEIGHT_ONLY
    )
    assert _groups(part.frame) == [[2, 4], [1, 3, 5]]


def test_missing_and_known_weight_are_cut_apart_first() -> None:
    """A mix of missing and known costs full loss (SPEC §5): the cut separates them; missing → null."""
    part = mondrian(
        _cases([10, None, 20, None]), probabilities=NONE, model=MinSize(2), hierarchies=WEIGHT_ONLY
    )
    assert _groups(part.frame) == [[1, 3], [2, 4]]
    rows = part.frame.sort("caseid").select("wt_min", "wt_max").rows()
    assert rows == [(10, 20), (None, None), (10, 20), (None, None)]


def test_the_qid_with_the_larger_loss_is_cut_first() -> None:
    """Sex F/M mixed has loss h(*)/h(T) = 1; weight 10..13 of domain 10..13 also 1, so the tie goes
    to the QID tried first (sex, the tree); after the sex cut each half's weight has loss 1 and is cut."""
    cases = _cases([10, 11, 12, 13], sexes=["F", "M", "F", "M"])
    two = mondrian(cases, probabilities=NONE, model=MinSize(2), hierarchies=SEX_WEIGHT)
    assert _groups(two.frame) == [[1, 3], [2, 4]]
    assert two.frame.sort("caseid").get_column("sex").to_list() == ["F", "M", "F", "M"]
    one = mondrian(cases, probabilities=NONE, model=MinSize(1), hierarchies=SEX_WEIGHT)
    assert _groups(one.frame) == [[1], [3], [2], [4]]


def test_age_is_cut_strictly_between_tree_nodes() -> None:
    """Ages 30, 31, 70, 71 fall in two MeSH nodes; the cut lies between the nodes, never inside one."""
    ages = [30.0, 31.0, 70.0, 71.0]
    cases = pl.DataFrame({"caseid": [1, 2, 3, 4], "age_min": ages, "age_max": ages})
    h = QidHierarchies(age=mesh_age_tree(), sex=None, weight=False)
    part = mondrian(cases, probabilities=NONE, model=MinSize(1), hierarchies=h)
    assert _groups(part.frame) == [[1, 2], [3, 4]]  # 30 and 31 share a leaf band: no cut between them
    assert part.frame.get_column("age_group").n_unique() == 2


def test_a_group_that_cannot_be_split_validly_stays_whole() -> None:
    part = mondrian(_cases([10, 20, 30]), probabilities=NONE, model=MinSize(2), hierarchies=WEIGHT_ONLY)
    assert _groups(part.frame) == [[1, 2, 3]] and part.invalid_groups == 0


def test_an_infeasible_data_set_is_one_invalid_group_and_empty_input_none() -> None:
    part = mondrian(_cases([10]), probabilities=NONE, model=MinSize(2), hierarchies=WEIGHT_ONLY)
    assert (part.groups, part.invalid_groups) == (1, 1)
    empty = mondrian(_cases([]), probabilities=NONE, model=MinSize(2), hierarchies=WEIGHT_ONLY)
    assert (empty.groups, empty.frame.height) == (0, 0)


def test_deterministic_and_independent_of_the_generator_and_row_order() -> None:
    cases = _cases([float(w) for w in (44, 12, 90, 35, 61, 70, 18, 53, 27)])
    runs = [
        mondrian(frame, probabilities=NONE, model=MinSize(2), hierarchies=WEIGHT_ONLY, rng=rng).frame
        for frame, rng in ((cases, None), (cases.reverse(), np.random.default_rng(1)))
    ]
    assert runs[0].equals(runs[1])


def test_errors_name_the_engine_and_the_column() -> None:
    with pytest.raises(ConfigError, match="built by the greedy engine"):
        mondrian(
            _cases([10, 20]),
            probabilities=NONE,
            model=MinSize(2, algorithm="greedy"),
            hierarchies=WEIGHT_ONLY,
        )
    with pytest.raises(InputError, match=r"missing columns \['wt_min', 'wt_max'\]"):
        mondrian(_cases([10]).drop("wt_min", "wt_max"), probabilities=NONE, model=MinSize(2),
                 hierarchies=WEIGHT_ONLY)  # fmt: skip
    with pytest.raises(InputError, match="duplicate caseids"):
        mondrian(pl.concat([_cases([10]), _cases([20])]), probabilities=NONE, model=MinSize(1),
                 hierarchies=WEIGHT_ONLY)  # fmt: skip
