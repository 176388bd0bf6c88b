"""A missing table is an empty table with a stated reason; real partial extracts release end to end.

Real partial sources (../shared/data/faers_samples, PROVENANCE.md): extractFAERS 2015Q1–Q4 (DEMO,
DRUG, REAC, INDI: no OUTC/THER/RPSR), ubesp-faers.db 2020Q3 (DEMO and DRUG only), stutterk1d 2024Q1
(DEMO, DRUG, REAC). Each release runs every stage: ingest, knowledge mining, anonymize, verify,
signals and their comparison, report.
"""

from __future__ import annotations

import json
import shutil
import traceback
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner

from faers_anon.cli import cli
from faers_anon.io.ingest import ingest_quarters
from faers_anon.io.schema import TABLES

OUTPUTS = ("reports", "drug", "reac", "indi", "outc", "ther", "rpsr")
PARTIAL = {  # source folder → (tables it lacks, quarters)
    "extractFAERS/ascii": ({"outc", "ther", "rpsr"}, ["2015Q1", "2015Q2", "2015Q3", "2015Q4"]),
    "ubesp-faers.db/ascii/20Q3": ({"reac", "indi", "outc", "ther", "rpsr"}, ["2020Q3"]),
    "stutterk1d-2024q1/ascii": ({"indi", "outc", "ther", "rpsr"}, ["2024Q1"]),
}


@pytest.fixture(scope="module")
def full_schemas(faers_samples: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The schema of every table from a source that has all seven (faersquarterlydata 2022Q4)."""
    out = tmp_path_factory.mktemp("full") / "out"
    ingest_quarters([faers_samples / "faersquarterlydata" / "ascii" / "22Q4"], out)
    return {name: pl.read_parquet_schema(out / f"{name}.parquet") for name in OUTPUTS}


def _release(source: Path, out: Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["release", str(source), "-o", str(out), "--k", "5", "--theta", "0.4"])
    if result.exc_info is not None and not isinstance(result.exception, SystemExit):  # say why, if it fails
        return result.exit_code, result.output + "".join(traceback.format_exception(*result.exc_info))
    return result.exit_code, result.output


@pytest.mark.parametrize("source", sorted(PARTIAL))
def test_absent_tables_are_written_empty_with_the_schema_and_a_reason(
    source: str, faers_samples: Path, full_schemas: dict[str, Any], tmp_path: Path
) -> None:
    absent, quarters = PARTIAL[source]
    result = ingest_quarters([faers_samples / source], tmp_path / "out")
    report = result.report
    for name in OUTPUTS:
        frame = pl.read_parquet(tmp_path / "out" / f"{name}.parquet")
        assert frame.schema == full_schemas[name], name
        assert (frame.height == 0) == (name in absent), name
    assert {(m["table"], m["quarter"], m["reason"]) for m in report["missing_tables"]} == {
        (t, q, "not in the source") for t in absent for q in quarters
    }
    for name in absent:
        assert report["tables"][name]["note"] == "not in the source"
        assert report["tables"][name]["not_in_source"] == quarters
        assert f"  {name.upper()}: not in the source" in result.summary().splitlines()
    assert report["tables"]["reports"]["kept"] > 0


@pytest.mark.parametrize("source", sorted(PARTIAL))
def test_partial_real_extract_releases_end_to_end(source: str, faers_samples: Path, tmp_path: Path) -> None:
    absent, quarters = PARTIAL[source]
    out = tmp_path / "release"
    code, output = _release(faers_samples / source, out)
    assert code == 0, output
    assert "missing ingested table" not in output and "--knowledge" not in output
    for stage in ("ingest", "anonymize", "verify", "signals", "report"):
        assert f"[{stage}]" in output
    report = json.loads((out / "report.json").read_text())
    counts = report["counts"]
    assert (
        counts["reports_read"]
        == counts["reports_out"] + counts["reports_quarantined"] + counts["reports_deleted"]
    )
    for name in absent:
        assert counts["tables"][name] == {"read": 0, "kept": 0, "quarantined": 0, "deleted": 0,
                                          "note": "not in the source"}  # fmt: skip
        # every table is published, header only when empty, once: a release labels every row with its
        # own quarter, the latest of its input (docs/formats.md "The quarter column")
        table = "DEMO" if name == "reports" else name.upper()
        text = (out / "ascii" / f"{table}{quarters[-1][2:4]}Q{quarters[-1][-1]}.txt").read_text()
        assert text.count("\n") == 1 and text.startswith("primaryid$")
    label = f"{quarters[-1][2:4]}Q{quarters[-1][-1]}.txt"
    assert {p.name[-8:] for p in (out / "ascii").iterdir()} == {label}
    if "indi" in absent:  # knowledge mined from no INDI rows: E is empty
        assert (out / "knowledge.csv").read_text() == "drug_key,disease,weight\n"
    verified = CliRunner().invoke(cli, ["verify", str(out)])
    assert verified.exit_code == 0, verified.output


def test_demo_only_quarter_releases(faers_samples: Path, tmp_path: Path) -> None:
    source = tmp_path / "demo_only"
    source.mkdir()
    shutil.copy(faers_samples / "stutterk1d-2024q1" / "ascii" / "24Q1" / "DEMO24Q1.txt", source)
    out = tmp_path / "release"
    code, output = _release(source, out)
    assert code == 0, output
    counts = json.loads((out / "report.json").read_text())["counts"]
    assert counts["reports_out"] == 200
    assert {n for n, t in counts["tables"].items() if t["note"] == "not in the source"} == set(TABLES[1:])


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (["DRUG24Q1.txt"], "Error: 2024Q1: DEMO file missing (expected DEMO24Q1.txt beside DRUG24Q1.txt)"),
        (
            ["DELETE24Q1.txt"],
            "Error: no DEMO file in the sources (expected DEMOyyQq.txt; found DELETE24Q1.txt)",
        ),
    ],
)
def test_demo_less_source_is_one_error_line(files: list[str], message: str, tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in files:
        (source / name).write_text("primaryid$caseid\n1$1\n" if name.startswith("DRUG") else "7\n")
    code, output = _release(source, tmp_path / "release")
    assert (code, output.strip().splitlines()) == (1, ["[ingest] …", message])
    assert not (tmp_path / "release").exists()
