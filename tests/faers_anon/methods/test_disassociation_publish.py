"""`--method disassociation` is a release mode: DRUG and REAC are published as the disassociated form."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from faers_anon.cli import cli
from faers_anon.methods._disassociation_publish import DISASSOCIATED, case_tables
from faers_anon.methods.disassociation import check_km, read_released
from faers_anon.release.manifest import MANIFEST_NAME, hash_tree, read_manifest
from faers_anon.synthetic import make_quarter, write_quarter
from faers_anon.verify.verifier import verify_release


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dis")
    write_quarter(make_quarter(300, seed=21, quarter="2024Q3"), root / "quarter")
    out = root / "rel"
    result = CliRunner().invoke(
        cli, ["release", str(root / "quarter"), "-o", str(out), "--seed", "4", "--method", "disassociation"]
    )
    assert result.exit_code == 0, result.output
    assert "k^m-anonymity (k=5, m=2)" in result.output
    return out


def test_public_folder_has_no_drug_or_reac_rows(release: Path) -> None:
    names = {p.relative_to(release).as_posix().lower() for p in release.rglob("*") if p.is_file()}
    assert not any(n.startswith(("ascii/drug", "ascii/reac", "parquet/drug", "parquet/reac")) for n in names)
    assert {"ascii/demo24q3.txt", "parquet/indi.parquet", "parquet/ther.parquet"} <= names
    released = read_released(release / DISASSOCIATED)
    assert check_km(released).ok and (released.k, released.m) == (5, 2)
    demo = pl.read_parquet(release / "parquet" / "demo.parquet")
    assert set(released.members["caseid"].to_list()) == set(demo["caseid"].cast(pl.Int64).to_list())
    assert demo.filter(pl.col("age_min") != pl.col("age_max")).height == 0  # QIDs released as points


def test_manifest_accounts_for_every_row_and_hashes_the_files(release: Path) -> None:
    manifest = read_manifest(release) or {}
    assert manifest["outputs"] == hash_tree(release, exclude=frozenset({MANIFEST_NAME}))
    assert any(name.startswith(f"{DISASSOCIATED}/") for name in manifest["outputs"])
    for table in ("drug", "reac"):
        counts = manifest["counts"][table]
        left = counts["superseded_left_out"]  # a method publishes each case's latest report (versions)
        assert counts["rows_out"] == 0 and counts["disassociated"] == counts["rows_in"] - left > 0
        assert "disassociated" in counts["note"] and manifest["columns"][table]["public"] == []
    params = manifest["parameters"]
    assert (params["method"], params["k"], params["m"]) == ("disassociation", 5, 2)
    assert params["method_privacy"]["km_ok"] is True and params["method_privacy"]["km_violations"] == 0
    report = json.loads((release / "report.json").read_text(encoding="utf-8"))
    assert "one reconstruction" in report["signals"]["release_side"]
    assert report["privacy"]["method"] == "disassociation"


def test_verifier_checks_km_and_reads_one_reconstruction(release: Path) -> None:
    verdict = verify_release(release)
    assert verdict.ok, verdict.summary()
    assert "k^m-anonymity (k=5, m=2)" in verdict.label and 0.0 <= verdict.dr <= 1.0
    tables = case_tables(release, seed=4)
    assert tables.drugs.height > 0 and tables.events.height > 0
    assert tables.drugs.equals(case_tables(release, seed=4).drugs)  # the same draw every time


def test_tampered_chunk_is_rejected(release: Path, tmp_path: Path) -> None:
    copy = tmp_path / "rel"
    shutil.copytree(release, copy)
    path = copy / DISASSOCIATED / "record_chunks.parquet"
    chunks = pl.read_parquet(path)
    support = chunks.group_by("cluster_id", "chunk_id", "item").len().sort("len", "item", descending=True)
    cluster, chunk, item, n = support.row(0)
    assert n >= 5
    rows = chunks.with_row_index("i")
    hit = (pl.col("cluster_id") == cluster) & (pl.col("chunk_id") == chunk) & (pl.col("item") == item)
    drop = rows.filter(hit)["i"].head(n - 4)  # support n → 4 < k
    rows.filter(~pl.col("i").is_in(drop.implode())).drop("i").write_parquet(path)
    verdict = verify_release(copy, check_hashes=False)
    assert not verdict.ok and "km" in verdict.violations["rule"].to_list()
    result = CliRunner().invoke(cli, ["verify", str(copy)])
    assert result.exit_code == 1 and "km" in result.output and item in result.output


def test_row_level_drug_table_beside_the_form_is_rejected(release: Path, tmp_path: Path) -> None:
    copy = tmp_path / "rel"
    shutil.copytree(release, copy)
    pl.DataFrame({"primaryid": ["1"], "caseid": ["1"], "drug_key": ["X"]}).write_parquet(
        copy / "parquet" / "drug.parquet"
    )
    verdict = verify_release(copy)
    assert not verdict.ok and "disassociated" in verdict.violations["rule"].to_list()
