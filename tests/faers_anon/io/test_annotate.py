"""The annotated chain: the latest version flag agrees with the case merge's version order; child rows find
their report."""

from __future__ import annotations

import datetime as dt

import polars as pl

from faers_anon.io.annotate import _with_is_latest, _with_report
from faers_anon.io.cases import latest_primaryid
from faers_anon.io.ingest_report import KEPT, QUARANTINED, STATUS
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
