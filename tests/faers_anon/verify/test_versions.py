"""Verifier rule ``report_count`` (verify.versions): the number of a case's DEMO rows is a released field."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from faers_anon.verify.classes import demo_classes
from faers_anon.verify.verifier import verify_release
from faers_anon.verify.versions import report_count_violations, report_counts, version_rules


def _demo(rows: list[tuple[int, int, str]]) -> pl.DataFrame:
    """DEMO rows (primaryid, caseid, sex), caseid as text as the verifier reads it."""
    frame = pl.DataFrame(rows, schema=["primaryid", "caseid", "sex"], orient="row")
    return frame.with_columns(pl.col("caseid").cast(pl.String), pl.lit(True).alias("is_latest"))


def _members(cases: dict[str, int]) -> pl.DataFrame:
    return pl.DataFrame({"caseid": list(cases), "group": list(cases.values())})


# one QID-group (0) of 4 cases, every DEMO field equal (sex F): cases 1, 2 have 1 row, case 3 has 2 rows,
# case 4 has 3 rows
MIXED = _demo([(11, 1, "F"), (21, 2, "F"), (31, 3, "F"), (32, 3, "F"),
               (41, 4, "F"), (42, 4, "F"), (43, 4, "F")])  # fmt: skip
ONE_GROUP = _members({"1": 0, "2": 0, "3": 0, "4": 0})


def test_a_group_mixing_row_counts_names_exactly_the_cases_below_k() -> None:
    """k = 2: classes on (sex, rows) are {1, 2} (1 row), {3} (2 rows), {4} (3 rows): cases 3 and 4."""
    assert report_counts(MIXED).sort("caseid").rows() == [("1", 1), ("2", 1), ("3", 2), ("4", 3)]
    found = report_count_violations(MIXED, ONE_GROUP, 2)
    assert found.rows() == [
        (0, "report_count", "1 case(s) share all 1 released DEMO fields and 2 DEMO row(s) (k = 2): cases 3"),
        (0, "report_count", "1 case(s) share all 1 released DEMO fields and 3 DEMO row(s) (k = 2): cases 4"),
    ]
    # the classes computed once by the verifier give the same answer
    classes = demo_classes(MIXED)
    assert found.equals(report_count_violations(MIXED, ONE_GROUP, 2, classes))
    # k = 3: the 1-row class {1, 2} is below k too, named with both its cases
    assert report_count_violations(MIXED, ONE_GROUP, 3)["detail"].to_list() == [
        "2 case(s) share all 1 released DEMO fields and 1 DEMO row(s) (k = 3): cases 1, 2",
        "1 case(s) share all 1 released DEMO fields and 2 DEMO row(s) (k = 3): cases 3",
        "1 case(s) share all 1 released DEMO fields and 3 DEMO row(s) (k = 3): cases 4",
    ]


def test_a_release_homogeneous_in_row_counts_passes() -> None:
    """Group 0: cases 1, 2 with 1 row; group 1: cases 3, 4 with 2 rows: every class of 2 ≥ k = 2.

    On the old release the same group layout with cases 2 and 3 swapped fails (each group mixes 1 and
    2 rows: four classes of 1).
    """
    demo = _demo([(11, 1, "F"), (21, 2, "F"), (31, 3, "M"), (32, 3, "M"), (41, 4, "M"), (42, 4, "M")])
    members = _members({"1": 0, "2": 0, "3": 1, "4": 1})
    assert report_count_violations(demo, members, 2).is_empty()
    mixed = _demo([(11, 1, "F"), (31, 3, "F"), (32, 3, "F"), (21, 2, "M"), (41, 4, "M"), (42, 4, "M")])
    mixed_members = _members({"1": 0, "3": 0, "2": 1, "4": 1})
    found = report_count_violations(mixed, mixed_members, 2)
    assert found.select("group", "detail").rows() == [
        (0, "1 case(s) share all 1 released DEMO fields and 1 DEMO row(s) (k = 2): cases 1"),
        (0, "1 case(s) share all 1 released DEMO fields and 2 DEMO row(s) (k = 2): cases 3"),
        (1, "1 case(s) share all 1 released DEMO fields and 1 DEMO row(s) (k = 2): cases 2"),
        (1, "1 case(s) share all 1 released DEMO fields and 2 DEMO row(s) (k = 2): cases 4"),
    ]


def test_cases_below_k_on_the_demo_fields_alone_or_in_a_small_group_are_left_to_other_rules() -> None:
    """Case 4 differs in sex (M): its class on the fields alone is 1 < 2, rule demo_fields' own; the
    F class {1, 2, 3} splits by rows into {1, 2} and {3}: only case 3 is named. With k = 5 the group
    (4 cases) is below k: rule k's, nothing here."""
    demo = _demo([(11, 1, "F"), (21, 2, "F"), (31, 3, "F"), (32, 3, "F"), (41, 4, "M"), (42, 4, "M")])
    found = report_count_violations(demo, ONE_GROUP, 2)
    assert found["detail"].to_list() == [
        "1 case(s) share all 1 released DEMO fields and 2 DEMO row(s) (k = 2): cases 3"
    ]
    assert report_count_violations(demo, ONE_GROUP, 5).is_empty()


def test_the_latest_row_gives_the_fields_and_every_row_counts() -> None:
    """Case 3's reports 31 (M) and 32 (F): its latest (32) is F, so it shares the F class with cases 1
    and 2 (1 row each) and is split off by its 2 rows; integer ids order as numbers (9 < 10)."""
    demo = _demo([(11, 1, "F"), (21, 2, "F"), (10, 3, "F"), (9, 3, "M")])
    found = report_count_violations(demo, _members({"1": 0, "2": 0, "3": 0}), 2)
    assert found["detail"].to_list() == [
        "1 case(s) share all 1 released DEMO fields and 2 DEMO row(s) (k = 2): cases 3"
    ]


def test_the_rule_runs_for_case_groups_of_a_release_that_declares_column_roles() -> None:
    def table() -> tuple[pl.DataFrame, pl.DataFrame | None]:
        return MIXED, demo_classes(MIXED)

    def no_read(*_: object, **__: object) -> pl.LazyFrame:
        raise AssertionError("the cached DEMO is used")

    release = Path("unused")
    rules = version_rules(release, no_read, ONE_GROUP, k=2, case_groups=True, policy_roles=True, demo=table)
    assert [r.height for r in rules] == [2]
    options = {"k": 2, "demo": table}
    assert version_rules(release, no_read, ONE_GROUP, case_groups=False, policy_roles=True, **options) == []  # type: ignore[arg-type]
    assert version_rules(release, no_read, ONE_GROUP, case_groups=True, policy_roles=False, **options) == []  # type: ignore[arg-type]


def _folder(root: Path, rows: dict[int, int], groups: dict[int, str]) -> Path:
    """A hand-built release: case → its DEMO rows and its group's sex; a manifest declaring column roles."""
    demo = [(100 * c + v, c, "Adult", 19.0, 45.0, groups[c], None, None) for c, n in rows.items()
            for v in range(1, n + 1)]  # fmt: skip
    schema = {"primaryid": pl.Int64, "caseid": pl.Int64, "age_group": pl.String, "age_min": pl.Float64,
              "age_max": pl.Float64, "sex": pl.String, "wt_min": pl.Float64,
              "wt_max": pl.Float64}  # fmt: skip
    (root / "parquet").mkdir(parents=True)
    pl.DataFrame(demo, schema=schema, orient="row").write_parquet(root / "parquet" / "demo.parquet")
    for name, column in (("drug", "drug_key"), ("reac", "pt"), ("indi", "indi_pt")):
        empty = pl.DataFrame(schema={"caseid": pl.Int64, column: pl.String})
        empty.write_parquet(root / "parquet" / f"{name}.parquet")
    (root / "knowledge.csv").write_text("drug_key,disease,weight\n")
    (root / "thresholds.csv").write_text("value,theta\n")
    manifest = {"parameters": {"k": 2}, "policy": {"roles": {"demo": {"caseversion": "drop"}}}}
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def test_the_verifier_reports_the_rule_on_a_written_release(tmp_path: Path) -> None:
    """Group F: cases 1, 2 one row, case 3 two rows → case 3 alone on (fields, 2 rows) < k = 2; group M:
    cases 4, 5 two rows each → passes. The same release with case 3 at one row verifies."""
    groups = {1: "F", 2: "F", 3: "F", 4: "M", 5: "M"}
    mixed = verify_release(
        _folder(tmp_path / "a", {1: 1, 2: 1, 3: 2, 4: 2, 5: 2}, groups), check_hashes=False
    )
    assert not mixed.ok
    assert mixed.violations.filter(pl.col("rule") == "report_count").select("qid", "detail").rows() == [
        ("age_group=Adult, age_min=19.0, age_max=45.0, sex=F, wt_min=null, wt_max=null",
         "1 case(s) share all 6 released DEMO fields and 2 DEMO row(s) (k = 2): cases 3"),
    ]  # fmt: skip
    assert mixed.violations.get_column("rule").to_list() == ["report_count"]
    even = verify_release(_folder(tmp_path / "b", {1: 1, 2: 1, 3: 1, 4: 2, 5: 2}, groups), check_hashes=False)
    assert even.ok, even.summary()
