"""The annotated chain: the latest version flag agrees with the case merge's version order."""

from __future__ import annotations

import datetime as dt

import polars as pl

from faers_anon.cases import latest_primaryid
from faers_anon.io.annotate import _with_is_latest
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
    flagged = _with_is_latest(rows.lazy()).collect().get_column("is_latest")
    reference = rows.with_columns(pl.col(QUARTER_CODE).alias("quarter")).select(
        pl.col("primaryid") == latest_primaryid().over("caseid")
    )
    assert flagged.to_list() == reference.to_series().to_list()
    assert flagged.to_list() == [False, False, True, True, False, False, True, False, True, None, None,
                                 False, True]  # fmt: skip
