"""Sums of fractional case weights do not depend on the order polars adds the rows in."""

from __future__ import annotations

import polars as pl

from signals.counts import co_reports, count_2x2


def test_sums_of_fractional_weights_do_not_depend_on_the_row_order() -> None:
    # (0.1 + 0.2) + 0.3 = 0.6000000000000001 but 0.1 + (0.2 + 0.3) = 0.6 in floats; a, the margins
    # and N are rounded to 9 decimals, so either order gives a = 0.6 exactly
    assert (0.1 + 0.2) + 0.3 != 0.1 + (0.2 + 0.3)
    drugs = pl.DataFrame({"caseid": [1, 2, 3], "drug": ["D", "D", "D"]})
    events = pl.DataFrame({"caseid": [1, 2, 3], "event": ["E", "E", "E"]})
    co = co_reports(drugs, events)
    rows = {"caseid": [1, 2, 3], "stratum_id": pl.Series([0, 0, 0], dtype=pl.UInt32), "w": [0.1, 0.2, 0.3]}
    forward = pl.DataFrame(rows)
    a = count_2x2(co, forward, min_a=0.0).row(0, named=True)
    b = count_2x2(co, forward.reverse(), min_a=0.0).row(0, named=True)
    assert a == b
    assert a["a"] == 0.6
    assert a["b"] == a["c"] == a["d"] == 0.0
