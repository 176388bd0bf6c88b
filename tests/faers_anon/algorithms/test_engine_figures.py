"""The greedy engine's figures and choices on hand-worked cases (Lin, Yang & Wang 2016; SPEC §5–§6).

IL(g) = |g| · (Σ_i (max N_i,g − min N_i,g) / (max N_i − min N_i) + Σ_j h(C_j, g) / h(C_j)) with the sex
tree of height 1 (F, M, missing → *) and weight normalized by the domain (0, 100) unless said
otherwise; every expected number below is worked out by hand from that formula. The choices (which
case joins, where a leftover goes) follow from stage 1 (least ΔIL' first, next seed the farthest
case) and stage 2 (a leftover joins the least-ΔIL' valid group).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faers_anon.algorithms import greedy_cluster, score_candidates
from faers_anon.algorithms.types import Partition, QidHierarchies
from faers_anon.anonymize import metrics
from faers_anon.models import KAnonymity, MSKTheta
from hierarchies import mesh_age_tree, paper_example_age_tree, sex_tree

SEX_WEIGHT = QidHierarchies(age=None, sex=sex_tree(), weight=True, weight_domain=(0.0, 100.0))
NO_VALUES = pl.DataFrame(schema={"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})
AGE = mesh_age_tree()
SEX = sex_tree()

# caseid: (sex, weight); None is missing
TABLE = {1: ("F", 50.0), 2: ("F", 60.0), 3: ("M", 50.0), 4: ("F", None), 5: ("*", 55.0), 6: (None, 50.0)}


def _cases(rows: dict[int, tuple[str | None, float | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "caseid": list(rows),
            "sex": [r[0] for r in rows.values()],
            "wt_min": [r[1] for r in rows.values()],
            "wt_max": [r[1] for r in rows.values()],
        },
        schema={"caseid": pl.Int64, "sex": pl.Utf8, "wt_min": pl.Float64, "wt_max": pl.Float64},
    )


def _scores(group: list[int], candidates: list[int], hierarchies: QidHierarchies = SEX_WEIGHT) -> pl.DataFrame:  # noqa: E501
    return score_candidates(
        _cases(TABLE), group=group, candidates=candidates, probabilities=NO_VALUES,
        model=MSKTheta(k=2, thetas={}), hierarchies=hierarchies,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("candidate", "il_with", "why"),
    [
        (2, 0.2, "2 · (10/100 + 0): weights 50 and 60, both F"),
        (3, 2.0, "2 · (0 + 1/1): F and M generalize to *, height 1 of 1"),
        (4, 2.0, "2 · (1 + 0): known and missing weight is full loss (SPEC §5)"),
        (5, 2.1, "2 · (5/100 + 1): F and * reach the root"),
        (6, 2.0, "2 · (0 + 1): known and missing sex reach the root"),
    ],
)
def test_il_of_a_pair(candidate: int, il_with: float, why: str) -> None:
    row = _scores([1], [candidate]).row(0, named=True)
    assert row["il_group"] == 0.0
    assert row["il_with"] == pytest.approx(il_with), why
    assert row["delta_il"] == pytest.approx(il_with)
    assert row["pr"] == 1.0 and row["delta_il_prime"] == pytest.approx(il_with)  # no sensitive value: PR 1


def test_il_of_a_larger_group_counts_its_cases() -> None:
    """IL({1, 2}) = 0.2; IL({1, 2, 3}) = 3 · (10/100 + 1) = 3.3, so ΔIL = 3.1."""
    row = _scores([1, 2], [3]).row(0, named=True)
    assert (row["il_group"], row["il_with"], row["delta_il"]) == pytest.approx((0.2, 3.3, 3.1))


def test_without_a_domain_weight_is_normalized_by_the_datas_range() -> None:
    """The cases' weights span 50..60: {1, 2} loses 2 · (10/10) = 2 instead of 0.2."""
    own = QidHierarchies(age=None, sex=SEX, weight=True)
    assert _scores([1], [2], own).row(0, named=True)["il_with"] == pytest.approx(2.0)


def test_risk_is_infinite_when_a_value_would_pass_its_bound() -> None:
    """k 2, θ_A 0.5: {1, 2} both holding A has conf 1 > 0.5, so ΔIL' = ∞ whatever ΔIL."""
    probs = pl.DataFrame({"caseid": [1, 2], "value": ["A", "A"], "p": [1.0, 1.0]})
    model = MSKTheta(k=2, thetas={"A": 0.5})
    row = score_candidates(_cases(TABLE), group=[1], candidates=[2, 3], probabilities=probs, model=model,
                           hierarchies=SEX_WEIGHT).rows(named=True)  # fmt: skip
    assert row[0]["pr"] == float("inf") and row[0]["delta_il_prime"] == float("inf")
    assert 1.0 <= row[1]["pr"] < float("inf")


def _weights(weights: list[float], sex: str = "F") -> pl.DataFrame:
    return _cases({i + 1: (sex, w) for i, w in enumerate(weights)})


def _members(frame: pl.DataFrame) -> set[frozenset[int]]:
    groups = frame.group_by("group_id").agg(pl.col("caseid"))
    return {frozenset(g) for g in groups.get_column("caseid").to_list()}


@pytest.mark.parametrize("seed", range(8))
def test_stage1_pairs_nearest_cases_whatever_the_first_seed(seed: int) -> None:
    """Weights 0, 1, 10, 11, 20, 21, 30, 31 and k 2: each seed takes its nearest case, the next seed is
    the farthest remaining one, so the four pairs come out for every first seed."""
    part = greedy_cluster(_weights([0, 1, 10, 11, 20, 21, 30, 31]), probabilities=NO_VALUES,
                          model=MSKTheta(k=2, thetas={}), hierarchies=SEX_WEIGHT,
                          rng=np.random.default_rng(seed))  # fmt: skip
    assert _members(part.frame) == {frozenset(p) for p in ((1, 2), (3, 4), (5, 6), (7, 8))}
    assert (part.groups, part.leftovers, part.forced, part.invalid_groups) == (4, 0, 0, 0)
    assert part.first_seed in range(1, 9)


@pytest.mark.parametrize("seed", range(6))
def test_stage2_puts_a_leftover_in_the_group_it_costs_least(seed: int) -> None:
    """Weights 0, 1, 2, 10, 11, 12, 3 and k 3: two groups of three, one leftover; the leftover joins
    the low group (its range grows to 3) rather than the high one (to 9 or more)."""
    part = greedy_cluster(_weights([0, 1, 2, 10, 11, 12, 3]), probabilities=NO_VALUES,
                          model=MSKTheta(k=3, thetas={}), hierarchies=SEX_WEIGHT,
                          rng=np.random.default_rng(seed))  # fmt: skip
    assert _members(part.frame) == {frozenset({1, 2, 3, 7}), frozenset({4, 5, 6})}
    assert (part.groups, part.leftovers, part.invalid_groups) == (2, 1, 0)


def test_sexes_stay_apart_when_weights_cannot_tell_cases_apart() -> None:
    cases = _cases({1: ("F", 70.0), 2: ("M", 70.0), 3: ("F", 70.0), 4: ("M", 70.0), 5: ("F", 70.0),
                    6: ("M", 70.0)})  # fmt: skip
    part = greedy_cluster(cases, probabilities=NO_VALUES, model=MSKTheta(k=3, thetas={}),
                          hierarchies=SEX_WEIGHT, rng=np.random.default_rng(0))  # fmt: skip
    assert _members(part.frame) == {frozenset({1, 3, 5}), frozenset({2, 4, 6})}
    assert set(part.frame.get_column("sex")) == {"F", "M"}


def test_a_bound_makes_the_engine_mix_holders_and_non_holders() -> None:
    """Cases 1, 2 (weights 0, 1) hold A; 3, 4 (weights 50, 51) hold nothing; k 2, θ_A 0.5. The nearest
    pair {1, 2} would have conf(A) = 1: no group may hold more holders than non-holders. (With first
    seed 4, stage 1 builds {4, 3}, then finds no finite candidate for the next seed's group and
    dissolves it; stage 2 puts 1 and 2 into {3, 4}: one group of 4 with conf(A) = 2/4.)"""
    probs = pl.DataFrame({"caseid": [1, 2], "value": ["A", "A"], "p": [1.0, 1.0]})
    part = greedy_cluster(_weights([0, 1, 50, 51]), probabilities=probs,
                          model=MSKTheta(k=2, thetas={"A": 0.5}), hierarchies=SEX_WEIGHT,
                          rng=np.random.default_rng(3))  # fmt: skip
    groups = _members(part.frame)
    assert all(len(g & {1, 2}) / len(g) <= 0.5 for g in groups)
    assert part.invalid_groups == 0 and frozenset({1, 2}) not in groups
    assert (part.first_seed, part.failed_groups, part.leftovers, part.groups) == (4, 1, 2, 1)


def test_a_report_count_model_counts_rows_not_cases() -> None:
    """k-anonymity counts reports (``n_reports``): two cases of 2 reports each make one group of 4 rows."""
    cases = _weights([10, 11, 80, 81]).with_columns(n_reports=pl.Series([2, 2, 2, 2]))
    part = greedy_cluster(cases, probabilities=NO_VALUES, model=KAnonymity(k=4), hierarchies=SEX_WEIGHT,
                          rng=np.random.default_rng(0))  # fmt: skip
    assert _members(part.frame) == {frozenset({1, 2}), frozenset({3, 4})}


def test_the_released_nil_is_the_sum_of_the_engines_il() -> None:
    """NIL = Σ IL(g) / (N · |QID|): pairs {0, 1}, {10, 11}, ... lose 2 · 1/100 each, 4 · 0.02 / (8 · 2)."""
    cases = _weights([0, 1, 10, 11, 20, 21, 30, 31])
    part = greedy_cluster(cases, probabilities=NO_VALUES, model=MSKTheta(k=2, thetas={}),
                          hierarchies=SEX_WEIGHT, rng=np.random.default_rng(0))  # fmt: skip
    losses = metrics.information_loss(part.frame, cases, hierarchies=SEX_WEIGHT)
    assert metrics.nil(losses, qids=SEX_WEIGHT.count) == pytest.approx(4 * 0.02 / (8 * 2))


def test_qid_hierarchies_count_and_trees() -> None:
    full = QidHierarchies.default()
    assert full.count == 3 and [t.height for t in full.trees] == [AGE.height, SEX.height]
    assert SEX_WEIGHT.count == 2 and SEX_WEIGHT.trees == (SEX_WEIGHT.sex,)
    assert QidHierarchies(age=None, sex=None, weight=True).count == 1


@st.composite
def _quarter(draw: st.DrawFn) -> tuple[pl.DataFrame, int, int]:
    n = draw(st.integers(2, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    age = np.where(rng.random(n) < 0.25, np.nan, rng.integers(0, 100, n).astype(float))
    wt = np.where(rng.random(n) < 0.3, np.nan, rng.integers(3, 150, n).astype(float))
    sex = rng.choice(np.array(["F", "M", "*", None], dtype=object), n, p=[0.45, 0.35, 0.05, 0.15])
    cases = pl.DataFrame(
        {"caseid": np.arange(1, n + 1), "age_min": age, "age_max": age, "sex": sex.tolist(), "wt_min": wt,
         "wt_max": wt},  # fmt: skip
    ).with_columns(pl.col(pl.Float64).fill_nan(None))
    return cases, draw(st.integers(2, 5)), draw(st.integers(0, 99))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_quarter())
def test_each_group_is_released_at_exactly_its_lca_and_weight_range(q: tuple[pl.DataFrame, int, int]) -> None:
    """Not merely covering: the released age and sex nodes are the members' LCA, the weight range their
    exact [min, max] (null when one member's weight is missing), recomputed here from the raw cases."""
    cases, k, seed = q
    part = greedy_cluster(cases, probabilities=NO_VALUES, model=MSKTheta(k=k, thetas={}),
                          hierarchies=QidHierarchies.default(), rng=np.random.default_rng(seed))  # fmt: skip
    raw = cases.join(part.frame.select("caseid", "group_id"), on="caseid")
    released = part.frame.unique("group_id").sort("group_id")
    for gid, members in raw.group_by("group_id"):
        row = released.filter(pl.col("group_id") == gid[0]).row(0, named=True)
        ages = members.get_column("age_min").cast(pl.Float64).fill_null(np.nan).to_numpy()
        age_node = AGE.names[AGE.lca(AGE.cover(ages, ages))]
        assert row["age_group"] == age_node
        sexes = SEX.encode(members.get_column("sex").to_list())
        assert row["sex"] == (None if (sexes == SEX.missing).all() else SEX.names[SEX.lca(sexes)])
        weights = members.get_column("wt_min")
        if weights.null_count():
            assert row["wt_min"] is None and row["wt_max"] is None
        else:
            assert (row["wt_min"], row["wt_max"]) == (weights.min(), weights.max())


PAPER = paper_example_age_tree()  # * → Infant (Newborn), Child (Preschool), Adolescent, Adult (Young
# Adult, Middle Aged, Aged), missing: height 2
AGE_ONLY = QidHierarchies(age=PAPER, sex=None, weight=False)
NODES = {1: "Young Adult", 2: "Middle Aged", 3: "Aged", 4: "Adolescent", 5: "Infant, Newborn",
         6: "Child, Preschool", 7: "missing", 8: "Young Adult"}  # fmt: skip


def _aged(ids: list[int]) -> pl.DataFrame:
    return pl.DataFrame({"caseid": ids, "age_group": [NODES[i] for i in ids]})


@pytest.mark.parametrize(
    ("group", "candidate", "il_with"),
    [
        ([1], 8, 0.0),  # same leaf: nothing generalized
        ([1], 2, 1.0),  # LCA Adult, height 1 of 2: 2 · 1/2
        ([1, 2], 3, 1.5),  # still Adult: 3 · 1/2
        ([1], 4, 2.0),  # LCA the root: 2 · 2/2
        ([5], 6, 2.0),  # Infant and Child meet at the root
        ([1], 7, 2.0),  # known and missing reach the root (SPEC §5)
    ],
)
def test_il_on_the_papers_categorical_age_tree(group: list[int], candidate: int, il_with: float) -> None:
    cases = _aged(sorted({*group, candidate}))
    model = MSKTheta(k=2, thetas={})
    scores = score_candidates(cases, group=group, candidates=[candidate], probabilities=NO_VALUES,
                              model=model, hierarchies=AGE_ONLY)  # fmt: skip
    row = scores.row(0, named=True)
    assert row["il_with"] == pytest.approx(il_with)


def test_categorical_groups_are_released_at_their_lca_node() -> None:
    """k 2 on Young Adult, Middle Aged, Infant Newborn, Child Preschool: the adults pair (released
    Adult), the two children pair (released at the root, their only common ancestor)."""
    part = greedy_cluster(_aged([1, 2, 5, 6]), probabilities=NO_VALUES, model=MSKTheta(k=2, thetas={}),
                          hierarchies=AGE_ONLY, rng=np.random.default_rng(0))  # fmt: skip
    released = dict(part.frame.select("caseid", "age_group").iter_rows())
    assert released == {1: "Adult", 2: "Adult", 5: "*", 6: "*"}
    assert part.frame.get_column("age_min").null_count() == 4  # a categorical tree has no numeric range


def _il_by_hand(frame: pl.DataFrame, cases: pl.DataFrame) -> float:
    """Σ_g IL(g) from the formula, group by group, with SPEC §5's missing rules (weight domain 0..100)."""
    total = 0.0
    raw = cases.join(frame.select("caseid", "group_id"), on="caseid")
    for _, g in raw.group_by("group_id"):
        n = g.height
        ages = g.get_column("age_min").cast(pl.Float64).fill_null(np.nan).to_numpy()
        age = AGE.node_height[AGE.lca(AGE.cover(ages, ages))] / AGE.height
        sex = SEX.node_height[SEX.lca(SEX.encode(g.get_column("sex").to_list()))] / SEX.height
        w = g.get_column("wt_min").cast(pl.Float64).to_numpy()
        known = ~np.isnan(w)
        weight = 0.0 if not known.any() else 1.0 if not known.all() else float(w.max() - w.min()) / 100.0
        total += n * (age + sex + weight)
    return total


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_quarter())
def test_the_metrics_il_is_the_formula_on_every_partition(q: tuple[pl.DataFrame, int, int]) -> None:
    """metrics.information_loss (what the release reports) against the formula evaluated here."""
    cases, k, seed = q
    h = QidHierarchies(age=AGE, sex=SEX, weight=True, weight_domain=(0.0, 100.0))
    part = greedy_cluster(cases, probabilities=NO_VALUES, model=MSKTheta(k=k, thetas={}), hierarchies=h,
                          rng=np.random.default_rng(seed))  # fmt: skip
    losses = metrics.information_loss(part.frame, cases, hierarchies=h)
    assert float(losses.get_column("il").sum()) == pytest.approx(_il_by_hand(part.frame, cases))


def _group_il(cases: pl.DataFrame) -> float:
    """IL of one group of ``cases`` from the formula (the helper above on a one-group frame)."""
    frame = cases.select("caseid").with_columns(group_id=pl.lit(0, pl.Int64))
    return _il_by_hand(frame, cases)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_quarter(), st.data())
def test_the_kernels_delta_il_is_the_formulas_difference(q: tuple[pl.DataFrame, int, int], data: st.DataObject) -> None:  # noqa: E501
    """ΔIL(g, r) = IL(g ∪ {r}) − IL(g) (Lin et al. 2016, eq. 3), the kernel's incremental value against
    two evaluations of the formula, for random groups and candidates."""
    cases, _, _ = q
    ids = cases.get_column("caseid").to_list()
    size = data.draw(st.integers(1, len(ids) - 1))
    group = data.draw(st.lists(st.sampled_from(ids), min_size=size, max_size=size, unique=True))
    rest = [c for c in ids if c not in group]
    candidates = data.draw(st.lists(st.sampled_from(rest), min_size=1, max_size=3, unique=True))
    h = QidHierarchies(age=AGE, sex=SEX, weight=True, weight_domain=(0.0, 100.0))
    scores = score_candidates(cases, group=group, candidates=candidates, probabilities=NO_VALUES,
                              model=MSKTheta(k=2, thetas={}), hierarchies=h)  # fmt: skip
    base = _group_il(cases.filter(pl.col("caseid").is_in(group)))
    for row in scores.iter_rows(named=True):
        with_r = _group_il(cases.filter(pl.col("caseid").is_in([*group, row["caseid"]])))
        assert row["il_group"] == pytest.approx(base)
        assert row["delta_il"] == pytest.approx(with_r - base)


@pytest.mark.parametrize(("candidates", "scan_limit"), [(1, 1), (1, 8), (4, 4)])
def test_the_smallest_budgets_still_give_a_valid_partition(candidates: int, scan_limit: int) -> None:
    """The budget limits the search, never validity: stage 2 and the repair place every case validly."""
    weights = [float(w) for w in (5, 90, 33, 61, 12, 47, 78, 25, 54, 69, 8, 41)]
    part = greedy_cluster(_weights(weights), probabilities=NO_VALUES, model=MSKTheta(k=3, thetas={}),
                          hierarchies=SEX_WEIGHT, rng=np.random.default_rng(1), candidates=candidates,
                          scan_limit=scan_limit)  # fmt: skip
    sizes: list[int] = part.frame.group_by("group_id").len().get_column("len").to_list()
    assert part.invalid_groups == 0 and min(sizes) >= 3 and sum(sizes) == 12


def test_the_engines_types_are_frozen_values() -> None:
    frame = pl.DataFrame({"caseid": [1]})
    part = Partition(frame=frame, groups=1, leftovers=0, forced=0, failed_groups=0, invalid_groups=0,
                     first_seed=1)  # fmt: skip
    assert part.merged_groups == 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        part.groups = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        SEX_WEIGHT.weight = False  # type: ignore[misc]


def test_a_value_every_case_holds_cannot_be_bounded_and_the_engine_says_so() -> None:
    """Four cases all holding A with θ_A 0.5: every group has conf(A) = 1 > 0.5. The engine still places
    every case once and reports each group invalid (the data as a whole cannot satisfy the model)."""
    probs = pl.DataFrame({"caseid": [1, 2, 3, 4], "value": ["A"] * 4, "p": [1.0] * 4})
    part = greedy_cluster(_weights([10, 20, 30, 40]), probabilities=probs,
                          model=MSKTheta(k=2, thetas={"A": 0.5}), hierarchies=SEX_WEIGHT,
                          rng=np.random.default_rng(0))  # fmt: skip
    assert sorted(part.frame.get_column("caseid").to_list()) == [1, 2, 3, 4]
    assert part.groups >= 1 and part.invalid_groups == part.groups


@pytest.mark.parametrize("seed", [0, 5])
def test_the_input_row_order_does_not_matter(seed: int) -> None:
    """Cases are sorted by caseid before anything else: a shuffled frame gives the same partition."""
    weights = [float(w) for w in (5, 90, 33, 61, 12, 47, 78, 25, 54, 69, 8, 41)]
    cases = _weights(weights)
    runs = [
        greedy_cluster(frame, probabilities=NO_VALUES, model=MSKTheta(k=3, thetas={}), hierarchies=SEX_WEIGHT,
                       rng=np.random.default_rng(seed)).frame.sort("caseid")  # fmt: skip
        for frame in (cases, cases.sample(fraction=1.0, shuffle=True, seed=9))
    ]
    assert runs[0].equals(runs[1])


def test_a_qid_left_out_is_neither_used_nor_released() -> None:
    """weight=False: weights 1 and 99 cost nothing, so sex alone decides; the weight columns are null."""
    cases = _cases({1: ("F", 1.0), 2: ("M", 1.0), 3: ("F", 99.0), 4: ("M", 99.0)})
    h = QidHierarchies(age=None, sex=SEX, weight=False)
    part = greedy_cluster(cases, probabilities=NO_VALUES, model=MSKTheta(k=2, thetas={}), hierarchies=h,
                          rng=np.random.default_rng(0))  # fmt: skip
    assert _members(part.frame) == {frozenset({1, 3}), frozenset({2, 4})}
    assert part.frame.get_column("wt_min").null_count() == 4


def test_a_numeric_age_group_is_released_with_its_nodes_range() -> None:
    """Ages 30 and 40 share the MeSH node "Adult, 25-44 years": released as that node and [25, 45)."""
    ages = [30.0, 40.0]
    cases = pl.DataFrame({"caseid": [1, 2], "age_min": ages, "age_max": ages})
    h = QidHierarchies(age=AGE, sex=None, weight=False)
    part = greedy_cluster(cases, probabilities=NO_VALUES, model=MSKTheta(k=2, thetas={}), hierarchies=h,
                          rng=np.random.default_rng(0))  # fmt: skip
    row = part.frame.row(0, named=True)
    node = AGE.code(row["age_group"])
    assert row["age_group"].startswith("Adult") and (row["age_min"], row["age_max"]) == (25.0, 45.0)
    assert (AGE.lo[node], AGE.hi[node]) == (25.0, 45.0)


def test_fewer_cases_than_k_make_one_invalid_group() -> None:
    """Three cases and k 5: no group can be valid; the engine returns one group holding all three and
    says it is invalid (the release's verifier would refuse it)."""
    part = greedy_cluster(_weights([10, 20, 30]), probabilities=NO_VALUES, model=MSKTheta(k=5, thetas={}),
                          hierarchies=SEX_WEIGHT, rng=np.random.default_rng(0))  # fmt: skip
    assert _members(part.frame) == {frozenset({1, 2, 3})}
    assert (part.groups, part.invalid_groups) == (1, 1)
    row = part.frame.row(0, named=True)
    assert (row["wt_min"], row["wt_max"], row["sex"]) == (10.0, 30.0, "F")
