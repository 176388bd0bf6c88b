"""k-anonymity: ≥ k rows per group, one engine unit per report (hand-worked numbers)."""

from __future__ import annotations

import numpy as np
import polars as pl

from faers_anon.algorithms import QidHierarchies
from faers_anon.anonymize import metrics
from faers_anon.anonymize.units import partition_model, unit_view
from faers_anon.models import CaseStats, GroupStats, KAnonymity, XYAnonymity
from hierarchies import mesh_age_tree, sex_tree
from knowledge import E_SCHEMA


def test_rows_count_not_cases() -> None:
    # Two patients, one with three reports, one with two: five rows, two people.
    group = GroupStats.of([CaseStats(1, rows=3), CaseStats(2, rows=2)])
    assert KAnonymity(k=5).is_valid(group)
    assert not KAnonymity(k=6).is_valid(group)
    assert not XYAnonymity(k=5).is_valid(group)  # the weakness (X,Y)-anonymity fixes
    assert KAnonymity(k=5, thetas={"X": 0.1}).risk(group, CaseStats(3, sensitive={"X": 1.0})) == 1.0
    req = KAnonymity(k=5).requirements()
    assert (req.min_size, req.size_unit, req.unit, req.value_caps, req.risk) == (
        5,
        "rows",
        "reports",
        False,
        "none",
    )


def _reports() -> pl.DataFrame:
    # Case 1 has a report at age 5 and a follow-up at age 70; the others are single reports.
    return pl.DataFrame(
        {
            "primaryid": [11, 12, 21, 31, 41, 51],
            "caseid": [1, 1, 2, 3, 4, 5],
            "age_min": [5.0, 70.0, 6.0, 7.0, 71.0, 72.0],
            "sex": ["F"] * 6,
            "n_reports": [1] * 6,
        }
    ).with_columns(
        pl.col("age_min").alias("age_max"),
        pl.lit(None, pl.Float64).alias("wt_min"),
        pl.lit(None, pl.Float64).alias("wt_max"),
        *(pl.lit([], pl.List(pl.Utf8)).alias(c) for c in ("indications", "reactions", "drug_keys")),
    )


def test_follow_ups_are_not_merged_and_nil_is_counted_on_reports() -> None:
    reports = _reports()
    h = QidHierarchies(age=mesh_age_tree(), sex=sex_tree(), weight=False)
    run = partition_model(
        reports.group_by("caseid").agg(pl.first("age_min")),  # cases are not used by a report-unit model
        pl.DataFrame(schema=E_SCHEMA),
        model=KAnonymity(k=3),
        hierarchies=h,
        rng=np.random.default_rng(0),
        sensitive=("indications", "reactions"),
        reports=reports,
    )
    frame = run.partition.frame.sort("primaryid")
    assert run.unit == "reports" and frame.height == 6
    groups = dict(zip(frame["primaryid"], frame["group_id"], strict=True))
    assert groups[11] == groups[21] == groups[31] != groups[12] == groups[41] == groups[51]
    assert frame.filter(pl.col("caseid") == 1)["age_group"].to_list() == ["Child", "Aged, 65-79 years"]
    # Ages 5, 6, 7 meet at "Child" (height 1 of 3): IL = 3 · 1/3 = 1; ages 70-72 share a leaf: IL = 0.
    # NIL = 1 / (6 reports · 2 QIDs) = 1/12.
    losses = metrics.information_loss(unit_view(frame), unit_view(reports), hierarchies=h)
    assert metrics.nil(losses, qids=2) == 1 / 12
