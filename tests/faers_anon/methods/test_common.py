"""Properties every registered method shares: the release contract, determinism, JSON, errors."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faers_anon.errors import ConfigError, InputError
from faers_anon.methods import METHODS, MethodResult
from faers_anon.methods.base import RELEASE_SCHEMA, dense_groups
from tests.faers_anon.methods.conftest import build_cases

QID_COLUMNS = ["age_group", "age_min", "age_max", "sex", "wt_min", "wt_max"]


@pytest.fixture(params=sorted(METHODS))
def result(request: pytest.FixtureRequest, random_cases: pl.DataFrame) -> MethodResult:
    return METHODS[request.param](random_cases, rng=np.random.default_rng(3))


def test_registry_names_are_the_result_names(result: MethodResult) -> None:
    assert result.method in METHODS
    assert METHODS[result.method].name == result.method


def test_release_is_the_partition_frame_one_row_per_case(
    result: MethodResult, random_cases: pl.DataFrame
) -> None:
    release = result.release
    assert dict(release.schema) == RELEASE_SCHEMA
    assert release["caseid"].to_list() == random_cases["caseid"].to_list()
    assert release["caseid"].n_unique() == release.height


def test_group_id_is_the_dense_class_of_identical_released_qids(result: MethodResult) -> None:
    release = result.release
    groups = release["group_id"].to_numpy()
    assert set(groups.tolist()) == set(range(int(groups.max()) + 1))
    per_group = release.group_by("group_id").agg(pl.struct(QID_COLUMNS).n_unique().alias("tuples"))
    assert per_group["tuples"].max() == 1
    assert release.select(QID_COLUMNS).unique().height == per_group.height


POINT_METHODS = sorted(set(METHODS) - {"kl-anonymity"})  # (k,l)-anonymity generalizes to ranges


@pytest.mark.parametrize("name", POINT_METHODS)
def test_point_methods_release_points(name: str, random_cases: pl.DataFrame) -> None:
    release = METHODS[name](random_cases, rng=np.random.default_rng(3)).release
    assert release.filter(pl.col("age_min") != pl.col("age_max")).height == 0
    assert release.filter(pl.col("wt_min") != pl.col("wt_max")).height == 0
    assert (release["age_min"].is_null() == (release["age_group"] == "missing")).all()


def test_same_seed_same_release_and_json_figures(result: MethodResult, random_cases: pl.DataFrame) -> None:
    again = METHODS[result.method](random_cases, rng=np.random.default_rng(3))
    assert again.release.equals(result.release)
    assert again.privacy == result.privacy
    json.dumps(result.describe(), allow_nan=False)
    json.dumps(dict(result.privacy), allow_nan=False)
    assert result.seconds >= 0
    assert result.method in result.summary()


@pytest.mark.parametrize("name", sorted(METHODS))
def test_missing_column_is_an_input_error(name: str, random_cases: pl.DataFrame) -> None:
    with pytest.raises(InputError, match="wt_max"):
        METHODS[name](random_cases.drop("wt_max"), rng=np.random.default_rng(0))


@pytest.mark.parametrize("name", sorted(METHODS))
def test_duplicate_caseid_is_an_input_error(name: str, random_cases: pl.DataFrame) -> None:
    doubled = pl.concat([random_cases, random_cases.head(1)])
    with pytest.raises(InputError, match="duplicate caseids"):
        METHODS[name](doubled, rng=np.random.default_rng(0))


def test_a_config_of_another_method_is_refused(random_cases: pl.DataFrame) -> None:
    other = METHODS["mews"].config_type()
    with pytest.raises(ConfigError, match="expected RAConfig"):
        METHODS["ra"](random_cases, config=other, rng=np.random.default_rng(0))


def test_dense_groups_treats_nan_as_one_value() -> None:
    a = np.array([1.0, np.nan, 1.0, np.nan, 2.0])
    b = np.array([0, 0, 0, 0, 1])
    assert dense_groups(a, b).tolist() == [1, 0, 1, 0, 2]


_POINT = st.tuples(
    st.one_of(st.none(), st.integers(0, 100).map(float)),
    st.sampled_from(["F", "M", "*", None]),
    st.one_of(st.none(), st.integers(2, 150).map(float)),
)


@settings(max_examples=25, deadline=None)
@given(
    rows=st.lists(_POINT, min_size=5, max_size=30), shared=st.lists(st.booleans(), min_size=30, max_size=30)
)
def test_every_method_counts_rows_and_keeps_values_it_may_keep(
    rows: list[tuple[float | None, str | None, float | None]], shared: list[bool]
) -> None:
    # Each case has its own reaction and maybe a shared one; case 0 never shares, so l = 2 is feasible.
    reactions = [[f"OWN {i}", *(["SHARED"] if shared[i] and i else [])] for i in range(len(rows))]
    cases = build_cases(rows, reactions=reactions)
    raw_pairs = Counter(zip(cases["age_min"].to_list(), cases["wt_min"].to_list(), strict=True))
    for name, method in METHODS.items():
        release = method(cases, rng=np.random.default_rng(0)).release
        assert release["caseid"].to_list() == cases["caseid"].to_list(), name
        if name in ("meds", "mews"):
            assert (
                Counter(zip(release["age_min"].to_list(), release["wt_min"].to_list(), strict=True))
                == raw_pairs
            )
        if name == "kl-anonymity":
            both = cases.select("age_min", "wt_min").with_columns(release.select(pl.all().name.prefix("r_")))
            inside_age = both.filter(
                pl.col("age_min").is_not_null() & pl.col("r_age_min").is_not_null()
            ).filter(
                (pl.col("age_min") < pl.col("r_age_min"))
                | (pl.col("age_min") >= pl.col("r_age_max").fill_null(1e9))
            )
            assert inside_age.height == 0
            outside_wt = both.filter(pl.col("r_wt_min").is_not_null()).filter(
                (pl.col("wt_min") < pl.col("r_wt_min")) | (pl.col("wt_min") > pl.col("r_wt_max"))
            )
            assert outside_wt.height == 0
            assert release.group_by("group_id").len()["len"].min() >= 5
