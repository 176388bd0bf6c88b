"""A case's number of reports made common to its group (issue 18 item 1; faers_anon.anonymize.versions):
hand-built quarters with worked answers, the strata, and the release end to end."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest

from faers_anon.anonymize.pipeline import AnonymizeConfig, anonymize_folder
from faers_anon.anonymize.strata import versioned_strata
from faers_anon.anonymize.versions import (
    frozen_kept,
    left_out_reports,
    plan_versions,
    top_coded,
    version_counts,
)
from faers_anon.io.ingest import ingest_quarters
from faers_anon.synthetic import make_quarter, write_quarter

NO_P = pl.DataFrame(schema={"caseid": pl.Int64, "value": pl.String, "p": pl.Float64})


def _demo(counts: dict[int, int], *, start: int = 1) -> pl.DataFrame:
    """DEMO rows: ``counts[c]`` cases with c reports each; case i's report v (1 … c) has primaryid
    i * 100 + v, caseversion v and is_latest on v = c; caseids from ``start`` in count order."""
    rows, caseid = [], start
    for count, cases in sorted(counts.items()):
        for _ in range(cases):
            versions = range(1, count + 1)
            rows += [(caseid * 100 + v, caseid, v, dt.date(2024, 1, v), v == count) for v in versions]
            caseid += 1
    return pl.DataFrame(rows, schema={"primaryid": pl.Int64, "caseid": pl.Int64, "caseversion": pl.Int64,
                                      "fda_dt": pl.Date, "is_latest": pl.Boolean}, orient="row")  # fmt: skip


def test_two_three_version_cases_of_five_are_cut_to_two_versions() -> None:
    # counts {1: 10, 2: 6, 3: 2} at k 5: count 3 has 2 < 5 cases, carried to count 2 (6 + 2 = 8 >= 5, no
    # protected value): the two 3-version cases (caseids 17, 18) keep versions 2 and 3, version 1 is out
    demo = _demo({1: 10, 2: 6, 3: 2})
    plan = plan_versions(demo, NO_P, {}, k=5)
    kept = dict(plan.kept.select("caseid", "kept").iter_rows())
    assert kept[17] == kept[18] == 2
    assert all(kept[c] == 1 for c in range(1, 11)) and all(kept[c] == 2 for c in range(11, 17))
    assert plan.left_out.rows() == [(1701, 17), (1801, 18)]
    assert plan.counts() == {"reports": 2, "cases": 2}


def test_a_count_over_theta_is_carried_down_to_one() -> None:
    # counts {1: 10, 2: 5} at k 5, theta_X 0.5: 3 of the 5 two-version cases have X (P = 1):
    # 3 / 5 = 0.6 > 0.5, so count 2 cannot stand; its cases keep their latest version only
    demo = _demo({1: 10, 2: 5})
    probabilities = pl.DataFrame({"caseid": [11, 12, 13, 1], "value": ["X"] * 4, "p": [1.0] * 4})
    plan = plan_versions(demo, probabilities, {"X": 0.5}, k=5)
    assert plan.kept.filter(pl.col("versions") == 2).get_column("kept").to_list() == [1] * 5
    assert plan.left_out.get_column("primaryid").to_list() == [1101, 1201, 1301, 1401, 1501]
    # at theta_X 0.6 the share 0.6 is not over it: nothing is cut
    assert plan_versions(demo, probabilities, {"X": 0.6}, k=5).left_out.is_empty()


def test_top_coding_skips_to_the_next_count_that_stands() -> None:
    # counts {1: 3, 2: 1, 4: 5, 7: 2} at k 5: 7 (2 cases) is carried to 4 (5 + 2 = 7 cases stand),
    # 2 (1 case) to 1; count 1 is never tested (3 < 5 cases) and never touched
    counts = version_counts(_demo({1: 3, 2: 1, 4: 5, 7: 2}))
    kept = top_coded(counts, NO_P, {}, k=5)
    pairs = sorted(set(kept.select("versions", "kept").iter_rows()))
    assert pairs == [(1, 1), (2, 1), (4, 4), (7, 4)]


def test_frozen_bundles_keep_the_smallest_count_of_their_members() -> None:
    # bundle 0 = cases with 3, 2 and 1 versions -> 1 each; bundle 1 = two 3-version cases -> 3
    demo = _demo({1: 1, 2: 1, 3: 3})  # caseids 1 (1 version), 2 (2), 3, 4, 5 (3)
    bundles = pl.DataFrame({"caseid": [1, 2, 3, 4, 5], "bundle": [0, 0, 0, 1, 1]})
    kept = frozen_kept(version_counts(demo), bundles).sort("caseid")
    assert kept.get_column("kept").to_list() == [1, 1, 1, 3, 3]
    out = left_out_reports(demo, kept)
    assert out.get_column("primaryid").to_list() == [201, 301, 302]


def test_the_latest_version_is_never_left_out() -> None:
    # FDA's order: caseversion, then fda_dt, missing lowest; is_latest first whatever the others say
    demo = pl.DataFrame({
        "primaryid": [1, 2, 3], "caseid": [7, 7, 7], "caseversion": [None, 5, 2],
        "fda_dt": [dt.date(2024, 1, 1)] * 3, "is_latest": [True, False, False],
    })  # fmt: skip
    kept = pl.DataFrame({"caseid": [7], "versions": [3], "kept": [2]})
    assert left_out_reports(demo, kept).get_column("primaryid").to_list() == [3]
    assert left_out_reports(demo.with_columns(is_latest=pl.col("primaryid") == 2), kept).get_column(
        "primaryid"
    ).to_list() == [1]  # missing caseversion is lowest


def test_no_stratum_mixes_version_counts() -> None:
    demo = _demo({1: 10, 2: 6, 3: 2}).with_columns(outcome=pl.lit("none"))
    plan = plan_versions(demo, NO_P, {}, k=5)
    cases = demo.select("caseid").unique().sort("caseid")
    strata = versioned_strata(cases, plan, demo, NO_P, {}, k=5, outcome=True)
    kept = dict(plan.kept.select("caseid", "kept").iter_rows())
    assert [sorted({kept[c] for c in s.get_column("caseid")}) for s in strata] == [[1], [2]]
    # each count's runs are parts of the whole run of 18 cases: basis b * sqrt(18 / n_c), rounded down
    assert [s.height for s in strata] == [10, 8] and strata.basis == [13, 12]


def _shaped_quarter(tables: dict[str, pl.DataFrame], shape: dict[int, int]) -> dict[str, pl.DataFrame]:
    """``tables`` (make_quarter's string frames) cut to version counts: ``shape[c]`` cases with exactly
    c of their latest reports (the others keep one); every child row of a removed report removed."""
    demo = tables["DEMO"].with_columns(pl.col("caseversion").cast(pl.Int64).alias("_v"))
    demo = demo.with_columns(pl.col("_v").rank("ordinal", descending=True).over("caseid").alias("_rank"))
    sizes = demo.group_by("caseid").len().sort("caseid")
    want: dict[str, int] = {}
    for count in sorted(shape, reverse=True):
        free = (pl.col("len") >= count) & ~pl.col("caseid").is_in(list(want))
        chosen = sizes.filter(free).head(shape[count])
        assert chosen.height == shape[count]
        want |= dict.fromkeys(chosen.get_column("caseid").to_list(), count)
    limit = pl.col("caseid").replace_strict(want, default=1, return_dtype=pl.Int64)
    kept = demo.filter(pl.col("_rank") <= limit).drop("_v", "_rank")
    ids = kept.get_column("primaryid").implode()
    return {name: (kept if name == "DEMO" else frame.filter(pl.col("primaryid").is_in(ids)))
            if "primaryid" in frame.columns else frame for name, frame in tables.items()}  # fmt: skip


@pytest.fixture(scope="module")
def cut(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A 600-case quarter with counts {1: rest, 2: 6, 3: 2}, ingested, released at k 5 (θ 1: no value
    is protected, so only k decides)."""
    root = tmp_path_factory.mktemp("versions")
    tables = _shaped_quarter(make_quarter(600, seed=5), {3: 2, 2: 6})
    ingest_quarters([write_quarter(tables, root / "raw")], root / "ingested")
    config = AnonymizeConfig(k=5, theta=1.0, seed=3, force=True)
    anonymize_folder(root / "ingested", root / "release", config=config)
    return root / "ingested", root / "release"


def test_a_release_cuts_the_two_three_version_cases_to_two(cut: tuple[Path, Path]) -> None:
    ingested, release = cut
    raw = pl.read_parquet(ingested / "reports.parquet")
    assert sorted(version_counts(raw).get_column("versions").value_counts().rows())[1:] == [(2, 6), (3, 2)]
    demo = pl.read_parquet(release / "parquet" / "demo.parquet")
    rows = demo.group_by("caseid").len()
    assert sorted(rows.get_column("len").value_counts().rows())[1:] == [(2, 8)]  # 6 + the 2 cut
    assert demo.height == raw.height - 2
    # every released group (the tuple of every released DEMO field but ids) has one row count
    fields = [c for c in demo.columns if c not in ("primaryid", "caseid", "is_latest")]
    latest = demo.filter(pl.col("is_latest")).join(rows, on="caseid")
    mixed = latest.group_by(fields).agg(pl.col("len").n_unique().alias("counts"), pl.len().alias("n"))
    assert mixed.get_column("counts").to_list() == [1] * mixed.height
    assert mixed.filter(pl.col("n") < 5).is_empty()


def test_left_out_reports_and_their_child_rows_are_absent_and_counted(cut: tuple[Path, Path]) -> None:
    ingested, release = cut
    manifest = json.loads((release / "manifest.json").read_text())["counts"]
    assert manifest["superseded_left_out"] == {"reports": 2, "cases": 2}
    raw = pl.read_parquet(ingested / "reports.parquet")
    left = left_out_reports(raw, plan_versions(raw, NO_P, {}, k=5).kept)
    assert left.height == 2 and left.get_column("caseid").n_unique() == 2
    demo = pl.read_parquet(release / "parquet" / "demo.parquet", columns=["primaryid"])
    for table, name in {"demo": "reports", "drug": "drug", "reac": "reac", "indi": "indi",
                        "ther": "ther", "rpsr": "rpsr", "outc": "outc"}.items():  # fmt: skip
        rows = pl.read_parquet(ingested / f"{name}.parquet", columns=["primaryid"])
        gone = rows.join(left, on="primaryid", how="semi").height
        counts = manifest[table]
        assert counts["superseded_left_out"] == gone, table
        assert counts["rows_in"] == rows.height, table  # every input row accounted for
        released = pl.read_parquet(release / "parquet" / f"{table}.parquet", columns=["primaryid"])
        assert released.join(demo, on="primaryid", how="anti").is_empty(), table  # no orphan child row
        if table != "outc":  # OUTC holds the codes the released outcome makes certain
            assert counts["rows_out"] == released.height == rows.height - gone, table
    assert sum(manifest[t]["superseded_left_out"] for t in ("drug", "reac")) > 0  # child rows went too


def test_a_method_release_publishes_each_case_latest_report_only(
    cut: tuple[Path, Path], tmp_path: Path
) -> None:
    # kl-anonymity's groups are case groups; a method runs without strata, so every count is cut to 1
    ingested, _ = cut
    out = tmp_path / "kl"
    config = AnonymizeConfig(k=5, theta=1.0, seed=3, force=True, method="kl-anonymity")
    anonymize_folder(ingested, out, config=config)
    raw = pl.read_parquet(ingested / "reports.parquet", columns=["primaryid", "caseid", "is_latest"])
    demo = pl.read_parquet(out / "parquet" / "demo.parquet", columns=["caseid", "is_latest"])
    assert demo.get_column("caseid").is_unique().all() and demo.get_column("is_latest").all()
    assert demo.height == raw.get_column("caseid").n_unique()
    manifest = json.loads((out / "manifest.json").read_text())["counts"]
    # six 2-version cases lose 1 report each, two 3-version cases 2 each: 10 reports of 8 cases
    assert manifest["superseded_left_out"] == {"reports": 6 + 2 * 2, "cases": 8}
    assert manifest["demo"]["rows_in"] == raw.height == demo.height + 10
