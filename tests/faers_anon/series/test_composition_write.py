"""The composition written with its super-records as mined (:meth:`Composition.write` ``cases=``): every
table's rows as written from its files, the super-records not read again. A composition reads the quarter's
rows it is given (``held``) as it reads them from their file: the same tables, the same mined super-records
and E, the same written folder."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.series.composition import Composition, Miner, without_links


def _added(cases: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """15 of the quarter's super-records again under other caseids (as republished cases are added)."""
    ids = cases.get_column("caseid")
    rows = cases.filter(pl.col("caseid").is_in(ids.slice(20, 15).implode()))
    return {"cases": rows.with_columns(pl.col("caseid") + 10**9)}


def test_the_mined_cases_write_the_same_rows(demo: Path, tmp_path: Path) -> None:
    cases = pl.read_parquet(demo / "cases.parquet")
    ids, added = cases.get_column("caseid"), _added(cases)
    miner = Miner(AnonymizeConfig(k=3))
    base = Composition(demo, ids.head(5), added)
    found = miner(base)
    again = miner(without_links(base, found.knowledge.select("drug_key", "disease").head(3)))
    assert again.cases is found.cases  # a pass leaving links out reads the same super-records
    plain, given = base.write(tmp_path / "a"), base.write(tmp_path / "b", cases=found.cases)
    for path in sorted(plain.glob("*.parquet")):
        assert_frame_equal(pl.read_parquet(path), pl.read_parquet(given / path.name))
    assert pl.read_parquet(given / "cases.parquet").height == ids.len() - 5 + 15


def test_held_rows_compose_as_the_file(demo: Path, tmp_path: Path) -> None:
    cases = pl.read_parquet(demo / "cases.parquet")
    ids, added = cases.get_column("caseid"), _added(cases)
    plain = Composition(demo, ids.head(5), added)
    held = Composition(demo, ids.head(5), added, held={"cases": cases})
    assert_frame_equal(plain.table("cases").collect(), held.table("cases").collect())
    config = AnonymizeConfig(k=3)
    first, second = Miner(config)(plain), Miner(config)(held)
    assert_frame_equal(first.cases, second.cases)
    assert_frame_equal(first.knowledge, second.knowledge)
    links = first.knowledge.select("drug_key", "disease").head(3)
    assert without_links(held, links).held is held.held  # a pass leaving links out keeps them
    a, b = without_links(plain, links).write(tmp_path / "a"), without_links(held, links).write(tmp_path / "b")
    for path in sorted(a.glob("*.parquet")):
        assert path.read_bytes() == (b / path.name).read_bytes(), path.name
