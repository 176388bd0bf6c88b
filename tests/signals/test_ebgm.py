"""MGPS (signals.ebgm): closed-form posterior, mixture quantiles, properties, the prior fit."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import gammaincinv
from scipy.stats import gamma

from signals import DEFAULT_PRIOR, GammaMixture, SignalsError, ebgm_scores, fit_prior

ONE = GammaMixture(alpha1=1.0, beta1=1.0, alpha2=1.0, beta2=1.0, p=0.5)  # both components equal


def _score(n: float, e: float, prior: GammaMixture) -> dict[str, float]:
    out = ebgm_scores(np.array([n]), np.array([e]), prior=prior)
    return {k: float(v[0]) for k, v in out.items()}


def test_one_gamma_prior_gives_the_closed_form_posterior() -> None:
    # prior Gamma(1, 1), n = 2, E = 1: posterior Gamma(3, rate 2)
    # EBGM = exp(psi(3)) / 2 = exp(1.5 - 0.5772157) / 2 = 1.258093
    # EB05 = chi2_6(0.05) / 4 = 1.635383 / 4; EB95 = chi2_6(0.95) / 4 = 12.591587 / 4
    s = _score(2, 1.0, ONE)
    assert s["ebgm"] == pytest.approx(math.exp(1.5 - 0.5772156649) / 2, rel=1e-9)
    assert s["eb05"] == pytest.approx(1.6353828 / 4, rel=1e-6)
    assert s["eb95"] == pytest.approx(12.5915872 / 4, rel=1e-6)


def test_mixture_quantiles_solve_the_mixture_cdf() -> None:
    prior = GammaMixture(alpha1=0.2, beta1=0.1, alpha2=2.0, beta2=4.0, p=0.3)
    n, e = np.array([0.0, 1.0, 3.0, 12.0]), np.array([0.5, 0.02, 1.2, 3.0])
    s = ebgm_scores(n, e, prior=prior)
    # Q_n by hand from the two negative binomials
    f1 = gamma_nb(n, e, 0.2, 0.1)
    f2 = gamma_nb(n, e, 2.0, 4.0)
    q = 0.3 * f1 / (0.3 * f1 + 0.7 * f2)

    def cdf(x: np.ndarray) -> np.ndarray:
        return q * gamma.cdf(x, 0.2 + n, scale=1 / (0.1 + e)) + (1 - q) * gamma.cdf(
            x, 2.0 + n, scale=1 / (4.0 + e)
        )

    assert cdf(s["eb05"]) == pytest.approx(np.full(4, 0.05), abs=1e-9)
    assert cdf(s["eb95"]) == pytest.approx(np.full(4, 0.95), abs=1e-9)


def gamma_nb(n: np.ndarray, e: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """Negative binomial f(n) = Γ(α+n)/(Γ(α) n!) (β/(β+E))^α (E/(β+E))^n, computed directly."""
    from scipy.special import gamma as g

    return g(alpha + n) / (g(alpha) * g(n + 1)) * (beta / (beta + e)) ** alpha * (e / (beta + e)) ** n


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 500),
    e=st.floats(0.0, 300.0),
    a1=st.floats(0.05, 5.0),
    b1=st.floats(0.05, 5.0),
    a2=st.floats(0.05, 5.0),
    b2=st.floats(0.05, 5.0),
    p=st.floats(0.01, 0.99),
)
def test_eb05_le_ebgm_le_eb95(n: int, e: float, a1: float, b1: float, a2: float, b2: float, p: float) -> None:
    s = _score(float(n), e, GammaMixture(a1, b1, a2, b2, p))
    assert all(math.isfinite(v) and v > 0 for v in s.values())
    assert s["eb05"] <= s["ebgm"] * (1 + 1e-12) and s["ebgm"] <= s["eb95"] * (1 + 1e-12)


def test_large_counts_make_ebgm_the_observed_to_expected_ratio() -> None:
    for n, e in [(10_000.0, 5_000.0), (2_000.0, 100.0)]:
        assert _score(n, e, DEFAULT_PRIOR)["ebgm"] == pytest.approx(n / e, rel=0.01)


def test_unreported_pair_and_empty_margin_are_defined() -> None:
    s0 = _score(0.0, 2.0, ONE)  # posterior Gamma(1, 3): EBGM = exp(psi(1)) / 3 = exp(-0.5772) / 3
    assert s0["ebgm"] == pytest.approx(math.exp(-0.5772156649) / 3, rel=1e-9)
    assert s0["eb95"] == pytest.approx(gammaincinv(1.0, 0.95) / 3, rel=1e-9)
    empty = _score(0.0, 0.0, ONE)  # E = 0: the posterior is the prior Gamma(1, 1)
    assert empty["eb05"] == pytest.approx(gammaincinv(1.0, 0.05), rel=1e-9)


def test_fit_recovers_a_known_prior() -> None:
    rng = np.random.default_rng(7)
    true = GammaMixture(alpha1=0.4, beta1=0.3, alpha2=4.0, beta2=2.0, p=0.4)
    size = 300_000
    first = rng.random(size) < true.p
    lam = np.where(first, rng.gamma(0.4, 1 / 0.3, size), rng.gamma(4.0, 1 / 2.0, size))
    e = rng.lognormal(-1.5, 1.2, size)
    n = rng.poisson(lam * e)
    reported = n >= 1  # the table holds reported pairs only: the fit is truncated at N* = 1
    fitted = fit_prior(n[reported].astype(float), e[reported], n_star=1)
    assert fitted.alpha2 / fitted.beta2 == pytest.approx(2.0, rel=0.1)  # the second component's mean
    assert fitted.alpha1 == pytest.approx(0.4, rel=0.25) and fitted.p == pytest.approx(0.4, rel=0.25)


def test_too_few_points_fall_back_to_dumouchels_prior() -> None:
    assert fit_prior(np.array([1.0, 1.0]), np.array([0.5, 0.7])) == DEFAULT_PRIOR


def test_prior_parse_and_json() -> None:
    prior = GammaMixture.parse("0.2, 0.1, 2, 4, 0.3")
    assert json.loads(prior.to_json()) == {"alpha1": 0.2, "beta1": 0.1, "alpha2": 2.0, "beta2": 4.0, "p": 0.3}
    with pytest.raises(SignalsError, match="expected 5 numbers"):
        GammaMixture.parse("1,2,3")
    with pytest.raises(SignalsError, match="p in \\(0, 1\\)"):
        GammaMixture.parse("1,1,1,1,1.5")


def test_fit_finds_a_rare_strong_component() -> None:
    # 1% of pairs report 10 times their expectation: the prior must keep a component near 10
    rng = np.random.default_rng(3)
    size = 200_000
    strong = rng.random(size) < 0.01
    lam = np.where(strong, rng.gamma(40.0, 1 / 4.0, size), rng.gamma(50.0, 1 / 50.0, size))
    e = rng.lognormal(0.0, 1.0, size)
    n = rng.poisson(lam * e)
    fitted = fit_prior(n[n >= 1].astype(float), e[n >= 1], n_star=1)
    means = sorted([fitted.alpha1 / fitted.beta1, fitted.alpha2 / fitted.beta2])
    assert means[0] == pytest.approx(1.0, rel=0.1) and means[1] == pytest.approx(10.0, rel=0.15)
    weight = fitted.p if fitted.alpha1 / fitted.beta1 > 5 else 1 - fitted.p
    assert 0.005 < weight < 0.03  # among reported pairs the strong ones are over-represented
