"""`faers-anon ingest`: the happy paths and user mistakes (one `Error:` line, no traceback)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from faers_anon.cli import cli


def _error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("Error:")]


def test_ingest_bundled_demo(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = CliRunner().invoke(cli, ["ingest", "--demo", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "Ingested 1 quarter(s) (2025Q1)" in result.output
    assert "ingest_report.json" in result.output
    for name in ("reports", "drug", "reac", "indi", "outc", "ther", "rpsr", "deleted", "cases"):
        assert (out / f"{name}.parquet").is_file(), name
    assert pl.read_parquet(out / "rejects" / "reports.parquet").height == 6  # 3 malformed + 3 deleted


def test_ingest_two_eras_from_zip_and_folder(faers_samples: Path, tmp_path: Path) -> None:
    source = faers_samples / "yunuuuu-faers"
    args = ["ingest", str(source / "original" / "aers_ascii_2004q1.zip"), str(source / "ascii" / "17Q2")]
    result = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "(2004Q1, 2017Q2)" in result.output
    assert pl.read_parquet(tmp_path / "out" / "cases.parquet").height == 200


def _corrupt_zip(tmp_path: Path) -> Path:
    path = tmp_path / "faers_ascii_2023q1.zip"
    path.write_bytes(b"not a zip at all")
    return path


def _demo_less(tmp_path: Path) -> Path:
    folder = tmp_path / "nodemo"
    folder.mkdir()
    (folder / "DRUG23Q1.txt").write_text("primaryid$caseid$drug_seq\n1$1$1\n")
    return folder


def _occupied(tmp_path: Path) -> Path:
    folder = tmp_path / "occupied"
    folder.mkdir()
    (folder / "thesis.tex").write_text("...")
    return folder


MISTAKES = {
    "missing path": (lambda t: ["ingest", str(t / "nowhere.zip"), "-o", str(t / "out")], "no such file"),
    "corrupt zip": (lambda t: ["ingest", str(_corrupt_zip(t)), "-o", str(t / "out")], "not a readable zip"),
    "missing DEMO": (lambda t: ["ingest", str(_demo_less(t)), "-o", str(t / "out")], "DEMO file missing"),
    "no source": (lambda t: ["ingest", "-o", str(t / "out")], "no sources given"),
    "occupied out": (lambda t: ["ingest", "--demo", "-o", str(_occupied(t))], "not an ingest folder"),
    "missing lookup": (
        lambda t: ["ingest", "--demo", "--drug-names", str(t / "none.tsv"), "-o", str(t / "out")],
        "none.tsv",
    ),
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_user_mistakes_give_one_error_line(mistake: str, tmp_path: Path) -> None:
    make_args, expected = MISTAKES[mistake]
    result = CliRunner().invoke(cli, make_args(tmp_path))
    assert result.exit_code != 0
    errors = _error_lines(result.output)
    assert len(errors) == 1 and expected in errors[0], result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_help_has_an_example() -> None:
    result = CliRunner().invoke(cli, ["ingest", "--help"])
    assert result.exit_code == 0
    assert "Example: faers-anon ingest" in result.output and "--drug-names" in result.output
