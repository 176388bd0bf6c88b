"""MS(k, θ*)-bounding: validity (Definition 3) and PR (Definition 5, eq. 4–6) by hand."""

from __future__ import annotations

import json
import math

import pytest

from faers_anon.errors import ConfigError
from faers_anon.models import CaseStats, GroupStats, MSKTheta


def case(cid: int, **values: float) -> CaseStats:
    return CaseStats(cid, 1, values)


def test_parameters_are_checked() -> None:
    with pytest.raises(ConfigError, match="k must be an integer >= 2"):
        MSKTheta(k=1)
    with pytest.raises(ConfigError, match="k must be an integer >= 2"):
        MSKTheta(k=True)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"theta must be in \(0, 1\]"):
        MSKTheta(k=2, thetas={"A": 0.0})
    with pytest.raises(ConfigError, match=r"theta must be in \(0, 1\]"):
        MSKTheta(k=2, thetas={"A": 1.5})


def test_validity_counts_distinct_cases_and_caps_conf() -> None:
    model = MSKTheta(k=3, thetas={"A": 0.5})
    g = GroupStats.of([case(1, A=1.0), case(2), case(3, A=0.5)])
    assert g.cases == 3 and g.sigma == {"A": 1.5} and g.distinct_values == 1
    assert model.is_valid(g)  # conf(A) = 1.5 / 3 = 0.5 <= 0.5
    assert not model.is_valid(g.with_case(case(4, A=1.0)))  # 2.5 / 4 > 0.5
    assert not model.is_valid(GroupStats.of([case(1), case(2)]))  # 2 < k
    assert model.is_valid(GroupStats.of([case(1, B=1.0), case(2, B=1.0), case(3, B=1.0)]))  # B unprotected


def test_risk_formula() -> None:
    model = MSKTheta(k=4, thetas={"A": 0.5, "B": 0.5})
    g = GroupStats.of([case(1, A=1.0), case(2)])
    # eta = floor(max(4, 3) * 0.5) = 2; sigma_A = 1 -> 1 / (2 - 1) = 1; B new -> 0
    assert model.risk(g, case(3, A=1.0, B=1.0)) == pytest.approx(2.0)
    assert model.risk(g, case(3, C=1.0)) == 1.0  # unprotected values add no risk
    g2 = g.with_case(case(3, A=1.0))  # sigma_A = 2 = eta: a third A breaks the bound
    assert math.isinf(model.risk(g2, case(4, A=0.5)))


def test_eta_is_floored_at_one_when_k_theta_is_below_one() -> None:
    # k * theta < 1: the paper's eta = floor(max(2, |g|+1) * 0.3) is 0 up to |g|+1 = 3, so any holder
    # of A would be infinite; the floor of 1 admits one certain holder (a valid group holding A has
    # at least 1/0.3 cases) and no second one.
    tight = MSKTheta(k=2, thetas={"A": 0.3, "B": 0.3})
    one = GroupStats.of([case(1, B=1.0)])
    assert tight.risk(one, case(2, A=1.0)) == 1.0  # sigma_A = 0: 0 / (1 - 0)
    assert math.isinf(tight.risk(one, case(2, B=1.0)))  # sigma_B + 1 = 2 > 1
    # from |g|+1 = 4 on, floor(4 * 0.3) = 1 is the paper's own eta: the floor no longer acts
    three = GroupStats.of([case(1, B=1.0), case(2), case(3)])
    assert math.isinf(tight.risk(three, case(4, B=1.0)))
    assert tight.risk(three, case(4, A=0.5)) == 1.0


def test_floor_slack_keeps_integer_products() -> None:
    model = MSKTheta(k=100, thetas={"A": 0.29})  # 100 * 0.29 = 28.999999999999996 in floating point
    g = GroupStats(cases=10, rows=10, sigma={"A": 28.0})
    assert model.risk(g, case(99, A=1.0)) == pytest.approx(1 + 28.0 / (29 - 28))


def test_describe_is_json_and_requirements_match() -> None:
    model = MSKTheta(k=5, thetas={"A": 0.2, "B": 1.0})
    described = json.loads(json.dumps(model.describe()))
    assert described["model"] == "ms-k-theta" and described["k"] == 5 and described["protected_values"] == 1
    req = model.requirements()
    assert req.min_size == 5 and req.size_unit == "cases" and req.value_caps and req.risk == "eta"
    assert dict(req.thetas) == {"A": 0.2}
