"""Cumulative signals over a series: each case counted once, at its latest version across folders.

Hand-built three quarters (worked answers in the comments):

* Q1: case 1 v1 (drug X, Nausea); case 2 v1 (X, Rash); case 4 v1 (X, Nausea).
* Q2: case 1 v2 (Y, Death) — supersedes Q1's; case 3 v1 (Y, Rash); case 5 v3 (X, Fever).
* Q3: case 5 v2 (Y, Nausea) — an *older* version arriving later: Q2's v3 stays the latest;
  the DELETE list of Q3 removes case 4.

Cumulative: cases 1 (Y, Death), 2 (X, Rash), 3 (Y, Rash), 5 (X, Fever); N = 4.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from faers_anon import api
from faers_anon.analysis.signals import read_case_tables
from faers_anon.cli import cli
from faers_anon.errors import InputError

Row = tuple[int, int, int, str, str, str]  # caseid, primaryid, caseversion, fda_dt, drug, pt


def _ingested(folder: Path, quarter: str, rows: list[Row], deleted: list[int]) -> Path:
    folder.mkdir(parents=True)
    demo = pl.DataFrame(
        [(c, p, v, d, quarter, True, 40.0, "F", None) for c, p, v, d, *_ in rows],
        schema={
            "caseid": pl.Int64,
            "primaryid": pl.Int64,
            "caseversion": pl.Int64,
            "fda_dt": pl.Utf8,
            "quarter": pl.Utf8,
            "is_latest": pl.Boolean,
            "age_years": pl.Float64,
            "sex": pl.Utf8,
            "weight_kg": pl.Float64,
        },  # fmt: skip
        orient="row",
    ).with_columns(pl.col("fda_dt").str.to_date())
    demo.write_parquet(folder / "reports.parquet")
    drug = pl.DataFrame([(p, c, "PS", x) for c, p, _, _, x, _ in rows], orient="row",
                        schema=["primaryid", "caseid", "role_cod", "drug_key"])  # fmt: skip
    drug.write_parquet(folder / "drug.parquet")
    pl.DataFrame([(p, c, e) for c, p, _, _, _, e in rows], orient="row",
                 schema=["primaryid", "caseid", "pt"]).write_parquet(folder / "reac.parquet")  # fmt: skip
    pl.DataFrame({"caseid": deleted}, schema={"caseid": pl.Int64}).write_parquet(folder / "deleted.parquet")
    return folder


@pytest.fixture
def quarters(tmp_path: Path) -> list[Path]:
    q1 = _ingested(tmp_path / "q1", "2023Q1", [(1, 11, 1, "2023-01-05", "X", "Nausea"),
        (2, 21, 1, "2023-02-01", "X", "Rash"), (4, 41, 1, "2023-03-01", "X", "Nausea")], [])  # fmt: skip
    q2 = _ingested(tmp_path / "q2", "2023Q2", [(1, 12, 2, "2023-04-02", "Y", "Death"),
        (3, 31, 1, "2023-05-01", "Y", "Rash"), (5, 53, 3, "2023-06-01", "X", "Fever")], [])  # fmt: skip
    q3 = _ingested(tmp_path / "q3", "2023Q3", [(5, 52, 2, "2023-07-01", "Y", "Nausea")], [4])
    return [q1, q2, q3]


def test_each_case_once_at_its_latest_version(quarters: list[Path]) -> None:
    for order in (quarters, quarters[::-1]):
        tables = read_case_tables(order)
        assert tables.cases.get_column("caseid").to_list() == [1, 2, 3, 5]
        drugs = tables.drugs.select("caseid", "drug_key").rows()
        assert sorted(drugs) == [(1, "Y"), (2, "X"), (3, "Y"), (5, "X")]
        assert sorted(tables.events.rows()) == [(1, "Death"), (2, "Rash"), (3, "Rash"), (5, "Fever")]


def test_cumulative_signal_counts(quarters: list[Path], tmp_path: Path) -> None:
    api.signals(quarters, tmp_path / "s.csv")
    frame = pl.read_csv(tmp_path / "s.csv")
    # X: cases 2 (Rash) and 5 (Fever); Y: 1 (Death), 3 (Rash). X-RASH: a=1, b=1 (case 5), c=1 (case 3), d=1
    pair = frame.filter((pl.col("drug") == "X") & (pl.col("event") == "RASH"))
    assert pair.select("a", "b", "c", "d").rows() == [(1.0, 1.0, 1.0, 1.0)]
    # Q1's superseded NAUSEA of case 1 and deleted case 4 are not counted: no X-NAUSEA pair is left
    assert frame.filter(pl.col("event") == "NAUSEA").height == 0


def test_a_mix_of_ingested_folders_and_releases_is_refused(quarters: list[Path], tmp_path: Path) -> None:
    release = tmp_path / "release"
    (release / "parquet").mkdir(parents=True)
    pl.read_parquet(quarters[0] / "reports.parquet").write_parquet(release / "parquet" / "demo.parquet")
    with pytest.raises(InputError, match="cannot combine ingested folders with releases"):
        read_case_tables([quarters[0], release])


def test_cli_signals_and_compare_take_a_series(quarters: list[Path], tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["signals", *map(str, quarters), "-o", str(tmp_path / "s.csv")])
    assert result.exit_code == 0, result.output
    assert pl.read_csv(tmp_path / "s.csv").filter(pl.col("event") == "NAUSEA").height == 0
    q1, q2, q3 = map(str, quarters)
    args = ["compare", q1, q1, "--raw-series", q2, "--raw-series", q3, "--release-series", q2,
            "-o", str(tmp_path / "c")]  # fmt: skip
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "c" / "summary.json").read_text())
    assert summary["raw"] == [str(q) for q in quarters]
    assert summary["release"] == [str(quarters[0]), str(quarters[1])]


def _release(folder: Path, quarter: str, rows: list[tuple[int, int, str, str, str]]) -> Path:
    """A release's three tables (caseid, report pseudonym, generalized fda_dt, drug, pt per report)."""
    (folder / "parquet").mkdir(parents=True)
    demo = pl.DataFrame(
        [(c, p, True, 40, 50, "F", d, quarter) for c, p, d, *_ in rows], orient="row",
        schema={"caseid": pl.Int64, "primaryid": pl.Int64, "is_latest": pl.Boolean, "age_min": pl.Int64,
                "age_max": pl.Int64, "sex": pl.Utf8, "fda_dt": pl.Utf8, "quarter": pl.Utf8},
    )  # fmt: skip
    out = folder / "parquet"
    demo.write_parquet(out / "demo.parquet")
    drugs = pl.DataFrame([(p, c, "PS", x) for c, p, _, x, _ in rows], orient="row",
                         schema=["primaryid", "caseid", "role_cod", "drug_key"])  # fmt: skip
    drugs.write_parquet(out / "drug.parquet")
    pl.DataFrame([(p, c, e) for c, p, _, _, e in rows], orient="row",
                 schema=["primaryid", "caseid", "pt"]).write_parquet(out / "reac.parquet")  # fmt: skip
    return folder


def test_in_releases_the_report_pseudonym_orders_versions_not_the_generalized_fda_dt(tmp_path: Path) -> None:
    # Case 7's versions 3 and 4 have report pseudonyms 7000430 and 7000431 (a slot per version,
    # release/pseudonyms.py); their released fda_dt are their groups' generalized texts, "2024Q1" and
    # "202411", which sort the other way as text. Case 8's one report is republished unchanged in the
    # later release (a ledgered series): counted once. Expected: case 7 at v4 (Z, Death), case 8 (X, Rash).
    early = _release(tmp_path / "r1", "2024Q1", [(7, 7000430, "2024Q1", "X", "Nausea"),
                                                 (8, 8000120, "2024", "X", "Rash")])  # fmt: skip
    late = _release(tmp_path / "r4", "2024Q4", [(7, 7000431, "202411", "Z", "Death"),
                                                (8, 8000120, "2024", "X", "Rash")])  # fmt: skip
    for folders in ([early, late], [late, early]):
        tables = read_case_tables(folders)
        assert tables.cases.get_column("caseid").to_list() == [7, 8]
        drugs = tables.drugs.sort("caseid")
        assert drugs.select("caseid", "drug_key").rows() == [(7, "Z"), (8, "X")]
        assert tables.events.sort("caseid").get_column("pt").to_list() == ["Death", "Rash"]
