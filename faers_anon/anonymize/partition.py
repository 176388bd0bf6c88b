"""The partition frame: the one contract between every anonymizer and the release writer.

docs/architecture.md, "The partition frame": one row per caseid with its group and the group's
generalized QIDs. The greedy clustering engine, the top-down Mondrian of l-diversity, the methods
of :mod:`faers_anon.methods` (RA, swapping, (k,l), disassociation) all return frames with exactly
these columns and types, and :func:`faers_anon.release.writer.write_release` applies them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import polars as pl

__all__ = ["PARTITION_SCHEMA"]

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
