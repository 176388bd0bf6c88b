"""Cumulative signals: the case frames of several ingested folders or releases, each case counted once.

Source: issue 14 item 5; FDA README §C (the latest version of a case is its current information);
the rule of :data:`faers_anon.io.cases.VERSION_ORDER`.

The folders are all ingested folders (raw ids) or all releases (pseudonymous ids: made with the same
agency key, a case keeps its pseudonym across releases, :mod:`faers_anon.release.pseudonyms`). Every DEMO
row of every folder is a candidate version of its case; the case's one row is the highest
``caseversion``, then the latest ``fda_dt``, then the highest ``primaryid`` (in a release the report
pseudonym orders a case's reports by version, so it serves as the last key there too), then the
later quarter (the same report published twice: FAQ 29, the later extract). A column missing from a
folder (a policy that dropped ``fda_dt``) ranks lowest. The drug and event rows are those of that
version, joined on (folder, primaryid), so nothing of a superseded version is counted.

Deletions: the ``deleted.parquet`` caseids of every ingested folder remove the case from every
folder. A release publishes no DELETE list (it would name cases), so a case deleted after its
release stays counted when releases are combined; the ingest of the later quarter has it.

Memory: one frame per table per folder, scanned lazily; only the chosen versions' rows are
collected.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from faers_anon.analysis import tables as analysis
from faers_anon.errors import InputError
from signals import CaseTables

__all__ = ["read_series_case_tables"]

#: Version keys, ascending: the last row of a case is its latest version (module docstring).
_ORDER = ("caseversion", "fda_dt", "primaryid", "quarter")
_KEYS = {"caseversion": pl.Int64, "fda_dt": pl.Date, "quarter": pl.Utf8}
_FOLDER = "_folder"


def _tagged(frames: list[pl.LazyFrame]) -> pl.LazyFrame:
    return pl.concat([f.with_columns(pl.lit(i, pl.UInt32).alias(_FOLDER)) for i, f in enumerate(frames)],
                     how="diagonal_relaxed")  # fmt: skip


def _versions(folder: Path, layout: analysis.Layout) -> pl.LazyFrame:
    """Every DEMO row of ``folder`` with the version keys (a key the folder lacks is null)."""
    relative, required, optional = layout["cases"]
    frame = analysis.scan_columns(folder, relative, required, (*optional, *_KEYS))
    names = frame.collect_schema().names()
    return frame.with_columns(pl.lit(None, dtype).alias(n) for n, dtype in _KEYS.items() if n not in names)


def _deleted(folders: Sequence[Path]) -> pl.Series:
    """The caseids on any DELETE list of the ingested folders (``deleted.parquet``)."""
    lists = [pl.scan_parquet(f / "deleted.parquet").select("caseid") for f in folders
             if (f / "deleted.parquet").is_file()]  # fmt: skip
    if not lists:
        return pl.Series("caseid", [], pl.Int64)
    return pl.concat(lists).collect().get_column("caseid").unique()


def read_series_case_tables(folders: Sequence[Path], /) -> CaseTables:
    """The case, drug and event frames of several folders, each case once at its latest version.

    Raises:
        InputError: a folder of neither layout, a mix of ingested folders and releases, or a
            missing file or column (:func:`faers_anon.analysis.tables.read_folder_tables`).
    """
    layouts = [analysis.folder_layout(f) for f in folders]
    if len({id(layout) for layout in layouts}) > 1:
        kinds = ", ".join(f"{f} ({'ingested' if lay is analysis.INGESTED else 'release'})"
                          for f, lay in zip(folders, layouts, strict=True))  # fmt: skip
        raise InputError(f"cannot combine ingested folders with releases (their ids differ): {kinds}")
    layout = layouts[0]
    rows = _tagged([_versions(f, layout) for f in folders])
    rows = rows.filter(~pl.col("caseid").is_in(_deleted(folders).implode()))
    latest = rows.sort([*_ORDER, _FOLDER], nulls_last=False).group_by("caseid").last()
    keys = latest.select(_FOLDER, "primaryid", "caseid")

    def chosen(table: str, columns: tuple[str, ...]) -> pl.LazyFrame:
        scans = [analysis.scan_columns(f, *layout[table]) for f in folders]
        return _tagged(scans).join(keys, on=[_FOLDER, "primaryid"]).select("caseid", *columns)

    optional = [c for c in layout["cases"][2] if c in latest.collect_schema().names()]
    required = [c for c in layout["cases"][1] if c not in ("primaryid", "is_latest")]
    cases, drugs, events = pl.collect_all([
        latest.select(*required, *optional).sort("caseid"),
        chosen("drugs", ("drug_key", "role_cod")),
        chosen("events", ("pt",)),
    ])  # fmt: skip
    return CaseTables(cases=cases, drugs=drugs, events=events)
