"""Linkage of released report rows back to the raw quarter (SPEC §11).

A released DEMO row *links* when it joins to exactly one raw report row:

* ``by_ids``: on ``primaryid`` (the report id; with keyed pseudonyms in the release, a released id
  no longer equals a raw one, which is the point);
* ``by_fields``: on every other column the released DEMO and the raw reports share (ids, ``is_latest``
  and the ingest bookkeeping ``source_file``/``line`` left out), exact values, missing equal to missing.

Shares are over released DEMO rows; a release with no row has shares 0.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from faers_anon.risk._view import CaseData

__all__ = ["linkage"]


def _share_linked(released: pl.DataFrame, raw: pl.DataFrame, on: list[str]) -> float:
    """Share of ``released`` rows equal on ``on`` to exactly one ``raw`` row (missing = missing).

    Only raw rows whose every value of ``on`` some released row has can be that one row: the raw rows
    are narrowed column by column (one semi join each, stopped when none is left) before the group-by
    on every column (exact; a pseudonymized or generalized column leaves few raw rows, often none).
    """
    if not on or released.height == 0:
        return 0.0
    for column in on:
        if raw.height == 0:
            break
        raw = raw.join(released.select(column).unique(), on=column, how="semi", nulls_equal=True)
    counts = raw.group_by(on).agg(pl.len().alias("matches")).filter(pl.col("matches") == 1)
    linked = released.select(on).join(counts, on=on, how="semi", nulls_equal=True).height
    return linked / released.height


def linkage(released: CaseData, raw: CaseData) -> dict[str, Any]:
    """The ``linkage`` section of risk.json (module docstring)."""
    rows, raw_rows = released.reports, raw.reports
    shared = [c for c in rows.columns if c in raw_rows.columns and c not in ("primaryid", "caseid")]
    raw_shared = raw_rows.select(shared).cast({c: rows.schema[c] for c in shared}, strict=False)
    return {
        "rows": rows.height,
        "raw_rows": raw_rows.height,
        "by_ids": _share_linked(rows.select("primaryid"), raw_rows.select("primaryid"), ["primaryid"]),
        "by_fields": _share_linked(rows.select(shared), raw_shared, shared),
        "fields": shared,
    }
