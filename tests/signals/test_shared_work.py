"""The battery's shortcuts give the same answers: EB05 ≥ 2 without the bounds, one prior fit per input,
one validation and one set of strata weights per side, halves rounded the same whatever the round-off."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import signals.counts as counts_module
import signals.ebgm as ebgm_module
from signals import (
    CaseTables,
    CompareConfig,
    GammaMixture,
    SignalConfig,
    compare,
    ebgm_scores,
    fisher_greater,
)
from signals.counts import Prepared, prepared
from signals.table import signal_table

PRIOR = GammaMixture(alpha1=0.5276, beta1=0.2084, alpha2=1987.0, beta2=1997.0, p=0.0017)


def test_eb05_flag_without_bounds_is_the_flag_of_the_full_eb05(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    e = rng.gamma(0.5, 2.0, 5_000)
    n = np.round(e * rng.gamma(1.0, 3.0, 5_000) + rng.poisson(1.0, 5_000) * 2)
    n[:50] = np.round(np.linspace(0.0, 20.0, 50) * 4) / 4  # fractional counts (expected reading)
    # a fine grid of fractional counts at E = 0.5 where EB05 crosses 2 (near n = 6.985, found by a
    # coarser grid): pairs a hair either side of it
    n, e = np.r_[n, np.linspace(6.98, 6.99, 20_001)], np.r_[e, np.full(20_001, 0.5)]
    searched: list[int] = []
    real = ebgm_module._searched_at_least

    def counting(q: float, level: float, *arrays: np.ndarray) -> np.ndarray:
        searched.append(arrays[0].size)
        return real(q, level, *arrays)  # type: ignore[arg-type]

    monkeypatch.setattr(ebgm_module, "_searched_at_least", counting)
    full = ebgm_scores(n, e, prior=PRIOR)
    short = ebgm_scores(n, e, prior=PRIOR, bounds=False)
    assert set(short) == {"ebgm", "eb05_at_least_2"}
    np.testing.assert_array_equal(short["ebgm"], full["ebgm"])
    np.testing.assert_array_equal(short["eb05_at_least_2"], full["eb05"] >= 2.0)
    # both answers occur; the pairs next to the crossing were searched, the others were not
    assert 0 < int(short["eb05_at_least_2"].sum()) < n.size
    near = np.abs(full["eb05"] - 2.0) < 1e-4
    assert near.any() and 0 < sum(searched) < n.size // 100


def test_root_search_on_a_subset_gives_the_same_numbers() -> None:
    # the shortcut relies on find_root treating each pair on its own
    n, e = np.array([3.0, 7.0, 1.0, 12.0, 5.0]), np.array([0.3, 1.1, 0.01, 2.0, 0.9])
    weight = ebgm_module._posterior_weight(n, e, PRIOR)
    whole = ebgm_module._mixture_quantile(0.05, n, e, weight, PRIOR)
    part = ebgm_module._mixture_quantile(0.05, n[[1, 3]], e[[1, 3]], weight[[1, 3]], PRIOR)
    assert part.tobytes() == whole[[1, 3]].tobytes()


def test_a_prior_is_fitted_once_per_input(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    e = rng.gamma(0.6, 1.5, 3_000)
    a = rng.poisson(e * rng.gamma(0.8, 1.5, 3_000)).astype(float)
    first = ebgm_module.fit_prior(a, e, n_star=1)
    calls: list[int] = []
    real = ebgm_module._fit

    def counting(*args: object) -> GammaMixture:
        calls.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(ebgm_module, "_fit", counting)
    assert ebgm_module.fit_prior(a.copy(), e.copy(), n_star=1) is first  # equal input: no new fit
    assert calls == []
    other = ebgm_module.fit_prior(a, e, n_star=2)  # another truncation point is another fit
    assert calls == [1] and other != first


def test_fisher_rounds_a_half_the_same_way_whatever_its_round_off() -> None:
    # d = 2189.5 summed in two orders: 2189.5 + 4.5e-13 and 2189.5 - 4.5e-13 (both must round to 2190 or
    # both to 2189; halves go to even: 2190)
    a, b, c = np.array([6.0, 6.0]), np.array([97.0, 97.0]), np.array([102.0, 102.0])
    d = np.array([2189.5 + 4.5e-13, 2189.5 - 4.5e-13])
    p = fisher_greater(a, b, c, d)
    assert p[0] == p[1] == fisher_greater(a[:1], b[:1], c[:1], np.array([2190.0]))[0]


def _tables(ranges: bool) -> CaseTables:
    ids = list(range(40))
    if ranges:
        cases = pl.DataFrame({"caseid": ids, "age_min": [18.0 if i % 2 else 65.0 for i in ids],
                              "age_max": [45.0 if i % 2 else None for i in ids],
                              "sex": ["F" if i % 3 else "*" for i in ids]})  # fmt: skip
    else:
        cases = pl.DataFrame({"caseid": ids, "age_years": [30.0 if i % 2 else 70.0 for i in ids],
                              "sex": ["F" if i % 3 else "M" for i in ids]})  # fmt: skip
    drugs = pl.DataFrame({"caseid": ids, "drug_key": ["WARFARIN" if i < 12 else "OTHER" for i in ids],
                          "role_cod": ["PS"] * 40})  # fmt: skip
    events = pl.DataFrame({"caseid": ids, "pt": ["Haemorrhage" if i < 9 or i > 36 else "Rash" for i in ids]})
    return CaseTables(cases=cases, drugs=drugs, events=events)


def test_compare_validates_each_side_once_and_weighs_each_stratum_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[object, ...]] = []
    real = counts_module.memberships

    def counting(cases: pl.DataFrame, strata: object, **kwargs: object) -> pl.DataFrame:
        seen.append((id(cases), tuple(strata), kwargs["reading"]))  # type: ignore[arg-type]
        return real(cases, strata, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(counts_module, "memberships", counting)
    result = compare(_tables(False), _tables(True), config=CompareConfig())
    assert len(seen) == len(set(seen))  # no stratum weighed twice on one side
    # the panel's conditions are the table's: the panel adds only its bands within a condition
    assert {s[0] for s in seen} and len({s[0] for s in seen}) == 2  # one cases frame per side
    assert result.survival.height > 0


def test_bounds_off_keeps_every_survival_figure() -> None:
    config = CompareConfig(signals=SignalConfig(stratify=("age", "sex"), min_a=1.0, measures="all"))
    full = compare(_tables(False), _tables(True), config=config)
    short = compare(_tables(False), _tables(True), config=config, bounds=False)
    assert "eb05" not in short.raw.frame.columns and "eb05_raw" not in short.pairs.columns
    assert "fisher_q_raw" not in short.pairs.columns and short.raw.adjusted is None
    assert "ror_mh" not in short.release.frame.columns and "ror_mh" in full.release.frame.columns
    assert short.survival.equals(full.survival)
    assert short.as_dict() == full.as_dict()
    assert short.panel.equals(full.panel)
    flags = full.raw.frame.select("stratum", "reading", "drug", "event", "signal_eb")
    assert short.raw.frame.select(flags.columns).equals(flags)


def test_a_prepared_side_of_another_role_is_refused() -> None:
    side = prepared(_tables(False), role="ps")
    assert isinstance(side, Prepared) and prepared(side, role="ps") is side
    with pytest.raises(Exception, match="role"):
        signal_table(side, config=SignalConfig(role="any"))
