"""One run() for models and methods, one metrics path (issue 13): what each reports, measured once."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from faers_anon import api
from faers_anon.algorithms.types import QidHierarchies
from faers_anon.anonymize import metrics
from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.inputs import knowledge_table
from faers_anon.anonymize.method_run import method_partition
from faers_anon.anonymize.pipeline import anonymize_folder, run
from faers_anon.io.ingest import ingest_quarters
from faers_anon.io.workspace import PREFIX
from faers_anon.methods import METHODS
from faers_anon.synthetic import make_quarter, write_quarter
from hierarchies import mesh_age_tree, sex_tree


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("run")
    raw = write_quarter(make_quarter(400, seed=8), root / "raw")
    ingest_quarters([raw], root / "ingested")
    return root / "ingested"


# Hand-built partition: groups 0 and 1 generalize to the same released tuple (one group to an attacker),
# group 2 is its own. Cases 1-4 in groups 0/1, cases 5-6 in group 2.
FRAME = pl.DataFrame(
    {
        "caseid": [1, 2, 3, 4, 5, 6],
        "group_id": [0, 0, 1, 1, 2, 2],
        "age_group": ["Adult"] * 4 + ["Aged"] * 2,
        "age_min": [19.0] * 4 + [65.0] * 2,
        "age_max": [45.0] * 4 + [80.0] * 2,
        "sex": ["F"] * 4 + ["M"] * 2,
        "wt_min": [None] * 6,
        "wt_max": [None] * 6,
    },
    schema_overrides={"wt_min": pl.Float64, "wt_max": pl.Float64},
)
RAW = pl.DataFrame(
    {"caseid": [1, 2, 3, 4, 5, 6], "wt_min": [None] * 6, "wt_max": [None] * 6},
    schema_overrides={"wt_min": pl.Float64, "wt_max": pl.Float64},
)


def test_measure_counts_released_tuples_by_hand() -> None:
    """DR on the released tuples: {1,2,3,4} reach 'HIV' with 0.5+0.5+0+0 → 0.25 ≤ θ 0.3; {5,6} 0.5 > 0.3."""
    probabilities = pl.DataFrame({"caseid": [1, 2, 5], "value": ["HIV"] * 3, "p": [0.5, 0.5, 1.0]})
    thresholds = pl.DataFrame({"value": ["HIV"], "theta": [0.3]})
    age_sex = QidHierarchies(age=mesh_age_tree(), sex=sex_tree(), weight=False)
    m = metrics.measure(FRAME, RAW, probabilities, thresholds, hierarchies=age_sex, k=2)
    assert (m.groups, m.dangerous_groups, m.dr, m.k_achieved, m.n_units) == (2, 1, 0.5, 2, 6)
    # group sizes and share_k on the algorithm's groups: three groups of exactly 2
    assert m.group_sizes.rows() == [(2, 3, 6)] and m.share_k == 1.0
    # NIL over age and sex only: F (a leaf) loses nothing; each age node's height over the tree's
    age = mesh_age_tree()
    h = {str(n): age.node_height[i] / age.height for i, n in enumerate(age.names)}
    assert m.nil_by_qid == pytest.approx({"age": (4 * h["Adult"] + 2 * h["Aged"]) / 6, "sex": 0.0})
    assert m.nil == pytest.approx(m.nil_by_qid["age"] / 2)
    with_fields = metrics.measure(
        FRAME, RAW, probabilities, thresholds, hierarchies=age_sex, k=2, field_nil={"occr_country": 1.0}
    )
    assert with_fields.nil == pytest.approx((m.nil * 2 + 1.0) / 3)
    assert with_fields.nil_by_qid["occr_country"] == 1.0


def test_a_model_run_reports_the_engine(ingested: Path) -> None:
    config = AnonymizeConfig(k=4, theta=0.6, on_infeasible="raise-theta", seed=1)
    result = anonymize_folder(ingested, None, config=config)
    assert result.partition is not None and result.method is None
    assert result.partition.groups >= result.measures.groups  # released tuples merge engine groups
    assert result.frame.height == result.cases
    assert "engine:" in result.summary()


@pytest.mark.parametrize("name", list(METHODS))
def test_a_method_run_invents_no_engine_figures(name: str, ingested: Path) -> None:
    """The method path used to fabricate a Partition (leftovers 0, first seed -1): now it has none."""
    config = AnonymizeConfig(k=4, theta=0.6, on_infeasible="raise-theta", method=name)
    result = anonymize_folder(ingested, None, config=config)
    assert result.partition is None and result.method is not None and result.method.method == name
    assert "engine:" not in result.summary() and "stage 2" not in result.summary()
    # the figures are metrics.measure's on the method's own partition, as evaluate computes them
    cases = pl.read_parquet(ingested / "cases.parquet")
    frame, _ = method_partition(name, cases, k=4, seed=0, sensitive=config.sensitive)
    m = metrics.measure(
        frame,
        cases,
        result_probabilities(ingested, config),
        result.thresholds.frame,
        hierarchies=config.hierarchies(),
        k=4,
        field_nil={q: v for q, v in result.nil_by_qid.items() if q not in ("age", "sex", "weight")},
    )
    assert (result.dr, result.measures.groups, result.nil) == (m.dr, m.groups, m.nil)


def result_probabilities(ingested: Path, config: AnonymizeConfig) -> pl.DataFrame:
    from faers_anon.anonymize.inputs import published_drug_names, sensitive_thresholds, with_drug_names
    from faers_anon.io.column_policy import load_policy

    cases = pl.read_parquet(ingested / "cases.parquet")
    knowledge = knowledge_table(ingested, sensitive=config.sensitive, knowledge=config.knowledge)
    names = published_drug_names(ingested, load_policy(config.column_policy))
    return sensitive_thresholds(with_drug_names(cases, names), knowledge, config=config)[0]


def test_a_method_run_measures_every_qid(ingested: Path) -> None:
    """NIL of a method covers the column policy's field QIDs too (they are generalized over its groups)."""
    model = anonymize_folder(ingested, None, config=AnonymizeConfig(on_infeasible="raise-theta"))
    method = anonymize_folder(
        ingested, None, config=AnonymizeConfig(on_infeasible="raise-theta", method="mews")
    )
    fields = set(model.nil_by_qid) - {"age", "sex", "weight"}
    assert fields and set(method.nil_by_qid) == set(model.nil_by_qid)


def test_run_needs_no_files() -> None:
    """run() on frames alone: a method with no DEMO rows and no policy measures the three QIDs."""
    rng = np.random.default_rng(0)
    n = 60
    cases = pl.DataFrame(
        {
            "caseid": np.arange(1, n + 1),
            "age_min": rng.integers(1, 90, n).astype(float),
            "sex": rng.choice(["F", "M"], n),
            "wt_min": rng.integers(40, 120, n).astype(float),
            "indications": [["Hypertension"]] * n,
            "reactions": [["Nausea"]] * n,
            "drug_keys": [["ASPIRIN"]] * n,
            "n_reports": [1] * n,
        }
    ).with_columns(pl.col("age_min").alias("age_max"), pl.col("wt_min").alias("wt_max"))
    empty = pl.DataFrame(schema={"drug_key": pl.String, "disease": pl.String, "weight": pl.Float64})
    config = AnonymizeConfig(method="mews", sensitive=("reactions",), on_infeasible="raise-theta")
    result = run(cases, empty, config=config)
    assert result.partition is None and set(result.nil_by_qid) == {"age", "sex", "weight"}
    assert result.release is None and result.measures.n_units == n


def test_standalone_anonymize_builds_nothing_beside_out(
    ingested: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The release is built in a private work folder and moved into place (no `.OUT.tmp-PID` beside OUT)."""
    out = tmp_path / "pub" / "release"
    out.parent.mkdir()
    sealed: list[tuple[Path, list[str]]] = []
    import faers_anon.release.writer as writer

    real_seal = writer.seal

    def spy(folder: Path, key: object) -> None:
        sealed.append((Path(folder), sorted(p.name for p in out.parent.iterdir())))
        real_seal(folder, key)  # type: ignore[arg-type]

    monkeypatch.setattr(writer, "seal", spy)
    config = AnonymizeConfig(k=4, on_infeasible="raise-theta", force=True)
    result = api.anonymize(ingested, out, config=config)
    assert result.release == out and (out / "manifest.json").is_file()
    ((folder, beside),) = sealed
    assert beside == []  # nothing sat beside OUT while the release was written
    assert folder.parent.name.startswith(PREFIX + "anonymize-") and not folder.parent.exists()
    assert sorted(os.listdir(out.parent)) == ["release"]
    again = api.anonymize(ingested, out, config=config)  # replacing an earlier release, atomically
    assert again.release == out and sorted(os.listdir(out.parent)) == ["release"]
