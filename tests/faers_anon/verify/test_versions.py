"""Verifier rule ``report_count`` (verify.versions): the number of a case's DEMO rows is a released field."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from faers_anon.verify.classes import demo_classes
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
