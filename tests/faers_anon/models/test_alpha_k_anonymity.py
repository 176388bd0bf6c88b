"""(α,k)-anonymity: ≥ k rows and row shares ≤ α, own values only, reports as units (hand-worked)."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from faers_anon.anonymize.pipeline import AnonymizeConfig, anonymize_folder
from faers_anon.errors import ConfigError
from faers_anon.models import AlphaKAnonymity, CaseStats, GroupStats
from faers_anon.verify.verifier import verify_release


def _rows(with_s: int, without: int) -> GroupStats:
    return GroupStats.of(
        [CaseStats(i, sensitive={"S": 1.0}) for i in range(with_s)]
        + [CaseStats(100 + i) for i in range(without)]
    )


def test_share_bound_on_rows() -> None:
    model = AlphaKAnonymity(k=5, thetas={"S": 0.4})
    assert model.is_valid(_rows(2, 3))  # 2 of 5 rows = 0.4
    assert not model.is_valid(_rows(3, 3))  # 3 of 6 = 0.5
    assert not model.is_valid(_rows(1, 3))  # 4 rows < k
    assert not AlphaKAnonymity(k=5, thetas={"S": 0.3}).is_valid(_rows(2, 3))
    assert AlphaKAnonymity(k=5, thetas={}).is_valid(_rows(5, 0))  # unlisted values are unbounded


def test_risk_is_the_eta_ratio_with_alpha() -> None:
    # k = 5, α = 0.4: η = ⌊max(5, 4 + 1) · 0.4⌋ = 2. With σ = 1: PR = 1 + 1 / (2 − 1) = 2.
    model = AlphaKAnonymity(k=5, thetas={"S": 0.4})
    candidate = CaseStats(9, sensitive={"S": 1.0})
    assert model.risk(_rows(1, 3), candidate) == 2.0
    assert math.isinf(model.risk(_rows(2, 2), candidate))  # σ + 1 = 3 > η = 2
    assert model.risk(_rows(2, 2), CaseStats(9)) == 1.0
    req = model.requirements()
    assert (req.size_unit, req.cap_unit, req.unit, req.knowledge, req.risk) == (
        "rows",
        "rows",
        "reports",
        False,
        "eta",
    )
    assert dict(req.thetas) == {"S": 0.4}


def test_alpha_outside_unit_interval_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"alpha must be in \(0, 1\]"):
        AlphaKAnonymity(k=5, thetas={"S": 0.0})


def test_verifier_alpha_rule_catches_a_tighter_bound(small_ingested: Path, tmp_path: Path) -> None:
    config = AnonymizeConfig(model="alpha-k-anonymity", k=3, theta=0.5, on_infeasible="raise-theta", seed=1)
    anonymize_folder(small_ingested, tmp_path / "r", config=config)
    assert verify_release(tmp_path / "r").ok
    thresholds = pl.read_csv(tmp_path / "r" / "thresholds.csv")
    # A bound of 0.01 on every value: any group whose rows carry a value breaks it.
    thresholds.with_columns(pl.lit(0.01).alias("theta")).write_csv(tmp_path / "r" / "thresholds.csv")
    verdict = verify_release(tmp_path / "r", check_hashes=False)
    alpha = verdict.violations.filter(pl.col("rule") == "alpha")
    assert not verdict.ok and alpha.height > 0
    assert alpha["detail"].str.contains(r"^share\(.+\) = [0-9.]+ > alpha 0\.01$").all()
