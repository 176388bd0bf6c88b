"""The ledger's store: the ingested rows each release was made from, to republish a unit's members.

Source: issue 14 item 3; docs/series.md §4 ("travel together"). When a case returns, the earlier
cases of its unit that do not return are published again with it, their last version unchanged
(:mod:`faers_anon.series.placement`). Their rows come from here: ``store-NNNN/`` beside
``release-NNNN.parquet`` holds the ingested tables (raw ids and values: the store is as private as
the raw data, and like the ledger never published) of the folder release NNNN was written from.
Each file's SHA-256 is in ``ledger.json`` (under its MAC), so a changed store is refused.

Memory: the stores' ``cases.parquet`` (one row per earlier case: the case index) is read whole;
rows of the other tables are read only for the cases republished.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.errors import InputError
from faers_anon.release.manifest import sha256_file
from faers_anon.series.units import pseudonym_ids

__all__ = ["STORED", "write_store", "check_store", "stored_cases", "stored_knowledge", "republished_rows"]

#: The ingested tables kept per release (those with a caseid; the others are not republished).
STORED = ("reports", "drug", "reac", "indi", "outc", "ther", "rpsr", "cases", "deleted")


def write_store(ingested: Path, folder: Path, /, *, knowledge: Path | None = None) -> dict[str, str]:
    """Copy the ingested tables (and the release's ``knowledge.csv``, E) into ``folder`` (0700);
    return file name → SHA-256."""
    folder.mkdir(mode=0o700)
    sources = [ingested / f"{name}.parquet" for name in STORED] + (
        [knowledge] if knowledge is not None else []
    )
    hashes = {}
    for source in sources:
        if source.is_file():
            shutil.copyfile(source, folder / source.name)
            hashes[source.name] = sha256_file(folder / source.name)
    return hashes


def stored_knowledge(ledger: Path, releases: list[dict[str, Any]], current: pl.DataFrame) -> pl.DataFrame:
    """E for the θ check of a unit: the largest weight of each (drug_key, disease) over the current E
    and the E every earlier release published (an attacker reads them all)."""
    tables = [current.select("drug_key", "disease", pl.col("weight").cast(pl.Float64))]
    for _, folder in _stores(ledger, releases):
        if (folder / "knowledge.csv").is_file():
            earlier = pl.read_csv(folder / "knowledge.csv", infer_schema=False)
            tables.append(earlier.select("drug_key", "disease", pl.col("weight").cast(pl.Float64)))
    return (
        pl.concat(tables)
        .group_by("drug_key", "disease")
        .agg(pl.col("weight").max())
        .sort("drug_key", "disease")
    )


def check_store(ledger: Path, record: dict[str, Any], /) -> None:
    """Refuse a store whose files are missing or changed.

    Raises:
        InputError: a file missing or with another SHA-256.
    """
    store = record.get("store")
    if not store:
        return
    for name, digest in store["files"].items():
        path = ledger / store["folder"] / name
        if not path.is_file() or sha256_file(path) != digest:
            what = f"ledger {store['folder']}/{name}: missing or SHA-256 mismatch: tampered or corrupt"
            raise InputError(what, path=ledger)


def _stores(ledger: Path, releases: list[dict[str, Any]]) -> list[tuple[int, Path]]:
    return [(r["index"], ledger / r["store"]["folder"]) for r in releases if r.get("store")]


def stored_cases(
    ledger: Path, releases: list[dict[str, Any]], key: bytes
) -> tuple[pl.DataFrame | None, pl.Series]:
    """The last stored super-record of every earlier case, and the pseudonyms on any DELETE list.

    Returns:
        (``pseudonym``, ``caseid`` raw, ``store``, the super-record columns; one row per pseudonym,
        from the latest store holding it; None without a store) and the deleted case pseudonyms.
    """
    frames, deleted = [], []
    for index, folder in _stores(ledger, releases):
        frames.append(
            pl.read_parquet(folder / "cases.parquet").with_columns(pl.lit(index, pl.Int64).alias("store"))
        )
        if (folder / "deleted.parquet").is_file():
            deleted.append(pl.read_parquet(folder / "deleted.parquet", columns=["caseid"]))
    if not frames:
        return None, pl.Series([], dtype=pl.Int64)
    cases = pl.concat(frames, how="diagonal_relaxed").sort("store").unique("caseid", keep="last")
    cases = cases.join(pseudonym_ids(cases, key), on="caseid")
    gone = pl.concat(deleted).unique() if deleted else pl.DataFrame(schema={"caseid": pl.Int64})
    return cases, pseudonym_ids(gone, key).get_column("pseudonym") if gone.height else pl.Series(
        [], dtype=pl.Int64
    )


def republished_rows(
    ledger: Path, releases: list[dict[str, Any]], republish: pl.DataFrame
) -> dict[str, pl.DataFrame]:
    """Per table, the stored rows of the republished cases (each from its store)."""
    out: dict[str, list[pl.DataFrame]] = {}
    for index, folder in _stores(ledger, releases):
        ids = republish.filter(pl.col("store") == index).get_column("caseid")
        if ids.is_empty():
            continue
        for name in STORED:
            path = folder / f"{name}.parquet"
            if name != "deleted" and path.is_file():
                out.setdefault(name, []).append(
                    pl.scan_parquet(path).filter(pl.col("caseid").is_in(ids.implode())).collect()
                )
    return {name: pl.concat(parts, how="diagonal_relaxed") for name, parts in out.items()}
