"""Cumulative ingest: a hand-built three-quarter series across the AERS → FAERS boundary.

2012Q3 is legacy AERS (ISR/CASE, rows ending with a stray ``$``), 2012Q4 and 2013Q1 are FAERS; the
2013Q1 DELETE list removes a case of 2012Q4. Worked answers (FDA's rule: highest caseversion, then
latest fda_dt, then highest primaryid; a legacy version has no caseversion and ranks lowest):

* case 100: ISRs 8000001 (2012-07-01, age 40) and 8000002 (2012-08-15, age 41) in 2012Q3, FAERS
  version 3 (primaryid 1003, age 42) in 2012Q4 → latest 1003; both ISRs superseded by a later quarter.
* case 200: ISR 8000010 only → latest.
* case 300: version 1 (3001) in 2012Q4, version 2 (3002) in 2013Q1 → latest 3002.
* case 400: 4001 in 2012Q4, on the 2013Q1 DELETE list → deleted.
* case 500: version 2 on the same fda_dt in 2012Q4 (primaryid 5009) and 2013Q1 (5005) → the higher
  primaryid 5009 is latest although it came in the earlier quarter.
* 2013Q1 has one row whose primaryid is not a number → quarantined.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest

from faers_anon.io import cumulative
from faers_anon.io.cumulative import _ranges, quarter_gaps
from faers_anon.io.ingest import ingest_quarters
from faers_anon.io.ingest_report import KEPT, QUARANTINED, STATUS

MODERN = "primaryid$caseid$caseversion$fda_dt$age$age_cod$sex"
LEGACY = "ISR$CASE$I_F_COD$FOLL_SEQ$FDA_DT$AGE$AGE_COD$GNDR_COD"


def _write(folder: Path, name: str, lines: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("\n".join(lines) + "\n")


@pytest.fixture
def series(tmp_path: Path) -> dict[str, Path]:
    q3, q4, q1 = tmp_path / "aers12q3", tmp_path / "faers12q4", tmp_path / "faers13q1"
    _write(q3, "DEMO12Q3.TXT", [LEGACY, "8000001$100$I$$20120701$40$YR$F$",
                                "8000002$100$F$1$20120815$41$YR$F$",
                                "8000010$200$I$$20120901$60$YR$M$"])  # fmt: skip
    _write(q3, "REAC12Q3.TXT", ["ISR$PT", "8000001$PYREXIA$", "8000010$NAUSEA$"])
    _write(q4, "DEMO12Q4.txt", [MODERN, "1003$100$3$20121101$42$YR$F", "3001$300$1$20121005$30$YR$M",
                                "4001$400$1$20121010$50$YR$F", "5009$500$2$20121201$70$YR$M"])  # fmt: skip
    _write(q4, "REAC12Q4.txt", ["primaryid$caseid$pt", "1003$100$Pyrexia", "1003$100$Rash", "3001$300$Cough"])
    _write(q1, "DEMO13Q1.txt", [MODERN, "3002$300$2$20130210$31$YR$M", "5005$500$2$20121201$71$YR$M",
                                "X9$900$1$20130101$$$"])  # fmt: skip
    _write(q1, "REAC13Q1.txt", ["primaryid$caseid$pt", "3002$300$Fever"])
    _write(q1, "DELETE13Q1.txt", ["400"])
    return {"2012Q3": q3, "2012Q4": q4, "2013Q1": q1}


def _quarter(report: dict[str, object], quarter: str) -> dict[str, object]:
    rows = [q for q in report["by_quarter"] if q["quarter"] == quarter]  # type: ignore[attr-defined]
    assert len(rows) == 1
    return {k: v for k, v in rows[0].items() if k != "quarter"}


def test_three_quarters_across_the_era_boundary(series: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    # any order on the command line
    report = ingest_quarters([series["2013Q1"], series["2012Q3"], series["2012Q4"]], out).report
    assert report["quarters"] == ["2012Q3", "2012Q4", "2013Q1"]
    assert _quarter(report, "2012Q3") == {"era": "AERS", "read": 3, "latest": 1, "superseded": 2,
        "superseded_by_later_quarter": 2, "deleted": 0, "quarantined": 0, "cases": 2,
        "cases_spanning_eras": 1}  # fmt: skip
    assert _quarter(report, "2012Q4") == {"era": "FAERS", "read": 4, "latest": 2, "superseded": 1,
        "superseded_by_later_quarter": 1, "deleted": 1, "quarantined": 0, "cases": 3,
        "cases_spanning_eras": 1}  # fmt: skip
    assert _quarter(report, "2013Q1") == {"era": "FAERS", "read": 3, "latest": 1, "superseded": 1,
        "superseded_by_later_quarter": 0, "deleted": 0, "quarantined": 1, "cases": 2,
        "cases_spanning_eras": 0}  # fmt: skip
    assert not report["warnings"]
    reports = pl.read_parquet(out / "reports.parquet")
    latest = reports.filter(pl.col("is_latest")).sort("caseid")
    assert latest.select("caseid", "primaryid", "quarter").rows() == [
        (100, 1003, "2012Q4"), (200, 8000010, "2012Q3"), (300, 3002, "2013Q1"), (500, 5009, "2012Q4")
    ]  # fmt: skip
    assert 400 not in reports.get_column("caseid").to_list()
    cases = {c["caseid"]: c for c in pl.read_parquet(out / "cases.parquet").to_dicts()}
    assert sorted(cases) == [100, 200, 300, 500]
    spanning = cases[100]
    assert spanning["primaryids"] == [8000001, 8000002, 1003] and spanning["latest_primaryid"] == 1003
    assert (spanning["age_min"], spanning["age_max"]) == (40.0, 42.0)
    assert spanning["reactions"] == ["PYREXIA", "RASH"]  # legacy child row linked through its ISR
    assert cases[500]["primaryids"] == [5005, 5009]


def test_a_gap_in_the_quarters_is_named(series: dict[str, Path], tmp_path: Path) -> None:
    report = ingest_quarters([series["2012Q3"], series["2013Q1"]], tmp_path / "out").report
    assert report["warnings"] == [
        "quarters not consecutive: 2012Q4 missing between 2012Q3 and 2013Q1 "
        "(their follow-ups and DELETE lists are not applied)"
    ]
    assert quarter_gaps(["2012Q3", "2013Q2", "2012Q4"]) == ["2013Q1"]


def test_the_summary_has_a_line_per_quarter(series: dict[str, Path], tmp_path: Path) -> None:
    from click.testing import CliRunner

    from faers_anon.cli import cli

    args = ["ingest", *map(str, series.values()), "-o", str(tmp_path / "out")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    lines = [line.split() for line in result.output.splitlines() if line.strip().startswith("2012Q3 (AERS)")]
    assert lines == [["2012Q3", "(AERS)", "read", "3", "latest", "1", "superseded", "2", "deleted", "0",
                      "quarantined", "0"]]  # fmt: skip


def test_quarters_are_ingested_one_at_a_time_latest_first(
    series: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory holds one quarter: each run of the ingest steps sees one quarter's files, latest
    first, and every table is one file with the quarters' rows grouped, latest quarter first."""
    from faers_anon.io import ingest

    runs: list[list[str]] = []
    run = ingest._run

    def spy(files: list[Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
        runs.append(sorted({f.source.quarter for f in files}))
        return run(files, *args, **kwargs)

    monkeypatch.setattr(ingest, "_run", spy)
    out = tmp_path / "out"
    ingest_quarters(list(series.values()), out)
    assert runs == [["2013Q1"], ["2012Q4"], ["2012Q3"]]
    quarters = pl.read_parquet(out / "reports.parquet").get_column("quarter").to_list()
    assert quarters == ["2013Q1"] * 2 + ["2012Q4"] * 3 + ["2012Q3"] * 3
    reac = pl.read_parquet(out / "reac.parquet").get_column("quarter").to_list()
    assert reac == ["2013Q1", "2012Q4", "2012Q4", "2012Q4", "2012Q3", "2012Q3"]


def test_a_report_repeated_in_a_later_quarter_takes_its_rows_along(
    series: dict[str, Path], tmp_path: Path
) -> None:
    """Report 3001 (2012Q4) is in 2013Q1's extract too: the later extract's row is kept (FDA FAQ 29),
    the earlier one is quarantined with its REAC row (its report is not kept); read latest first,
    the earlier quarter knows it when it is read."""
    q1 = series["2013Q1"]
    (q1 / "DEMO13Q1.txt").write_text((q1 / "DEMO13Q1.txt").read_text() + "3001$300$1$20121005$30$YR$M\n")
    (q1 / "REAC13Q1.txt").write_text((q1 / "REAC13Q1.txt").read_text() + "3001$300$Cough\n")
    out = tmp_path / "out"
    report = ingest_quarters(list(series.values()), out).report
    rejects = pl.read_parquet(out / "rejects" / "reports.parquet")
    assert rejects.filter(pl.col("primaryid") == "3001").select("quarter", "reason").rows() == [
        ("2012Q4", "primaryid_latest_quarter")
    ]
    reac_rejects = pl.read_parquet(out / "rejects" / "reac.parquet")
    assert reac_rejects.select("quarter", "primaryid", "reason").rows() == [
        ("2012Q4", "3001", "report_known")
    ]
    kept = pl.read_parquet(out / "reports.parquet").filter(pl.col("primaryid") == 3001)
    assert kept.select("quarter", "is_latest").rows() == [("2013Q1", False)]  # 3002 is case 300's latest
    assert _quarter(report, "2012Q4")["quarantined"] == 1 and _quarter(report, "2013Q1")["read"] == 4
    assert report["tables"]["reac"] | {"files": None} == {
        "read": 7, "kept": 6, "quarantined": 1, "deleted": 0, "reasons": {"report_known": 1},
        "values_nulled": {}, "files": None,
    }  # fmt: skip
    assert [f["quarter"] for f in report["tables"]["reac"]["files"]] == ["2012Q3", "2012Q4", "2013Q1"]


def test_only_primaryids_read_in_several_quarters_are_carried_to_earlier_quarters(
    series: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Report 3001 is in 2012Q4's and 2013Q1's DEMO, and ISR 8000010 (2012Q3) in 2013Q1's as a
    quarantined row (no caseid): one pass over the DEMO files finds 3001 and 8000010 in two quarters,
    so 2013Q1 (read first) is given no later primaryid, 2012Q4 only 2013Q1's 3001, the one candidate
    among them (not 2013Q1's other candidates 3002 and 5005), and 2012Q3 both quarters' 3001 (2012Q4's
    copy is a candidate: its row passes the row rules). Same outcome: 2012Q4's copy of 3001 is
    quarantined by ``primaryid_latest_quarter``."""
    from faers_anon.io import ingest

    q1 = series["2013Q1"]
    (q1 / "DEMO13Q1.txt").write_text(
        (q1 / "DEMO13Q1.txt").read_text() + "3001$300$1$20121005$30$YR$M\n8000010$$1$20130101$$$\n"
    )
    demo = _demo_files(series, tmp_path / "local")
    assert sorted(cumulative.repeated_primaryids(demo).to_list()) == [3001, 8000010]
    later: list[list[int]] = []
    run = ingest._run

    def spy(*args: Any, **kwargs: Any) -> dict[str, Any]:
        outputs = args[-1] if len(args) > 5 else kwargs["outputs"]
        later.append(sorted(outputs.later.to_list()))
        return run(*args, **kwargs)

    monkeypatch.setattr(ingest, "_run", spy)
    ingest_quarters(list(series.values()), tmp_path / "out")
    assert later == [[], [3001], [3001, 3001]]
    rejects = pl.read_parquet(tmp_path / "out" / "rejects" / "reports.parquet")
    assert rejects.filter(pl.col("reason") == "primaryid_latest_quarter").select(
        "quarter", "primaryid"
    ).rows() == [("2012Q4", "3001")]


def _demo_files(series: dict[str, Path], work: Path) -> list[Any]:
    from faers_anon.io.sources import discover, materialize

    work.mkdir()
    return [materialize(f, work) for f in discover(list(series.values())) if f.table == "demo"]


def test_a_case_spans_eras_only_by_its_kept_reports(series: dict[str, Path], tmp_path: Path) -> None:
    """Report 3002 repeated in 2013Q1 (the copy quarantined, primaryid_unique): case 300 has kept
    reports in FAERS only, so no quarter counts it as spanning the eras; a quarantined row is no era."""
    q1 = series["2013Q1"]
    (q1 / "DEMO13Q1.txt").write_text((q1 / "DEMO13Q1.txt").read_text() + "3002$300$2$20130210$31$YR$M\n")
    report = ingest_quarters(list(series.values()), tmp_path / "out").report
    assert _quarter(report, "2013Q1")["quarantined"] == 2
    assert [q["cases_spanning_eras"] for q in report["by_quarter"]] == [1, 1, 0]
    alone = ingest_quarters([q1], tmp_path / "alone").report["by_quarter"]
    assert [(q["quarantined"], q["cases_spanning_eras"]) for q in alone] == [(2, 0)]


def test_ranges_of_the_case_index() -> None:
    # kept caseids sorted: 1 3 3 5 7 9 (100 is quarantined); every 2nd: 1 3 7 -> cuts at 3 and 7
    index = pl.DataFrame({"caseid": [5, 1, 3, 3, 9, 7, 100],
                          STATUS: [KEPT] * 6 + [QUARANTINED]})  # fmt: skip
    assert _ranges(index, 2) == [(1, 3), (3, 7), (7, 10)]
    assert _ranges(index, 10) == [(1, 10)]
    assert _ranges(index.filter(pl.col(STATUS) == QUARANTINED), 2) == [(0, 1)]


def test_super_records_are_merged_one_caseid_range_at_a_time(
    series: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory holds one range: with ranges of 2 kept reports, cases 100 (3 reports) | 200, 300 (1, 2)
    | 500 (2) are the kept caseids 100 100 100 200 300 300 500 500 cut at every 2nd: [100, 300),
    [300, 500), [500, 501): row groups of 2, 1 and 1 cases, and the same file as in one piece."""
    whole = ingest_quarters(list(series.values()), tmp_path / "whole").report
    monkeypatch.setattr(cumulative, "RANGE_REPORTS", 2)
    ranged = ingest_quarters(list(series.values()), tmp_path / "ranged").report
    file = pq.ParquetFile(tmp_path / "ranged" / "cases.parquet")
    assert [file.metadata.row_group(i).num_rows for i in range(file.num_row_groups)] == [2, 1, 1]
    assert pl.read_parquet(tmp_path / "ranged" / "cases.parquet").equals(
        pl.read_parquet(tmp_path / "whole" / "cases.parquet")
    )
    assert ranged["cases"] == whole["cases"] == {"cases": 4, "with_several_versions": 3}
