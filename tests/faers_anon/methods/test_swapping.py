"""Multivariate equi-depth / equi-width swapping: value invariance, bins, pruning, disclosure, utility."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest

from faers_anon.errors import ConfigError
from faers_anon.methods import EquiDepthConfig, EquiWidthConfig, equi_depth_swapping, equi_width_swapping
from faers_anon.methods._swap_kernels import cyclic_sources, mdav_labels, pair_risk
from faers_anon.methods.swapping import correlation_bias, grid_bins

CasesBuilder = Callable[..., pl.DataFrame]


def _pairs(frame: pl.DataFrame, age: str, wt: str) -> Counter[tuple[Any, Any]]:
    return Counter(zip(frame[age].to_list(), frame[wt].to_list(), strict=True))


@pytest.mark.parametrize(
    ("swap", "config"),
    [(equi_width_swapping, EquiWidthConfig(max_width=0.2)), (equi_depth_swapping, EquiDepthConfig(depth=4))],
)
def test_swapping_is_value_invariant_and_keeps_sex(
    random_cases: pl.DataFrame, swap: Any, config: Any
) -> None:
    result = swap(random_cases, config=config, rng=np.random.default_rng(1))
    release = result.release
    assert _pairs(release, "age_min", "wt_min") == _pairs(random_cases, "age_min", "wt_min")
    assert release["sex"].eq_missing(random_cases["sex"]).all()
    moved = ~release["age_min"].eq_missing(random_cases["age_min"]) | ~release["wt_min"].eq_missing(
        random_cases["wt_min"]
    )
    assert moved.sum() > 0.5 * random_cases.height
    # Missing stays missing: a case is swapped only among cases with its missing pattern.
    assert release["age_min"].is_null().eq(random_cases["age_min"].is_null()).all()
    assert release["wt_min"].is_null().eq(random_cases["wt_min"].is_null()).all()


def test_grid_bins_merge_a_lonely_tuple_into_the_nearest_bin() -> None:
    z = np.array([[0.05], [0.06], [0.5], [0.52], [0.99]])
    labels, lonely, per_dim = grid_bins(z, 0.1)
    assert per_dim == 10
    assert lonely == 1
    assert labels.tolist() == [0, 0, 1, 1, 1]
    labels2, lonely2, _ = grid_bins(np.array([[0.0, 0.0], [0.95, 0.95]]), 0.1)
    assert lonely2 == 2 and labels2.tolist() == [0, 0]


def test_cyclic_sources_leave_no_fixed_point_in_bins_of_two_or_more() -> None:
    labels = np.array([0, 0, 1, 1, 1, 2, 3, 3, 3, 3])
    src = cyclic_sources(labels, np.random.default_rng(5))
    assert (labels[src] == labels).all()
    assert sorted(src.tolist()) == list(range(10))
    assert src[5] == 5
    assert all(src[i] != i for i in range(10) if i != 5)


def test_pair_risk_by_hand() -> None:
    labels = np.array([0, 0, 0, 1, 1])
    src = np.array([1, 2, 0, 4, 3])
    assert pair_risk(labels, src).tolist() == [0.5, 0.5, 0.5, 1.0, 1.0]
    # Another partitioning: case 0 alone (its record is elsewhere), case 2 apart from its source 0.
    other = np.array([0, 1, 1, 2, 2])
    assert pair_risk(other, src).tolist() == [0.0, 1.0, 0.0, 1.0, 1.0]


def test_mdav_bins_hold_k_to_2k_minus_1_tuples() -> None:
    z = np.random.default_rng(2).random((203, 2))
    for k in (2, 3, 5):
        sizes = np.bincount(mdav_labels(z, k))
        assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    assert mdav_labels(z[:3], 2).tolist() == [0, 0, 0]


def test_mews_moves_values_at_most_one_cell(make_cases: CasesBuilder) -> None:
    # Ages 20..59 and weights 50..89 in pairs: every cell of width 0.1 holds several tuples, none merged.
    rng = np.random.default_rng(3)
    age = rng.integers(20, 60, 400).astype(float)
    wt = age + 30 + rng.integers(0, 2, 400)
    cases = make_cases([(float(a), "F", float(w)) for a, w in zip(age, wt, strict=True)])
    result = equi_width_swapping(cases, config=EquiWidthConfig(width=0.1, max_width=0.1), rng=rng)
    assert result.privacy["merged_tuples"] == 0
    assert result.privacy["width"] == 0.1
    step_age, step_wt = 0.1 * (age.max() - age.min()), 0.1 * (wt.max() - wt.min())
    assert np.abs(result.release["age_min"].to_numpy() - age).max() < step_age
    assert np.abs(result.release["wt_min"].to_numpy() - wt).max() < step_wt
    # Age and weight move together, so their correlation is released unchanged.
    released = result.release.select("age_min", "wt_min").to_numpy()
    assert np.corrcoef(released.T)[0, 1] == pytest.approx(np.corrcoef(age, wt)[0, 1])


def test_disclosure_known_is_one_over_the_smallest_bin_minus_one(make_cases: CasesBuilder) -> None:
    # Two far-apart clumps of 3 and 5 identical-age cases: MEWS bins of 3 and 5 tuples.
    rows = [(20.0, "F", 60.0)] * 3 + [(80.0, "M", 100.0)] * 5
    result = equi_width_swapping(
        make_cases(rows), config=EquiWidthConfig(max_width=0.5, candidates=1), rng=np.random.default_rng(0)
    )
    assert result.privacy["min_bin_depth"] == 3
    assert result.privacy["swap_disclosure_known"] == pytest.approx(0.5)
    assert result.privacy["swap_disclosure"] == pytest.approx(0.5)
    assert result.privacy["partitionings"] == 1
    assert result.privacy["partition_degree"] == 2


def test_disclosure_with_the_partitioning_hidden_among_two_candidates(make_cases: CasesBuilder) -> None:
    # Ages only (z = age / 13). t = 0.5: bins {0..3}, {10..13}. t = 0.5·2^(-1/4) ≈ 0.42: cells {0..3},
    # {10}, {11..13}; the lonely 10 joins the nearest full cell (a tie, the first: {0..3}).
    ages = [0.0, 1.0, 2.0, 3.0, 10.0, 11.0, 12.0, 13.0]
    cases = make_cases([(a, "F", None) for a in ages])
    config = EquiWidthConfig(width=0.5, max_width=0.5, candidates=2, outlier_share=0.2)
    result = equi_width_swapping(cases, config=config, rng=np.random.default_rng(3))
    privacy = result.privacy
    assert privacy["partitionings"] == 2 and privacy["width"] == 0.5
    assert privacy["width_lower"] == pytest.approx(0.5 * 2**-0.25)
    assert privacy["swap_disclosure_known"] == pytest.approx(1 / 3)
    released = result.release["age_min"].to_list()
    src = [ages.index(a) for a in released]  # ages are distinct: the source of each released value
    bins_true = [0, 0, 0, 0, 1, 1, 1, 1]
    bins_fine = [0, 0, 0, 0, 0, 1, 1, 1]

    def success(bins: list[int], i: int) -> float:
        size = bins.count(bins[i])
        return (bins[i] == bins[src[i]]) / (size - 1)

    risk = [(success(bins_true, i) + success(bins_fine, i)) / 2 for i in range(8)]
    assert privacy["swap_disclosure"] == pytest.approx(max(risk))
    assert privacy["swap_disclosure_mean"] == pytest.approx(sum(risk) / 8)


def test_meds_candidates_are_the_depth_range(random_cases: pl.DataFrame) -> None:
    config = EquiDepthConfig(depth=3, min_depth=2, max_depth=8)
    privacy = equi_depth_swapping(random_cases, config=config, rng=np.random.default_rng(0)).privacy
    assert privacy["partitionings"] == 7
    assert privacy["depth"] == 3
    assert privacy["min_bin_depth"] >= 3
    assert privacy["swap_disclosure_known"] == pytest.approx(1 / (privacy["min_bin_depth"] - 1))
    assert 0 < privacy["swap_disclosure_mean"] <= privacy["swap_disclosure"] <= 1


def test_unswappable_cases_are_counted_and_kept(make_cases: CasesBuilder) -> None:
    rows = [(30.0, "F", 70.0), (31.0, "M", 72.0), (40.0, "F", None), (None, None, None)]
    result = equi_depth_swapping(
        make_cases(rows),
        config=EquiDepthConfig(depth=2, min_depth=2, max_depth=2),
        rng=np.random.default_rng(0),
    )
    release = result.release
    assert result.privacy["unswapped_cases"] == 1
    assert release["age_min"].to_list()[:2] == [31.0, 30.0]
    assert release["wt_min"].to_list() == [72.0, 70.0, None, None]
    assert release["age_min"].to_list()[2:] == [40.0, None]


def test_width_is_drawn_from_the_pruned_candidates(random_cases: pl.DataFrame) -> None:
    config = EquiWidthConfig(max_width=0.5, candidates=8, outlier_share=0.2)
    widths = {
        equi_width_swapping(random_cases, config=config, rng=np.random.default_rng(s)).privacy["width"]
        for s in range(12)
    }
    first = equi_width_swapping(random_cases, config=config, rng=np.random.default_rng(0)).privacy
    assert 1 < len(widths) <= first["partitionings"]
    assert all(first["width_lower"] <= w <= 0.5 for w in widths)


def test_correlation_bias_by_hand() -> None:
    x = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 1.0], [3.0, 6.0, 0.0], [4.0, 8.0, 1.0]])
    assert correlation_bias(x, x) == (0.0, 0.0)
    y = x.copy()
    y[:, 1] = y[::-1, 1]  # ρ(0,1): 1 → −1; ρ(1,2) flips sign; ρ(0,2) unchanged
    rho = np.corrcoef(x.T)
    mean, sd = correlation_bias(x, y)
    diffs = np.array([2.0, 0.0, 2 * abs(rho[1, 2])])
    assert mean == pytest.approx(diffs.mean())
    assert sd == pytest.approx(diffs.std())
    assert correlation_bias(x[:, :1], y[:, :1]) == (0.0, 0.0)


@pytest.mark.parametrize(
    ("factory", "options", "message"),
    [
        (EquiWidthConfig, {"max_width": 0}, "max_width"),
        (EquiWidthConfig, {"width": 0.2, "max_width": 0.1}, "width must be None"),
        (EquiWidthConfig, {"candidates": 0}, "candidates"),
        (EquiWidthConfig, {"outlier_share": 1.0}, "outlier_share"),
        (EquiDepthConfig, {"min_depth": 1}, "min_depth"),
        (EquiDepthConfig, {"min_depth": 5, "max_depth": 4}, "max_depth must be >="),
        (EquiDepthConfig, {"depth": 9}, "depth must be None"),
    ],
)
def test_configs_reject_bad_values(factory: type, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        factory(**options)
