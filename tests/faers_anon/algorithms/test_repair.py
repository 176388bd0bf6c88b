"""Repair: invalid groups merge into their nearest groups until every group satisfies the model."""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from faers_anon.algorithms import QidHierarchies, greedy_cluster
from faers_anon.algorithms.repair import repair_partition
from faers_anon.models import make_model
from faers_anon.models.base import Requirements
from hierarchies import mesh_age_tree, sex_tree

ADULT, AGED = "Adult, 25-44 years", "Aged, 65-79 years"


def _frame() -> tuple[pl.DataFrame, pl.DataFrame]:
    cases = pl.DataFrame(
        {
            "caseid": [1, 2, 3, 4, 5, 6],
            "age_min": [30.0, 35.0, 40.0, 42.0, 70.0, 75.0],
            "age_max": [30.0, 35.0, 40.0, 42.0, 70.0, 75.0],
            "sex": ["F"] * 6,
            "wt_min": [None] * 6,
            "wt_max": [None] * 6,
        },
        schema_overrides={"wt_min": pl.Float64, "wt_max": pl.Float64},
    )
    frame = pl.DataFrame(
        {
            "caseid": [1, 2, 3, 4, 5, 6],
            "group_id": [0, 0, 1, 1, 2, 2],
            "age_group": [ADULT] * 4 + [AGED] * 2,
            "age_min": [25.0] * 4 + [65.0] * 2,
            "age_max": [45.0] * 4 + [80.0] * 2,
            "sex": ["F"] * 6,
            "wt_min": [None] * 6,
            "wt_max": [None] * 6,
        },
        schema_overrides={"wt_min": pl.Float64, "wt_max": pl.Float64},
    )
    return cases, frame


def test_an_invalid_group_merges_into_its_nearest_valid_partner() -> None:
    cases, frame = _frame()
    # Group 0 holds value A twice: σ_A = 2 > θ·|g| = 0.5·2. Merged with group 1 (same age leaf, same
    # sex: ΔIL = 0) it holds 2 of 4 cases: σ_A = 2 ≤ 0.5·4, valid. Group 2 (aged) would cost age loss.
    probabilities = pl.DataFrame({"caseid": [1, 2], "value": ["A", "A"], "p": [1.0, 1.0]})
    req = Requirements(min_size=2, value_caps=True, risk="eta", thetas={"A": 0.5})
    repaired, merges, invalid = repair_partition(
        frame, cases, probabilities, requirements=req, age=mesh_age_tree(), sex=sex_tree(), weight=True
    )
    assert (merges, invalid) == (1, 0)
    groups = repaired.group_by("group_id").agg(pl.col("caseid").sort()).sort("group_id")
    assert groups["caseid"].to_list() == [[1, 2, 3, 4], [5, 6]]
    assert repaired.filter(pl.col("caseid") == 1)["age_group"].item() == ADULT
    assert repaired.schema == frame.schema


def test_merging_generalizes_to_the_lca_when_no_near_partner_is_valid() -> None:
    cases, frame = _frame()
    # Both adult groups hold A on every case; only the aged group can dilute them.
    probabilities = pl.DataFrame({"caseid": [1, 2, 3, 4], "value": ["A"] * 4, "p": [1.0] * 4})
    req = Requirements(min_size=2, value_caps=True, risk="eta", thetas={"A": 0.7})
    repaired, merges, invalid = repair_partition(
        frame, cases, probabilities, requirements=req, age=mesh_age_tree(), sex=sex_tree(), weight=True
    )
    assert invalid == 0 and merges == 2
    assert repaired["group_id"].unique().to_list() == [0]
    assert repaired["age_group"].unique().to_list() == ["Adult"]  # LCA of 25-44 and 65-79


def _tight(seed: int, margin: float) -> tuple[int, int, list[str]]:
    """Partition a random 60-case quarter at θ_s = P(s) + margin; (merges, invalid groups, violations)."""
    rng = np.random.default_rng(seed)
    n = 60
    ages = rng.uniform(0, 90, n)
    cases = pl.DataFrame(
        {
            "caseid": np.arange(n, dtype=np.int64),
            "age_min": ages,
            "age_max": ages,
            "sex": rng.choice(["F", "M"], n).tolist(),
            "wt_min": np.where(rng.random(n) < 0.3, rng.uniform(40, 120, n), np.nan),
        }
    ).with_columns(pl.col("wt_min").fill_nan(None), pl.col("wt_min").fill_nan(None).alias("wt_max"))
    values = rng.choice(["A", "B", "C", "D"], size=(n, 2))
    probabilities = pl.DataFrame(
        {"caseid": np.repeat(np.arange(n), 2), "value": values.ravel(), "p": np.ones(2 * n)}
    ).unique(["caseid", "value"])
    shares = probabilities.group_by("value").agg((pl.len() / n).alias("share"))
    thetas = {v: min(1.0, s + margin) for v, s in shares.iter_rows()}  # feasible: θ_s ≥ P(s)
    model = make_model("ms-k-theta", k=3, thetas=thetas)
    partition = greedy_cluster(
        cases, probabilities=probabilities, model=model, hierarchies=QidHierarchies.default(),
        rng=np.random.default_rng(seed),
    )  # fmt: skip
    joined = probabilities.join(partition.frame.select("caseid", "group_id"), on="caseid")
    sizes = partition.frame.group_by("group_id").agg(pl.len().alias("size"))
    conf = joined.group_by("group_id", "value").agg(pl.col("p").sum()).join(sizes, on="group_id")
    violations = [
        f"group {g}: {v} σ {sigma} > θ·|g| {thetas[v] * size}"
        for g, v, sigma, size in conf.iter_rows()
        if sigma > thetas[v] * size + 1e-9
    ]
    violations += [f"group {g}: {size} < k" for g, size in sizes.iter_rows() if size < 3]
    return partition.merged_groups, partition.invalid_groups, violations


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), margin=st.sampled_from([0.0, 0.05, 0.1]))
def test_tight_thresholds_still_give_a_valid_partition(seed: int, margin: float) -> None:
    """θ_s = P(s) + margin: at margin 0 greedy stage 2 always forces leftovers; repair makes it valid."""
    _, invalid, violations = _tight(seed, margin)
    assert invalid == 0 and violations == []


def test_theta_at_the_share_needs_and_gets_repair() -> None:
    merges, invalid, violations = _tight(0, 0.0)
    assert merges > 0 and invalid == 0 and violations == []
