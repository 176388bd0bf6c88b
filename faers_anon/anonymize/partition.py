"""The partition frame: the one contract between every anonymizer and the release writer.

docs/architecture.md, "The partition frame": one row per caseid with its group and the group's
generalized QIDs. The greedy clustering engine, the top-down Mondrian of l-diversity, the methods
of :mod:`faers_anon.methods` (RA, swapping, (k,l), disassociation) all return frames with exactly
these columns and types, and :func:`faers_anon.release.writer.write_release` applies them.

A QID-group of the release is a distinct tuple of :data:`QID_COLUMNS` (docs/architecture.md, "Release
folder"): two groups of an algorithm that generalize to the same tuple are one group to an attacker
and to the verifier. :func:`released_groups` numbers the groups that way; every producer-side figure
per group (DR, group sizes of a method, evaluate's rows) is computed on it. The verifier keeps its own
copy of the tuple on purpose (it imports nothing of the producer).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import polars as pl

__all__ = ["PARTITION_SCHEMA", "QID_COLUMNS", "case_members", "released_groups", "unit_view"]

PARTITION_SCHEMA: Mapping[str, pl.DataType] = MappingProxyType(
    {
        "caseid": pl.Int64(),
        "group_id": pl.Int64(),
        "age_group": pl.String(),
        "age_min": pl.Float64(),
        "age_max": pl.Float64(),
        "sex": pl.String(),
        "wt_min": pl.Float64(),
        "wt_max": pl.Float64(),
    }
)
"""Column → type of the partition frame, in order. ``age_max`` is exclusive (null for an open band),
``wt_max`` inclusive; null means missing (or, for weight, a group mixing missing and known)."""

QID_COLUMNS: tuple[str, ...] = tuple(c for c in PARTITION_SCHEMA if c not in ("caseid", "group_id"))
"""The released QID columns, in order: ``age_group``, ``age_min``, ``age_max``, ``sex``, ``wt_min``,
``wt_max`` (the columns the writer puts in DEMO instead of age, age_cod, wt, wt_cod, sex)."""


def released_groups(frame: pl.DataFrame, /) -> pl.DataFrame:
    """``frame`` with ``group_id`` replaced by the dense id of its released QID tuple.

    Tuples are numbered 0..G-1 in sorted order of :data:`QID_COLUMNS` (nulls last; a null equals a
    null). Other columns (``primaryid`` of a report-level frame) and the column order are kept.
    """
    ids = (
        frame.select(QID_COLUMNS)
        .unique()
        .sort(QID_COLUMNS, nulls_last=True)
        .with_row_index("group_id")
        .with_columns(pl.col("group_id").cast(pl.Int64))
    )
    joined = frame.drop("group_id").join(ids, on=list(QID_COLUMNS), how="left", nulls_equal=True)
    return joined.select(frame.columns)


def unit_view(frame: pl.DataFrame, /) -> pl.DataFrame:
    """The frame keyed by engine unit: report-level frames get ``caseid`` := ``primaryid``; others as is."""
    if "primaryid" not in frame.columns:
        return frame
    return frame.drop("caseid").rename({"primaryid": "caseid"})


def case_members(frame: pl.DataFrame, /) -> pl.DataFrame:
    """Distinct (caseid, group_id) of a partition frame: who an attacker finds in each group."""
    return frame.select("caseid", "group_id").unique().sort("group_id", "caseid")
