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


def two_stores(ledger: Path) -> list[dict[str, object]]:
    """Two hand-built stores' records: release 1 holds cases 1, 2, 3 (DRUG rows 3:A, 1:B, 2:C, 1:D), release 2
    cases 3, 7, 8 (7:E, 3:F, 8:G); a case's pseudonym is its caseid + 50."""
    drug = lambda ids, keys: pl.DataFrame({"caseid": ids, "drug_key": keys})  # noqa: E731
    cases = lambda ids: pl.DataFrame({"caseid": ids, "pseudonym": [i + 50 for i in ids]})  # noqa: E731
    return [
        write_store_of(
            ledger, 1, {"drug": drug([3, 1, 2, 1], ["A", "B", "C", "D"]), "cases": cases([1, 2, 3])}
        ),
        write_store_of(ledger, 2, {"drug": drug([7, 3, 8], ["E", "F", "G"]), "cases": cases([3, 7, 8])}),
    ]
