"""Lin, Yang & Wang 2016, Example 2 (Table 4) with SPEC §6's corrected IL arithmetic."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from faers_anon.algorithms import QidHierarchies, greedy_cluster, score_candidates
from faers_anon.models import CaseStats, GroupStats, MSKTheta
from hierarchies import paper_example_age_tree, sex_tree

# Table 4: (a) the known group g = {Male, Young Adult, [50-75]}, (b) isolated records r5-r7.
# The paper prints only the group's weight range; r1-r4's own weights are chosen inside it with min 50
# and max 75 so that the group's range is exactly [50, 75].
TABLE4 = [
    (1, "M", "Young Adult", 50.0, ["I1"]),
    (2, "M", "Young Adult", 75.0, ["I2", "I3", "I4"]),
    (3, "M", "Young Adult", 60.0, ["I2", "I3"]),
    (4, "M", "Young Adult", 70.0, ["I2"]),
    (5, "M", "Adolescent", 50.0, ["I1"]),
    (6, "F", "Adult", 40.0, ["I3", "I4"]),
    (7, "M", "Young Adult", 80.0, ["I2", "I3"]),
]


@pytest.fixture()
def table4() -> tuple[pl.DataFrame, pl.DataFrame]:
    cases = pl.DataFrame(
        {
            "caseid": [r[0] for r in TABLE4],
            "sex": [r[1] for r in TABLE4],
            "age_group": [r[2] for r in TABLE4],
            "wt_min": [r[3] for r in TABLE4],
            "wt_max": [r[3] for r in TABLE4],
        }
    )
    probabilities = pl.DataFrame(
        [(r[0], s, 1.0) for r in TABLE4 for s in r[4]], schema=["caseid", "value", "p"], orient="row"
    )
    return cases, probabilities


HIER = QidHierarchies(age=paper_example_age_tree(), sex=sex_tree(), weight=True, weight_domain=(0.0, 100.0))
MODEL = MSKTheta(k=5, thetas={f"I{i}": 0.6 for i in range(1, 5)})


def test_trees_match_the_example() -> None:
    assert HIER.age is not None and HIER.sex is not None
    assert HIER.age.height == 2 and HIER.sex.height == 1


def test_example2_kernel_numbers(table4: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    cases, probabilities = table4
    scores = score_candidates(
        cases,
        group=[1, 2, 3, 4],
        candidates=[5, 6, 7],
        probabilities=probabilities,
        model=MODEL,
        hierarchies=HIER,
    )
    assert scores.get_column("il_group").to_list() == pytest.approx([1.0, 1.0, 1.0])
    assert scores.get_column("il_with").to_list() == pytest.approx([6.25, 9.25, 1.5])
    assert scores.get_column("delta_il").to_list() == pytest.approx([5.25, 8.25, 0.5])
    assert scores.get_column("pr").to_list()[:2] == pytest.approx([1.5, 3.5])
    assert math.isinf(scores.get_column("pr")[2])
    primes = scores.get_column("delta_il_prime").to_list()
    assert primes[:2] == pytest.approx([5.25 * 1.5, 8.25 * 3.5])
    assert int(np.argmin(primes)) == 0  # r5 is the best record


def test_example2_python_model(table4: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    _, probabilities = table4
    stats = {
        c: CaseStats(c, 1, {v: p for v, p in zip(f["value"], f["p"], strict=True)})
        for (c,), f in probabilities.group_by("caseid")
        for f in [f.to_dict(as_series=False)]
    }
    g = GroupStats.of(stats[c] for c in (1, 2, 3, 4))
    assert MODEL.risk(g, stats[5]) == pytest.approx(1.5)
    assert MODEL.risk(g, stats[6]) == pytest.approx(3.5)
    assert math.isinf(MODEL.risk(g, stats[7]))
    assert not MODEL.is_valid(g)  # 4 < k
    assert MODEL.is_valid(g.with_case(stats[5]))  # sigma_I2 = 3 <= 0.6 * 5


def test_example2_engine_completes_the_group_with_r5(table4: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    cases, probabilities = table4
    # Start from r1: the search must add r2-r4 (identical QIDs) before any isolated record, then r5.
    seeds = [s for s in range(100) if np.random.default_rng(s).integers(7) == 0]
    part = greedy_cluster(
        cases, probabilities=probabilities, model=MODEL, hierarchies=HIER, rng=np.random.default_rng(seeds[0])
    )
    assert part.first_seed == 1
    frame = part.frame.sort("caseid")
    group = frame.filter(pl.col("caseid") == 1).get_column("group_id")[0]
    members = frame.filter(pl.col("group_id") == group).get_column("caseid").to_list()
    assert set(members) >= {1, 2, 3, 4, 5}
    assert part.frame.height == 7


GOLDEN = Path(__file__).with_name("example2.golden.json")
"""Example 2's figures as the code computes them; changes only in a commit that says why (STYLE §10).
Regenerate with FAERS_ANON_UPDATE_GOLDEN=1 and review the diff."""


def _number(value: float) -> float | str:
    return value if math.isfinite(value) else str(value)  # JSON has no inf: "inf"


def _example2_figures(cases: pl.DataFrame, probabilities: pl.DataFrame) -> dict[str, Any]:
    scores = score_candidates(
        cases, group=[1, 2, 3, 4], candidates=[5, 6, 7], probabilities=probabilities, model=MODEL,
        hierarchies=HIER,
    )  # fmt: skip
    part = greedy_cluster(cases, probabilities=probabilities, model=MODEL, hierarchies=HIER,
                          rng=np.random.default_rng(0))  # fmt: skip
    frame = part.frame.sort("caseid")
    return {
        "source": "Lin, Yang & Wang 2016, Example 2 (Table 4); SPEC §6 IL arithmetic; k 5, theta 0.6",
        "scores": [
            {k: _number(v) if isinstance(v, float) else v for k, v in row.items()}
            for row in scores.to_dicts()
        ],  # fmt: skip
        "partition": {
            "groups": part.groups,
            "leftovers": part.leftovers,
            "forced": part.forced,
            "failed_groups": part.failed_groups,
            "invalid_groups": part.invalid_groups,
            "first_seed": part.first_seed,
            "merged_groups": part.merged_groups,
            "frame": [
                {k: _number(v) if isinstance(v, float) else v for k, v in row.items()}
                for row in frame.to_dicts()
            ],
        },  # fmt: skip
    }


def test_example2_matches_the_golden_file(table4: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    figures = _example2_figures(*table4)
    text = json.dumps(figures, indent=2, sort_keys=True) + "\n"
    if os.environ.get("FAERS_ANON_UPDATE_GOLDEN"):
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8")
    assert [s["delta_il"] for s in figures["scores"]] == [5.25, 8.25, 0.5]  # the hand-worked values
