"""The annotated chain: the latest version flag agrees with the case merge's version order; child rows find
their report."""

from __future__ import annotations

import datetime as dt
import random

import polars as pl
import pytest

from faers_anon.io.annotate import _with_is_latest, _with_report, with_is_latest
from faers_anon.io.cases import latest_primaryid
from faers_anon.io.ingest_report import DELETED_STATUS, KEPT, QUARANTINED, STATUS
from faers_anon.io.rules import QUARTER_CODE

D = dt.date


def test_is_latest_follows_the_version_order_of_the_case_merge() -> None:
    rows = pl.DataFrame(
        [
            (1, 11, 1, D(2023, 1, 5), 0),
            (1, 12, 2, D(2023, 3, 1), 0),
            (1, 13, 2, D(2023, 3, 1), 1),  # same version and date, later quarter: latest
            (2, 21, None, D(2005, 6, 1), 0),  # no caseversion anywhere: the latest fda_dt wins
            (2, 22, None, D(2005, 3, 1), 1),
            (3, 31, None, None, 0),
            (3, 32, 1, None, 0),  # a present caseversion beats a missing one
            (4, 41, 5, D(2020, 1, 1), 2),
            (4, 42, 5, D(2020, 1, 1), 2),  # full tie: the higher primaryid
            (5, None, 9, D(2020, 1, 1), 0),  # the latest version has no primaryid: unknown for all
            (5, 51, 1, D(2020, 1, 1), 0),
            (None, 61, 1, None, 0),  # rows without caseid form one group, as in a window
            (None, 62, 2, None, 0),
            (6, 71, 9, D(2024, 1, 1), 0),  # quarantined below: a newer version that is no version
            (6, 72, 1, D(2023, 1, 1), 0),  # so this kept row is the case's latest
        ],
        schema={
            "caseid": pl.Int64,
            "primaryid": pl.Int64,
            "caseversion": pl.Int64,
            "fda_dt": pl.Date,
            QUARTER_CODE: pl.UInt32,
        },
        orient="row",
    )
    rows = rows.with_columns(
        pl.when(pl.col("primaryid") == 71).then(pl.lit(QUARANTINED)).otherwise(pl.lit(KEPT)).alias(STATUS)
    )
    flagged = _with_is_latest(rows.lazy()).collect().get_column("is_latest")
    kept = rows.filter(pl.col(STATUS) == KEPT).with_columns(pl.col(QUARTER_CODE).alias("quarter"))
    latest = kept.select(
        "primaryid", (pl.col("primaryid") == latest_primaryid().over("caseid")).alias("expected")
    ).filter(pl.col("expected"))
    expected = rows.join(latest, on="primaryid", how="left", maintain_order="left")["expected"].fill_null(
        False
    )
    assert flagged.to_list() == expected.to_list()
    assert flagged.to_list()[-2:] == [False, True]  # the quarantined newer row does not win
    assert flagged.to_list() == [False, False, True, True, False, False, True, False, True, False, False,
                                 False, True, False, True]  # fmt: skip


def test_child_rows_find_their_report_in_runs_and_out_of_order() -> None:
    """Runs of one report's rows are searched once (their first row); rows out of order, unknown,
    without a primaryid or of another quarter still find their own report (or none)."""
    reports = pl.DataFrame(  # key = primaryid × 2 quarters + quarter code
        {
            "_report_key": [20, 40, 41, 60],
            "_report_caseid": [1, 2, 3, 4],
            "_report_kept": [True, True, False, True],
        }
    )
    rows = pl.DataFrame(
        {
            "primaryid": [10, 10, 10, 30, 20, 20, 10, None, 30, 99, 20],
            QUARTER_CODE: [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1],
        },
        schema={"primaryid": pl.Int64, QUARTER_CODE: pl.UInt32},
    )
    caseid, kept = _with_report(rows, reports, 2)
    assert caseid.to_list() == [1, 1, 1, 4, 2, 3, 1, None, 4, None, 3]
    assert kept.to_list() == [True, True, True, True, True, False, True, None, True, None, False]


def _flagged_both_ways(rows: pl.DataFrame) -> tuple[list[bool], list[bool]]:
    by_runs = with_is_latest(rows).get_column("is_latest").to_list()
    by_windows = _with_is_latest(rows.lazy()).collect().get_column("is_latest").to_list()
    return by_runs, by_windows


def test_is_latest_by_runs_of_sorted_caseids_is_the_windows_flag() -> None:
    """Sorted caseids without nulls: each case a run, its maxima by reduceat; the hand-worked flags
    of the test above (the two caseid-less rows made case 7, last)."""
    rows = pl.DataFrame(
        [(1, 11, 1, D(2023, 1, 5)), (1, 12, 2, D(2023, 3, 1)), (1, 13, 2, D(2023, 3, 1)),
         (2, 21, None, D(2005, 6, 1)), (2, 22, None, D(2005, 3, 1)), (3, 31, None, None), (3, 32, 1, None),
         (4, 41, 5, D(2020, 1, 1)), (4, 42, 5, D(2020, 1, 1)), (5, None, 9, D(2020, 1, 1)),
         (5, 51, 1, D(2020, 1, 1)), (6, 71, 9, D(2024, 1, 1)), (6, 72, 1, D(2023, 1, 1)),
         (7, 61, 1, None), (7, 62, 2, None)],
        schema={"caseid": pl.Int64, "primaryid": pl.Int64, "caseversion": pl.Int64, "fda_dt": pl.Date},
        orient="row",
    )  # fmt: skip
    rows = rows.with_columns(
        pl.when(pl.col("primaryid") == 71).then(pl.lit(QUARANTINED)).otherwise(pl.lit(KEPT)).alias(STATUS)
    )
    by_runs, by_windows = _flagged_both_ways(rows)
    assert by_runs == [False, False, True, True, False, False, True, False, True, False, False, False, True,
                       False, True]  # fmt: skip
    assert by_runs == by_windows
    assert with_is_latest(rows.head(0)).get_column("is_latest").to_list() == []


@pytest.mark.parametrize("seed", range(3))
def test_is_latest_by_runs_agrees_with_the_windows_on_random_versions(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(100):
        n = rng.randint(1, 30)
        caseids = sorted(rng.randint(1, 6) for _ in range(n))
        rows = pl.DataFrame(
            {
                "caseid": caseids,
                "primaryid": [rng.choice([None, *range(1, 8)]) for _ in range(n)],
                "caseversion": [rng.choice([None, 1, 2, 3]) for _ in range(n)],
                "fda_dt": [rng.choice([None, D(2020, 1, 1), D(2021, 1, 1)]) for _ in range(n)],
                STATUS: [rng.choice([KEPT, KEPT, QUARANTINED, DELETED_STATUS]) for _ in range(n)],
            },
            schema_overrides={"caseid": pl.Int64, "primaryid": pl.Int64, "caseversion": pl.Int64},
        )
        by_runs, by_windows = _flagged_both_ways(rows)
        assert by_runs == by_windows, rows
    shuffled = rows.with_columns(pl.col("caseid").reverse())  # not sorted: the windows themselves
    assert with_is_latest(shuffled).get_column("is_latest").to_list() == _flagged_both_ways(shuffled)[1]
