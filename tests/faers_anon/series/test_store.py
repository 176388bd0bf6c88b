"""The ledger's store (faers_anon.series.store): the pseudonym index of a stored cases.parquet."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from faers_anon.series.store import write_store
from faers_anon.series.units import pseudonym_ids

_KEY = b"k" * 32


def test_store_cases_carry_known_pseudonyms_and_derive_the_rest(tmp_path: Path) -> None:
    ingested = tmp_path / "ingested"
    ingested.mkdir()
    cases = pl.DataFrame({"caseid": [30, 10, 20], "reactions": [["C"], ["A"], ["B", "D"]]})
    cases.write_parquet(ingested / "cases.parquet")
    known = pl.DataFrame({"caseid": [10, 99], "pseudonym": [111, 999]})  # 99 is no case of the store
    files = write_store(ingested, tmp_path / "store", key=_KEY, ids=known)
    stored = pl.read_parquet(tmp_path / "store" / "cases.parquet")
    derived = dict(pseudonym_ids(cases, _KEY).iter_rows())
    assert list(files) == ["cases.parquet"]
    assert stored.columns == ["caseid", "reactions", "pseudonym"]
    assert stored.rows() == [(10, ["A"], 111), (20, ["B", "D"], derived[20]), (30, ["C"], derived[30])]
    assert derived[20] != derived[30] and min(derived[20], derived[30]) >= 1 << 52


def test_store_cases_without_known_ids_are_all_derived(tmp_path: Path) -> None:
    ingested = tmp_path / "ingested"
    ingested.mkdir()
    cases = pl.DataFrame({"caseid": [2, 1], "n_reports": [1, 3]})
    cases.write_parquet(ingested / "cases.parquet")
    write_store(ingested, tmp_path / "store", key=_KEY)
    stored = pl.read_parquet(tmp_path / "store" / "cases.parquet")
    derived = dict(pseudonym_ids(cases, _KEY).iter_rows())
    assert stored.rows() == [(1, 3, derived[1]), (2, 1, derived[2])]
