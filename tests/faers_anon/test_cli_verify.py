"""`faers-anon verify`: happy path, a failing release, a user mistake, help."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from click.testing import CliRunner

from faers_anon.cli import cli


def _release(root: Path, *, theta: float, groups: int = 1) -> Path:
    """A hand-built folder (no certificate, counts or ascii copy: checked with --no-hashes; the
    integrity rules are tested in test_forgeries.py). Cases 1, 2 in one group (plus a two-case group
    per extra group); case 2 has indication Headache, case 1 takes D with E(D) = {Headache, Fever}:
    conf(HEADACHE) = (0.5 + 1) / 2 = 0.75 in group 0."""
    (root / "parquet").mkdir(parents=True)
    rows = [(11, 1, "Adult", "F"), (21, 2, "Adult", "F")]
    rows += [(100 + c, c, f"G{c // 2}", "M") for c in range(4, 4 + 2 * (groups - 1))]
    demo = pl.DataFrame(rows, schema=["primaryid", "caseid", "age_group", "sex"], orient="row", strict=False)
    demo.with_columns(
        age_min=pl.lit(19.0),
        age_max=pl.lit(45.0),
        wt_min=pl.lit(None, pl.Float64),
        wt_max=pl.lit(None, pl.Float64),
    ).write_parquet(root / "parquet" / "demo.parquet")
    pl.DataFrame({"caseid": [1], "drug_key": ["D"]}).write_parquet(root / "parquet" / "drug.parquet")
    pl.DataFrame({"caseid": [2], "indi_pt": ["Headache"]}).write_parquet(root / "parquet" / "indi.parquet")
    pl.DataFrame({"caseid": [1], "pt": ["Nausea"]}).write_parquet(root / "parquet" / "reac.parquet")
    (root / "knowledge.csv").write_text("drug_key,disease,weight\nD,Headache,0.5\nD,Fever,0.5\n")
    (root / "thresholds.csv").write_text(f"value,theta\nFEVER,1\nHEADACHE,{theta}\nNAUSEA,1\n")
    (root / "manifest.json").write_text(json.dumps({"parameters": {"k": 2, "seed": 0}}))
    return root


def test_verify_happy_path_prints_dr_and_group_sizes(tmp_path: Path) -> None:
    release = _release(tmp_path / "r", theta=0.8, groups=2)
    result = CliRunner().invoke(cli, ["verify", str(release), "--no-hashes"])
    assert result.exit_code == 0, result.output
    assert "OK MS(k=2, θ*)-bounding" in result.output
    assert "DR = 0.0000 (0 dangerous of 2 groups)" in result.output
    assert "group sizes (cases: groups): 2: 2" in result.output
    assert "Error" not in result.output


def test_verify_failing_release_lists_the_violation_and_exits_1(tmp_path: Path) -> None:
    release = _release(tmp_path / "r", theta=0.6)
    result = CliRunner().invoke(cli, ["verify", str(release), "--k", "3", "--no-hashes"])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert "DR = 1.0000 (1 dangerous of 1 groups)" in lines
    assert any(line.endswith("k: 2 distinct cases < k = 3") for line in lines)
    assert any(line.endswith("theta: conf(HEADACHE) = 0.75 > theta 0.6") for line in lines)
    assert any(line.endswith("stated: k: the release says 2, the agency states 3") for line in lines)
    assert lines[-1] == f"Error: {release}: fails MS(k=3, θ*)-bounding (3 violation(s))"
    assert sum(line.startswith("Error:") for line in lines) == 1


def test_verify_lists_the_first_20_violations_then_a_count(tmp_path: Path) -> None:
    release = _release(tmp_path / "r", theta=0.8, groups=25)
    result = CliRunner().invoke(cli, ["verify", str(release), "--k", "3", "--no-hashes"])
    assert result.exit_code == 1
    assert result.output.count(": k: 2 distinct cases < k = 3") == 20
    assert "  … and 6 more" in result.output  # 5 more groups and the named k mismatch


def test_verify_missing_folder_is_one_error_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["verify", str(tmp_path / "nowhere")])
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert sum(line.startswith("Error:") for line in result.output.splitlines()) == 1


def test_verify_without_k_anywhere_is_one_error_line(tmp_path: Path) -> None:
    release = _release(tmp_path / "r", theta=0.8)
    (release / "manifest.json").write_text("{}")
    result = CliRunner().invoke(cli, ["verify", str(release)])
    assert result.exit_code == 1
    assert result.output == f"Error: {release}: no k given and manifest.json has no parameters.k\n"


def test_verify_help_has_an_example() -> None:
    result = CliRunner().invoke(cli, ["verify", "--help"])
    assert result.exit_code == 0
    assert "Example: faers-anon verify" in result.output and "--k" in result.output
