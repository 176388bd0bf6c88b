"""``faers-anon signals`` and ``faers-anon compare``: happy paths, mistakes, help."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from faers_anon.cli import cli


def _folder(root: Path, *, release: bool) -> Path:
    """Four cases: X with Nausea in cases 1-3 (ages 20, 30, 70), Y with Rash in case 4 (age 70)."""
    ids = {"primaryid": [10, 20, 30, 40], "caseid": [1, 2, 3, 4]}
    if release:
        demo = {
            "age_min": [18.0, 18.0, 65.0, 65.0],
            "age_max": [45.0, 45.0, None, None],
            "sex": ["F", "*", "M", "F"],
        }
        (root / "parquet").mkdir(parents=True)
        base = root / "parquet"
        pl.DataFrame({**ids, "is_latest": True, **demo}).write_parquet(base / "demo.parquet")
    else:
        root.mkdir(parents=True)
        base = root
        demo = {"age_years": [20.0, 30.0, 70.0, 70.0], "sex": ["F", "M", "M", "F"]}
        pl.DataFrame({**ids, "is_latest": True, **demo}).write_parquet(base / "reports.parquet")
    pl.DataFrame({**ids, "drug_key": ["X", "X", "X", "Y"], "role_cod": "PS"}).write_parquet(
        base / "drug.parquet"
    )
    pl.DataFrame({**ids, "pt": ["Nausea", "Nausea", "Nausea", "Rash"]}).write_parquet(base / "reac.parquet")
    return root


def test_signals_happy_path(tmp_path: Path) -> None:
    data = _folder(tmp_path / "raw", release=False)
    out = tmp_path / "signals.parquet"
    result = CliRunner().invoke(
        cli, ["signals", str(data), "-o", str(out), "--condition", "age>=18", "--min-a", "1"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("4 cases (exact values), role ps, min a 1: 4 drug-event rows\n")
    frame = pl.read_parquet(out)
    assert frame.select("stratum", "drug", "event", "a", "b", "c", "d").rows() == [
        ("all", "X", "NAUSEA", 3.0, 0.0, 0.0, 1.0),
        ("all", "Y", "RASH", 1.0, 0.0, 0.0, 3.0),
        ("age>=18", "X", "NAUSEA", 3.0, 0.0, 0.0, 1.0),
        ("age>=18", "Y", "RASH", 1.0, 0.0, 0.0, 3.0),
    ]


def test_signals_on_a_release_with_strata(tmp_path: Path) -> None:
    data = _folder(tmp_path / "release", release=True)
    out = tmp_path / "signals.csv"
    result = CliRunner().invoke(
        cli, ["signals", str(data), "-o", str(out), "--stratify", "sex", "--role", "any"]
    )
    assert result.exit_code == 0, result.output
    assert "4 cases (released ranges)" in result.output
    frame = pl.read_csv(out)
    x_in_f = frame.filter((pl.col("stratum") == "sex=F") & (pl.col("drug") == "X"))
    # case 1 is F, case 2 '*': certain 1 case, possible 2, expected 1.5
    assert x_in_f.select("reading", "a").rows() == [("certain", 1.0), ("possible", 2.0), ("expected", 1.5)]


def test_compare_happy_path(tmp_path: Path) -> None:
    raw = _folder(tmp_path / "raw", release=False)
    release = _folder(tmp_path / "release", release=True)
    out = tmp_path / "compare"
    result = CliRunner().invoke(cli, ["compare", str(raw), str(release), "-o", str(out), "--min-a", "1"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("raw 4 cases, release 4 cases; criterion evans\n")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["config"]["signals"]["min_a"] == 1.0
    assert summary["config"]["signals"]["conditions"] == ["age>=18", "age>=60", "age<18", "sex=F"]
    assert (out / "panel.csv").is_file() and (out / "pairs.parquet").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--condition", "age>>18"], "Error: condition 'age>>18': '>18' is not a number\n"),
        (["--stratify", "age,weight"], "Error: stratify: unknown variable 'weight' (expected age, sex)\n"),
        (["--min-a", "0"], "Error: min_a must be a number > 0; got 0.0\n"),
    ],
)
def test_signals_mistakes_print_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    data = _folder(tmp_path / "raw", release=False)
    result = CliRunner().invoke(cli, ["signals", str(data), "-o", str(tmp_path / "s.parquet"), *args])
    assert result.exit_code == 1
    assert result.output == message
    assert "Traceback" not in result.output


def test_not_a_data_folder(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(cli, ["signals", str(tmp_path / "empty"), "-o", str(tmp_path / "s.parquet")])
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and result.output.count("\n") == 1
    assert (
        "neither an ingested folder (reports.parquet) nor a release (parquet/demo.parquet)" in result.output
    )


def test_compare_refuses_a_release_as_raw(tmp_path: Path) -> None:
    release = _folder(tmp_path / "release", release=True)
    result = CliRunner().invoke(cli, ["compare", str(release), str(release), "-o", str(tmp_path / "c")])
    assert result.exit_code == 1
    assert (
        result.output == "Error: raw: holds ranges (age_min or wt_min); expected exact values (age_years)\n"
    )


@pytest.mark.parametrize("command", ["signals", "compare"])
def test_help(command: str) -> None:
    result = CliRunner().invoke(cli, [command, "--help"])
    assert result.exit_code == 0
    assert "Example: faers-anon " + command in result.output


def test_signals_all_measures_store_the_prior(tmp_path: Path) -> None:
    data = _folder(tmp_path / "raw", release=False)
    out = tmp_path / "signals.parquet"
    result = CliRunner().invoke(
        cli,
        ["signals", str(data), "-o", str(out), "--measures", "all", "--stratify", "sex",
         "--ebgm-prior", "0.2,0.1,2,4,0.3"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "EBGM prior (given): alpha1=0.2 beta1=0.1 alpha2=2 beta2=4 p=0.3" in result.output
    stored = json.loads(pl.read_parquet_metadata(out)["ebgm_prior"])
    assert stored == {"alpha1": 0.2, "beta1": 0.1, "alpha2": 2.0, "beta2": 4.0, "p": 0.3}
    frame = pl.read_parquet(out)
    assert {"ebgm", "eb05", "eb95", "fisher_p", "fisher_q", "ror_mh", "breslow_day_p"} <= set(frame.columns)
    # X-NAUSEA over sex F (cases 1: X+N; 4: Y+R) and M (2, 3: X+N): no stratum has b*c > 0, so MH
    # is corrected; it stays finite and the pair's crude table (3, 0, 0, 1) too
    overall = frame.filter((pl.col("stratum") == "all") & (pl.col("drug") == "X")).row(0, named=True)
    assert overall["ror_mh_corrected"] is True and overall["ror_mh"] > 1


def test_signals_default_has_no_prior_metadata(tmp_path: Path) -> None:
    data = _folder(tmp_path / "raw", release=False)
    out = tmp_path / "signals.parquet"
    assert CliRunner().invoke(cli, ["signals", str(data), "-o", str(out)]).exit_code == 0
    assert "ebgm_prior" not in pl.read_parquet_metadata(out)
    assert "ebgm" not in pl.read_parquet(out).columns


def test_bad_ebgm_prior_is_one_error_line(tmp_path: Path) -> None:
    data = _folder(tmp_path / "raw", release=False)
    result = CliRunner().invoke(
        cli,
        ["signals", str(data), "-o", str(tmp_path / "s.parquet"), "--measures", "all", "--ebgm-prior", "1,2"],
    )
    assert result.exit_code == 1
    assert result.output == "Error: ebgm prior: expected 5 numbers alpha1,beta1,alpha2,beta2,p; got '1,2'\n"


def test_ebgm_prior_without_all_measures_is_refused(tmp_path: Path) -> None:
    data = _folder(tmp_path / "raw", release=False)
    out = tmp_path / "s.parquet"
    result = CliRunner().invoke(cli, ["signals", str(data), "-o", str(out), "--ebgm-prior", "1,1,2,2,0.5"])
    assert result.exit_code == 1 and not out.exists()
    assert result.output == "Error: ebgm_prior needs measures 'all' (EBGM is not computed otherwise)\n"
