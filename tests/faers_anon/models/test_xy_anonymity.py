"""(X,Y)-anonymity: ≥ k distinct caseids per group, case super-records (hand-worked numbers)."""

from __future__ import annotations

import numpy as np
import polars as pl

from faers_anon.algorithms import QidHierarchies, greedy_cluster
from faers_anon.models import CaseStats, GroupStats, KAnonymity, XYAnonymity
from hierarchies import mesh_age_tree


def test_distinct_cases_count_not_rows() -> None:
    four_patients_twelve_reports = GroupStats.of([CaseStats(c, rows=3) for c in range(4)])
    assert not XYAnonymity(k=5).is_valid(four_patients_twelve_reports)
    assert KAnonymity(k=5).is_valid(four_patients_twelve_reports)
    assert XYAnonymity(k=4).is_valid(four_patients_twelve_reports)
    req = XYAnonymity(k=4).requirements()
    assert (req.size_unit, req.unit, req.value_caps, req.knowledge) == ("cases", "cases", False, False)
    assert XYAnonymity(k=4).describe()["unit"] == "cases"


def test_engine_groups_hold_k_cases_whatever_their_reports() -> None:
    # Six cases of 3 reports at ages 30-35 and six single-report cases at ages 70-75: with k = 3 rows,
    # one case of 3 reports would be a group alone; (X,Y) with k = 3 needs three cases per group.
    cases = pl.DataFrame(
        {
            "caseid": list(range(1, 13)),
            "n_reports": [3] * 6 + [1] * 6,
            "age_min": [30.0, 31, 32, 33, 34, 35, 70, 71, 72, 73, 74, 75],
            "sex": ["M"] * 12,
        }
    ).with_columns(pl.col("age_min").alias("age_max"))
    h = QidHierarchies(age=mesh_age_tree(), sex=None, weight=False)
    probs = pl.DataFrame(schema={"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})
    xy = greedy_cluster(
        cases, probabilities=probs, model=XYAnonymity(k=3), hierarchies=h, rng=np.random.default_rng(1)
    )
    assert (xy.frame.group_by("group_id").len()["len"] >= 3).all() and xy.invalid_groups == 0
    rows = greedy_cluster(
        cases, probabilities=probs, model=KAnonymity(k=3), hierarchies=h, rng=np.random.default_rng(1)
    )
    sizes = rows.frame.join(cases, on="caseid").group_by("group_id").agg(pl.len(), pl.col("n_reports").sum())
    assert (sizes["n_reports"] >= 3).all() and (sizes["len"] == 1).any()  # a lone 3-report case is valid
