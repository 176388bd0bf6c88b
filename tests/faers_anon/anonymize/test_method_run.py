"""Issue 8: every comparison method is a release mode of `faers-anon anonymize` and `faers-anon release`."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from faers_anon.anonymize import method_run as method_release
from faers_anon.anonymize.method_run import RELEASE_METHODS
from faers_anon.anonymize.pipeline import AnonymizeConfig
from faers_anon.cli import cli
from faers_anon.io.ingest import ingest_quarters
from faers_anon.release.manifest import read_manifest
from faers_anon.synthetic import make_quarter, write_quarter
from faers_anon.verify.methods import diverse_at_least, kl_violations
from faers_anon.verify.verifier import verify_release

FIGURE = {
    "ra": "probabilistic_anonymity",
    "enhanced-ra": "probabilistic_anonymity",
    "kl-anonymity": "l_achieved",
    "meds": "swap_disclosure",
    "mews": "swap_disclosure",
}


@pytest.fixture(scope="module")
def quarter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("q") / "quarter"
    write_quarter(make_quarter(300, seed=21, quarter="2024Q3"), folder)
    return folder


@pytest.fixture(scope="module")
def ingested(quarter: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ingested") / "ingested"
    ingest_quarters([quarter], out)
    return out


def _release(quarter: Path, out: Path, *flags: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["release", str(quarter), "-o", str(out), "--seed", "4", *flags])
    return result.exit_code, result.output


@pytest.mark.parametrize("name", [m for m in RELEASE_METHODS if m != "disassociation"])  # own test file
def test_release_with_each_method_is_verified_and_recorded(name: str, quarter: Path, tmp_path: Path) -> None:
    code, output = _release(quarter, tmp_path / "rel", "--method", name)
    assert code == 0, output
    verdict = verify_release(tmp_path / "rel")
    assert verdict.ok, verdict.summary()
    params = (read_manifest(tmp_path / "rel") or {})["parameters"]
    assert params["method"] == name and "model" not in params
    assert params["method_parameters"]["method"] == name
    assert isinstance(params["method_privacy"][FIGURE[name]], int | float)
    report = json.loads((tmp_path / "rel" / "report.json").read_text(encoding="utf-8"))
    assert report["privacy"]["method"] == name and report["privacy"]["model"] is None
    assert report["privacy"]["method_privacy"][FIGURE[name]] == pytest.approx(
        params["method_privacy"][FIGURE[name]]
    )
    assert report["privacy"]["dr"] == pytest.approx(verdict.dr)
    assert "survival_overall" in report["signals"] and report["signals"]["panel_rules"] > 0
    if name == "kl-anonymity":
        assert params["k"] == 5 and verdict.k == 5 and "(k=5, l=2)-anonymity" in output
        assert int(verdict.group_sizes["size"].min()) >= 5  # type: ignore[arg-type]
    else:
        assert "k" not in params and "no group-size guarantee" in verdict.label
        # a point release: every released age is a point
        demo = pl.read_parquet(tmp_path / "rel" / "parquet" / "demo.parquet")
        assert demo.filter(pl.col("age_min") != pl.col("age_max")).height == 0


def _cut_one_case(release: Path) -> None:
    """Give one case of a smallest group a QID tuple of its own: that group drops below k."""
    path = release / "parquet" / "demo.parquet"
    demo = pl.read_parquet(path)
    qids = ["age_group", "age_min", "age_max", "sex", "wt_min", "wt_max"]
    sizes = demo.group_by(qids).agg(pl.col("caseid").n_unique().alias("n")).sort("n")
    small = sizes.row(0, named=True)
    victim = demo.join(sizes.head(1).drop("n"), on=qids, nulls_equal=True)["caseid"].min()
    assert small["n"] == 5
    demo.with_columns(
        pl.when(pl.col("caseid") == victim).then(pl.lit(777.0)).otherwise(pl.col("wt_min")).alias("wt_min"),
        pl.when(pl.col("caseid") == victim).then(pl.lit(778.0)).otherwise(pl.col("wt_max")).alias("wt_max"),
    ).write_parquet(path)


def test_anonymize_command_with_kl_and_a_tampered_release_is_rejected(ingested: Path, tmp_path: Path) -> None:
    out = tmp_path / "kl"
    result = CliRunner().invoke(cli, ["anonymize", str(ingested), "-o", str(out), "--method", "kl-anonymity"])
    assert result.exit_code == 0, result.output
    assert "kl-anonymity:" in result.output  # the method's own summary line
    assert verify_release(out).ok
    _cut_one_case(out)
    verdict = verify_release(out, check_hashes=False)
    assert not verdict.ok
    k_rows = verdict.violations.filter(pl.col("rule") == "k")
    assert k_rows.height == 2  # the cut group (4 cases) and the lone case (1)
    assert sorted(k_rows["detail"].to_list()) == ["1 distinct cases < k = 5", "4 distinct cases < k = 5"]
    cli_result = CliRunner().invoke(cli, ["verify", str(out)])
    assert cli_result.exit_code == 1 and "fails (k=5, l=2)-anonymity" in cli_result.output


def test_a_method_release_failing_its_check_is_not_published(
    quarter: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = method_release.released_groups

    def cut(frame: pl.DataFrame) -> pl.DataFrame:
        frame = real(frame)
        victim = frame["caseid"].min()
        shifted = frame.with_columns(
            pl.when(pl.col("caseid") == victim).then(pl.lit(999.0)).otherwise(pl.col(c)).alias(c)
            for c in ("wt_min", "wt_max")
        )
        return real(shifted)

    monkeypatch.setattr(method_release, "released_groups", cut)
    code, output = _release(quarter, tmp_path / "rel", "--method", "kl-anonymity")
    assert code == 1 and "nothing was published" in output
    assert not (tmp_path / "rel").exists()


@pytest.mark.parametrize("command", ["release", "anonymize"])
def test_method_and_model_together_is_one_error_line(command: str, ingested: Path, tmp_path: Path) -> None:
    source = "--demo" if command == "release" else str(ingested)
    args = [command, source, "-o", str(tmp_path / "x"), "--method", "ra", "--model", "k-anonymity"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and "--method ra" in lines[0]
    assert "--model k-anonymity" in lines[0] and not (tmp_path / "x").exists()


def test_unknown_method_lists_the_methods(ingested: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["anonymize", str(ingested), "-o", str(tmp_path / "x"), "--method", "nope"]
    )
    assert result.exit_code == 1
    line = result.output.strip()
    assert "\n" not in line and line.startswith("Error:") and "'nope'" in line
    assert all(name in line for name in RELEASE_METHODS)


def test_method_parameters_replace_the_model() -> None:
    assert "method" not in AnonymizeConfig().parameters()  # model releases keep their manifest
    params = AnonymizeConfig(method="meds").parameters()
    assert params["method"] == "meds" and "model" not in params
    assert method_release.method_config("kl-anonymity", AnonymizeConfig(k=3, method="kl-anonymity")).k == 3
    assert method_release.method_config("enhanced-ra", AnonymizeConfig(k=7, method="enhanced-ra")).k == 2


def test_diverse_at_least_hand_worked() -> None:
    # Fewest values first takes {1,2} and then {30,31,32}: 2. The three 3-sets are pairwise disjoint.
    sets = [[1, 2], [1, 10, 11], [2, 20, 21], [30, 31, 32]]
    assert diverse_at_least(sets, 2) is True
    assert diverse_at_least(sets, 3) is True  # found only by the exhaustive search
    assert diverse_at_least(sets, 4) is False
    assert diverse_at_least(sets, 4, limit=2) is None  # cut short: undecided, never a pass
    assert diverse_at_least([[], [], [5]], 3) is True  # an empty set shares nothing


def test_kl_rule_hand_worked() -> None:
    # group 0: {A}, {A, B}, {b } → {A} and {B} are completely different (2); group 1: {C}, {c}: 1.
    indi = pl.DataFrame(
        {"caseid": ["1", "2", "2", "3", "4", "5"], "indi_pt": ["A", "A", "B", "b ", "C", "c"]}
    )
    reac = pl.DataFrame({"caseid": ["3"], "pt": [None]}, schema={"caseid": pl.String, "pt": pl.String})

    def read(table: str, columns: list[str]) -> pl.LazyFrame:
        return {"indi": indi, "reac": reac}[table].lazy().select(columns)

    members = pl.DataFrame({"caseid": ["1", "2", "3", "4", "5"], "group": [0, 0, 0, 1, 1]})
    found = kl_violations(read, members, l_value=2, lists=["indications", "reactions"])
    assert found["group"].to_list() == [1]
    assert found["detail"][0] == "fewer than l = 2: no 2 completely different cases among 2"
    assert kl_violations(read, members, l_value=3, lists=["indications"])["group"].to_list() == [0, 1]
