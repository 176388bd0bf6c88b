"""Verifier rules ``outcome_set`` and ``outcome_versions`` (verify.outcomes) on hand-built releases."""

from __future__ import annotations

import polars as pl

from faers_anon.verify.classes import demo_classes, demo_field_violations
from faers_anon.verify.outcomes import declares_outcome, outcome_set_violations, outcome_version_violations

# one QID-group (0) of 4 cases, k = 2; every DEMO field equal; reports 11, 12 are versions of case 1
DEMO = pl.DataFrame(
    {
        "primaryid": ["11", "12", "21", "31", "41"],
        "caseid": ["1", "1", "2", "3", "4"],
        "age_group": ["Adult"] * 5,
        "outcome": ["*"] * 5,
        "is_latest": [False, True, True, True, True],
    }
)
MEMBERS = pl.DataFrame({"caseid": ["1", "2", "3", "4"], "group": [0, 0, 0, 0]})


def _outc(rows: list[tuple[str, str, str]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["primaryid", "caseid", "outc_cod"], orient="row")


def test_a_group_whose_outc_sets_split_it_below_k_is_reported_once() -> None:
    # sets: case 1 {DE, HO}, case 2 {DE, HO}, case 3 {HO}, case 4 {}: classes of 2, 1, 1 → cases 3 and 4
    # are below k = 2 in a group of 4: one violation for the group, naming case 3 (the first)
    outc = _outc([("11", "1", "HO"), ("12", "1", "de"), ("12", "1", "HO"), ("21", "2", "DE"),
                  ("21", "2", "HO"), ("31", "3", "HO")])  # fmt: skip
    found = outcome_set_violations(DEMO, outc, MEMBERS, 2)
    assert found.rows() == [
        (0, "outcome_set", "1 case(s) share all 2 released DEMO fields and the OUTC set of case 3 (k = 2)")
    ]
    # group-constant sets (the release's promise): no violation
    same = _outc([(p, c, "DE") for p, c in DEMO.select("primaryid", "caseid").rows()])
    assert outcome_set_violations(DEMO, same, MEMBERS, 2).is_empty()


def test_a_group_already_below_k_is_left_to_rule_k() -> None:
    outc = _outc([("31", "3", "HO")])
    assert outcome_set_violations(DEMO, outc, MEMBERS, 5).is_empty()  # the group has 4 < 5 cases


def test_versions_of_a_case_must_carry_the_same_codes() -> None:
    outc = _outc([("11", "1", "HO"), ("12", "1", "DE"), ("12", "1", "HO")])  # report 11 lacks DE
    found = outcome_version_violations(DEMO, outc, MEMBERS)
    assert found.rows() == [
        (0, "outcome_versions", "caseid 1: its reports carry different OUTC sets (DE,HO | HO)")
    ]
    both = _outc([("11", "1", "HO"), ("12", "1", "HO")])
    assert outcome_version_violations(DEMO, both, MEMBERS).is_empty()


def test_the_rules_run_when_the_policy_declares_the_outc_set_a_qid() -> None:
    assert declares_outcome({"policy": {"columns": {"demo": {"outcome": "qid"}}}})
    assert not declares_outcome({"policy": {"columns": {"demo": {"outcome": "drop"}}}})
    assert not declares_outcome({})


def test_demo_classes_group_each_cases_latest_row_and_serve_both_rules() -> None:
    """Case 1's latest report is 12 (sex F), case 2's 21 (F), case 3's 31 (M): classes {1, 2} and {3}."""
    demo = pl.DataFrame(
        {
            "primaryid": [12, 11, 21, 31],
            "caseid": ["1", "1", "2", "3"],
            "sex": ["F", "M", "F", "M"],
            "quarter": ["2025Q1"] * 4,
        }
    )
    classes = demo_classes(demo).sort("size")
    assert classes.select("sex", "size", "caseid").rows() == [("M", 1, "3"), ("F", 2, "1")]
    assert [sorted(m) for m in classes["members"]] == [["3"], ["1", "2"]]
    members = pl.DataFrame({"caseid": ["1", "2", "3"], "group": [0, 0, 0]})
    found = demo_field_violations(demo, members, 2, classes)
    # 2 fields: sex and quarter (one value in a release: docs/formats.md "The quarter column")
    assert found["detail"].to_list() == ["1 case(s) share all 2 released DEMO fields of case 3 (k = 2)"]
    assert found.equals(demo_field_violations(demo, members, 2))
    outc = _outc([("12", "1", "HO")]).with_columns(pl.col("primaryid").cast(pl.Int64))
    # case 3 is below k on sex alone (rule demo_fields'); cases 1 {HO} and 2 {} split the F class
    shared = outcome_set_violations(demo, outc, members, 2, classes)
    assert shared["detail"].to_list() == [
        "1 case(s) share all 2 released DEMO fields and the OUTC set of case 1 (k = 2)"  # sex, quarter
    ]
    assert shared.equals(outcome_set_violations(demo, outc, members, 2))


def test_no_outc_code_leaves_both_outc_rules_nothing_to_add() -> None:
    """OUTC rows with blank codes only: every set is empty, so case 3's class {3} (sex M) below k = 2 is
    rule demo_fields' alone and no report's set differs from another's."""
    demo = pl.DataFrame(
        {"primaryid": [11, 12, 21, 31], "caseid": ["1", "1", "2", "3"], "sex": ["F", "F", "F", "M"]}
    )
    members = pl.DataFrame({"caseid": ["1", "2", "3"], "group": [0, 0, 0]})
    blank = _outc([("11", "1", "  ")])
    assert demo_field_violations(demo, members, 2).height == 1
    for outc in (blank, blank.clear()):
        found = outcome_set_violations(demo, outc, members, 2)
        assert found.is_empty() and found.schema == {
            "group": pl.Int64,
            "rule": pl.String,
            "detail": pl.String,
        }
        assert outcome_version_violations(demo, outc, members).is_empty()
    # one code on one of case 1's two reports: both rules have something again
    coded = _outc([("11", "1", "HO")])
    assert outcome_version_violations(demo, coded, members)["group"].to_list() == [0]
    assert outcome_set_violations(demo, coded, members, 2)["detail"].to_list() == [
        "1 case(s) share all 1 released DEMO fields and the OUTC set of case 1 (k = 2)"
    ]
