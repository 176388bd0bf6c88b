"""The case view's latest version per case (faers_anon.risk._view._latest)."""

from __future__ import annotations

import polars as pl

from faers_anon.risk._view import _latest


def _rows(caseids: list[int | None], versions: list[int | None], pids: list[int]) -> pl.DataFrame:
    return pl.DataFrame(
        {"primaryid": pids, "caseid": caseids, "caseversion": versions, "v": [f"r{p}" for p in pids]},
        schema={"primaryid": pl.Int64, "caseid": pl.Int64, "caseversion": pl.Int64, "v": pl.String},
    )


def test_latest_takes_the_highest_version_then_primaryid_nulls_lowest_in_case_order() -> None:
    # case 7: versions 2 (pid 1), null (pid 2), 2 (pid 5) -> version 2, then the higher pid 5;
    # case 3: versions null (pid 3), 1 (pid 4) -> pid 4 (null ranks lowest); case 5: its one row
    rows = _rows([7, 7, 3, 3, 7, 5], [2, None, None, 1, 2, 1], [1, 2, 3, 4, 5, 6])
    latest = _latest(rows, ["caseversion", "primaryid"])
    assert latest.get_column("caseid").to_list() == [3, 5, 7]
    assert latest.get_column("v").to_list() == ["r4", "r6", "r5"]


def test_latest_on_rows_sorted_by_case_keeps_every_column() -> None:
    # rows already in case order (the filter path): case 1 -> pid 2 (version 3), case 2 -> pid 3
    rows = _rows([1, 1, 2], [3, 1, None], [2, 1, 3])
    latest = _latest(rows, ["caseversion", "primaryid"])
    assert latest.rows() == [(2, 1, 3, "r2"), (3, 2, None, "r3")]


def test_latest_of_rows_without_case_ids_is_one_row() -> None:
    rows = _rows([None, None], [1, 2], [1, 2])
    assert _latest(rows, ["caseversion", "primaryid"]).get_column("v").to_list() == ["r2"]
