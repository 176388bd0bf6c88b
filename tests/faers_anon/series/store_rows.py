"""Stand-ins for a ledger's stores in tests: a store written from frames, a folder's rows of some cases as
other cases."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from faers_anon.release.manifest import sha256_file


def as_other_cases(
    ingested: Path, caseids: list[int], shift: int, *, reports: bool = False
) -> dict[str, pl.DataFrame]:
    """Every table's rows of ``caseids`` in ``ingested``, their caseid + ``shift``; with ``reports`` their
    primaryid + ``shift`` too (other reports), and the DELETE list left out (as a store holds the tables)."""
    rows_of = {}
    for path in ingested.glob("*.parquet"):
        schema = pl.read_parquet_schema(path)
        if "caseid" not in schema or (reports and path.stem == "deleted"):
            continue
        rows = pl.read_parquet(path).filter(pl.col("caseid").is_in(caseids))
        rows = rows.with_columns(pl.col("caseid") + shift)
        if reports and "primaryid" in schema:
            rows = rows.with_columns(pl.col("primaryid") + shift)
        rows_of[path.stem] = rows
    return rows_of


def write_store_of(ledger: Path, index: int, rows: dict[str, pl.DataFrame]) -> dict[str, object]:
    """Release ``index``'s store in ``ledger`` holding ``rows`` (table name → frame); its ledger record."""
    folder = ledger / f"store-{index:04d}"
    folder.mkdir(parents=True)
    files = {}
    for name, frame in rows.items():
        frame.write_parquet(folder / f"{name}.parquet")
        files[f"{name}.parquet"] = sha256_file(folder / f"{name}.parquet")
    return {"index": index, "store": {"folder": folder.name, "files": files}}
