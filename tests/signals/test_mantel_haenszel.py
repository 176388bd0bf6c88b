"""Mantel–Haenszel ROR with the RBG interval, Breslow–Day (signals.mantel_haenszel)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from statsmodels.stats.contingency_tables import StratifiedTable, Table2x2

from signals import mantel_haenszel


def _strata(tables: list[tuple[float, float, float, float]], pair: str = "p") -> pl.DataFrame:
    return pl.DataFrame({"pair": pair, "a": [t[0] for t in tables], "b": [t[1] for t in tables],
                         "c": [t[2] for t in tables], "d": [t[3] for t in tables]})  # fmt: skip


def _one(tables: list[tuple[float, float, float, float]]) -> dict:
    return mantel_haenszel(_strata(tables), by=["pair"]).row(0, named=True)


def test_three_strata_by_hand() -> None:
    # R = 2*2/6 + 3*4/10 + 1*1/4 = 2.116667; S = 1*1/6 + 2*1/10 + 1*1/4 = 0.616667; OR_MH = 3.432432
    row = _one([(2, 1, 1, 2), (3, 2, 1, 4), (1, 1, 1, 1)])
    assert row["ror_mh"] == pytest.approx(2.116667 / 0.616667, rel=1e-5)
    assert row["n_strata"] == 3 and row["ror_mh_corrected"] is False


def test_agrees_with_statsmodels_stratified_table() -> None:
    rng = np.random.default_rng(11)
    parts = []
    for pair in range(25):
        k = int(rng.integers(2, 6))
        cells = rng.integers(1, 60, size=(k, 4)).astype(float)
        cells[:, 3] *= 20
        parts.append(_strata([tuple(r) for r in cells], pair=str(pair)))
    frame = pl.concat(parts)
    out = mantel_haenszel(frame, by=["pair"])
    for row in out.iter_rows(named=True):
        cells = frame.filter(pl.col("pair") == row["pair"]).select("a", "b", "c", "d").to_numpy()
        table = StratifiedTable(cells.reshape(-1, 2, 2).transpose(1, 2, 0))
        lo, hi = table.oddsratio_pooled_confint()
        assert (row["ror_mh"], row["ror_mh_lo"], row["ror_mh_hi"]) == pytest.approx(
            (table.oddsratio_pooled, lo, hi), rel=1e-9
        )
        assert row["breslow_day_p"] == pytest.approx(table.test_equal_odds(adjust=False).pvalue, rel=1e-7)


def test_single_stratum_is_its_own_odds_ratio() -> None:
    row = _one([(4, 6, 10, 80)])
    assert row["ror_mh"] == pytest.approx(4 * 80 / (6 * 10))
    assert (row["ror_mh_lo"], row["ror_mh_hi"]) == pytest.approx(
        Table2x2(np.array([[4, 6], [10, 80]])).oddsratio_confint()
    )
    assert row["breslow_day_p"] == 1.0  # one informative stratum: nothing can differ


def test_drug_only_with_the_event_is_corrected_not_infinite() -> None:
    # b = 0 in every stratum: S = 0; every stratum holds a zero, so all get + 0.5
    row = _one([(3, 0, 5, 50), (2, 0, 4, 40)])
    corrected = StratifiedTable(np.array([[[3.5, 2.5], [0.5, 0.5]], [[5.5, 4.5], [50.5, 40.5]]]))
    assert row["ror_mh_corrected"] is True
    assert row["ror_mh"] == pytest.approx(corrected.oddsratio_pooled)
    assert all(math.isfinite(row[c]) for c in ("ror_mh", "ror_mh_lo", "ror_mh_hi", "breslow_day_p"))


def test_never_reported_and_empty_strata() -> None:
    row = _one([(0, 5, 7, 100), (0, 2, 3, 60), (0, 0, 0, 0)])
    assert (row["ror_mh"], row["ror_mh_lo"]) == (0.0, 0.0) and math.isfinite(row["ror_mh_hi"])
    assert row["n_strata"] == 2
    # a stratum with a zero margin (no case with the drug) adds nothing to Breslow-Day
    with_margin = _one([(2, 3, 5, 90), (4, 1, 6, 70), (0, 0, 9, 50)])
    without = _one([(2, 3, 5, 90), (4, 1, 6, 70)])
    assert with_margin["breslow_day_p"] == pytest.approx(without["breslow_day_p"])


def test_round_off_in_a_cell_counts_as_zero() -> None:
    # b = 4e-16 is what a margin minus a leaves of 0 in fractional (expected-reading) sums: S would be
    # 4e-16 * 4 / 46 > 0, the correction skipped and the upper bound exp(huge) = inf
    row = _one([(3.0, 0.0, 5.0, 50.0), (2.0, 4e-16, 4.0, 40.0)])
    assert row == _one([(3.0, 0.0, 5.0, 50.0), (2.0, 0.0, 4.0, 40.0)])
    assert row["ror_mh_corrected"] is True and math.isfinite(row["ror_mh_hi"])


def test_no_case_in_any_stratum_is_the_empty_table_not_nan() -> None:
    # a condition nobody meets: every stratum is empty; like the crude ROR of an empty table,
    # 0 and 0 with the upper bound of four corrected cells of 0.5: exp(z * sqrt(8)) = 255.6
    row = _one([(0.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0)])
    assert (row["ror_mh"], row["ror_mh_lo"]) == (0.0, 0.0)
    assert row["ror_mh_hi"] == pytest.approx(math.exp(1.959963984540054 * math.sqrt(8.0)))
    assert row["n_strata"] == 0 and row["breslow_day_p"] == 1.0
