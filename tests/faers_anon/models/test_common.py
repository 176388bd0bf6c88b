"""Shared properties of every registered model (STYLE §10), each fed the way its requirements say.

* the engine's validity bookkeeping agrees with the model's own Python check on every group;
* the same seed gives the same partition;
* a model that merges cases puts all reports of a case in one group; a report-unit model has one
  partition row per report;
* the verifier's own check for the model (manifest ``parameters.model``) accepts the written release;
* ``describe()`` is JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from faers_anon.algorithms import QidHierarchies, greedy_cluster
from faers_anon.algorithms.mondrian import mondrian
from faers_anon.anonymize.pipeline import AnonymizeConfig, anonymize_folder
from faers_anon.errors import ConfigError
from faers_anon.models import MODELS, CaseStats, GroupModel, GroupStats, make_model
from faers_anon.verify.verifier import verify_release

VALUES = [f"indications:I{i}" for i in range(6)] + [f"reactions:R{i}" for i in range(6)]
THETAS = {"indications:I0": 0.5, "reactions:R1": 0.4, "indications:I2": 0.6}
QIDS = ["age_group", "age_min", "age_max", "sex", "wt_min", "wt_max"]


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
    mask = rng.random((n, len(VALUES))) < 0.25
    cid, which = np.nonzero(mask)
    probs = pl.DataFrame({"caseid": cid + 1, "value": np.array(VALUES)[which], "p": np.ones(cid.size)})
    return cases, probs


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_runs_deterministically_and_agrees_with_its_python_check(name: str) -> None:
    model: GroupModel = make_model(name, k=3, thetas=THETAS)
    assert isinstance(model, GroupModel) and model.name == name
    json.dumps(model.describe())
    engine = mondrian if model.requirements().algorithm == "mondrian" else greedy_cluster
    cases, probs = _quarter(1)
    runs = [
        engine(
            cases,
            probabilities=probs,
            model=model,
            hierarchies=QidHierarchies.default(),
            rng=np.random.default_rng(5),
        )  # fmt: skip
        for _ in range(2)
    ]
    assert runs[0].frame.equals(runs[1].frame)
    assert runs[0].frame.height == cases.height and runs[0].groups > 1
    stats = {
        cid: CaseStats(cid, int(rows), {}) for cid, rows in cases.select("caseid", "n_reports").iter_rows()
    }
    for (cid,), frame in probs.group_by("caseid"):
        stats[cid] = CaseStats(cid, stats[cid].rows, dict(zip(frame["value"], frame["p"], strict=True)))
    invalid = 0
    for (_,), members in runs[0].frame.group_by("group_id"):
        group = GroupStats.of(stats[c] for c in members["caseid"])
        invalid += not model.is_valid(group)
    assert invalid == runs[0].invalid_groups == 0


@pytest.mark.parametrize("name", sorted(MODELS))
def test_release_of_every_model_passes_its_own_verifier(
    name: str, small_ingested: Path, tmp_path: Path
) -> None:
    config = AnonymizeConfig(model=name, k=3, theta=0.5, on_infeasible="raise-theta", seed=4)
    first = anonymize_folder(small_ingested, tmp_path / "release", config=config)
    again = anonymize_folder(small_ingested, None, config=config)
    assert first.partition.frame.equals(again.partition.frame)
    frame = first.partition.frame
    reports = pl.read_parquet(small_ingested / "reports.parquet")
    demo = pl.read_parquet(tmp_path / "release" / "parquet" / "demo.parquet")
    tuples_per_case = demo.group_by("caseid").agg(pl.struct(QIDS).n_unique().alias("n"))["n"]
    if make_model(name, k=3, thetas={}).requirements().unit == "cases":
        assert frame.height == frame["caseid"].n_unique() == reports["caseid"].n_unique()
        assert tuples_per_case.max() == 1
    else:
        assert frame.height == frame["primaryid"].n_unique() == reports.height
        assert set(frame["caseid"]) == set(reports["caseid"])
    verdict = verify_release(tmp_path / "release")
    assert verdict.model == name and verdict.k == 3
    assert verdict.ok, verdict.summary()
    assert json.loads((tmp_path / "release" / "manifest.json").read_text())["parameters"]["model"] == name


def test_unknown_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown model 'nope'"):
        make_model("nope", k=2, thetas={})


@pytest.mark.parametrize("name", sorted(MODELS))
def test_k_below_two_is_a_config_error(name: str) -> None:
    with pytest.raises(ConfigError, match=r"must be an integer >= 2; got 1"):
        make_model(name, k=1, thetas={})
