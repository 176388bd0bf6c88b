"""Pending follow-ups that wait: no new follow-up in their unit, so a returning-only bundle cannot change.

Hand-built ledger histories (``release:group`` pairs) whose answers follow from docs/series.md §4: a
pending case is offered again when a new follow-up's history starts with its own (the new case joins
its intersection) or its history starts with a new follow-up's (it lies in that case's unit).
"""

from __future__ import annotations

import polars as pl

from faers_anon.series.pending import waiting

PAST = pl.DataFrame({
    "pseudonym": [1, 2, 3, 4, 5, 6, 7],
    "history": ["1:5", "1:5|2:7", "1:9", "1:9|2:3", "1:8", "1:5|2:8", "1:50"],
})  # fmt: skip


def _waiting(pending: list[int], arrived: list[str]) -> list[int]:
    frame = pl.DataFrame({"caseid": [p * 100 for p in pending], "pseudonym": pending},
                         schema={"caseid": pl.Int64, "pseudonym": pl.Int64})  # fmt: skip
    return sorted(waiting(frame, PAST, pl.Series(arrived, dtype=pl.Utf8)).to_list())


def test_a_pending_case_waits_unless_a_new_follow_up_shares_its_history() -> None:
    # new follow-ups of histories 1:5|2:7|3:1 and 1:9:
    #   1 (1:5) and 2 (1:5|2:7) are prefixes of 1:5|2:7|3:1: the new case is in their intersections;
    #   3 (1:9) is the new case's own history; 4 (1:9|2:3) lies in its unit;
    #   5 (1:8) shares no history; 6 (1:5|2:8) neither (2:8 is not the new case's); 7 (1:50) is not 1:5
    assert _waiting([1, 2, 3, 4, 5, 6, 7], ["1:5|2:7|3:1", "1:9"]) == [500, 600, 700]


def test_without_new_follow_ups_every_pending_case_waits_and_with_none_pending_none_does() -> None:
    assert _waiting([1, 5], []) == [100, 500]
    assert _waiting([], ["1:5"]) == []
