"""The named rules: each fails on the row it names, and reasons list failures in rule order."""

from __future__ import annotations

import polars as pl

from faers_anon.io import rules


def _frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "primaryid": [11, None, 0, 13],
            "caseid": [1, 2, None, 3],
            "_raw_caseid": ["1", "2", "x", "3"],
            "extra_fields": [None, None, "X", None],
            "_short_row": [False, True, False, False],
            "_invalid_bytes": [False, False, False, True],
        }
    )


def test_demo_row_rules() -> None:
    frame = _frame().with_columns(**{n: e for n, e in rules.row_rules("demo").items()})
    assert frame.get_column("no_extra_fields").to_list() == [True, True, False, True]
    assert frame.get_column("enough_fields").to_list() == [True, False, True, True]
    assert frame.get_column("valid_encoding").to_list() == [True, True, True, False]
    assert frame.get_column("primaryid_present").to_list() == [True, False, False, True]
    assert frame.get_column("caseid_present").to_list() == [True, True, False, True]


def test_child_caseid_may_be_absent_but_not_unreadable() -> None:
    frame = pl.DataFrame(
        {
            "caseid": [None, None, 5, None, None, 7, -3, 0],
            "_raw_caseid": [None, "x", "5", "", "  ", " 7 ", "-3", "0"],
        }
    )
    ok = frame.select(rules.row_rules("drug")["caseid_readable"]).to_series()
    # absent (null, empty or blank) passes; read and positive passes; unreadable or not positive fails
    assert ok.to_list() == [True, False, True, True, True, True, False, False]


def test_reason_names_row_failures_then_deletion_then_link_failures() -> None:
    checks = rules.RuleSet(
        row={"row_width": pl.col("w"), "primaryid_present": pl.col("p")},
        link={"report_known": pl.col("k")},
    )
    frame = pl.DataFrame(
        {
            "w": [False, True, True, True, True],
            "p": [False, False, True, True, True],
            "k": [False, False, False, False, True],
            "deleted": [True, False, True, False, False],
        }
    )
    frame = frame.with_columns(**checks.row_columns(), **checks.link_columns())
    frame = frame.with_columns(checks.row_ok().alias(rules.ROW_OK))
    frame = frame.with_columns((pl.col(rules.ROW_OK) & pl.col("deleted")).alias(rules.IS_DELETED))
    reasons = frame.select(checks.reason()).to_series().to_list()
    assert reasons == [
        "row_width;primaryid_present",
        "primaryid_present",
        "caseid_deleted",
        "report_known",
        "",
    ]


def test_primaryid_unique_keeps_the_first_candidate_of_each_quarter() -> None:
    frame = pl.DataFrame(
        {
            rules.QUARTER_CODE: [0, 0, 0, 1, 0],
            "primaryid": [7, 7, 8, 7, 7],
            rules.CANDIDATE: [False, True, True, True, True],
        }
    )
    got = frame.select(**rules.report_link_rules())
    assert got.get_column("primaryid_unique").to_list()[1:] == [True, True, True, False]
    assert got.get_column("primaryid_latest_quarter").to_list()[1:] == [False, True, True, False]


def test_one_quarter_link_rules_agree_with_the_general_ones_on_candidates() -> None:
    frame = pl.DataFrame(
        {
            rules.QUARTER_CODE: [0, 0, 0, 0, 0, 0],
            "primaryid": [7, 7, 8, 7, 9, 8],
            rules.CANDIDATE: [False, True, True, True, True, True],
        }
    )
    later = pl.Series([9])
    for latest in (None, later):
        general = frame.select(**rules.report_link_rules(latest)).filter(frame.get_column(rules.CANDIDATE))
        alone = frame.select(**rules.report_link_rules(latest, one_quarter=True)).filter(
            frame.get_column(rules.CANDIDATE)
        )
        assert alone.equals(general)
    got = frame.select(**rules.report_link_rules(later, one_quarter=True)).filter(
        frame.get_column(rules.CANDIDATE)
    )
    assert got.get_column("primaryid_unique").to_list() == [True, True, False, True, False]
    assert got.get_column("primaryid_latest_quarter").to_list() == [True, True, True, False, True]


def test_value_rules_flag_unreadable_and_implausible_values() -> None:
    frame = pl.DataFrame(
        {
            "_raw_age": ["42", "4x", "45", "150"],
            "age": [42.0, None, 45.0, 150.0],
            "age_cod": ["YR", "YR", "YRS", "YR"],
            "age_years": [42.0, None, None, None],
        }
    )
    value = rules.value_rules("demo")
    got = frame.select(**{n: value[n] for n in ("age_is_number", "age_cod_known", "age_plausible")})
    assert got.rows() == [(True, True, True), (False, True, True), (True, False, True), (True, True, False)]


def test_reason_words_spell_out_each_failed_rule() -> None:
    reasons = pl.Series(["enough_fields;primaryid_present", "valid_encoding", "caseid_deleted", "new_rule"])
    words = pl.select(rules.reason_words(pl.lit(reasons))).to_series().to_list()
    assert words == [
        "fewer fields than the header; primaryid (isr) missing or not a positive integer",
        "invalid byte sequence for UTF-8, the file's encoding",
        "case on a DELETE list (removed, not quarantined)",
        "new_rule",
    ]
