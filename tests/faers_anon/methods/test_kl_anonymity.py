"""(k,l)-anonymity for multiple sensitive attributes: completely different tuples, cost S, the algorithm."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest

from faers_anon.errors import ConfigError
from faers_anon.methods import KLConfig, kl_anonymity
from faers_anon.methods._kl_kernels import greedy_diverse
from faers_anon.methods.kl_anonymity import sensitive_codes
from hierarchies import mesh_age_tree, sex_tree

CasesBuilder = Callable[..., pl.DataFrame]
RNG = np.random.default_rng(0)


def _values(cases: pl.DataFrame, columns: tuple[str, ...]) -> list[set[str]]:
    return [
        {v.strip().upper() for c in columns for v in (row[c] or [])}
        for row in cases.select(columns).to_dicts()
    ]


def _has_clique(sets: list[set[str]], size: int, chosen: tuple[int, ...] = ()) -> bool:
    """Is there a set of ``size`` pairwise disjoint members (backtracking, independent of the kernels)?"""
    if len(chosen) == size:
        return True
    start = chosen[-1] + 1 if chosen else 0
    return any(
        _has_clique(sets, size, (*chosen, i))
        for i in range(start, len(sets))
        if all(not (sets[i] & sets[j]) for j in chosen)
    )


def test_sensitive_codes_share_one_canonical_namespace(make_cases: CasesBuilder) -> None:
    cases = make_cases(
        [(30.0, "F", 70.0)] * 3,
        indications=[["Headache "], [], ["fever"]],
        reactions=[["NAUSEA"], ["HEADACHE"], ["Fever", "FEVER"]],
    )
    ptr, codes = sensitive_codes(cases, ("indications", "reactions"))
    per_case = [codes[ptr[i] : ptr[i + 1]].tolist() for i in range(3)]
    assert len(per_case[0]) == 2 and len(per_case[1]) == 1 and len(per_case[2]) == 1
    assert per_case[1][0] in per_case[0]  # indication "Headache " = reaction "HEADACHE"
    assert greedy_diverse(np.array([0, 1, 2]), ptr, codes, 3) == 2  # 0 and 1 share HEADACHE
    assert greedy_diverse(np.array([1, 2]), ptr, codes, 3) == 2


def test_an_empty_list_shares_nothing(make_cases: CasesBuilder) -> None:
    cases = make_cases([(30.0, "F", 70.0)] * 3, indications=[[], [], []], reactions=[[], ["X"], ["X"]])
    ptr, codes = sensitive_codes(cases, ("indications", "reactions"))
    assert greedy_diverse(np.arange(3), ptr, codes, 3) == 2


def test_cost_s_by_hand_pairs_opposite_sexes(make_cases: CasesBuilder) -> None:
    # F/M at (30 y, 70 kg) and at (50 y, 80 kg). Pairing the sexes costs 2 per case (H/H = 1, R(F,*) = 2):
    # S = 4 per pair, 8 in all. Pairing by QID would cost age 10/3 + 5/3 and weight 2·(10/10)·11 per pair.
    rows = [(30.0, "F", 70.0), (30.0, "M", 70.0), (50.0, "F", 80.0), (50.0, "M", 80.0)]
    result = kl_anonymity(make_cases(rows), config=KLConfig(k=2, l=1), rng=RNG)
    release = result.release
    assert result.privacy["generalization_cost"] == pytest.approx(8.0)
    assert release["sex"].to_list() == ["*"] * 4
    assert release["age_group"].to_list() == ["Adult, 25-44 years"] * 2 + ["Middle Aged"] * 2
    assert release["wt_min"].to_list() == [70.0, 70.0, 80.0, 80.0]
    assert result.privacy["k_achieved"] == 2 and result.privacy["groups"] == 2


def test_l_forces_completely_different_cases_together(make_cases: CasesBuilder) -> None:
    rows = [(30.0, "F", 70.0), (30.0, "F", 70.0), (30.0, "M", 70.0), (30.0, "M", 70.0)]
    reactions = [["X"], ["X"], ["Y"], ["Y"]]
    cases = make_cases(rows, indications=[[]] * 4, reactions=reactions)
    plain = kl_anonymity(cases, config=KLConfig(k=2, l=1), rng=RNG)
    assert plain.release["sex"].to_list() == ["F", "F", "M", "M"]
    assert plain.privacy["generalization_cost"] == 0.0
    diverse = kl_anonymity(cases, config=KLConfig(k=2, l=2), rng=RNG)
    assert diverse.release["sex"].to_list() == ["*"] * 4
    assert diverse.privacy["l_achieved"] == 2


def test_aggregation_then_decomposition_by_hand(make_cases: CasesBuilder) -> None:
    # One age and sex; weights 60, 61, 62, 80 kg (domain 20). Each singleton joins its cheapest neighbour:
    # 60-61, 61-60, 62-61, 80-62, a chain of four > max(2k-1, 3k-5) = 3. The best valid cut is
    # {60, 61} (S = 2·(1/20)·2 = 0.2) and {62, 80} (S = 2·(18/20)·19 = 34.2), below the whole 4·21 = 84.
    rows = [(30.0, "F", w) for w in (60.0, 61.0, 62.0, 80.0)]
    result = kl_anonymity(make_cases(rows), config=KLConfig(k=2, l=1), rng=RNG)
    release = result.release
    assert release["wt_min"].to_list() == [60.0, 60.0, 62.0, 62.0]
    assert release["wt_max"].to_list() == [61.0, 61.0, 80.0, 80.0]
    assert result.privacy["generalization_cost"] == pytest.approx(34.4)


def test_missing_values_generalize_to_the_root_when_mixed(make_cases: CasesBuilder) -> None:
    rows = [(None, None, None), (None, None, None), (40.0, "F", 70.0), (None, "F", None)]
    result = kl_anonymity(make_cases(rows), config=KLConfig(k=2, l=1), rng=RNG)
    frame = result.release.sort("caseid").drop("caseid", "group_id")
    assert frame.row(0, named=True) == {
        "age_group": "missing", "age_min": None, "age_max": None, "sex": None, "wt_min": None, "wt_max": None,
    }  # fmt: skip
    mixed = frame.row(2, named=True)
    assert (mixed["age_group"], mixed["age_min"], mixed["age_max"]) == ("*", 0.0, None)
    assert (mixed["sex"], mixed["wt_min"], mixed["wt_max"]) == ("F", None, None)


@pytest.mark.parametrize(("k", "l"), [(3, 2), (5, 3), (4, 1)])
def test_every_group_is_k_anonymous_l_diverse_and_covers_its_cases(
    random_cases: pl.DataFrame,
    k: int,
    l: int,  # noqa: E741
) -> None:
    config = KLConfig(k=k, l=l)
    result = kl_anonymity(random_cases, config=config, rng=RNG)
    release = result.release
    sets = _values(random_cases, config.sensitive)
    groups = release["group_id"].to_numpy()
    sizes = []
    for g in np.unique(groups):
        members = np.flatnonzero(groups == g)
        sizes.append(members.size)
        assert _has_clique([sets[i] for i in members], l)
    assert min(sizes) >= k and result.privacy["k_achieved"] == min(sizes)
    assert result.privacy["l_achieved"] >= l
    age_tree, sex = mesh_age_tree(), sex_tree()
    joined = random_cases.select("age_min", "sex", "wt_min").with_columns(
        release.select(pl.all().name.prefix("r_"))
    )
    for row in joined.to_dicts():
        node = age_tree.code(row["r_age_group"])
        own = age_tree.leaf_of(np.array([row["age_min"] if row["age_min"] is not None else np.nan]))[0]
        assert age_tree.is_ancestor(node, int(own))
        if row["sex"] is not None:
            assert sex.is_ancestor(sex.code(row["r_sex"]), sex.code(row["sex"]))
        if row["r_wt_min"] is not None:
            assert row["r_wt_min"] <= row["wt_min"] <= row["r_wt_max"]


def test_infeasible_data_or_parameters_are_config_errors(make_cases: CasesBuilder) -> None:
    shared = make_cases([(30.0, "F", 70.0)] * 4, reactions=[["X", f"Y{i}"] for i in range(4)])
    with pytest.raises(ConfigError, match="1 completely different ones found"):
        kl_anonymity(shared, config=KLConfig(k=2, l=2), rng=RNG)
    with pytest.raises(ConfigError, match="need at least k=5 cases"):
        kl_anonymity(shared, config=KLConfig(k=5, l=1), rng=RNG)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"k": 1}, "k must be an integer >= 2"),
        ({"k": 3, "l": 4}, "l must be <= k=3"),
        ({"l": 0}, "l must be an integer >= 1"),
        ({"sensitive": ("outcomes",)}, "sensitive must be distinct"),
        ({"sensitive": ()}, "sensitive must be distinct"),
        ({"factors": (1.0, -1.0, 1.0)}, "factors must be three numbers"),
        ({"window": 0}, "window must be"),
    ],
)
def test_config_rejects_bad_values(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        KLConfig(**options)
