"""Case super-records (SPEC §4) on hand-built versions whose answers are worked out by hand."""

from __future__ import annotations

import datetime as dt

import polars as pl

from faers_anon.io.cases import (
    combine,
    latest_versions,
    merge_versions,
    term_codes,
    term_lists,
    version_summary,
)

D = dt.date


Version = tuple[int, int, int | None, dt.date | None, str, float | None, str | None, float | None]


def _reports(rows: list[Version]) -> pl.DataFrame:
    schema = {
        "caseid": pl.Int64,
        "primaryid": pl.Int64,
        "caseversion": pl.Int64,
        "fda_dt": pl.Date,
        "quarter": pl.Utf8,
        "age_years": pl.Float64,
        "sex": pl.Utf8,
        "weight_kg": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def _children(column: str, rows: list[tuple[int, str | None]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"caseid": pl.Int64, column: pl.Utf8}, orient="row")


REPORTS = _reports([
    # case 1: three versions over two quarters; version 3 is the latest
    (1, 12, 2, D(2023, 3, 1), "2023Q1", 40.0, "F", None),
    (1, 13, 3, D(2023, 4, 2), "2023Q2", 42.5, "M", 70.0),
    (1, 11, 1, D(2023, 1, 5), "2023Q1", None, None, 68.0),
    # case 2: legacy, no caseversion: the latest fda_dt wins
    (2, 21, None, D(2005, 6, 1), "2005Q2", None, None, None),
    (2, 22, None, D(2005, 3, 1), "2005Q3", None, None, None),
    # case 3: same version and date in two quarters: the higher primaryid wins (FDA's rule)
    (3, 31, 4, D(2013, 1, 1), "2012Q4", None, "F", None),
    (3, 32, 4, D(2013, 1, 1), "2013Q1", 7.0, "F", None),
    # case 4: one report
    (4, 41, 1, None, "2023Q1", 90.0, "M", 80.0),
    # case 5: a legacy version (null caseversion) and a FAERS version: the FAERS one is latest
    (5, 51, None, D(2012, 9, 1), "2012Q3", 30.0, None, None),
    (5, 52, 1, D(2012, 8, 1), "2012Q4", 31.0, "F", None),
])  # fmt: skip


def test_latest_version_rule() -> None:
    latest = dict(latest_versions(REPORTS).collect().rows())
    assert latest == {1: 13, 2: 21, 3: 32, 4: 41, 5: 52}


def test_latest_version_ignores_the_quarter() -> None:
    # same version and date; the higher primaryid came in the EARLIER quarter: it is the latest
    versions = _reports([(6, 62, 2, D(2023, 5, 1), "2023Q1", None, None, None),
                         (6, 61, 2, D(2023, 5, 1), "2023Q2", None, None, None)])  # fmt: skip
    assert latest_versions(versions).collect().rows() == [(6, 62)]
    assert version_summary(versions).get_column("latest_primaryid").to_list() == [62]


def test_super_records() -> None:
    drug = _children("drug_key", [(1, "B"), (1, "A"), (1, "A"), (3, None), (9, "ORPHAN")])
    reac = _children("pt", [(1, "Pyrexia"), (1, "PYREXIA "), (1, "Rash"), (2, "Nausea")])
    indi = _children("indi_pt", [(4, "  atrial   fibrillation")])
    cases = merge_versions(REPORTS, drug, reac, indi)
    assert cases.get_column("caseid").to_list() == [1, 2, 3, 4, 5]  # the orphan drug row makes no case
    one = cases.row(0, named=True)
    assert one["primaryids"] == [11, 12, 13] and one["caseversions"] == [1, 2, 3]
    assert (one["n_reports"], one["latest_primaryid"]) == (3, 13)
    assert (one["age_min"], one["age_max"], one["wt_min"], one["wt_max"]) == (40.0, 42.5, 68.0, 70.0)
    assert one["sex"] == "*"  # F and M: the lowest common ancestor is the root
    assert (
        one["drug_keys"] == ["A", "B"]
        and one["reactions"] == ["PYREXIA", "RASH"]
        and one["indications"] == []
    )
    two = cases.row(1, named=True)
    assert two["primaryids"] == [22, 21] and two["caseversions"] == [None, None]
    assert (two["age_min"], two["sex"], two["wt_max"]) == (None, None, None)  # every version missing
    assert two["reactions"] == ["NAUSEA"] and two["drug_keys"] == []
    three = cases.row(2, named=True)
    assert (three["primaryids"], three["sex"], three["age_min"], three["age_max"]) == (
        [31, 32],
        "F",
        7.0,
        7.0,
    )
    assert cases.row(3, named=True)["indications"] == ["ATRIAL FIBRILLATION"]
    assert cases.row(4, named=True)["primaryids"] == [51, 52]
    assert cases.schema["n_reports"] == pl.UInt32 and cases.schema["reactions"] == pl.List(pl.Utf8)


def test_no_children_gives_empty_lists() -> None:
    empty = {c: _children(c, []) for c in ("drug_key", "pt", "indi_pt")}
    cases = merge_versions(REPORTS.head(1), empty["drug_key"], empty["pt"], empty["indi_pt"])
    row = cases.row(0, named=True)
    assert (row["indications"], row["reactions"], row["drug_keys"]) == ([], [], [])


def test_combine_accepts_frames_in_any_order() -> None:
    versions = version_summary(REPORTS).reverse()
    reactions = term_lists(_children("pt", [(4, "Cough"), (1, "Rash"), (4, "Asthma")]), "reactions").reverse()
    cases = combine(versions, {"reactions": reactions})
    assert cases.get_column("caseid").to_list() == [1, 2, 3, 4, 5]
    assert cases.get_column("reactions").to_list() == [["RASH"], [], [], ["ASTHMA", "COUGH"], []]
    assert cases.get_column("drug_keys").to_list() == [[]] * 5  # no frame given: empty lists


def test_term_lists_of_extreme_caseids() -> None:
    # The (caseid, value) pairs are sorted as one integer: no caseid may overflow or misorder it.
    big, small = 2**63 - 1, -(2**63)
    rows = _children("pt", [(big, "b"), (small, "A"), (big, "a"), (0, None), (small, "A"), (-1, "C")])
    lists = term_lists(rows, "reactions")
    assert lists.rows() == [(small, ["A"]), (-1, ["C"]), (big, ["A", "B"])]
    assert lists.schema == pl.Schema({"caseid": pl.Int64, "reactions": pl.List(pl.Utf8)})


def test_term_codes_number_the_distinct_terms_in_order_of_first_sight() -> None:
    codes, distinct = term_codes(pl.Series(["b", "a", None, "b", "c", "a"]))
    assert codes.to_list() == [0, 1, None, 0, 2, 1]
    assert distinct.to_list() == ["b", "a", "c"]
    assert distinct.dtype == pl.Utf8
    again, _ = term_codes(pl.Series(["c"]))  # each call numbers its own terms from 0
    assert again.to_list() == [0]


def test_term_codes_gather_back_the_terms_even_without_any() -> None:
    terms = pl.Series([None, "x", None, "y", "x", "z"])
    codes, distinct = term_codes(terms)
    assert distinct.to_list() == ["x", "y", "z"]
    assert distinct.gather(codes).to_list() == terms.to_list()
    none, nothing = term_codes(pl.Series([None, None], dtype=pl.Utf8))
    assert none.to_list() == [None, None]
    assert nothing.to_list() == []
    assert nothing.dtype == pl.Utf8


def test_term_lists_near_the_int64_pair_limit() -> None:
    # n = 2 values: caseids up to (2^63 - 1) // 2 - 2 pair in Int64, one more takes the Int128 path.
    edge, over = (2**63 - 1) // 2 - 2, (2**63 - 1) // 2 - 1
    for caseid in (edge, over):
        rows = _children("pt", [(caseid, "b"), (caseid, "a"), (3, "B"), (caseid, "A")])
        assert term_lists(rows, "reactions").rows() == [(3, ["B"]), (caseid, ["A", "B"])]
