"""faers-anon evaluate end to end on a small synthetic quarter: CSV, figures, page, consistency, CLI."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from faers_anon import api
from faers_anon.anonymize.pipeline import AnonymizeConfig, anonymize_folder
from faers_anon.cli import cli
from faers_anon.errors import ConfigError
from faers_anon.evaluate.pipeline import CORE_COLUMNS, EvaluateConfig, EvaluationResult
from faers_anon.io.column_policy import DEFAULT_POLICY
from faers_anon.io.ingest import ingest_quarters
from faers_anon.io.workspace import PREFIX
from faers_anon.models import MODELS
from faers_anon.synthetic import make_quarter, write_quarter
from faers_anon.verify.verifier import verify_release

CONFIG = EvaluateConfig(ks=(3,), thetas=(0.4,), methods=("ra", "kl-anonymity"), seed=2)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_quarter(make_quarter(220, seed=5), tmp_path_factory.mktemp("raw"), zip=True)


@pytest.fixture(scope="module")
def evaluated(source: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[EvaluationResult, list[str]]:
    lines: list[str] = []
    result = api.evaluate([source], tmp_path_factory.mktemp("evaluate") / "out", config=CONFIG,
                          progress=lines.append)  # fmt: skip
    return result, lines


@pytest.fixture(scope="module")
def ingested(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same quarter ingested apart (evaluate's own ingest is removed with its work folder)."""
    out = tmp_path_factory.mktemp("ingested") / "ingested"
    ingest_quarters([source], out)
    return out


def _one_report_per_case(tables: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """The quarter with each case's last DEMO row only (and the child rows of the kept reports)."""
    demo = tables["DEMO"].unique("caseid", keep="last", maintain_order=True)
    kept = demo.get_column("primaryid").implode()
    return {
        name: frame if name in ("DEMO", "DELETE") else frame.filter(pl.col("primaryid").is_in(kept))
        for name, frame in tables.items()
    } | {"DEMO": demo}


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> tuple[EvaluationResult, Path]:
    """The quarter of ``source`` with one report per case: evaluated, and ingested apart. A release splits
    cases by their number of reports (anonymize/versions.py: a released field, issue 18), the paper's
    setting does not; with one report each there is one count, and the two runs must agree exactly."""
    root = tmp_path_factory.mktemp("single")
    raw = write_quarter(_one_report_per_case(make_quarter(220, seed=5)), root / "raw", zip=True)
    config = EvaluateConfig(
        ks=(3,), thetas=(0.4,), models=("ms-k-theta", "k-anonymity"), methods=("ra", "kl-anonymity"), seed=2
    )
    result = api.evaluate([raw], root / "out", config=config)
    ingest_quarters([raw], root / "ingested")
    return result, root / "ingested"


def test_the_raw_tables_never_sit_in_out(evaluated: tuple[EvaluationResult, list[str]]) -> None:
    """The zip is ingested into a private work folder removed at the end, as a release does (issue 13)."""
    result = evaluated[0]
    assert sorted(p.name for p in result.out.iterdir()) == [
        "evaluation.html", "figures", "options.json", "results.csv"
    ]  # fmt: skip
    assert not list(result.out.rglob("*.parquet"))
    work = result.quarters[0][1]
    assert work.parent.name.startswith(PREFIX + "evaluate-") and not work.parent.exists()
    assert result.out not in work.parents


def test_one_row_per_quarter_model_k_setting_theta(evaluated: tuple[EvaluationResult, list[str]]) -> None:
    result, lines = evaluated
    rows = pl.read_csv(result.out / "results.csv")
    assert rows.columns[: len(CORE_COLUMNS)] == list(CORE_COLUMNS)
    assert "probabilistic_anonymity" in rows.columns  # RA's own privacy figure
    kl = rows.filter(pl.col("model") == "kl-anonymity")
    assert kl.height == 3 and (kl["k"] == 3).all()
    # (k,l)-anonymity's own k_achieved and groups keep their values under method_ names, beside ours.
    assert (
        (kl["method_k_achieved"] >= 3).all() and (kl["k_achieved"] >= 3).all() and "l_achieved" in kl.columns
    )
    keys = ["quarter", "model", "k", "theta_setting", "theta"]
    assert rows.select(keys).is_duplicated().sum() == 0
    models = rows.filter(pl.col("kind") == "model")
    assert models.height == len(MODELS) * 3 and set(models["model"]) == set(MODELS)
    assert set(models["theta_setting"]) == {"uniform", "level", "frequency"}
    assert (
        rows.filter(pl.col("model") == "ra").height == 3
        and rows.filter(pl.col("model") == "ra")["k"].is_null().all()
    )
    assert rows["quarter"].unique().to_list() == ["2025Q1"]
    assert sum("ingesting" in line for line in lines) == 1


def test_ms_k_theta_is_never_dangerous_and_the_others_are_measured(
    evaluated: tuple[EvaluationResult, list[str]],
) -> None:
    rows = evaluated[0].rows
    ms = rows.filter(pl.col("model") == "ms-k-theta")
    assert (ms["dr"] == 0.0).all() and (ms["dangerous_groups"] == 0).all()
    assert rows["nil"].is_between(0.0, 1.0).all() and rows["dr"].is_between(0.0, 1.0).all()
    assert (rows.filter(pl.col("kind") == "model")["k_achieved"] >= 3).all()
    units = dict(zip(rows["model"], rows["unit"], strict=False))
    assert units["k-anonymity"] == units["alpha-k-anonymity"] == "reports" and units["ms-k-theta"] == "cases"
    assert (rows["signal_survival"] == 1.0).all()  # the stratum "all" ignores the QIDs
    assert rows["signal_survival_strata"].drop_nulls().is_between(0.0, 1.0).all()
    assert (rows["panel_mean_abs_dprr"] >= 0.0).all() and (rows["panel_raw_signals"] >= 1).all()
    # θ-independent models are run once per k and measured against each setting's θ*.
    k_anon = rows.filter(pl.col("model") == "k-anonymity")
    assert k_anon["nil"].n_unique() == 1 and k_anon["groups"].n_unique() == 1


def test_figures_and_a_self_contained_page(evaluated: tuple[EvaluationResult, list[str]]) -> None:
    out = evaluated[0].out
    names = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert names == sorted(
        [f"nil_{s}_theta0.4.png" for s in ("uniform", "level", "frequency")]
        + [f"dr_{s}.png" for s in ("uniform", "level", "frequency")]
    )
    assert all((out / "figures" / n).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for n in names)
    page = (out / "evaluation.html").read_text(encoding="utf-8")
    assert page.count("src='data:image/png;base64,") == len(names)
    assert not re.search(r"src=['\"](?!data:)", page) and "ms-k-theta" in page


def test_rows_agree_with_anonymize_and_the_verifier(
    single: tuple[EvaluationResult, Path], tmp_path: Path
) -> None:
    result, ingested = single
    rows = result.rows.filter(pl.col("theta_setting") == "uniform")
    # evaluate is the paper's setting: QIDs age, sex, weight only; no value classes, OUTC unbounded
    # (issue 18's defaults are switched off: the other DEMO qids dropped, an empty class file)
    fields = DEFAULT_POLICY.field_qids()
    (tmp_path / "paper.csv").write_text("table,column,role\n" + "".join(f"demo,{c},drop\n" for c in fields))
    (tmp_path / "none.csv").write_text("value,class,theta\n")
    for model in ("ms-k-theta", "k-anonymity"):
        config = AnonymizeConfig(
            model=model, k=3, theta=0.4, on_infeasible="raise-theta", seed=2,
            column_policy=tmp_path / "paper.csv", classes=tmp_path / "none.csv", protect_outcomes=False,
            outcome_strata=False,
        )  # fmt: skip
        done = anonymize_folder(ingested, tmp_path / model, config=config)
        row = rows.filter(pl.col("model") == model).row(0, named=True)
        assert row["nil"] == pytest.approx(done.nil, abs=1e-12)
        verdict = verify_release(tmp_path / model)
        assert verdict.ok and row["dr"] == pytest.approx(verdict.dr, abs=1e-12)
        assert row["groups"] == verdict.n_groups
        # one metrics path: the row's figures are the run's own (metrics.measure)
        assert (row["dr"], row["groups"], row["dangerous_groups"]) == (
            done.dr, done.measures.groups, done.measures.dangerous_groups
        )  # fmt: skip
    for method in ("ra", "kl-anonymity"):  # a method's row: as `anonymize --method` measures it
        config = AnonymizeConfig(k=3, theta=0.4, on_infeasible="raise-theta", seed=2, method=method,
                                 column_policy=tmp_path / "paper.csv")  # fmt: skip
        done = anonymize_folder(ingested, None, config=config)
        row = rows.filter(pl.col("model") == method).row(0, named=True)
        assert (row["nil"], row["dr"], row["groups"]) == (done.nil, done.dr, done.measures.groups)


def test_ingested_folders_are_used_as_they_are(ingested: Path, tmp_path: Path) -> None:
    lines: list[str] = []
    config = EvaluateConfig(
        models=("xy-anonymity",), ks=(4,), thetas=(0.5,), settings=("uniform",), signals=False
    )
    again = api.evaluate([ingested, ingested], tmp_path / "again", config=config, progress=lines.append)
    assert again.rows.height == 2 and not any("ingesting" in line for line in lines)
    assert again.rows["signal_survival"].is_null().all()
    assert again.quarters == (("2025Q1", ingested), ("2025Q1#2", ingested))  # same quarter twice: told apart
    assert again.rows["nil"].n_unique() == 1  # same data, same seed, same partition


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"models": ("nope",)}, "model: unknown 'nope'"),
        ({"methods": ("nope",)}, "method: unknown 'nope'"),
        ({"ks": (1,)}, "k must be integers >= 2"),
        ({"thetas": (0.0,)}, r"theta must be numbers in \(0, 1\]"),
        ({"settings": ("weekly",)}, "theta setting: unknown 'weekly'"),
        ({"models": (), "methods": ()}, "no model and no method"),
        ({"on_infeasible": "ignore"}, "on_infeasible: unknown 'ignore'"),
    ],
)
def test_invalid_options_are_config_errors(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        EvaluateConfig(**options)  # type: ignore[arg-type]


def test_cli_happy_path_mistakes_and_help(ingested: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    args = [
        "--models",
        "k-anonymity",
        "--k",
        "3",
        "--theta",
        "0.4",
        "--theta-setting",
        "uniform",
        "--no-signals",
    ]
    done = runner.invoke(cli, ["evaluate", str(ingested), "-o", str(tmp_path / "e"), *args])
    assert done.exit_code == 0, done.output
    assert (
        "evaluated 1 quarter(s) (2025Q1): 1 rows" in done.output
        and (tmp_path / "e" / "results.csv").is_file()
    )
    bad = runner.invoke(cli, ["evaluate", str(ingested), "-o", str(tmp_path / "f"), "--models", "nope"])
    assert bad.exit_code == 1 and bad.output.strip().splitlines()[-1].startswith(
        "Error: model: unknown 'nope'"
    )
    assert "Traceback" not in bad.output
    numbers = runner.invoke(cli, ["evaluate", str(ingested), "-o", str(tmp_path / "g"), "--k", "five"])
    assert numbers.exit_code == 1 and "expected comma-separated integers" in numbers.output
    helped = runner.invoke(cli, ["evaluate", "--help"])
    assert helped.exit_code == 0 and "--theta-setting" in helped.output and "Example:" in helped.output


def test_complete_qids_keeps_the_cases_without_missing_values(ingested: Path, tmp_path: Path) -> None:
    reports = pl.read_parquet(ingested / "reports.parquet")
    gaps = reports.filter(pl.any_horizontal(pl.col(c).is_null() for c in ("age_years", "sex", "weight_kg")))
    complete = reports["caseid"].n_unique() - gaps["caseid"].n_unique()
    models = ("xy-anonymity", "k-anonymity")
    config = EvaluateConfig(
        models=models, ks=(2,), thetas=(0.5,), settings=("uniform",), signals=False, complete_qids=True
    )
    rows = api.evaluate([ingested], tmp_path / "complete", config=config).rows
    units = dict(zip(rows["model"], rows["n_units"], strict=True))
    kept = reports.join(gaps.select("caseid"), on="caseid", how="anti")
    assert 0 < complete < reports["caseid"].n_unique()
    assert units == {"xy-anonymity": complete, "k-anonymity": kept.height}
