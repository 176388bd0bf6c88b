"""Composition by receipt: the attacker who follows a case pseudonym and knows when its reports came in.

A ledgered release republishes a returning case's group-mates with the report they showed before
(docs/series.md §4), so the follow-up is the only member of its bundle with a new report. Hand-built
two releases whose answers are worked out below; the 4 × 400k figures are in docs/series.md §4.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from faers_anon.cli import cli
from faers_anon.risk import RiskConfig, assess_risk

G = ("Adult", 19.0, 45.0, "F", None, None)
H = ("Adult", 19.0, 65.0, "*", None, None)
FRESH = ("Aged", 65.0, None, "M", None, None)


def _release(folder: Path, rows: list[tuple[int, int, tuple[object, ...]]]) -> Path:
    """DEMO rows (report pseudonym, case pseudonym, QID tuple), one version each."""
    demo = pl.DataFrame(
        [(pid, cid, 1, dt.date(2025, 1, 1), *q, "2025Q1", True) for pid, cid, q in rows],
        schema={"primaryid": pl.Int64, "caseid": pl.Int64, "caseversion": pl.Int64, "fda_dt": pl.Date,
                "age_group": pl.String, "age_min": pl.Float64, "age_max": pl.Float64, "sex": pl.String,
                "wt_min": pl.Float64, "wt_max": pl.Float64, "quarter": pl.String, "is_latest": pl.Boolean},
        orient="row",
    )  # fmt: skip
    (folder / "parquet").mkdir(parents=True)
    demo.write_parquet(folder / "parquet" / "demo.parquet")
    (folder / "knowledge.csv").write_text("drug_key,disease,weight\nD,HYPERTENSION,1\n")
    (folder / "thresholds.csv").write_text("value,theta\nHYPERTENSION,0.4\n")
    return folder


@pytest.fixture
def first(tmp_path: Path) -> Path:
    """Release 1: cases 1-6 in one group G, each with its first report c·1000 + 1."""
    return _release(tmp_path / "R1", [(c * 1000 + 1, c, G) for c in range(1, 7)])


def test_republished_mates_leave_the_follow_up_alone(first: Path, tmp_path: Path) -> None:
    # release 2: case 1 with a new report (1002), cases 2-5 republished with the report they showed,
    # case 6 left behind; fresh cases 7-11 in a group of their own
    rows = [(1002, 1, H)] + [(c * 1000 + 1, c, H) for c in range(2, 6)]
    second = _release(tmp_path / "R2", rows + [(c * 1000 + 1, c, FRESH) for c in range(7, 12)])
    figures = assess_risk(second, config=RiskConfig(k=5, series=(first,))).figures["composition"]
    # I(c) = G ∩ H = {1, ..., 5} for the five cases in both: none below k by the member sets
    assert figures["cases_in_several"] == 5 and figures["below_k"] == 0.0
    # knowing the target's report came in release 2 keeps {1}; knowing it did not keeps {2, ..., 5}
    assert figures["cases_with_a_new_report"] == 1 and figures["new_report_below_k_by_receipt"] == 1.0
    assert figures["unique_by_receipt"] == pytest.approx(1 / 5)
    assert figures["below_k_by_receipt"] == 1.0


def test_follow_ups_that_return_together_hide_each_other(first: Path, tmp_path: Path) -> None:
    # all five return with new reports: every member of I(c) shows a new report in release 2
    second = _release(tmp_path / "R2", [(c * 1000 + 2, c, H) for c in range(1, 6)])
    figures = assess_risk(second, config=RiskConfig(k=5, series=(first,))).figures["composition"]
    assert figures["cases_with_a_new_report"] == 5 and figures["new_report_below_k_by_receipt"] == 0.0
    assert figures["below_k"] == figures["below_k_by_receipt"] == 0.0
    assert figures["unique_by_receipt"] == 0.0


def test_the_risk_command_prints_both_readings(first: Path, tmp_path: Path) -> None:
    rows = [(1002, 1, H)] + [(c * 1000 + 1, c, H) for c in range(2, 6)]
    second = _release(tmp_path / "R2", rows)
    out = tmp_path / "risk.json"
    args = ["risk", str(second), "--series", str(first), "-o", str(out), "--k", "5"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "composition over 2 releases: 5 cases in several; below k 0.0%, unique 0.0%" in result.output
    assert "knowing when each report came in: below k 100.0%, unique 20.0%" in result.output
    assert json.loads(out.read_text())["composition"]["unique_by_receipt"] == pytest.approx(0.2)
