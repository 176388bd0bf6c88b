"""PRR, ROR, IC, χ², the zero-cell rule and the criteria (signals.measures; SPEC §9)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chi2_contingency, gamma
from statsmodels.stats.contingency_tables import Table2x2

from signals import SignalsError, disproportionality

MEASURES = ["prr", "prr_lo", "prr_hi", "ror", "ror_lo", "ror_hi", "ic", "ic025", "ic975", "chi2"]


def _one(a: float, b: float, c: float, d: float) -> dict[str, Any]:
    frame = pl.DataFrame({"a": [a], "b": [b], "c": [c], "d": [d]}, schema={x: pl.Float64 for x in "abcd"})
    return disproportionality(frame).row(0, named=True)


def test_hand_worked_table() -> None:
    # a=20, b=80, c=100, d=9800, N=10,000
    row = _one(20, 80, 100, 9800)
    assert row["prr"] == pytest.approx((20 / 100) / (100 / 9900))  # 19.8
    assert row["prr"] == pytest.approx(19.8)
    assert row["ror"] == pytest.approx(20 * 9800 / (80 * 100))  # 24.5
    se = math.sqrt(1 / 20 - 1 / 100 + 1 / 100 - 1 / 9900)  # 0.223381
    assert row["prr_lo"] == pytest.approx(19.8 * math.exp(-1.959964 * se), rel=1e-6)  # 12.7798
    assert row["prr_hi"] == pytest.approx(30.676605, rel=1e-6)
    # E = (a+b)(a+c)/N = 100 * 120 / 10,000 = 1.2; IC = log2(20.5 / 1.7)
    assert row["ic"] == pytest.approx(math.log2(20.5 / 1.7))  # 3.592017
    # Yates: N (|ad - bc| - N/2)^2 / ((a+b)(c+d)(a+c)(b+d)) = 1e4 * 183,000^2 / (100 * 9900 * 120 * 9880)
    assert row["chi2"] == pytest.approx(1e4 * 183_000**2 / (100 * 9900 * 120 * 9880))  # 285.3177
    assert row["chi2"] == pytest.approx(285.317752, rel=1e-8)
    assert row["zero_cell"] is False
    assert row["signal_evans"] and row["signal_ror"] and row["signal_ic"]


def test_intervals_agree_with_statsmodels_and_scipy() -> None:
    for a, b, c, d in [(20, 80, 100, 9800), (3, 7, 40, 950), (1, 1, 1, 1), (57, 4, 12, 30000)]:
        row = _one(a, b, c, d)
        table = Table2x2(np.array([[a, b], [c, d]], dtype=float))
        assert (row["prr_lo"], row["prr_hi"]) == pytest.approx(table.riskratio_confint(), rel=1e-9)
        assert (row["ror_lo"], row["ror_hi"]) == pytest.approx(table.oddsratio_confint(), rel=1e-9)
        assert row["prr"] == pytest.approx(table.riskratio)
        assert row["ror"] == pytest.approx(table.oddsratio)
        assert row["chi2"] == pytest.approx(chi2_contingency([[a, b], [c, d]], correction=True)[0], rel=1e-9)


def test_ic_interval_is_the_exact_gamma_quantile() -> None:
    row = _one(20, 80, 100, 9800)  # posterior Gamma(shape 20.5, rate 1.7)
    assert row["ic025"] == pytest.approx(math.log2(gamma.ppf(0.025, 20.5, scale=1 / 1.7)), rel=1e-9)
    assert row["ic975"] == pytest.approx(math.log2(gamma.ppf(0.975, 20.5, scale=1 / 1.7)), rel=1e-9)
    # not the closed-form approximation IC - 3.3 (a+0.5)^-1/2 - 2 (a+0.5)^-3/2 (Norén 2013), which is 2.843
    approx = row["ic"] - 3.3 / math.sqrt(20.5) - 2 / 20.5**1.5
    assert abs(row["ic025"] - approx) > 0.01


def test_zero_cells_add_one_half_to_all_four_cells() -> None:
    for a, b, c, d in [(5, 0, 7, 100), (3, 2, 0, 40), (3, 2, 1, 0), (2, 1, 1, 0.25), (0.25, 3, 2, 10)]:
        row = _one(a, b, c, d)
        table = Table2x2(np.array([[a, b], [c, d]], dtype=float) + 0.5)
        assert row["zero_cell"] is True
        assert row["prr"] == pytest.approx(table.riskratio)
        assert (row["prr_lo"], row["prr_hi"]) == pytest.approx(table.riskratio_confint(), rel=1e-9)
        assert (row["ror_lo"], row["ror_hi"]) == pytest.approx(table.oddsratio_confint(), rel=1e-9)


def test_a_zero_by_hand() -> None:
    # a=0, b=10, c=5, d=1000: never reported together, so PRR = ROR = 0 and their lower bounds 0;
    # the upper bounds are those of the corrected table (cells + 0.5: PRR 8.31, ROR 8.66)
    row = _one(0, 10, 5, 1000)
    corrected = Table2x2(np.array([[0.5, 10.5], [5.5, 1000.5]]))
    assert (row["prr"], row["prr_lo"], row["ror"], row["ror_lo"]) == (0.0, 0.0, 0.0, 0.0)
    assert row["prr_hi"] == pytest.approx(corrected.riskratio_confint()[1], rel=1e-9)
    assert row["ror_hi"] == pytest.approx(corrected.oddsratio_confint()[1], rel=1e-9)
    assert corrected.riskratio == pytest.approx((0.5 / 11) / (5.5 / 1006))  # what the old rule reported
    # IC needs no correction: E = 10 * 5 / 1015, IC = log2(0.5 / (E + 0.5)) < 0
    assert row["ic"] == pytest.approx(math.log2(0.5 / (50 / 1015 + 0.5)))
    assert not (row["signal_evans"] or row["signal_ror"] or row["signal_ic"])


def test_a_zero_never_signals_even_when_the_correction_would() -> None:
    # ROR after +0.5 = 0.5 * 10000.5 / (1.5 * 1.5) = 2222 with ROR025 > 1, yet nothing was co-reported
    row = _one(0, 1, 1, 10000)
    assert (row["ror"], row["ror_lo"]) == (0.0, 0.0) and row["ror_hi"] > 2222
    assert row["signal_ror"] is False


def test_a_zero_ranks_below_every_reported_pair() -> None:
    # the rare-drug pair never reported (old rule: PRR 3334) against a weak reported pair (PRR 1.01)
    frame = disproportionality(
        pl.DataFrame({"a": [0.0, 1.0], "b": [1.0, 99.0], "c": [1.0, 990.0], "d": [10000.0, 98910.0]})
    )
    for measure in ("prr", "prr_lo", "ror", "ror_lo", "ic", "ic025"):
        never, reported = frame.get_column(measure).to_list()
        assert never < reported, measure


def test_ror_criterion_needs_three_cases() -> None:
    # a=1 of a rare event: ROR025 = 7.4 > 1 (EMA's rule then asks for 3 cases); a=3 signals
    one = _one(1, 2, 2, 100000)
    assert one["ror_lo"] > 1 and one["signal_ror"] is False
    assert _one(3, 2, 2, 100000)["signal_ror"] is True


def test_margin_zero_gives_chi2_zero() -> None:
    # every case has the event: b + d = 0, so the chi-square denominator is 0
    row = _one(4, 0, 6, 0)
    assert row["chi2"] == 0.0
    assert all(math.isfinite(row[m]) for m in MEASURES)


def test_empty_table_is_defined() -> None:
    row = _one(0, 0, 0, 0)
    assert (row["prr"], row["ror"], row["ic"], row["chi2"]) == (0.0, 0.0, 0.0, 0.0)
    assert math.isfinite(row["prr_hi"]) and math.isfinite(row["ror_hi"])
    assert not (row["signal_evans"] or row["signal_ror"] or row["signal_ic"])


def test_evans_criterion_needs_three_cases() -> None:
    # a=3: PRR = (3/4)/(10/1010) = 75.75, chi2 far above 4; the same with a=2 fails only on a >= 3
    assert _one(3, 1, 10, 1000)["signal_evans"] is True
    two = _one(2, 1, 10, 1000)
    assert two["prr"] >= 2 and two["chi2"] >= 4 and two["signal_evans"] is False


def test_fractional_counts_go_through_the_formulas() -> None:
    row = _one(2.5, 0.5, 1.25, 95.75)
    assert row["zero_cell"] is False
    assert row["prr"] == pytest.approx((2.5 / 3) / (1.25 / 97))
    assert row["ic"] == pytest.approx(math.log2(3.0 / (3 * 3.75 / 100 + 0.5)))
    assert row["ic025"] == pytest.approx(math.log2(gamma.ppf(0.025, 3.0, scale=1 / (3 * 3.75 / 100 + 0.5))))


def test_keeps_other_columns_and_row_order() -> None:
    frame = pl.DataFrame({"drug": ["x", "y"], "a": [5, 1], "b": [5, 9], "c": [5, 1], "d": [85, 89]})
    out = disproportionality(frame)
    assert out.get_column("drug").to_list() == ["x", "y"]
    assert out.columns[:5] == ["drug", "a", "b", "c", "d"]
    assert out.schema["a"] == pl.Float64


def test_bad_input_is_a_signals_error() -> None:
    with pytest.raises(SignalsError, match="missing column 'd'"):
        disproportionality(pl.DataFrame({"a": [1], "b": [1], "c": [1]}))
    with pytest.raises(SignalsError, match="negative cell -1"):
        disproportionality(pl.DataFrame({"a": [1], "b": [-1], "c": [1], "d": [1]}))


cells = st.integers(min_value=0, max_value=400) | st.floats(min_value=0, max_value=400, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(cells, cells, cells, cells), min_size=1, max_size=20))
def test_every_measure_is_finite(tables: list[tuple[float, float, float, float]]) -> None:
    frame = pl.DataFrame(tables, schema={x: pl.Float64 for x in "abcd"}, orient="row")
    out = disproportionality(frame)
    finite = out.select(pl.all_horizontal(pl.col(MEASURES).is_finite()).all()).item()
    assert finite
    assert (
        out.select((pl.col("prr_lo") <= pl.col("prr")) & (pl.col("prr") <= pl.col("prr_hi")))
        .to_series()
        .all()
    )
    assert out.select((pl.col("ic025") < pl.col("ic975")) & (pl.col("chi2") >= 0)).to_series().all()
