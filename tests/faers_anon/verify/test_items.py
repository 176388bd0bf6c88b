"""Verifier rule ``items_km`` (faers_anon.verify.items; issue 18 bullet 3), with hand-worked groups.

Group 0 (k = 3): c1 {A, B}, c2 {A, B}, c3 {A, B}, c4 {A}       -> m = 1 and m = 2 hold (AB held by 3).
Group 1 (k = 3): c5 {A, B}, c6 {A, B}, c7 {A}, c8 {B}, c9 {A, B, X}
    m = 1: X is held by 1 case (< 3): the group fails, one failing itemset.
    m = 2: also the pairs A+X, B+X (1 each); AB is held by 3 (c5, c6, c9): three failing itemsets,
    the rarest first in the detail.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from faers_anon import api
from faers_anon.anonymize.pipeline import AnonymizeConfig
from faers_anon.io.ingest import IngestConfig
from faers_anon.verify.items import item_violations
from faers_anon.verify.verifier import verify_release

SETS = {"1": "AB", "2": "AB", "3": "AB", "4": "A", "5": "AB", "6": "AB", "7": "A", "8": "B", "9": "ABX"}


def _frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    items = pl.DataFrame([(c, f"D:{i}") for c, s in SETS.items() for i in s], schema=["caseid", "item"],
                         orient="row")  # fmt: skip
    members = pl.DataFrame({"caseid": list(SETS), "group": [0, 0, 0, 0, 1, 1, 1, 1, 1]})
    return items, members


def test_m1_flags_the_group_holding_an_item_of_fewer_than_k_cases() -> None:
    found = item_violations(*_frames(), k=3, m=1)
    assert found.rows() == [
        (1, "items_km", "1 case(s) of the group hold D:X (1 itemset(s) of at most 1 items below k = 3)")
    ]


def test_m2_counts_the_pairs_too() -> None:
    found = item_violations(*_frames(), k=3, m=2)
    assert found.rows() == [
        (1, "items_km", "1 case(s) of the group hold D:A + D:X (3 itemset(s) of at most 2 items below k = 3)")
    ]


def test_no_bound_stated_no_check() -> None:
    assert item_violations(*_frames(), k=3, m=0).height == 0


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("items_verify")
    api.ingest([], root / "ingested", config=IngestConfig(demo=True))
    out = {}
    for m in (0, 1):
        config = AnonymizeConfig(k=5, theta=0.4, on_infeasible="raise-theta", items_m=m)
        api.anonymize(root / "ingested", root / f"m{m}", config=config)
        out[f"m{m}"] = root / f"m{m}"
    return out


def test_a_release_made_with_items_m_verifies(releases: dict[str, Path]) -> None:
    manifest = json.loads((releases["m1"] / "manifest.json").read_text())
    assert manifest["parameters"]["items_m"] == 1
    assert manifest["counts"]["items"]["case_items_suppressed"] > 0
    verdict = verify_release(releases["m1"])
    assert verdict.ok, verdict.violations


def test_a_release_claiming_items_m_it_does_not_meet_fails(releases: dict[str, Path]) -> None:
    """The m = 0 release with its manifest edited to claim m = 1 (hashes not checked): items_km fails."""
    path = releases["m0"] / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["parameters"]["items_m"] = 1
    path.write_text(json.dumps(manifest))
    verdict = verify_release(releases["m0"], check_hashes=False)
    rules = set(verdict.violations["rule"])
    assert rules == {"items_km"}
    assert verdict.violations.height > 100  # most groups of five hold some drug or PT fewer than 5 take
