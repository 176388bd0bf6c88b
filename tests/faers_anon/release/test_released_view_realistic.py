"""Issue 18's tables replayed on a realistic 50k-case quarter (SPEC §11): before and after the policy.

The demo replay (``test_released_view.py``) has 2,998 cases; this one has the shapes of real FAERS
(``faers_anon.synthetic``, ``shape="realistic"``: thousands of drugs, reactions and indications,
22 senders, 90 receipt dates, 1.17 reports per case). *Before* is the old default written as a user's
override (receipt dates, sender, caseversion and every drug column published as is); *after* is the
bundled default. Figures in the comments were measured at k 5, θ 0.4.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from faers_anon import api
from faers_anon.anonymize.pipeline import AnonymizeConfig
from faers_anon.anonymize.value_classes import DEFAULT_CLASSES
from faers_anon.io.ingest import IngestConfig
from faers_anon.risk import RiskConfig, assess_risk
from faers_anon.synthetic import make_quarter, write_quarter
from faers_anon.verify.verifier import verify_release

from .test_released_view import LEGACY, _demo_records

K = 5
CASES = 50_000


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("released_view_realistic")
    raw, ingested = root / "raw", root / "ingested"
    write_quarter(make_quarter(CASES, seed=18, quarter="2025Q2", shape="realistic"), raw)
    api.ingest([raw], ingested, config=IngestConfig())
    legacy = root / "legacy.csv"
    legacy.write_text(LEGACY, encoding="utf-8")
    out: dict[str, dict[str, Any]] = {}
    for name, policy, items_m in (("before", legacy, 0), ("after", None, 0), ("items", None, 2)):
        config = AnonymizeConfig(
            k=K, theta=0.4, on_infeasible="raise-theta", column_policy=policy, items_m=items_m
        )
        api.anonymize(ingested, root / name, config=config)
        figures = assess_risk(root / name, config=RiskConfig(classes=DEFAULT_CLASSES)).figures
        # the default sets hold "every released field" (DEMO fields, the report count, the OUTC set): a
        # class over fewer fields is at least as large, so 0 below k there is 0 on all DEMO fields too
        fields = [r for r in figures["reidentification"] if r["items"] is None]
        every = max(fields, key=lambda r: len(r["knows"]))
        assert set(figures["fields"]) <= set(every["knows"])
        out[name] = figures | {"path": str(root / name), "all_fields": every}
    return out


def test_before_one_more_demo_field_puts_cases_below_k(figures: dict[str, dict[str, Any]]) -> None:
    before = _demo_records(figures["before"])
    qids = ("age_group", "age_min", "age_max", "sex", "wt_min", "wt_max")
    assert before[qids]["below_k"] == 0.0  # the QIDs alone were always bounded
    assert before[(*qids, "fda_dt")]["below_k"] > 0.15  # measured 18.6 %
    assert before[(*qids, "init_fda_dt")]["below_k"] > 0.3  # 37.3 %
    assert before[(*qids, "mfr_sndr")]["below_k"] > 0.2  # 24.9 %
    assert before[(*qids, "caseversion")]["below_k"] > 0.1  # 12.5 %
    assert figures["before"]["all_fields"]["below_k"] > 0.99  # 99.6 %


def test_after_every_class_over_released_demo_fields_has_k_cases(figures: dict[str, dict[str, Any]]) -> None:
    after = _demo_records(figures["after"])
    everything = figures["after"]["all_fields"]
    assert {"reports", "quarter", "outcome", "fda_dt", "mfr_sndr", "outc_cod"} <= set(everything["knows"])
    assert len(after) >= 10
    demo = pl.read_parquet(Path(figures["after"]["path"]) / "parquet" / "demo.parquet", columns=["caseid"])
    assert demo.group_by("caseid").len().filter(pl.col("len") >= 2).height > 0  # follow-ups are published
    for knows, record in [*after.items(), ((), everything)]:
        assert record["below_k"] == 0.0, knows
        assert record["prosecutor_max"] <= 1 / K + 1e-12, knows


def test_after_one_drug_column_and_theta_on_classes_and_outcomes(figures: dict[str, dict[str, Any]]) -> None:
    schema = pl.read_parquet_schema(Path(figures["after"]["path"]) / "parquet" / "drug.parquet")
    assert set(schema) & {"drug_key", "drugname", "prod_ai", "nda_num"} == {"drug_key"}
    inference = figures["after"]["inference"]
    for section in ("classes", "outcomes", "protected_values"):
        assert inference[section]["pairs_above_theta"] == 0, section
        assert inference[section]["max_conf"] <= 0.4 + 1e-9, section
    assert verify_release(Path(figures["after"]["path"])).ok
    assert not verify_release(Path(figures["before"]["path"])).ok


def test_items_m_bounds_the_qids_plus_m_items_rows(figures: dict[str, dict[str, Any]]) -> None:
    """The rows "QIDs + 1 / 2 of the target's drugs (or reactions)": most cases below k with the default
    items-m 0 (docs/items.md: not covered by default), 0 with items-m 2."""
    rows = {
        name: {
            (kind, count): r["below_k"]
            for r in figures[name]["reidentification"]
            if r["items"] is not None and r["knows"]
            for kind, count in r["items"].items()
        }
        for name in ("after", "items")
    }
    expected = {(kind, m) for kind in ("drugs", "reactions") for m in (1, 2)}
    assert set(rows["after"]) == set(rows["items"]) == expected
    assert rows["after"][("drugs", 1)] > 0.5  # measured 62.4 %
    assert rows["after"][("reactions", 2)] > 0.8  # 85.0 %
    assert set(rows["items"].values()) == {0.0}
    assert verify_release(Path(figures["items"]["path"])).ok
