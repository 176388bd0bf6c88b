"""Argument checks of :func:`faers_anon.release.writer.write_release`: partition, CSV frames, extra files.

Each raises :class:`~faers_anon.errors.ConfigError` with one line naming what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import polars as pl

from faers_anon.errors import ConfigError
from faers_anon.io.column_policy import PARTITION_SCHEMA

__all__ = ["KNOWLEDGE", "THRESHOLDS", "check_extras", "check_frame", "check_partition"]

KNOWLEDGE: Mapping[str, pl.DataType] = {
    "drug_key": pl.String(),
    "disease": pl.String(),
    "weight": pl.Float64(),
}
THRESHOLDS: Mapping[str, pl.DataType] = {
    "value": pl.String(), "theta": pl.Float64(), "share": pl.Float64(), "action": pl.String(),
    "reason": pl.String(),
}  # fmt: skip
_NOT_QIDS = frozenset({"primaryid", "caseid", "caseversion", "quarter", "is_latest", "row"})


def check_partition(partition: pl.DataFrame, reports: pl.DataFrame) -> pl.DataFrame:
    missing = [c for c in PARTITION_SCHEMA if c not in partition.columns]
    if missing:
        raise ConfigError(f"partition: missing column(s) {', '.join(missing)}")
    key = "primaryid" if "primaryid" in partition.columns else "caseid"
    clash = sorted(_NOT_QIDS & (set(partition.columns) - set(PARTITION_SCHEMA) - {key}))
    if clash:
        raise ConfigError(f"partition: column(s) {', '.join(clash)} cannot be QIDs")
    types = {**PARTITION_SCHEMA, key: pl.Int64()}
    try:
        part = partition.with_columns(pl.col(c).cast(t, strict=True) for c, t in types.items())
    except pl.exceptions.PolarsError as exc:
        raise ConfigError(f"partition: wrong column type ({str(exc).splitlines()[0]})") from exc
    dup = part.group_by(key).len().filter(pl.col("len") > 1).sort(key)
    if dup.height:
        raise ConfigError(f"partition: {key} {dup[key][0]} has {dup['len'][0]} rows (expected one)")
    bad_sex = part.filter(pl.col("sex").is_not_null() & ~pl.col("sex").is_in(["F", "M", "*"]))
    if bad_sex.height:
        raise ConfigError(f"partition: sex {bad_sex['sex'][0]!r} (expected F, M, * or null)")
    cases = reports.select(pl.col(key).cast(pl.Int64)).unique()
    what = "case" if key == "caseid" else "report"
    uncovered = cases.join(part, on=key, how="anti", nulls_equal=True).sort(key)
    if uncovered.height:
        raise ConfigError(
            f"partition: {uncovered.height} ingested {what}(s) have no group (e.g. {key} "
            f"{uncovered[key][0]}); every {what} must be in the partition"
        )
    foreign = part.join(cases, on=key, how="anti").sort(key)
    if foreign.height:
        raise ConfigError(
            f"partition: {foreign.height} {key}(s) not in the ingested reports (e.g. {foreign[key][0]})"
        )
    return part


def check_frame(
    frame: pl.DataFrame, what: str, types: Mapping[str, pl.DataType], required: int
) -> pl.DataFrame:
    """The first ``required`` columns of ``types`` must be present, the others are optional; sorted."""
    if what == "knowledge" and "drug_key" not in frame.columns and "drug" in frame.columns:
        frame = frame.rename({"drug": "drug_key"})
    missing = [c for c in list(types)[:required] if c not in frame.columns]
    if missing:
        raise ConfigError(f"{what}: missing column(s) {', '.join(missing)} (expected {', '.join(types)})")
    try:
        checked = frame.select(pl.col(c).cast(t) for c, t in types.items() if c in frame.columns)
    except pl.exceptions.PolarsError as exc:
        raise ConfigError(f"{what}: wrong column type ({str(exc).splitlines()[0]})") from exc
    return checked.sort(pl.all(), maintain_order=True)


def check_extras(extras: Mapping[str, bytes], reserved: frozenset[str]) -> dict[str, bytes]:
    checked: dict[str, bytes] = {}
    for name in sorted(extras):
        parts = Path(name).parts
        if not parts or Path(name).is_absolute() or ".." in parts or parts[0] in reserved:
            raise ConfigError(
                f"extra file name {name!r}: expected a relative path outside the reserved names"
            )
        checked[Path(name).as_posix()] = bytes(extras[name])
    return checked


