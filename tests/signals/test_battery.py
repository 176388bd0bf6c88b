"""measures="all" on a signal table: EBGM, Fisher, Mantel–Haenszel across strata (signals.battery)."""

from __future__ import annotations

import math

import polars as pl
import pytest

from signals import DEFAULT_PRIOR, CaseTables, GammaMixture, SignalConfig, SignalsError, signal_table

ALL = ("ebgm", "eb05", "eb95", "fisher_p", "fisher_q", "signal_eb")
MH = ("ror_mh", "ror_mh_lo", "ror_mh_hi", "ror_mh_corrected", "breslow_day_p")


def test_basic_stays_the_default(planted: CaseTables) -> None:
    table = signal_table(planted)
    assert not set(ALL) & set(table.frame.columns) and table.ebgm_prior is None
    assert "eb" not in table.criteria


def test_all_measures_on_the_planted_quarter(planted: CaseTables) -> None:
    prior = GammaMixture(alpha1=0.2, beta1=0.1, alpha2=2.0, beta2=4.0, p=0.3)
    config = SignalConfig(stratify=("age", "sex"), measures="all", ebgm_prior=prior)
    table = signal_table(planted, config=config)
    assert table.ebgm_prior == prior and set(ALL + MH) <= set(table.frame.columns)
    overall = table.frame.filter(
        (pl.col("stratum") == "all") & (pl.col("drug") == "D") & (pl.col("event") == "E")
    )
    row = overall.row(0, named=True)
    # MH over the bands [65,inf)&F (8, 2, 9, 81) and [18,45)&M (5, 85, 90, 720):
    # R = 8*81/100 + 5*720/900 = 10.48, S = 2*9/100 + 85*90/900 = 8.68
    assert row["ror_mh"] == pytest.approx(10.48 / 8.68)
    assert row["breslow_day_p"] < 1e-4  # ROR 36 among old women, 0.47 among men: no common OR
    assert row["eb05"] <= row["ebgm"] <= row["eb95"] and 0 < row["fisher_p"] <= row["fisher_q"] <= 1
    strata_rows = table.frame.filter(pl.col("stratum") != "all")
    assert strata_rows.get_column("ror_mh").is_null().all()  # MH pools strata: it belongs to "all"
    assert (
        table.adjusted is not None
        and table.adjusted.height == table.frame.filter(pl.col("stratum") == "all").height
    )


def test_fitted_prior_is_reported(planted: CaseTables) -> None:
    table = signal_table(planted, config=SignalConfig(measures="all"))
    assert table.ebgm_prior == DEFAULT_PRIOR  # 4 pairs cannot identify five parameters
    fitted = "EBGM prior (fitted on the pairs with a >= 1, likelihood truncated at 1): alpha1=0.2 beta1=0.06"
    assert fitted in table.summary()
    assert "ror: ROR025 > 1, a >= 3 (EMA/849944/2016" in table.summary()


def test_empty_quarter_is_defined() -> None:
    empty = CaseTables(
        cases=pl.DataFrame(schema={"caseid": pl.Int64, "age_years": pl.Float64, "sex": pl.Utf8}),
        drugs=pl.DataFrame(schema={"caseid": pl.Int64, "drug_key": pl.Utf8, "role_cod": pl.Utf8}),
        events=pl.DataFrame(schema={"caseid": pl.Int64, "pt": pl.Utf8}),
    )
    table = signal_table(empty, config=SignalConfig(stratify=("sex",), measures="all"))
    assert table.frame.height == 0 and set(ALL + MH) <= set(table.frame.columns)


def test_bad_measures_is_a_signals_error() -> None:
    with pytest.raises(SignalsError, match="measures must be one of basic, all; got 'most'"):
        SignalConfig(measures="most")


def test_eb_criterion_has_no_count_floor_but_needs_eb05_two(planted: CaseTables) -> None:
    table = signal_table(planted, config=SignalConfig(conditions=("sex=F&age>=65",), measures="all"))
    for row in table.frame.iter_rows(named=True):
        assert row["signal_eb"] == (row["eb05"] >= 2)
        assert all(math.isfinite(row[c]) for c in ALL[:5])
