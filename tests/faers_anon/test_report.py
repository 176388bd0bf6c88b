"""report.html / report.json: self-contained, holds the key figures, deterministic."""

from __future__ import annotations

import json

import numpy as np
import polars as pl

from faers_anon.report import ReportInputs, _known_ranges, _spread, build_figures, render_html, write_json


def _inputs() -> ReportInputs:
    return ReportInputs(
        raw_ages=pl.Series([34.0, 36.0, None, 70.0, 85.0]),
        released_ages=pl.DataFrame(
            {"age_min": [25.0, 25.0, None, 65.0, 80.0], "age_max": [45.0, 45.0, None, 80.0, None]}
        ),
        raw_weights=pl.Series([70.0, None, None, 82.5, None]),
        released_weights=pl.DataFrame(
            {"wt_min": [70.0, None, None, 80.0, None], "wt_max": [82.5, None, None, 82.5, None]}
        ),
        group_sizes=pl.DataFrame({"size": [5, 6, 40], "groups": [10, 3, 1]}),
        panel=pl.DataFrame(
            {
                "label": ["AVANDIA / Myocardial infarction (age>=18)"],
                "prr_raw": [3.0],
                "prr_raw_lo": [2.0],
                "prr_raw_hi": [4.5],
                "prr_release": [2.8],
                "prr_release_lo": [1.9],
                "prr_release_hi": [4.1],
                "ror_raw": [3.2],
                "ror_raw_lo": [2.1],
                "ror_raw_hi": [4.9],
                "ror_release": [None],
                "ror_release_lo": [None],
                "ror_release_hi": [None],
            }
        ),
        survival=pl.DataFrame({"stratum": ["overall", "sex=F"], "raw_signals": [10, 0], "survived": [9, 0]}),
    )


def test_spread_keeps_mass_and_places_points() -> None:
    bins = np.arange(0.0, 106.0, 5.0)
    counts = _spread(np.array([20.0, 80.0, 33.0]), np.array([30.0, np.nan, 33.0]), bins)
    assert np.isclose(counts.sum(), 3.0)
    assert np.isclose(counts[4], 0.5) and np.isclose(counts[5], 0.5)  # [20,30) splits over two bins
    assert np.isclose(counts[6], 1.0)  # the point 33 lands in [30,35)


def test_html_is_self_contained_and_holds_key_figures() -> None:
    report = {
        "tool": {"version": "0.1.0"},
        "parameters": {"model": "ms-k-theta", "k": 5, "theta": 0.4},
        "privacy": {"dr": 0.0, "k_achieved": 5, "groups": 14},
        "utility": {"nil": 0.1234},
        "signals": {"survival_overall": 0.9, "panel": [{"drug": "AVANDIA", "prr_raw": 3.0}]},
        "verification": {"ok": True},
        "rejects": [{"table": "demo", "reason": "primaryid_parsable", "rows": 2}],
    }
    page = render_html(report, build_figures(_inputs()))
    assert page.count("data:image/png;base64,") == 6
    assert "PASSED" in page and "ms-k-theta" in page and "0.1234" in page
    assert "primaryid_parsable" in page
    assert "src='http" not in page and "<script" not in page


def test_json_is_deterministic_and_finite() -> None:
    report = {"b": float("inf"), "a": [np.float64(0.5), float("nan")]}
    first = write_json(report)
    assert first == write_json(report)
    assert json.loads(first) == {"a": [0.5, None], "b": None}


def test_figures_are_reproducible() -> None:
    assert build_figures(_inputs()) == build_figures(_inputs())


def test_root_ranges_count_as_missing_in_the_distribution_plot() -> None:
    lo = pl.Series([0.0, 25.0, None, 80.0, 0.0])
    hi = pl.Series([None, 45.0, None, None, 2.0])
    # [0, ∞) is the root ("any age"); [80, ∞) is an open top band; [0, 2) is an infant band.
    assert _known_ranges(lo, hi).tolist() == [False, True, False, True, True]
