"""The case tables of one folder: an ingested folder or a release, read for the :mod:`signals` library.

The reading primitives shared by :mod:`faers_anon.analysis.signals` (one folder) and
:mod:`faers_anon.analysis.cumulative` (several): the two layouts (file, required and optional columns
per frame), a checked lazy scan, the layout of a folder, and the case, drug and event frames of the
latest version of every case (DRUG and REAC rows of the latest report, joined on ``primaryid``).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from faers_anon.errors import InputError
from signals import CaseTables

__all__ = ["INGESTED", "RELEASE", "Layout", "folder_layout", "read_folder_tables", "scan_columns"]

#: Per frame: the file, its required columns and its optional ones.
Layout = dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]]
INGESTED: Layout = {
    "cases": ("reports.parquet", ("primaryid", "caseid", "is_latest", "age_years", "sex"), ("weight_kg",)),
    "drugs": ("drug.parquet", ("primaryid", "drug_key", "role_cod"), ()),
    "events": ("reac.parquet", ("primaryid", "pt"), ()),
}
RELEASE: Layout = {
    "cases": (
        "parquet/demo.parquet",
        ("primaryid", "caseid", "is_latest", "age_min", "age_max", "sex"),
        ("wt_min", "wt_max"),
    ),
    "drugs": ("parquet/drug.parquet", ("primaryid", "drug_key", "role_cod"), ()),
    "events": ("parquet/reac.parquet", ("primaryid", "pt"), ()),
}


def scan_columns(
    folder: Path, relative: str, required: tuple[str, ...], optional: tuple[str, ...]
) -> pl.LazyFrame:
    path = folder / relative
    if not path.is_file():
        raise InputError(f"missing {relative} (expected an ingested folder or a release folder)", path=folder)
    try:
        names = list(pl.read_parquet_schema(path))
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise InputError(f"unreadable parquet ({str(exc).splitlines()[0]})", path=path) from exc
    for column in required:
        if column not in names:
            raise InputError(f"missing column (expected {', '.join(required)})", path=path, field=column)
    return pl.scan_parquet(path).select(*required, *(c for c in optional if c in names))


def folder_layout(folder: Path, /) -> Layout:
    """:data:`INGESTED` for an ingested folder, :data:`RELEASE` for a release.

    Raises:
        InputError: neither.
    """
    if (folder / "reports.parquet").is_file():
        return INGESTED
    if (folder / "parquet" / "demo.parquet").is_file():
        return RELEASE
    raise InputError(
        "neither an ingested folder (reports.parquet) nor a release (parquet/demo.parquet)", path=folder
    )


def read_folder_tables(folder: Path, /) -> CaseTables:
    """Read the case, drug and event frames of an ingested folder or a release folder.

    Args:
        folder: an ingested folder (has ``reports.parquet``) or a release (has ``parquet/demo.parquet``).

    Returns:
        :class:`signals.CaseTables` of the latest version of every case.

    Raises:
        InputError: neither layout, a missing or unreadable file, or a missing column.
    """
    layout = folder_layout(folder)
    reports = scan_columns(folder, *layout["cases"]).filter(pl.col("is_latest"))
    latest = reports.select("primaryid", "caseid")
    drugs = (
        scan_columns(folder, *layout["drugs"])
        .join(latest, on="primaryid")
        .select("caseid", "drug_key", "role_cod")
    )
    events = scan_columns(folder, *layout["events"]).join(latest, on="primaryid").select("caseid", "pt")
    cases, drug_rows, event_rows = pl.collect_all([reports.drop("primaryid", "is_latest"), drugs, events])
    return CaseTables(cases=cases, drugs=drug_rows, events=event_rows)
