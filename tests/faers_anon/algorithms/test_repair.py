"""Repair: invalid groups merge into their nearest groups until every group satisfies the model."""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from faers_anon.algorithms import QidHierarchies, greedy_cluster
from faers_anon.algorithms._merge import Merging, merge_invalid
from faers_anon.algorithms.repair import over_candidates, repair_partition
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


def test_an_invalid_group_takes_the_cheapest_valid_partner_over_a_nearer_invalid_one() -> None:
    # Groups 0 and 1 (adults 25-44, F) each hold A twice: σ_A = 2 > 0.5·2. Merging them (ΔIL 0) stays
    # invalid (4 of 4). Group 3 (middle-aged, F) and group 2 (aged, M) hold no A; both lift age to
    # Adult, group 2 also costs sex, so 0 joins 3. Then 1 cannot join 0 ∪ 3 (σ_A 4 of 6 > 3) and
    # joins 2 (σ_A 2 of 4).
    cases = pl.DataFrame(
        {
            "caseid": list(range(1, 9)),
            "age_min": [30.0, 35.0, 40.0, 42.0, 70.0, 75.0, 50.0, 55.0],
            "age_max": [30.0, 35.0, 40.0, 42.0, 70.0, 75.0, 50.0, 55.0],
            "sex": ["F"] * 4 + ["M"] * 2 + ["F"] * 2,
            "wt_min": [None] * 8,
            "wt_max": [None] * 8,
        },
        schema_overrides={"wt_min": pl.Float64, "wt_max": pl.Float64},
    )
    middle = "Middle Aged"
    frame = pl.DataFrame(
        {
            "caseid": list(range(1, 9)),
            "group_id": [0, 0, 1, 1, 2, 2, 3, 3],
            "age_group": [ADULT] * 4 + [AGED] * 2 + [middle] * 2,
            "age_min": [25.0] * 4 + [65.0] * 2 + [45.0] * 2,
            "age_max": [45.0] * 4 + [80.0] * 2 + [65.0] * 2,
            "sex": ["F"] * 4 + ["M"] * 2 + ["F"] * 2,
            "wt_min": [None] * 8,
            "wt_max": [None] * 8,
        },
        schema_overrides={"wt_min": pl.Float64, "wt_max": pl.Float64},
    )
    probabilities = pl.DataFrame({"caseid": [1, 2, 3, 4], "value": ["A"] * 4, "p": [1.0] * 4})
    req = Requirements(min_size=2, value_caps=True, risk="eta", thetas={"A": 0.5})
    repaired, merges, invalid = repair_partition(
        frame, cases, probabilities, requirements=req, age=mesh_age_tree(), sex=sex_tree(), weight=True
    )
    assert (merges, invalid) == (2, 0)
    groups = repaired.group_by("group_id").agg(pl.col("caseid").sort()).sort("group_id")
    assert groups["caseid"].to_list() == [[3, 4, 5, 6], [1, 2, 7, 8]]  # survivors 2 and 3, in id order
    assert repaired.filter(pl.col("caseid") == 3)["sex"].item() == "*"


def _reference_merges(
    sizes: list[int], ages: list[int], sigma: list[list[float]], theta: list[float], k: int
) -> list[int]:
    """The documented partner rule in plain Python (categorical age only): ``into`` per group."""
    tree = mesh_age_tree()
    h = tree.node_height / tree.height
    size, age, sig = list(sizes), list(ages), [list(row) for row in sigma]
    into = [-1] * len(sizes)

    def excess(n: int, s: list[float]) -> float:
        return max(0, k - n) + sum(max(0.0, s[j] - theta[j] * n - 1e-9) for j in range(len(theta)))

    queue = [g for g in range(len(sizes)) if excess(size[g], sig[g]) > 0]
    while queue and into.count(-1) > 1:
        g = queue.pop(0)
        if into[g] >= 0 or excess(size[g], sig[g]) == 0:
            continue
        keys = []
        for o in range(len(sizes)):
            if o == g or into[o] >= 0:
                continue
            n = size[g] + size[o]
            lca = int(tree.lca_table[age[g], age[o]])
            delta = n * h[lca] - size[g] * h[age[g]] - size[o] * h[age[o]]
            e = excess(n, [a + b for a, b in zip(sig[g], sig[o], strict=True)])
            keys.append((e > 0, e if e > 0 else 0.0, delta, o))
        o = min(keys)[3]
        size[o] += size[g]
        age[o] = int(tree.lca_table[age[o], age[g]])
        sig[o] = [a + b for a, b in zip(sig[o], sig[g], strict=True)]
        into[g] = o
        if excess(size[o], sig[o]) > 0:
            queue.append(o)
    return into


@settings(max_examples=60, deadline=None)
@given(
    groups=st.lists(
        st.tuples(st.integers(1, 6), st.integers(0, 5), st.integers(0, 4), st.integers(0, 4)),
        min_size=2,
        max_size=9,
    ),
    theta=st.sampled_from([0.25, 0.5]),
)
def test_merge_loop_follows_the_documented_rule(
    groups: list[tuple[int, int, int, int]], theta: float
) -> None:
    """The numba loop against a plain reference; σ in halves and θ in quarters keep sums exact."""
    tree = mesh_age_tree()
    leaves = [int(c) for c in np.flatnonzero(tree.node_height == 0) if c != tree.missing][:6]
    sizes = [n for n, _, _, _ in groups]
    ages = [leaves[a] for _, a, _, _ in groups]
    sigma = [[min(n, a / 2), min(n, b / 2)] for n, _, a, b in groups]
    expected = _reference_merges(sizes, ages, sigma, [theta, theta], k=3)
    n = len(groups)
    into = np.full(n, -1, np.int64)
    count, zero, nan = np.array(sizes, np.int64), np.zeros(n, np.int64), np.full(n, np.nan)
    lca, heights = np.ascontiguousarray(tree.lca_table, np.int64), tree.node_height / tree.height
    merge_invalid(
        Merging(count, count.copy(), zero, nan, nan.copy(), np.array(ages), zero.copy(), np.array(sigma)),
        np.array([theta, theta]), lca, heights, np.zeros((1, 1), np.int64), np.zeros(1),
        0.0, 3, False, False, into,
    )  # fmt: skip
    assert into.tolist() == expected


def test_over_candidates_keep_every_pair_the_exact_order_finds_over() -> None:
    """Group 0 holds value 2 three times: in caseid order 0.1 + 0.2 + 0.3 = 0.6000000000000001 > 0.6,
    over its bound; summed as the rows come (0.2 + 0.3 + 0.1 = 0.6) it is not, but within 4 · 3 · ε ·
    0.6 of it, so it stays a candidate. Value 5 (σ 0.3 in group 1, bound 0.4) and value 7 (σ 1.0, bound
    1.5) are not candidates; value 9 (σ 0.9 > 0.8 in group 1) is."""
    assert 0.1 + 0.2 + 0.3 > 0.6 and 0.2 + 0.3 + 0.1 == 0.6
    ids = over_candidates(
        np.array([0, 1, 0, 1, 0, 1, 1, 1], np.int64),
        np.array([2, 5, 2, 7, 2, 9, 9, 9], np.int64),
        np.array([0.2, 0.3, 0.3, 1.0, 0.1, 0.4, 0.4, 0.1]),
        np.array([0.6, 0.4, 0.6, 1.5, 0.6, 0.8, 0.8, 0.8]),
    )
    assert ids.tolist() == [2, 9]
    assert over_candidates(*(np.zeros(0, t) for t in (np.int64, np.int64, float, float))).shape == (0,)
