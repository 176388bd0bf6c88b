"""Shared properties of every registered model (STYLE §10): run through the engine, compared to Python."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from faers_anon.algorithms import QidHierarchies, greedy_cluster
from faers_anon.errors import ConfigError
from faers_anon.models import MODELS, CaseStats, GroupModel, GroupStats, make_model

THETAS = {"A": 0.5, "B": 0.4, "C": 0.6}


def _quarter(seed: int, n: int = 80) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 90, n).astype(float)
    wt = np.where(rng.random(n) < 0.3, np.nan, rng.integers(10, 120, n).astype(float))
    cases = pl.DataFrame(
        {
            "caseid": np.arange(n) + 1,
            "n_reports": rng.integers(1, 3, n),
            "age_min": age,
            "age_max": age,
            "sex": rng.choice(["F", "M"], n).tolist(),
            "wt_min": wt,
            "wt_max": wt,
        }  # fmt: skip
    ).with_columns(pl.col("wt_min", "wt_max").fill_nan(None))
    mask = rng.random((n, 3)) < 0.3
    cid, which = np.nonzero(mask)
    probs = pl.DataFrame(
        {"caseid": cid + 1, "value": np.array(["A", "B", "C"])[which], "p": np.ones(cid.size)}
    )
    return cases, probs


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_runs_deterministically_and_agrees_with_its_python_check(name: str) -> None:
    model: GroupModel = make_model(name, k=3, thetas=THETAS)
    assert isinstance(model, GroupModel) and model.name == name
    json.dumps(model.describe())
    cases, probs = _quarter(1)
    runs = [
        greedy_cluster(
            cases,
            probabilities=probs,
            model=model,
            hierarchies=QidHierarchies.default(),
            rng=np.random.default_rng(5),
        )  # fmt: skip
        for _ in range(2)
    ]
    assert runs[0].frame.equals(runs[1].frame)
    stats = {
        cid: CaseStats(cid, int(rows), {}) for cid, rows in cases.select("caseid", "n_reports").iter_rows()
    }
    for (cid,), frame in probs.group_by("caseid"):
        stats[cid] = CaseStats(cid, stats[cid].rows, dict(zip(frame["value"], frame["p"], strict=True)))
    invalid = 0
    for (_,), members in runs[0].frame.group_by("group_id"):
        group = GroupStats.of(stats[c] for c in members["caseid"])
        invalid += not model.is_valid(group)
    assert invalid == runs[0].invalid_groups


def test_unknown_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown model 'nope'"):
        make_model("nope", k=2, thetas={})
