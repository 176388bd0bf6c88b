"""The number of a case's reports, a field of the released case view (SPEC §11; issue 18 item 1).

Release V (k = 3), hand-built; every report of a case is one DEMO row under its case pseudonym:
    G = cases 1-6: Adult [30, 40), F, [60, 70] kg; cases 1, 2, 3 one row, cases 4, 5 two, case 6 three
    H = cases 7-9: Aged [80, ∞), M, weight missing; two rows each (a group homogeneous in the count)
Class sizes on the QIDs + ``reports``: 1-3 → 3, 4-5 → 2, 6 → 1, 7-9 → 3 (on the QIDs alone: 6 and 3).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from faers_anon import api
from faers_anon.release.report_html import knowledge_words
from faers_anon.risk import RiskConfig, assess_risk, default_knowledge, raw_cases
from faers_anon.risk._view import read_cases
from faers_anon.verify.verifier import verify_release

QIDS = ["age_group", "age_min", "age_max", "sex", "wt_min", "wt_max"]
G: tuple[object, ...] = ("Adult", 30.0, 40.0, "F", 60.0, 70.0)
H: tuple[object, ...] = ("Aged", 80.0, None, "M", None, None)
ROWS = {1: 1, 2: 1, 3: 1, 4: 2, 5: 2, 6: 3, 7: 2, 8: 2, 9: 2}  # case → its DEMO rows


def _release(folder: Path, rows: dict[int, int]) -> Path:
    demo = [(100 * c + v, c, *(G if c <= 6 else H), "2025Q1", v == n) for c, n in rows.items()
            for v in range(1, n + 1)]  # fmt: skip
    schema = {"primaryid": pl.Int64, "caseid": pl.Int64, "age_group": pl.String, "age_min": pl.Float64,
              "age_max": pl.Float64, "sex": pl.String, "wt_min": pl.Float64, "wt_max": pl.Float64,
              "quarter": pl.String, "is_latest": pl.Boolean}  # fmt: skip
    (folder / "parquet").mkdir(parents=True)
    pl.DataFrame(demo, schema=schema, orient="row").write_parquet(folder / "parquet" / "demo.parquet")
    return folder


def _record(figures: dict[str, Any], knows: list[str]) -> dict[str, Any]:
    rows = [r for r in figures["reidentification"] if r["knows"] == knows and r["items"] is None]
    assert len(rows) == 1
    return rows[0]  # type: ignore[no-any-return]


def test_the_case_view_counts_each_cases_rows(tmp_path: Path) -> None:
    data = read_cases(_release(tmp_path / "V", ROWS))
    assert data.fields == (*QIDS, "quarter", "reports", "outc_cod")
    assert dict(data.view.select("caseid", "reports").iter_rows()) == ROWS
    # the count is a field of the default knowledge sets: QIDs + it, and every field at once
    knows = [ks.knows for ks in default_knowledge(data.fields) if ks.items is None]
    assert (*QIDS, "reports") in knows and (*QIDS, "quarter", "reports", "outc_cod") in knows
    # report.html names it in words
    words = knowledge_words({"knows": [*QIDS, "reports"], "items": None})
    assert words == "age band, sex, weight band, the number of the case's reports (versions)"


def test_a_group_mixing_counts_puts_cases_below_k_with_the_worked_sizes(tmp_path: Path) -> None:
    figures = assess_risk(_release(tmp_path / "V", ROWS), config=RiskConfig(k=3)).figures
    assert "reports" in figures["fields"]
    qids = _record(figures, QIDS)  # sizes 6 x 6 | 3 x 3: none below k
    assert qids["below_k"] == 0.0 and qids["prosecutor_max"] == pytest.approx(1 / 3)
    row = _record(figures, [*QIDS, "reports"])
    # sizes 3, 3, 3 | 2, 2 | 1 | 3, 3, 3: cases 4, 5, 6 below k = 3, case 6 unique
    assert row["cases"] == 9
    assert row["below_k"] == pytest.approx(3 / 9) and row["unique"] == pytest.approx(1 / 9)
    assert row["prosecutor_max"] == 1.0
    assert row["prosecutor_mean"] == pytest.approx((3 / 3 + 2 / 2 + 1 + 3 / 3) / 9)
    every = _record(figures, [*QIDS, "quarter", "reports", "outc_cod"])  # every DEMO field + the OUTC set
    assert every["below_k"] == pytest.approx(3 / 9)


def test_a_release_homogeneous_in_the_count_has_no_case_below_k(tmp_path: Path) -> None:
    """G made homogeneous: cases 1-3 keep one row, 4-6 two (the top-coded case 6 keeps its latest two)."""
    figures = assess_risk(_release(tmp_path / "V", {**ROWS, 6: 2}), config=RiskConfig(k=3)).figures
    for knows in ([*QIDS, "reports"], [*QIDS, "quarter", "reports", "outc_cod"]):
        row = _record(figures, knows)
        assert row["below_k"] == 0.0 and row["prosecutor_max"] == pytest.approx(1 / 3), knows


def _raw(folder: Path) -> Path:
    """The raw quarter: the released cases with true ages and weights and the same counts, and raw
    case 10 (33 years, F, 65 kg: inside G's ranges) with two reports, which the release lacks."""
    counts = {**ROWS, 10: 2}
    rows = [(100 * c + v, c, 33.0 if c <= 6 or c == 10 else 85.0, "F" if c <= 6 or c == 10 else "M",
             65.0 if c <= 6 or c == 10 else None, "2025Q1", v == n)
            for c, n in counts.items() for v in range(1, n + 1)]  # fmt: skip
    schema = {"primaryid": pl.Int64, "caseid": pl.Int64, "age_years": pl.Float64, "sex": pl.String,
              "weight_kg": pl.Float64, "quarter": pl.String, "is_latest": pl.Boolean}  # fmt: skip
    folder.mkdir()
    pl.DataFrame(rows, schema=schema, orient="row").write_parquet(folder / "reports.parquet")
    return folder


def test_journalist_risk_counts_the_raw_cases_reports_the_same_way(tmp_path: Path) -> None:
    raw = _raw(tmp_path / "raw")
    assert dict(read_cases(raw).view.select("caseid", "reports").iter_rows()) == {**ROWS, 10: 2}
    release = _release(tmp_path / "V", ROWS)
    figures = assess_risk(release, config=RiskConfig(k=3, raw=raw)).figures
    row = _record(figures, [*QIDS, "reports"])
    # raw cases covered by G's ranges with the same count: 1 row {1, 2, 3}: 3; 2 rows {4, 5, 10}: 3;
    # 3 rows {6}: 1; H with 2 rows {7, 8, 9}: 3
    assert row["journalist_max"] == 1.0
    assert row["journalist_mean"] == pytest.approx((3 / 3 + 2 / 3 + 1 + 3 / 3) / 9)
    # the raw half read first (beside the engine) gives the same figures
    assert assess_risk(release, config=RiskConfig(k=3, raw=raw), raw_side=raw_cases(raw)).figures == figures


@pytest.fixture(scope="module")
def demo_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("versions_demo") / "release"
    api.release([], out, config=api.release_config(None, {"k": 5, "demo": True}))
    return out


def test_the_demo_release_has_no_case_below_k_with_the_count(demo_release: Path) -> None:
    """`faers-anon release --demo --k 5` (default θ 0.6): the class over every released field (the DEMO
    fields of the latest version, the OUTC set) plus the number of the case's DEMO rows put 1,178 of
    2,998 cases below k (197 unique; QIDs + the count alone: 103, 21 unique) before the count was made
    common to each group (3fe2cfc; the lead measured 1,108 on an earlier release), and none after
    (be7b588). The release's own report.json measures it (every release runs the risk stage), and its
    verification ran rule report_count."""
    report = json.loads((demo_release / "report.json").read_text())
    risk = report["risk"]
    assert "reports" in risk["fields"] and "caseversion" not in risk["fields"]
    every = _record(risk, [*QIDS, *(f for f in risk["fields"] if f not in QIDS)])
    assert "reports" in every["knows"] and every["cases"] == 2998
    assert every["below_k"] == 0.0 and every["prosecutor_max"] <= 1 / 5
    assert _record(risk, [*QIDS, "reports"])["below_k"] == 0.0
    # the verifier's own rule agrees from the files alone
    verdict = verify_release(demo_release, check_hashes=False)
    assert verdict.ok, verdict.summary()
