"""report.html / report.json: self-contained, holds the key figures, deterministic."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import polars as pl

from faers_anon.release.report import (
    ReportInputs,
    _known_ranges,
    _spread,
    build_figures,
    render_html,
    write_json,
)
from faers_anon.release.report_html import worst_stratum


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


def _report() -> dict[str, object]:
    return {
        "tool": {"version": "0.1.0"},
        "parameters": {"model": "ms-k-theta", "k": 5, "theta": 0.4, "scan_limit": 4096,
                       "sensitive": ["indications", "reactions"]},
        "counts": {"cases": 2998, "reports_out": 3529, "reports_read": 3535, "quarters": ["2025Q1"]},
        "privacy": {"model": "ms-k-theta", "k": 5, "dr": 0.0, "k_achieved": 5, "groups": 175,
                    "engine_groups": 599, "dangerous_groups": 0},
        "utility": {"nil": 0.1234},
        "signals": {
            "criterion": "evans", "reading_of_strata": "expected",
            "n_raw_overall": 111, "n_survived_overall": 111, "n_new_overall": 0,
            "per_stratum": [
                {"stratum": "overall", "reading": "exact", "n_raw": 111, "n_survived": 111, "n_new": 0},
                {"stratum": "sex=F", "reading": "expected", "n_raw": 59, "n_survived": 58, "n_new": 1},
                {"stratum": "age<18", "reading": "expected", "n_raw": 5, "n_survived": 0, "n_new": 0},
                {"stratum": "age>=60", "reading": "expected", "n_raw": 0, "n_survived": 0, "n_new": 0},
            ],
            "panel": [
                {"drug": "AVANDIA", "event": "Death", "condition": "age>=18", "reading": "expected",
                 "a_raw": 7.0, "a_release": 7.0, "prr_raw": 7.67, "survived": "yes"},
                {"drug": "AVANDIA", "event": "Cerebrovascular accident", "condition": "age>=18",
                 "reading": "expected", "a_raw": 0.0, "a_release": 0.0, "prr_raw": 60.0, "survived": "n/a"},
            ],
        },
        "verification": {"ok": True},
        "rejects": [{"table": "reports", "reason": "caseid_deleted", "rows": 3},
                    {"table": "drug", "reason": "caseid_deleted", "rows": 7},
                    {"table": "reports", "reason": "primaryid_unique", "rows": 1}],
        "risk": {"k": 5, "reidentification": [
            {"knows": ["age_group", "age_min", "age_max", "sex", "wt_min", "wt_max"], "items": None,
             "unique": 0.0, "below_k": 0.0, "prosecutor_max": 0.2, "prosecutor_mean": 0.05},
            {"knows": ["age_group", "age_min", "age_max", "sex", "wt_min", "wt_max", "init_fda_dt"],
             "items": None, "unique": 0.745, "below_k": 0.968, "prosecutor_max": 1.0,
             "prosecutor_mean": 0.85},
            {"knows": [], "items": {"drugs": "all"}, "unique": 0.67, "below_k": 0.8, "prosecutor_max": 1.0,
             "prosecutor_mean": 0.74},
        ]},
    }  # fmt: skip


def _text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_html_is_self_contained_and_holds_key_figures() -> None:
    page = render_html(_report(), build_figures(_inputs()))
    assert page.count("data:image/png;base64,") == 5  # groups, age, weight, PRR forest, survival
    assert "src='http" not in page and "<script" not in page
    text = _text(page)
    assert "NIL)0.1234 —" in text and "Verification PASSED" in text


def test_verdict_and_guarantee_come_first() -> None:
    page = _text(render_html(_report(), {}))
    first = page.index("Verification PASSED")
    assert first < page.index("Groups") < page.index("What an attacker")
    assert "shared by at least 5 patients" in page and "θ = 0.4" in page


def test_internal_option_names_only_in_the_collapsed_parameters() -> None:
    page = render_html(_report(), {})
    before, details = page.split("<details>")
    assert "scan limit" in details and "scan_limit" not in page
    assert "engine_groups" not in page
    # one group count, explained: the 599 clusters are said to merge into the 175 groups
    assert "175 is the count that matters" in _text(before) and "599 clusters" in _text(before)


def test_signal_headline_names_the_worst_stratum_not_a_bare_100_percent() -> None:
    text = _text(render_html(_report(), {}))
    assert "111 of 111" in text
    assert "Worst stratum: age < 18, 0 of 5 raw signals survive (0.0%)" in text
    assert "age ≥ 60" not in text  # no raw signal there: no survival share to show


def test_panel_pairs_absent_from_raw_are_listed_not_plotted() -> None:
    text = _text(render_html(_report(), {}))
    assert (
        "Not in this quarter (no raw report holds the pair; not plotted): AVANDIA / Cerebrovascular" in text
    )
    table = text.split("Not in this quarter")[0].split("Reference rules")[1]
    assert "Cerebrovascular" not in table and "AVANDIA / Death" in table


def test_risk_shown_as_what_an_attacker_who_knows_x_learns() -> None:
    text = _text(render_html(_report(), {}))
    assert (
        "an attacker who knows age band, sex, weight band, the date FDA first received the case finds 96.8%"
        in text
    )
    assert "the whole drug list" in text


def test_rejects_in_words_with_counts_pointing_to_rejects_csv() -> None:
    text = _text(render_html(_report(), {}))
    assert "11 input rows were not released" in text
    assert "10 rows: case on a DELETE list" in text and "1 rows: primaryid repeated" in text
    assert "rejects/rejects.csv" in text


def test_worst_stratum_is_lowest_share_with_raw_signals() -> None:
    rows = _report()["signals"]["per_stratum"]  # type: ignore[index]
    assert worst_stratum(rows)["stratum"] == "age<18"  # type: ignore[index]
    assert worst_stratum([{"stratum": "a", "n_raw": 0, "n_survived": 0}]) is None


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


def test_a_bounded_whole_list_shows_its_range() -> None:
    report = _report()
    bounds = {"unique": 0.1, "below_k": 0.9, "prosecutor_max": 1.0, "prosecutor_mean": 0.4}
    bounded = {"knows": [], "items": {"reactions": "all"}, "unique": 0.5, "below_k": 0.9, "exact": False,
               "prosecutor_max": 1.0, "prosecutor_mean": 0.6, "bounds": bounds}  # fmt: skip
    report["risk"]["reidentification"].append(bounded)  # type: ignore[index]
    text = _text(render_html(report, {}))
    # unique and the mean risk are only bounded: shown as ranges; below k is the same either way
    assert "the whole reaction list10.0%–50.0%90.0%10.4–0.6" in text


def test_the_outcome_sentence_follows_the_column_policy() -> None:
    """With the outcome a combination field (risk's qids), the page no longer says OUTC is as reported."""
    plain = _text(render_html(_report(), {}))
    assert "indications are released as reported; outcomes are released as reported." in plain
    report = _report()
    risk = report["risk"]
    assert isinstance(risk, dict)
    report["risk"] = {**risk, "qids": ["age_min", "age_max", "sex", "wt_min", "wt_max", "outcome"]}
    text = _text(render_html(report, {}))
    assert "outcomes are released as reported" not in text
    assert "the outcome is released as its group's common value" in text
    assert "OUTC holds only the codes that value makes certain" in text
