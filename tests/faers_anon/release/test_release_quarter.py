"""One quarter per release (docs/formats.md "The quarter column"): a stand-alone release of two generated
quarters labels every row of every table with its latest quarter, writes one set of ascii files, and the
risk module's classes over the QIDs + ``quarter`` and over every DEMO field are all ≥ k (before: the
input quarter varied inside QID-groups and singled cases out); the verifier's rule ``demo_fields``
counts ``quarter``, so a copy whose ``quarter`` varies inside a group fails verification.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from faers_anon import api
from faers_anon.keys import load_key
from faers_anon.release.certificate import seal
from faers_anon.release.writer_draft import one_quarter
from faers_anon.series.generate import make_series
from faers_anon.verify.verifier import verify_release

K = 5
QIDS = ("age_group", "age_min", "age_max", "sex", "wt_min", "wt_max")
TABLES = ("demo", "drug", "indi", "outc", "reac", "rpsr", "ther")


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A stand-alone release of two generated quarters (1500 cases each, 20 % follow-ups) and its
    report.json."""
    root = tmp_path_factory.mktemp("release_quarter")
    raws = make_series(1500, root / "raw", quarters=2, follow=0.2, seed=11)
    out = root / "release"
    api.release(raws, out, config=api.release_config(None, {"k": K, "theta": 0.4}))
    return out, json.loads((out / "report.json").read_text())


def _records(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in report["risk"]["reidentification"] if r["items"] is None]


def test_one_quarter_labels_every_table_with_the_latest_quarter() -> None:
    tables = {
        "demo": pl.DataFrame({"primaryid": [1, 2], "quarter": ["2024Q1", "2024Q2"]}),
        "drug": pl.DataFrame({"primaryid": [1], "quarter": ["2024Q1"]}),
    }
    assert {t: f["quarter"].to_list() for t, f in one_quarter(tables).items()} == {
        "demo": ["2024Q2", "2024Q2"], "drug": ["2024Q2"],
    }  # fmt: skip
    single = {"demo": pl.DataFrame({"primaryid": [1], "quarter": ["2024Q1"]})}
    assert one_quarter(single) is single  # a one-quarter release: unchanged


def test_a_two_quarter_release_has_one_quarter_and_one_set_of_ascii_files(
    released: tuple[Path, dict[str, Any]],
) -> None:
    out, report = released
    assert report["counts"]["quarters"] == ["2024Q1", "2024Q2"]  # read: both input quarters
    for table in TABLES:
        quarters = pl.read_parquet(out / "parquet" / f"{table}.parquet", columns=["quarter"])["quarter"]
        assert set(quarters) <= {"2024Q2"} and (quarters.len() or table == "outc"), table  # OUTC: maybe none
    names = sorted(p.name for p in (out / "ascii").iterdir())
    assert names and all(n.endswith("24Q2.txt") for n in names) and len(names) == len(TABLES)
    manifest = json.loads((out / "manifest.json").read_text())
    for table in TABLES:
        entry = manifest["counts"][table]
        assert list(entry["quarters"]) == ["2024Q2"], table
        assert entry["quarters"]["2024Q2"]["rows_in"] == entry["rows_in"]
        assert entry["rows_in"] == entry["rows_out"] + entry["superseded_left_out"] or table == "outc"


def test_quarter_singles_out_no_case_and_the_release_verifies(released: tuple[Path, dict[str, Any]]) -> None:
    out, report = released
    records = _records(report)
    with_quarter = next(r for r in records if tuple(r["knows"]) == (*QIDS, "quarter"))
    every = max(records, key=lambda r: len(r["knows"]))
    assert "quarter" in every["knows"] and "fda_dt" in every["knows"]
    assert with_quarter["below_k"] == 0.0  # before: > 0 (the input quarter split QID-groups)
    assert every["below_k"] == 0.0
    verdict = verify_release(out, public_key=load_key(None).public_key)
    assert verdict.ok, verdict.summary()


def test_the_verifier_refuses_a_quarter_varying_inside_a_group(
    released: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    copy = Path(shutil.copytree(released[0], tmp_path / "release"))
    path = copy / "parquet" / "demo.parquet"
    demo = pl.read_parquet(path)
    case = demo["caseid"].sort()[0]
    tampered = demo.with_columns(
        pl.when(pl.col("caseid") == case).then(pl.lit("2024Q1")).otherwise(pl.col("quarter")).alias("quarter")
    )
    tampered.write_parquet(path)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["outputs"]["parquet/demo.parquet"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    seal(copy, load_key(None))  # re-signed with the agency key: only the rules can refuse it
    verdict = verify_release(copy, public_key=load_key(None).public_key)
    assert not verdict.ok
    fields = verdict.violations.filter(pl.col("rule") == "demo_fields")
    assert fields.height >= 1 and fields["detail"].str.contains(f"of case {case} ").any()
