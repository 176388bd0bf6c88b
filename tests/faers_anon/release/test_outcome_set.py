"""The attacker who knows the QIDs and the target's OUTC codes (SPEC §11; issue 18), on the demo quarter.

*Before*: the bundled default with the OUTC set left out of the QIDs (``demo,outcome,drop``), i.e. the
release before issue 18's outcome QID: the OUTC table is published as is, and knowing the QIDs plus
the target's set of outcome codes puts 14.5% of the demo's cases below k (measured on this quarter:
k 5, θ 0.4), and 83% with every released DEMO field too. *After* (the bundled default): the OUTC set
is a field QID of the engine (exact set → most severe → serious / non-serious → *), every case's
reports carry its group's value, and both figures are 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from faers_anon import api
from faers_anon.anonymize.pipeline import AnonymizeConfig
from faers_anon.io.ingest import IngestConfig
from faers_anon.risk import RiskConfig, assess_risk
from faers_anon.verify.outcomes import outcome_set_violations
from faers_anon.verify.verifier import verify_release

K = 5
QIDS = ("age_group", "age_min", "age_max", "sex", "wt_min", "wt_max")


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("outcome_set")
    ingested = api.ingest([], root / "ingested", config=IngestConfig(demo=True)).out
    without = root / "without.csv"
    without.write_text("table,column,role,why\ndemo,outcome,drop,before issue 18's outcome qid\n")
    out = {}
    for name, policy in (("before", without), ("after", None)):
        config = AnonymizeConfig(k=K, theta=0.4, on_infeasible="raise-theta", column_policy=policy)
        api.anonymize(ingested, root / name, config=config)
        out[name] = root / name
    return out


def _attack(release: Path, *fields: str) -> dict[str, Any]:
    record: dict[str, Any] = assess_risk(release, config=RiskConfig(knows=fields)).figures[
        "reidentification"
    ][0]
    return record


def _every_field(release: Path) -> tuple[str, ...]:
    return tuple(
        f for f in assess_risk(release, config=RiskConfig(knows=QIDS)).figures["fields"] if f != "quarter"
    )


def test_the_qids_and_the_outc_set_single_out_cases_before(releases: dict[str, Path]) -> None:
    qids_outc = _attack(releases["before"], *QIDS, "outc_cod")
    # demo: 14.5%, unique 5.3%; 9.5% since a group holds one version count (anonymize.versions)
    assert qids_outc["below_k"] > 0.05 and qids_outc["prosecutor_max"] == 1.0
    assert _attack(releases["before"], *_every_field(releases["before"]))["below_k"] > 0.5  # demo: 83%


def test_after_no_case_is_below_k_with_the_outc_set(releases: dict[str, Path]) -> None:
    after = releases["after"]
    for fields in ((*QIDS, "outc_cod"), (*QIDS, "outcome"), _every_field(after)):
        record = _attack(after, *fields)
        assert "outc_cod" in record["knows"] or "outcome" in record["knows"]
        assert record["below_k"] == 0.0 and record["prosecutor_max"] <= 1 / K, fields
    verdict = verify_release(after)
    assert verdict.ok, verdict.violations


def test_after_every_version_carries_its_groups_outcome(releases: dict[str, Path]) -> None:
    demo = pl.read_parquet(releases["after"] / "parquet" / "demo.parquet")
    assert demo.group_by("caseid").agg(pl.col("outcome").n_unique()).get_column("outcome").max() == 1
    codes = "(DE|LT|HO|DS|CA|RI|OT)"
    form = rf"^(\*|serious|non-serious|other serious|death|none|most severe {codes}|{codes}(,{codes})*)$"
    assert demo.get_column("outcome").str.contains(form).all()
    outc = pl.read_parquet(releases["after"] / "parquet" / "outc.parquet")
    # the OUTC rows are the codes each case's released value makes certain: none for serious and *
    vague = demo.filter(pl.col("outcome").is_in(["*", "serious", "non-serious", "none"]))
    assert outc.join(vague, on="primaryid", how="semi").is_empty()


def test_the_verifier_catches_the_outc_set_of_a_release_before(releases: dict[str, Path]) -> None:
    """The verifier's own rule, run on the release made without the outcome qid, finds groups split."""
    before = releases["before"]
    demo = pl.read_parquet(before / "parquet" / "demo.parquet").with_columns(
        pl.col("caseid", "primaryid").cast(pl.String)
    )
    outc = pl.read_parquet(before / "parquet" / "outc.parquet").with_columns(pl.col("caseid").cast(pl.String))
    qids = [c for c in demo.columns if c not in ("primaryid", "caseid", "is_latest", "quarter")]
    groups = demo.select(qids).unique().with_row_index("group").with_columns(pl.col("group").cast(pl.Int64))
    members = demo.join(groups, on=qids, nulls_equal=True).select("caseid", "group").unique()
    found = outcome_set_violations(demo, outc, members, K)
    assert found.height > 0 and set(found["rule"]) == {"outcome_set"}
