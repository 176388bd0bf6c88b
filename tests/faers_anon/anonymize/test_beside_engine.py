"""The anonymize stage's work beside the engine (issue 18 item 6): the release's partition-independent half
on a thread while the engine runs, the metrics beside the finish; the same files one after the other; a
failure on either side surfaces as it would alone and leaves no thread and no draft folder behind."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from faers_anon.anonymize import pipeline, units
from faers_anon.anonymize.pipeline import AnonymizeConfig, anonymize_folder
from faers_anon.errors import InputError
from faers_anon.io.ingest import ingest_quarters
from faers_anon.release.stages import STAGES_ENV
from faers_anon.synthetic import make_quarter, write_quarter

MAIN = threading.main_thread().name
# the whole-quarter path (with outcome strata, each stratum's QID arrays are made inside its engine run)
CONFIG = AnonymizeConfig(
    k=4, theta=0.5, on_infeasible="raise-theta", seed=3, force=True, outcome_strata=False
)


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("beside")
    tables = make_quarter(500, seed=8)  # one report per case: one version count, the whole-quarter path
    version = pl.col("caseversion").cast(pl.Int64)
    latest = tables["DEMO"].group_by("caseid").agg(pl.col("primaryid").sort_by(version).last())
    keep = latest.get_column("primaryid").implode()
    tables = {n: f.filter(pl.col("primaryid").is_in(keep)) if "primaryid" in f.columns else f
              for n, f in tables.items()}  # fmt: skip
    raw = write_quarter(tables, root / "raw")
    ingest_quarters([raw], root / "ingested")
    return root / "ingested"


def _files(release: Path) -> dict[str, str]:
    """SHA-256 of every file, manifest.json without ``created``, certificate.json by its key."""
    out = {}
    for path in sorted(p for p in release.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if path.name == "manifest.json":
            manifest = json.loads(data)
            manifest.pop("created")
            data = json.dumps(manifest, sort_keys=True).encode()
        elif path.name == "certificate.json":
            data = json.loads(data)["public_key"].encode()
        out[path.relative_to(release).as_posix()] = hashlib.sha256(data).hexdigest()
    return out


def _trace(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(step, thread) in the order the steps start: E, the engine's QID arrays, the engine, the draft,
    the field QIDs, the metrics, the release's completion."""
    seen: list[tuple[str, str]] = []
    steps = [
        "knowledge_table",
        "encode_qids",
        "partition_model",
        "prepare_release",
        "_generalized",
        "measure",
    ]
    where = {"measure": pipeline.metrics, "encode_qids": units}
    for module, name in ((where.get(n, pipeline), n) for n in [*steps, "seal_release"]):
        real = getattr(module, name)

        def traced(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            seen.append((_name, threading.current_thread().name))
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, traced)
    return seen


def _leftovers(parent: Path) -> list[str]:
    """Draft folders beside a release, and threads of the stage still alive."""
    drafts = [p.name for p in parent.iterdir() if ".tmp-" in p.name]
    alive = [t.name for t in threading.enumerate() if t.name.startswith("faers-anon")]
    return drafts + alive


def test_draft_beside_the_engine_and_the_same_files_one_after_the_other(
    ingested: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _trace(monkeypatch)
    monkeypatch.setenv(STAGES_ENV, "concurrent")
    beside = anonymize_folder(ingested, tmp_path / "beside", config=CONFIG)
    threads = dict(seen)
    order = [name for name, _ in seen]
    seen.clear()
    monkeypatch.setenv(STAGES_ENV, "sequential")
    alone = anonymize_folder(ingested, tmp_path / "alone", config=CONFIG)
    # concurrent: the draft on its own thread, started before the engine ends; the finish on another
    assert threads["prepare_release"] == "faers-anon release draft"
    assert threads["seal_release"] == "faers-anon write" and threads["_generalized"] == "faers-anon fields"
    assert threads["knowledge_table"] == "faers-anon E"
    assert threads["encode_qids"] == "faers-anon engine fields" and order.count("encode_qids") == 1
    assert threads["partition_model"] == MAIN and threads["measure"] == MAIN
    assert order.index("prepare_release") < order.index("measure")
    # sequential: every step in this thread, in the order before (engine, metrics, the whole release)
    steps = (
        "knowledge_table",
        "encode_qids",
        "partition_model",
        "_generalized",
        "measure",
        "prepare_release",
    )
    assert seen == [(n, MAIN) for n in (*steps, "seal_release")]
    assert _files(tmp_path / "beside") == _files(tmp_path / "alone")
    assert beside.measures.nil == alone.measures.nil and beside.dr == alone.dr
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("mode", ["concurrent", "sequential"])
def test_a_draft_error_surfaces_as_alone_and_leaves_nothing(
    ingested: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    broken = tmp_path / "ingested"
    broken.mkdir()
    for path in ingested.glob("*.parquet"):
        (broken / path.name).symlink_to(path)
    (broken / "rejects").mkdir()
    (broken / "rejects" / "demo.parquet").write_bytes(b"not parquet")  # read by the draft only
    monkeypatch.setenv(STAGES_ENV, mode)
    out = tmp_path / "out" / "release"
    out.parent.mkdir()
    with pytest.raises(InputError) as caught:
        anonymize_folder(broken, out, config=CONFIG)
    assert "unreadable parquet" in str(caught.value) and "demo.parquet" in str(caught.value)
    assert not out.exists() and _leftovers(out.parent) == []


@pytest.mark.parametrize("mode", ["concurrent", "sequential"])
def test_a_failure_beside_the_release_leaves_the_earlier_one_and_no_draft(
    ingested: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    sealed = threading.Event()
    seal = pipeline.seal_release

    def seal_then_tell(*args: Any, **kwargs: Any) -> Any:
        done = seal(*args, **kwargs)
        sealed.set()  # complete and signed in its draft folder, not yet renamed into place
        return done

    def failing_measure(*args: Any, **kwargs: Any) -> Any:
        sealed.wait(60 if mode == "concurrent" else 0)
        raise RuntimeError("metrics failed")

    monkeypatch.setattr(pipeline, "seal_release", seal_then_tell)
    monkeypatch.setattr(pipeline.metrics, "measure", failing_measure)
    monkeypatch.setenv(STAGES_ENV, mode)
    out = tmp_path / "out" / "release"
    out.mkdir(parents=True)
    (out / "earlier.txt").write_text("an earlier release, replaced only by a complete run")
    with pytest.raises(RuntimeError, match="metrics failed"):
        anonymize_folder(ingested, out, config=CONFIG)
    assert sealed.is_set() == (mode == "concurrent")  # sequentially the release is never begun
    assert [p.name for p in out.iterdir()] == ["earlier.txt"] and _leftovers(out.parent) == []


def test_manifest_outputs_are_every_file_hashed(ingested: Path, tmp_path: Path) -> None:
    anonymize_folder(ingested, tmp_path / "r", config=CONFIG)
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text(encoding="utf-8"))
    files = _files(tmp_path / "r")
    del files["manifest.json"], files["certificate.json"]
    assert manifest["outputs"] == files
    drug = pl.read_parquet(tmp_path / "r" / "parquet" / "drug.parquet")
    assert manifest["counts"]["drug"]["rows_out"] == drug.height > 0
