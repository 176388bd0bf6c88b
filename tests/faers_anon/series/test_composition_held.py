"""A composition reads the quarter's rows it is given (``held``) as it reads them from their file: the same
tables, the same mined super-records and E, the same written folder."""

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
    root = tmp_path_factory.mktemp("held")
    return api.ingest([], root / "ingested", config=IngestConfig(demo=True)).out


def test_held_rows_compose_as_the_file(demo: Path, tmp_path: Path) -> None:
    cases = pl.read_parquet(demo / "cases.parquet")
    ids = cases.get_column("caseid")
    added = {"cases": cases.filter(pl.col("caseid").is_in(ids.slice(20, 15).implode()))
             .with_columns(pl.col("caseid") + 10**9)}  # fmt: skip
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
