"""Issue 18 replayed on the demo quarter with `faers-anon risk` (SPEC §11): before and after the policy.

*Before* is the old default, written as a user's override of the new one (receipt dates, sender and
every drug column published as is, the other fields dropped): the attacker who adds one released DEMO
field to the QIDs finds classes below k. *After* (the bundled default) every DEMO field is an id, a
qid generalized to its group's common value, or dropped, so every such class is ≥ k (0 below k,
prosecutor risk ≤ 1/k) — including the class over all DEMO fields at once. *Items* is the bundled
default with ``items_m = 2`` (docs/items.md): the rows "QIDs + 1 of the target's drugs / + 2" (and
reactions) go from most cases below k to 0, the documented bound of ``items-m``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from faers_anon import api
from faers_anon.anonymize.pipeline import AnonymizeConfig
from faers_anon.anonymize.value_classes import DEFAULT_CLASSES
from faers_anon.io.ingest import IngestConfig
from faers_anon.risk import RiskConfig, assess_risk
from faers_anon.verify.verifier import verify_release

K = 5
LEGACY = """table,column,role,why
demo,fda_dt,keep,the old default
demo,init_fda_dt,keep,the old default
demo,mfr_sndr,keep,the old default
demo,caseversion,keep,the old default
demo,i_f_code,keep,the old default
demo,rept_cod,keep,the old default
demo,e_sub,keep,the old default
demo,to_mfr,keep,the old default
demo,occp_cod,keep,the old default
demo,reporter_country,drop,the old default
demo,occr_country,drop,the old default
drug,drugname,keep,the old default
drug,prod_ai,keep,the old default
"""


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("released_view")
    ingested = root / "ingested"
    api.ingest([], ingested, config=IngestConfig(demo=True))
    legacy = root / "legacy.csv"
    legacy.write_text(LEGACY, encoding="utf-8")
    out: dict[str, dict[str, Any]] = {}
    for name, policy, items_m in (("before", legacy, 0), ("after", None, 0), ("items", None, 2)):
        config = AnonymizeConfig(
            k=K, theta=0.4, on_infeasible="raise-theta", column_policy=policy, items_m=items_m
        )
        api.anonymize(ingested, root / name, config=config)
        figures = assess_risk(root / name, config=RiskConfig(classes=DEFAULT_CLASSES)).figures
        demo_fields = tuple(f for f in figures["fields"] if f != "outc_cod")
        every = assess_risk(root / name, config=RiskConfig(knows=demo_fields)).figures["reidentification"]
        out[name] = figures | {"path": str(root / name), "all_demo": every[0]}
    return out


def _demo_records(figures: dict[str, Any]) -> dict[tuple[str, ...], dict[str, Any]]:
    """Re-identification records whose knowledge is DEMO fields only (no OUTC set, no items)."""
    return {
        tuple(r["knows"]): r
        for r in figures["reidentification"]
        if r["items"] is None and "outc_cod" not in r["knows"] and r["knows"]
    }


def test_before_one_more_demo_field_puts_cases_below_k(figures: dict[str, dict[str, Any]]) -> None:
    before = _demo_records(figures["before"])
    qids = ("age_group", "age_min", "age_max", "sex", "wt_min", "wt_max")
    assert before[qids]["below_k"] == 0.0  # the QIDs alone were always bounded
    assert before[(*qids, "fda_dt")]["below_k"] > 0.3
    assert before[(*qids, "init_fda_dt")]["below_k"] > 0.9
    assert figures["before"]["all_demo"]["below_k"] > 0.99


def test_after_every_class_over_released_demo_fields_has_k_cases(figures: dict[str, dict[str, Any]]) -> None:
    after = _demo_records(figures["after"])
    fields = set(figures["after"]["fields"]) - {"outc_cod"}
    assert {"fda_dt", "init_fda_dt", "mfr_sndr", "occp_cod", "rept_cod", "occr_country"} <= fields
    assert "caseversion" not in fields
    everything = figures["after"]["all_demo"]
    assert set(everything["knows"]) == fields  # the class over ALL released DEMO fields
    for knows, record in [*after.items(), ((), everything)]:
        assert record["below_k"] == 0.0, knows
        assert record["prosecutor_max"] <= 1 / K + 1e-12, knows


def test_after_the_release_publishes_one_drug_column(figures: dict[str, dict[str, Any]]) -> None:
    """P(s | c) reads every released drug column through E: drug_key is the only one (issue bullet 4)."""
    for name, expected in (("before", {"drug_key", "drugname", "prod_ai"}), ("after", {"drug_key"})):
        schema = pl.read_parquet_schema(Path(figures[name]["path"]) / "parquet" / "drug.parquet")
        assert set(schema) & {"drug_key", "drugname", "prod_ai", "nda_num"} == expected, name


def test_after_classes_and_outcome_codes_are_bounded_by_theta(figures: dict[str, dict[str, Any]]) -> None:
    """Class and OUTC inference (risk, bundled value classes) stays at θ = 0.4; the verifier agrees."""
    for name in ("before", "after"):  # the classes and OUTC codes are bounded whatever the column policy
        inference = figures[name]["inference"]
        for section in ("classes", "outcomes", "protected_values"):
            assert inference[section]["pairs_above_theta"] == 0, (name, section)
            assert inference[section]["max_conf"] <= 0.4 + 1e-9, (name, section)
    before = verify_release(Path(figures["before"]["path"]))  # its own verifier catches the old policy
    assert set(before.violations["rule"]) == {"demo_fields"}
    after = verify_release(Path(figures["after"]["path"]))
    assert after.ok, after.violations
    assert figures["after"]["inference"]["classes"]["max_conf"] == pytest.approx(0.4)  # reached, not exceeded


def _item_records(figures: dict[str, Any]) -> dict[tuple[str, object], dict[str, Any]]:
    """QIDs + m drugs or reactions (risk's default knowledge sets with items and fields)."""
    return {
        (kind, count): r
        for r in figures["reidentification"]
        if r["items"] is not None and r["knows"]
        for kind, count in r["items"].items()
    }


def test_items_m_bounds_the_qids_plus_m_items_rows(figures: dict[str, dict[str, Any]]) -> None:
    """Issue 18's "QIDs + 1 of the target's drugs / + 2": most cases below k without items-m, 0 with
    items-m 2 (its bound covers 1 and 2 known items, drugs and reactions alike)."""
    after, items = _item_records(figures["after"]), _item_records(figures["items"])
    assert set(after) == set(items) == {(kind, m) for kind in ("drugs", "reactions") for m in (1, 2)}
    for key in after:
        assert after[key]["below_k"] > 0.3, key  # demo: 46% / 80% (drugs: 1 / 2), 40% / 76% (reactions)
        assert items[key]["below_k"] == 0.0, key
        assert items[key]["prosecutor_max"] <= 1 / K + 1e-12, key
    manifest = json.loads((Path(figures["items"]["path"]) / "manifest.json").read_text())
    counts = manifest["counts"]["items"]
    assert counts["m"] == 2 and counts["case_items_suppressed"] <= counts["case_items"]
    assert sum(counts["cells_suppressed"]["drug"].values()) + counts["cells_suppressed"]["reac"]["pt"] > 0
    assert verify_release(Path(figures["items"]["path"])).ok


def test_the_verifier_reads_published_brand_names_through_e(
    figures: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A producer that bounds θ on ``drug_key`` alone while the policy publishes drugname and prod_ai
    (the anonymizer before it read them) leaves groups above θ; the verifier and risk both see them."""
    root = Path(figures["before"]["path"]).parent
    monkeypatch.setattr("faers_anon.anonymize.pipeline.published_drug_names", lambda *_: None)
    legacy = root / "legacy_no_outcome.csv"  # the groups of the release before the OUTC-set qid
    legacy.write_text(LEGACY + "demo,outcome,drop,the old default\n", encoding="utf-8")
    config = AnonymizeConfig(k=K, theta=0.4, on_infeasible="raise-theta", column_policy=legacy)
    api.anonymize(root / "ingested", root / "brand_blind", config=config)
    risk = assess_risk(root / "brand_blind", config=RiskConfig()).figures["inference"]["protected_values"]
    assert risk["pairs_above_theta"] > 0 and risk["max_conf"] > 0.4  # demo: RHEUMATOID ARTHRITIS 0.416
    found = verify_release(root / "brand_blind").violations
    theta = found.filter(pl.col("rule") != "demo_fields")
    assert theta.height == risk["pairs_above_theta"], theta
