"""The composition written with its super-records as mined (:meth:`Composition.write` ``cases=``): every
table's rows as written from its files, the super-records not read again."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from faers_anon import api
from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.io.ingest import IngestConfig
from faers_anon.series.composition import Composition, Miner, without_links


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("write")
    return api.ingest([], root / "ingested", config=IngestConfig(demo=True)).out


def test_the_mined_cases_write_the_same_rows(demo: Path, tmp_path: Path) -> None:
    cases = pl.read_parquet(demo / "cases.parquet")
    ids = cases.get_column("caseid")
    rows = cases.filter(pl.col("caseid").is_in(ids.slice(20, 15).implode()))
    added = {"cases": rows.with_columns(pl.col("caseid") + 10**9)}
    miner = Miner(AnonymizeConfig(k=3))
    base = Composition(demo, ids.head(5), added)
    found = miner(base)
    again = miner(without_links(base, found.knowledge.select("drug_key", "disease").head(3)))
    assert again.cases is found.cases  # a pass leaving links out reads the same super-records
    plain, given = base.write(tmp_path / "a"), base.write(tmp_path / "b", cases=found.cases)
    for path in sorted(plain.glob("*.parquet")):
        assert_frame_equal(pl.read_parquet(path), pl.read_parquet(given / path.name))
    assert pl.read_parquet(given / "cases.parquet").height == ids.len() - 5 + 15
