"""The anonymize step end to end: synthetic quarter → ingest → anonymize → release → verify; the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from faers_anon import api
from faers_anon.anonymize.pipeline import AnonymizeConfig, anonymize_folder, knowledge_table
from faers_anon.cli import cli
from faers_anon.errors import ConfigError, InputError
from faers_anon.io.ingest import ingest_quarters
from faers_anon.synthetic import make_quarter, write_quarter
from faers_anon.verify.verifier import verify_release


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("anon")
    raw = write_quarter(make_quarter(600, seed=3), root / "raw")
    ingest_quarters([raw], root / "ingested")
    return root / "ingested"


def test_release_is_verified_and_metrics_are_consistent(ingested: Path, tmp_path: Path) -> None:
    config = AnonymizeConfig(k=5, theta=0.5, on_infeasible="raise-theta", seed=11)
    result = api.anonymize(ingested, tmp_path / "release", config=config)
    cases = pl.read_parquet(ingested / "cases.parquet")
    assert result.cases == cases.height and result.partition.frame.height == cases.height
    verdict = verify_release(tmp_path / "release")
    assert verdict.k == 5 and verdict.n_cases == cases.height
    assert result.partition.invalid_groups == 0 and result.partition.forced == 0
    assert verdict.ok and result.dr == 0.0
    assert 0.0 < result.nil < 1.0
    assert int(result.group_sizes.get_column("cases").sum()) == cases.height
    manifest = json.loads((tmp_path / "release" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["parameters"]["seed"] == 11 and manifest["parameters"]["k"] == 5
    assert manifest["parameters"]["sensitive"] == ["indications", "reactions"]
    thresholds = pl.read_csv(tmp_path / "release" / "thresholds.csv")
    assert {"value", "theta"} <= set(thresholds.columns)
    assert "NIL" in result.summary() and "DR" in result.summary()


def test_same_seed_same_partition(ingested: Path) -> None:
    config = AnonymizeConfig(k=4, theta=0.6, on_infeasible="suppress", sensitive=("reactions",), seed=2)
    a = anonymize_folder(ingested, None, config=config)
    b = anonymize_folder(ingested, None, config=config)
    assert a.partition.frame.equals(b.partition.frame) and a.release is None
    actions = a.thresholds.frame.get_column("action")
    assert actions.is_in(["protected", "unprotected", "suppressed", "not-sensitive"]).all()
    # reaction terms that name no condition are listed, not silently absent (issue 17)
    fillers = a.thresholds.frame.filter(pl.col("action") == "not-sensitive")
    assert fillers.height >= 1 and (fillers["theta"] == 1.0).all()
    assert (fillers["reason"] == "filler term: names no condition").all()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"k": 1}, "k must be an integer >= 2"),
        ({"theta": 0.0}, r"theta must be in \(0, 1\]"),
        ({"theta_rule": "level"}, "needs a theta file"),
        ({"sensitive": ("drugs",)}, "sensitive"),
        ({"on_infeasible": "ignore"}, "on_infeasible"),
        ({"qids": ()}, "qids"),
        ({"model": "k-anon"}, "unknown 'k-anon'"),
        ({"candidates": 8, "scan_limit": 4}, "scan_limit"),
    ],
)
def test_config_is_validated(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        AnonymizeConfig(**options)  # type: ignore[arg-type]


def test_missing_cases_table(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cases.parquet: missing ingested table"):
        anonymize_folder(tmp_path, None, config=AnonymizeConfig())


def test_cli_happy_path(ingested: Path, tmp_path: Path) -> None:
    out = tmp_path / "rel"
    args = ["anonymize", str(ingested), "-o", str(out), "--k", "5", "--theta", "0.5", "--on-infeasible",
            "raise-theta", "--sensitive", "indications,reactions", "--seed", "4"]  # fmt: skip
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 0, done.output
    assert done.output.startswith("cases ") and f"written to {out}" in done.output
    assert (out / "manifest.json").is_file()
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 1 and again.output.startswith("Error:") and "Traceback" not in again.output
    assert CliRunner().invoke(cli, [*args, "--force"]).exit_code == 0


def test_cli_infeasible_is_one_error_line(ingested: Path, tmp_path: Path) -> None:
    done = CliRunner().invoke(cli, ["anonymize", str(ingested), "-o", str(tmp_path / "r"), "--theta", "0.01"])
    assert done.exit_code == 1
    assert done.output.startswith("Error: infeasible thresholds: ") and done.output.count("\n") == 1


def test_cli_help() -> None:
    done = CliRunner().invoke(cli, ["anonymize", "--help"])
    assert done.exit_code == 0 and "Example: faers-anon anonymize" in done.output
    for option in ("--theta-file", "--theta-rule", "--sensitive", "--knowledge", "--on-infeasible", "--seed"):
        assert option in done.output


def test_a_users_knowledge_table_is_matched_and_covers_combinations(ingested: Path, tmp_path: Path) -> None:
    table = tmp_path / "e.csv"
    table.write_text(
        "drug,disease\n"
        'Metformin,"Diabetes Mellitus, Type 2"\n'  # MeSH inversion of the FAERS term
        "Levodopa,Parkinson Disease\n"
        "Levodopa,Restless Legs Syndrome\n"
    )
    e = knowledge_table(ingested, sensitive=("diseases",), knowledge=table)
    rows = {(d, s): w for d, s, w in e.iter_rows()}
    assert rows[("METFORMIN", "TYPE 2 DIABETES MELLITUS")] == 1.0
    # the combination CARBIDOPA\LEVODOPA of the demo reaches levodopa's diseases (1/|E(d)| each)
    assert rows[("CARBIDOPA\\LEVODOPA", "RESTLESS LEGS SYNDROME")] == 0.5
    assert knowledge_table(ingested, sensitive=("reactions",), knowledge=table).height == 0


def test_the_beside_hook_runs_once_when_a_release_is_written(ingested: Path, tmp_path: Path) -> None:
    # anonymize_folder starts the release's draft and its caller's hook right before the engine, and
    # again after it for a run that reached no hook (a method): the hook itself must run once
    # (before, a release computed what the hook started twice: the raw halves of signals and risk).
    calls: list[int] = []
    anonymize_folder(ingested, tmp_path / "release", config=AnonymizeConfig(k=3),
                     beside=lambda: calls.append(1))  # fmt: skip
    assert calls == [1]
    assert (tmp_path / "release" / "parquet" / "demo.parquet").is_file()
