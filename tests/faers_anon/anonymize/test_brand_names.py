"""P(s | c) reads every published drug column through E on every path (SPEC §11; issue 18 item 4).

The demo quarter's E (mined from INDI × DRUG) reaches diseases through verbatim brand names and
active ingredients that are not any case's ``drug_key``. With a column policy publishing ``drugname``
and ``prod_ai``, the verifier reads them through E; the method path and the series step must too.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from faers_anon import api
from faers_anon.anonymize.inputs import (
    knowledge_table,
    published_drug_names,
    read_table,
    sensitive_thresholds,
    with_drug_names,
)
from faers_anon.anonymize.pipeline import AnonymizeConfig
from faers_anon.anonymize.value_classes import read_classes, read_outcomes
from faers_anon.io.column_policy import load_policy
from faers_anon.io.ingest import IngestConfig
from faers_anon.series.step import _release_inputs
from faers_anon.verify.verifier import verify_release

BRANDS = "table,column,role,why\ndrug,drugname,keep,brand names\ndrug,prod_ai,keep,ingredients\n"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("brands")
    ingested = api.ingest([], root / "ingested", config=IngestConfig(demo=True)).out
    policy = root / "brands.csv"
    policy.write_text(BRANDS, encoding="utf-8")
    return ingested, policy


def _raised_values(ingested: Path, config: AnonymizeConfig) -> set[str]:
    """Values whose P(s | c) some case reaches higher through a published brand name or ingredient."""
    cases = read_table(ingested / "cases.parquet")
    knowledge = knowledge_table(ingested, sensitive=config.sensitive, knowledge=None)
    plain, _ = sensitive_thresholds(cases, knowledge, config=config)
    names = published_drug_names(ingested, load_policy(config.column_policy))
    branded, _ = sensitive_thresholds(with_drug_names(cases, names), knowledge, config=config)
    joined = branded.join(plain, on=["caseid", "value"], how="left", suffix="_plain")
    return set(joined.filter(pl.col("p") > pl.col("p_plain").fill_null(0.0))["value"])


def test_the_demo_reaches_values_through_brand_names(demo: tuple[Path, Path]) -> None:
    ingested, policy = demo
    config = AnonymizeConfig(k=5, theta=0.4, on_infeasible="raise-theta", column_policy=policy)
    assert _raised_values(ingested, config)  # the premise of the two tests below


def test_a_method_release_reads_brand_names_like_its_verifier(
    demo: tuple[Path, Path], tmp_path: Path
) -> None:
    """The method path publishes the policy's drug columns and measures DR with them: its DR is the
    verifier's (before: drugname was never published by a method, and θ* ignored it)."""
    ingested, policy = demo
    config = AnonymizeConfig(k=5, theta=0.4, on_infeasible="raise-theta", column_policy=policy, method="meds")
    result = api.anonymize(ingested, tmp_path / "meds", config=config)
    assert {"drugname", "prod_ai"} <= set(
        pl.read_parquet_schema(tmp_path / "meds" / "parquet" / "drug.parquet")
    )
    verdict = verify_release(tmp_path / "meds")
    assert verdict.ok, verdict.violations
    assert result.dr == pytest.approx(verdict.dr, abs=1e-12)


def test_the_series_step_plans_with_the_releases_theta(demo: tuple[Path, Path]) -> None:
    """θ* the series step plans with is the one the model path bounds the release by (brand names read)."""
    ingested, policy = demo
    config = AnonymizeConfig(
        k=5, theta=0.2, theta_rule="frequency", on_infeasible="raise-theta", column_policy=policy
    )  # θ_s = θ + P(s): brand names raise P(s) of the values they reach
    *_, thetas = _release_inputs(ingested, config)
    cases = with_drug_names(
        read_table(ingested / "cases.parquet"), published_drug_names(ingested, load_policy(policy))
    )
    knowledge = knowledge_table(ingested, sensitive=config.sensitive, knowledge=None)
    _, release = sensitive_thresholds(
        cases, knowledge, config=config, classes=read_classes(None), outcomes=read_outcomes(ingested)
    )
    assert thetas == release.thetas
