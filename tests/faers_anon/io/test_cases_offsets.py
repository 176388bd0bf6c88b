"""Super-record lists built by Arrow offsets over the values (no group-by, no join), hand-worked answers."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from faers_anon.io.cases import combine, term_lists

_TERMS = pl.List(pl.Utf8)


def _versions(caseids: list[int]) -> pl.DataFrame:
    return pl.DataFrame(
        {"caseid": caseids, "n_reports": [1] * len(caseids)}, schema_overrides={"n_reports": pl.UInt32}
    )


def _refuse(*_: Any, **__: Any) -> Any:
    raise AssertionError("joined or grouped")


@pytest.fixture
def no_join_nor_group_by(monkeypatch: pytest.MonkeyPatch) -> None:
    for owner in (pl.DataFrame, pl.LazyFrame):
        monkeypatch.setattr(owner, "join", _refuse)
        monkeypatch.setattr(owner, "group_by", _refuse)


@pytest.mark.usefixtures("no_join_nor_group_by")
def test_term_lists_give_each_case_its_sorted_unique_values_without_a_group_by() -> None:
    rows = pl.DataFrame(
        {"caseid": [7, 3, 7, 3, 9, 7, 3], "pt": ["rash", "Cough", "Asthma", "cough", None, "RASH", "Fever"]}
    )
    lists = term_lists(rows, "reactions")
    assert lists.rows() == [(3, ["COUGH", "FEVER"]), (7, ["ASTHMA", "RASH"])]
    assert lists.schema == pl.Schema({"caseid": pl.Int64, "reactions": _TERMS})
    empty = term_lists(rows.head(0), "reactions")
    assert empty.rows() == []
    assert empty.schema == pl.Schema({"caseid": pl.Int64, "reactions": _TERMS})


@pytest.mark.usefixtures("no_join_nor_group_by")
def test_combine_places_each_list_on_its_case_without_a_join() -> None:
    versions = _versions([2, 4, 6, 8])
    lists = {
        "reactions": pl.DataFrame(
            {"caseid": [1, 4, 8], "reactions": [["X"], ["A", "B"], ["C"]]}
        ),  # 1: no case
        "drug_keys": pl.DataFrame(
            {"caseid": [2, 6], "drug_keys": [[], None]}, schema_overrides={"drug_keys": _TERMS}
        ),
    }
    cases = combine(versions, lists)
    expected = _versions([2, 4, 6, 8]).with_columns(
        pl.Series("indications", [[], [], [], []], _TERMS),
        pl.Series("reactions", [[], ["A", "B"], [], ["C"]], _TERMS),
        pl.Series("drug_keys", [[], [], [], []], _TERMS),
    )
    assert_frame_equal(cases, expected, check_exact=True)
    assert cases.get_column("reactions").to_list() == [[], ["A", "B"], [], ["C"]]


def test_combine_of_repeated_caseids_joins_as_before() -> None:
    # A list frame repeating a caseid cannot be placed by offsets: the left join keeps both rows.
    versions = _versions([1, 2])
    reactions = pl.DataFrame({"caseid": [2, 2], "reactions": [["A"], ["B"]]})
    cases = combine(versions, {"reactions": reactions})
    assert cases.select("caseid", "reactions").rows() == [(1, []), (2, ["A"]), (2, ["B"])]
