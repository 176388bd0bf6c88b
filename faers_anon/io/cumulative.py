"""Cumulative ingest of consecutive quarters: the per-quarter accounting and the era boundary.

Source: issue 14 item 1; FDA README §C and FAQ 1 (a case's latest version is its current
information), FAQ 29 (the same report in two extracts: the later one is used), ASC_NTS §G (legacy
``ISR``/``CASE`` → ``PRIMARYID``/``CASEID``); FORMAT.md §3 "Carry-over" (in 2012 FDA carried AERS
cases into FAERS under the same case number, ``caseversion`` counting on from the AERS versions).

How several quarters become one database (the work is done by :mod:`faers_anon.io.annotate` on
the one DEMO frame of every quarter given; this module counts what it did):

* **Latest version** (:data:`faers_anon.io.cases.VERSION_ORDER`): among a case's kept reports of every
  quarter, the highest ``caseversion``, then the latest ``fda_dt``, then the highest ``primaryid``.
  The quarter a report came in plays no part; the same primaryid in two quarters is one report, the
  later extract's row kept (rule ``primaryid_latest_quarter``).
* **Era boundary** (2012Q3 → 2012Q4): legacy ``CASE`` is read as ``caseid`` and ``ISR`` as
  ``primaryid``, so a legacy case and its FAERS follow-ups share a caseid. A legacy report has no
  ``caseversion``; a missing caseversion ranks below every present one, so any FAERS version
  supersedes every AERS one (FAERS continued the AERS case's version count), and legacy ISRs of one
  case are ordered by ``fda_dt`` then ISR (FDA: the latest ISR is the most current).
  Assumption (not seen in the samples): an ISR never equals a FAERS primaryid of another case
  (ISRs have at most 8 digits; a FAERS primaryid is the caseid followed by the version).
* **Deletion**: a caseid on the DELETE list of any quarter given is removed from every quarter.

Accounting per quarter (DEMO rows, :func:`quarter_accounting`): ``read`` = ``latest`` +
``superseded`` + ``deleted`` + ``quarantined``, checked; ``superseded_by_later_quarter`` counts the
superseded reports whose case's latest version came in a later quarter.

Memory: the quarters are scanned lazily and each file is read once, but DEMO of all quarters is
collected as one frame (the case index needs every version's caseid, caseversion, fda_dt and
primaryid) and each child table's kept rows of all quarters are written in one pass; peak memory
grows with the number of quarters (it is not yet bounded by one quarter).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from faers_anon.io.ingest_report import DELETED_STATUS, KEPT, QUARANTINED, STATUS
from faers_anon.io.rules import QUARTER_CODE

__all__ = ["FIRST_FAERS", "era", "quarter_accounting", "quarter_gaps", "check_quarters"]

#: The first quarter of FAERS (the extract of 2012-08-28 … 2012-12-31); earlier ones are AERS.
FIRST_FAERS = "2012Q4"


def era(quarter: str) -> str:
    """``"AERS"`` for a quarter before 2012Q4, else ``"FAERS"`` (README §A)."""
    return "AERS" if quarter < FIRST_FAERS else "FAERS"


def _index(quarter: str) -> int:
    return int(quarter[:4]) * 4 + int(quarter[-1]) - 1


def quarter_gaps(quarters: list[str], /) -> list[str]:
    """The quarters missing between the first and last of ``quarters`` (``yyyyQq`` strings)."""
    if not quarters:
        return []
    have = {_index(q) for q in quarters}
    first, last = min(have), max(have)
    return [f"{i // 4}Q{i % 4 + 1}" for i in range(first, last + 1) if i not in have]


def quarter_accounting(frame: pl.DataFrame, quarters: list[str], /) -> list[dict[str, Any]]:
    """Per quarter, what became of its DEMO reports in the cumulative database.

    Args:
        frame: the annotated DEMO frame (``STATUS``, ``is_latest``, ``caseid``, the quarter code).
        quarters: the quarters, indexed by quarter code.

    Returns:
        One dict per quarter: ``quarter``, ``era``, ``read``, ``latest``, ``superseded``,
        ``superseded_by_later_quarter``, ``deleted``, ``quarantined``, ``cases`` (distinct caseids
        of its kept reports), ``cases_spanning_eras`` (of those, cases with a kept report in the
        other era).

    Raises:
        AssertionError: read ≠ latest + superseded + deleted + quarantined (a bug, not a user error).
    """
    status, code = pl.col(STATUS), pl.col(QUARTER_CODE)
    kept = status == KEPT
    faers = code >= sum(q < FIRST_FAERS for q in quarters)  # quarter codes sort like the quarters
    latest_code = pl.when(pl.col("is_latest")).then(code).max().over("caseid")
    spans = (pl.when(kept).then(faers).n_unique().over("caseid") > 1) & kept
    counts = (
        frame.lazy()
        .select(STATUS, "is_latest", "caseid", QUARTER_CODE)
        .with_columns(latest_code.alias("_latest_code"), spans.alias("_spans"))
        .group_by(QUARTER_CODE)
        .agg(
            read=pl.len(),
            latest=(kept & pl.col("is_latest")).sum(),
            superseded=(kept & ~pl.col("is_latest")).sum(),
            superseded_by_later_quarter=(kept & ~pl.col("is_latest") & (pl.col("_latest_code") > code)).sum(),
            deleted=(status == DELETED_STATUS).sum(),
            quarantined=(status == QUARANTINED).sum(),
            cases=pl.col("caseid").filter(kept).n_unique(),
            cases_spanning_eras=pl.col("caseid").filter(pl.col("_spans")).n_unique(),
        )
        .collect()
    )
    by_code = {row.pop(QUARTER_CODE): row for row in counts.to_dicts()}
    accounting = []
    for i, quarter in enumerate(quarters):
        row = {k: int(v) for k, v in by_code.get(i, {}).items()}
        if not row:
            continue  # a quarter with only a DELETE list
        if row["read"] != row["latest"] + row["superseded"] + row["deleted"] + row["quarantined"]:
            raise AssertionError(f"{quarter}: read != latest + superseded + deleted + quarantined")
        accounting.append({"quarter": quarter, "era": era(quarter), **row})
    return accounting


def check_quarters(quarters: list[str], /) -> list[str]:
    """Warnings about the quarters of a cumulative ingest: a gap between the first and the last.

    A gap is allowed (an analyst may ingest a sample) but the latest version and the DELETE lists
    of a missing quarter are then unknown, so the cumulative database may keep superseded or
    deleted versions; the warning names the missing quarters.
    """
    gaps = quarter_gaps(quarters)
    if not gaps:
        return []
    return [
        f"quarters not consecutive: {', '.join(gaps)} missing between {quarters[0]} and {quarters[-1]} "
        "(their follow-ups and DELETE lists are not applied)"
    ]
