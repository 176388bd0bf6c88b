"""report.json records each side's fitted MGPS prior, and ``--ebgm-prior`` given it re-scores exactly."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from faers_anon.cli import cli
from faers_anon.io.ingest import demo_source
from faers_anon.release.config import build_release_config
from faers_anon.release.pipeline import release
from faers_anon.release.report_figures import prior_option
from faers_anon.release.result import ReleaseResult
from signals import OVERALL, GammaMixture
from signals.ebgm import DEFAULT_PRIOR

_KEYS = ["stratum", "reading", "drug", "event"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ReleaseResult]:
    folder = tmp_path_factory.mktemp("prior")
    config = build_release_config(flag_options={"theta": 0.4, "seed": 3})
    return folder, release([demo_source()], folder / "release", config=config)


def _rescored(data: Path, prior: str, out: Path) -> pl.DataFrame:
    """``faers-anon signals DATA --measures all --ebgm-prior PRIOR``: the overall stratum's EBGM."""
    result = CliRunner().invoke(
        cli,
        ["signals", str(data), "-o", str(out), "--measures", "all", "--min-a", "3", "--ebgm-prior", prior],
    )
    assert result.exit_code == 0, result.output
    return pl.read_parquet(out).filter(pl.col("stratum") == OVERALL.label).select(*_KEYS, "ebgm")


def test_prior_option_is_exact_and_read_back() -> None:
    prior = GammaMixture(alpha1=2.2742911e-05, beta1=0.1 + 0.2, alpha2=1.4, beta2=1 / 3, p=0.99786)
    text = prior_option(prior)
    assert text == "2.2742911e-05,0.30000000000000004,1.4,0.3333333333333333,0.99786"
    assert GammaMixture.parse(text) == prior  # every bit comes back
    assert prior_option(None) is None


def test_report_records_both_fitted_priors(demo: tuple[Path, ReleaseResult]) -> None:
    folder, result = demo
    recorded = json.loads((folder / "release" / "report.json").read_text())["signals"]["ebgm_prior"]
    assert set(recorded) == {"raw", "release"}
    assert GammaMixture.parse(recorded["raw"]) == result.comparison.raw.ebgm_prior
    assert GammaMixture.parse(recorded["release"]) == result.comparison.release.ebgm_prior
    # the fitted ones, not the fallback; the demo's overall pairs are the same on both sides (the
    # anonymizer generalizes QIDs, never a drug or an event), so are the two fits
    assert recorded["release"] == recorded["raw"] != prior_option(DEFAULT_PRIOR)


@pytest.mark.parametrize("side", ["raw", "release"])
def test_recorded_prior_rescores_the_release_exactly(demo: tuple[Path, ReleaseResult], side: str) -> None:
    folder, result = demo
    recorded = json.loads((folder / "release" / "report.json").read_text())["signals"]["ebgm_prior"]
    if side == "raw":
        ingested = folder / "ingested"
        assert CliRunner().invoke(cli, ["ingest", "--demo", "-o", str(ingested)]).exit_code == 0
        data, table = ingested, result.comparison.raw
    else:
        data, table = folder / "release", result.comparison.release
    rescored = _rescored(data, recorded[side], folder / f"{side}.parquet")
    scored = table.frame.filter(pl.col("stratum") == OVERALL.label).select(*_KEYS, "ebgm")
    assert rescored.height == scored.height > 0
    both = scored.join(rescored, on=_KEYS, how="full", suffix="_again", nulls_equal=True)
    assert both.height == scored.height
    assert (both.get_column("ebgm") == both.get_column("ebgm_again")).all()  # bit for bit, not close
