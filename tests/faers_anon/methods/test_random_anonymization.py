"""Random anonymization (Yang & Qiao 2010): Pa of eq. 1/3 and Proposition 7, marginals, Proposition 12."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest

from faers_anon.algorithms.types import QidHierarchies
from faers_anon.errors import ConfigError
from faers_anon.methods import (
    EnhancedRAConfig,
    RAConfig,
    enhanced_random_anonymization,
    random_anonymization,
)
from faers_anon.methods.base import case_points, point_release, sex_codes
from faers_anon.methods.random_anonymization import expected_relative_difference, probabilistic_anonymity

CasesBuilder = Callable[..., pl.DataFrame]

# Sex F/M half and half (H = ln 2), one age leaf (H = 0), weight spread over four 10-kg bands (H = ln 4).
PA_ROWS = [(30.0, "F" if i % 2 else "M", 45.0 + 10 * (i % 4)) for i in range(8)]


def test_pa_of_equation_3_for_uniform_selection(make_cases: CasesBuilder) -> None:
    # ln Pa = ln m + (1/m) Σ H_i = ln 3 + (ln 2 + 0 + ln 4) / 3 = ln 3 + ln 2, so Pa = 6.
    result = random_anonymization(
        make_cases(PA_ROWS), config=RAConfig(selection="uniform"), rng=np.random.default_rng(0)
    )
    assert result.privacy["probabilistic_anonymity"] == pytest.approx(6.0)
    assert result.privacy["inference_probability"] == pytest.approx(1 / 6)
    assert result.privacy["entropy"] == pytest.approx({"age": 0.0, "sex": math.log(2), "weight": math.log(4)})


def test_proposition_7_entropy_selection_reaches_the_maximum(make_cases: CasesBuilder) -> None:
    # p_i ∝ e^{H_i} = (1, 2, 4) / 7 and Pa_max = Σ_i e^{H_i} = 7, larger than the uniform 6.
    result = random_anonymization(make_cases(PA_ROWS), config=RAConfig(), rng=np.random.default_rng(0))
    assert result.privacy["redraw_probability"] == pytest.approx(
        {"age": 1 / 7, "sex": 2 / 7, "weight": 4 / 7}
    )
    assert result.privacy["probabilistic_anonymity"] == pytest.approx(7.0)
    assert result.privacy["probabilistic_anonymity_max"] == pytest.approx(7.0)
    h = np.array([0.0, math.log(2), math.log(4)])
    for p in ([1 / 3, 1 / 3, 1 / 3], [0.2, 0.2, 0.6], [0.1, 0.3, 0.6]):
        assert probabilistic_anonymity(h, p=np.array(p)) < 7.0


@pytest.mark.parametrize(("k", "expected"), [(1, 6.0), (2, 12.0), (3, 8.0)])
def test_enhanced_ra_pa_is_the_entropy_of_the_k_subset_and_its_values(
    make_cases: CasesBuilder, k: int, expected: float
) -> None:
    # ln Pa = ln C(3, k) + (k/3)·ln 8: k=1 → 6 (eq. 3), k=2 → 3·4 = 12, k=3 → 2·1·4 = 8 (Π diversities).
    result = enhanced_random_anonymization(
        make_cases(PA_ROWS), config=EnhancedRAConfig(k=k), rng=np.random.default_rng(0)
    )
    assert result.privacy["probabilistic_anonymity"] == pytest.approx(expected)


def _category_counts(release: pl.DataFrame) -> dict[str, dict[Any, int]]:
    bands = (release["wt_min"] // 10).fill_null(-1)
    return {
        "age": dict(release["age_group"].value_counts().iter_rows()),
        "sex": dict(release["sex"].fill_null("missing").value_counts().iter_rows()),
        "weight": dict(bands.value_counts().iter_rows()),
    }


@pytest.mark.parametrize("algorithm", ["ra", "enhanced-ra"])
def test_marginals_are_preserved_in_expectation(random_cases: pl.DataFrame, algorithm: str) -> None:
    runs = 200
    original = _category_counts(_identity_release(random_cases))
    totals: dict[str, dict[Any, list[int]]] = {a: {v: [] for v in c} for a, c in original.items()}
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        if algorithm == "ra":
            release = random_anonymization(random_cases, config=RAConfig(), rng=rng).release
        else:
            release = enhanced_random_anonymization(
                random_cases, config=EnhancedRAConfig(k=2), rng=rng
            ).release
        counts = _category_counts(release)
        for attr, values in totals.items():
            for v, seen in values.items():
                seen.append(counts[attr].get(v, 0))
    for attr, values in totals.items():
        for v, seen in values.items():
            mean, se = np.mean(seen), np.std(seen) / math.sqrt(runs)
            assert abs(mean - original[attr][v]) <= 4 * se + 0.05, (attr, v, mean, original[attr][v])


def _identity_release(cases: pl.DataFrame) -> pl.DataFrame:
    """The release of the original values (nothing re-drawn)."""
    trees = QidHierarchies.default()
    age, wt = case_points(cases)
    return point_release(cases["caseid"].to_numpy(), age, sex_codes(cases, trees.sex_tree), wt, trees)


def test_ra_redraws_one_attribute_and_adds_no_new_value(random_cases: pl.DataFrame) -> None:
    before = _identity_release(random_cases)
    after = random_anonymization(random_cases, config=RAConfig(), rng=np.random.default_rng(4)).release
    changed = sum((~before[c].eq_missing(after[c])).cast(pl.Int32) for c in ("age_min", "sex", "wt_min"))
    assert changed.max() == 1
    assert changed.sum() > 0.3 * after.height
    assert set(after["age_min"].drop_nulls()) <= set(before["age_min"].drop_nulls())
    assert set(after["wt_min"].drop_nulls()) <= set(before["wt_min"].drop_nulls())


# Proposition 12 table: sex and age associated (F mostly Young Adult, M mostly Middle Aged), one weight band.
P12_ROWS = (
    [(22.0, "F", 70.0)] * 40 + [(50.0, "F", 70.0)] * 10 + [(22.0, "M", 70.0)] * 10 + [(50.0, "M", 70.0)] * 40
)


def test_proposition_12_expected_relative_difference_by_hand(make_cases: CasesBuilder) -> None:
    cases = make_cases(P12_ROWS)
    config = RAConfig(selection="uniform")
    pair = {"age": "Young Adult", "sex": "F"}
    # supp(q) = 0.4, supp(q∖q_i)·P(Q_i = q_i) = 0.5·0.5 for both i: E[R] = 2·(1/3)·(0.25/0.4 − 1) = −0.25.
    assert expected_relative_difference(cases, pair, config=config) == pytest.approx(-0.25)
    assert expected_relative_difference(cases, {"sex": "F"}, config=config) == pytest.approx(0.0)
    assert expected_relative_difference(cases, {"age": "Middle Aged"}, config=config) == pytest.approx(0.0)
    # The less frequent (negatively associated) combination gains support: 2·(1/3)·(0.25/0.1 − 1) = 1.
    assert expected_relative_difference(
        cases, {"age": "Middle Aged", "sex": "F"}, config=config
    ) == pytest.approx(1.0)


def test_proposition_12_holds_on_the_algorithm_output(make_cases: CasesBuilder) -> None:
    cases = make_cases(P12_ROWS)
    config = RAConfig(selection="uniform")
    runs = 400
    pair_r, single_r = [], []
    for seed in range(runs):
        release = random_anonymization(cases, config=config, rng=np.random.default_rng(seed)).release
        f = release["sex"] == "F"
        young = release["age_group"] == "Young Adult"
        pair_r.append((f & young).sum() / 40 - 1)
        single_r.append(f.sum() / 50 - 1)
    for seen, expected in ((pair_r, -0.25), (single_r, 0.0)):
        se = np.std(seen) / math.sqrt(runs)
        assert abs(np.mean(seen) - expected) <= 4 * se
    # B(q) grows with the length of q: |E R| of the pair exceeds that of its single values.
    assert abs(np.mean(pair_r)) > abs(np.mean(single_r)) + 0.1


def test_a_single_attribute_qid_has_zero_bias(make_cases: CasesBuilder) -> None:
    cases = make_cases(P12_ROWS)
    assert expected_relative_difference(cases, {"sex": "M"}, config=RAConfig(qids=("sex",))) == 0.0


def test_unknown_value_or_empty_combination_is_a_config_error(make_cases: CasesBuilder) -> None:
    cases = make_cases(P12_ROWS)
    with pytest.raises(ConfigError, match="unknown attribute or value"):
        expected_relative_difference(cases, {"age": "Centenarians"})
    apart = make_cases([(22.0, "F", 70.0), (50.0, "M", 70.0)])
    with pytest.raises(ConfigError, match="does not occur"):
        expected_relative_difference(apart, {"age": "Young Adult", "sex": "M"})


@pytest.mark.parametrize(
    ("factory", "options", "message"),
    [
        (RAConfig, {"selection": "best"}, "selection must be"),
        (RAConfig, {"qids": ("age", "age")}, "qids must be distinct"),
        (RAConfig, {"qids": ("zip",)}, "qids must be distinct"),
        (RAConfig, {"weight_band_kg": 0}, "weight_band_kg"),
        (EnhancedRAConfig, {"k": 4}, "k must be an integer in 1..3"),
        (EnhancedRAConfig, {"k": 2, "qids": ("sex",)}, "k must be an integer in 1..1"),
        (EnhancedRAConfig, {"k": True}, "k must be"),
    ],
)
def test_configs_reject_bad_values(factory: type, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        factory(**options)
