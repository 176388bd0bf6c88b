"""E of each attempt's composition from the quarter's INDI ⋈ DRUG rows joined once (:class:`Miner`).

The miner's E equals :func:`mine` of the composition's tables (INDI ⋈ DRUG mined again), bit for bit,
for compositions with withheld cases, added cases (stored rows of other reports) and left-out links, in
the order the series step makes them; added rows sharing a primaryid with the quarter are mined from
the tables (the joined rows of two parts would miss their cross pairs).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.series.composition import Composition, Miner, mine, without_links
from knowledge.mining import indication_rows, mine_from_indications, mine_from_links


def _added(ingested: Path, caseids: list[int], shift: int, pid_shift: int) -> dict[str, pl.DataFrame]:
    """Every table's rows of ``caseids`` as other cases (caseid + shift, primaryid + pid_shift)."""
    added = {}
    for path in ingested.glob("*.parquet"):
        schema = pl.read_parquet_schema(path)
        if "caseid" in schema:
            rows = pl.read_parquet(path).filter(pl.col("caseid").is_in(caseids))
            rows = rows.with_columns(pl.col("caseid") + shift)
            if "primaryid" in schema:
                rows = rows.with_columns(pl.col("primaryid") + pid_shift)
            added[path.stem] = rows
    return added


def test_links_rows_mine_as_the_tables(demo: Path) -> None:
    drug, indi = pl.scan_parquet(demo / "drug.parquet"), pl.scan_parquet(demo / "indi.parquet")
    got = mine_from_links(indication_rows(drug, indi))
    assert_frame_equal(got, mine_from_indications(drug, indi))
    assert got.height > 0  # the demo's indications mine pairs: the frames compared are not empty


@pytest.mark.parametrize("pid_shift", [10**12, 0])
def test_the_miner_gives_the_compositions_e(demo: Path, pid_shift: int) -> None:
    config = AnonymizeConfig(k=3)
    earlier = pl.DataFrame({"drug_key": ["NONE"], "disease": ["NOTHING"], "weight": [0.5]})
    ids = pl.read_parquet(demo / "cases.parquet").get_column("caseid")
    miner = Miner(config, earlier=earlier)
    whole = mine(Composition(demo, ids.head(0)), config).knowledge
    pairs = whole.sort("weight", "drug_key", "disease", descending=True).select("drug_key", "disease")
    attempts = [
        (ids.head(0), {}, 0),
        (ids.head(7), _added(demo, ids.slice(20, 15).to_list(), 10**9, pid_shift), 0),
        (ids.head(7), _added(demo, ids.slice(20, 15).to_list(), 10**9, pid_shift), 3),
        (ids.head(7), _added(demo, ids.slice(20, 15).to_list(), 10**9, pid_shift), 9),
        (ids.slice(3, 30), _added(demo, ids.slice(40, 25).to_list(), 10**9, pid_shift), 9),
        (ids.slice(3, 30).append(pl.Series([10**9 + int(ids[45])])), _added(demo, ids.slice(40, 25).to_list(),
                                                                            10**9, pid_shift), 0),
    ]  # fmt: skip
    for withheld, added, count in attempts:
        for links in (count, count + 2):  # the same added frames again: their joined rows kept
            composition = without_links(Composition(demo, withheld, added), pairs.head(links))
            _check(
                miner, composition, config, earlier, pairs.head(links), shared=pid_shift == 0 and bool(added)
            )
    assert pairs.height > 9
    assert miner._quarter is not None and miner._quarter[1].height > 0


def _check(
    miner: Miner, composition: Composition, config: AnonymizeConfig, earlier: pl.DataFrame,
    links: pl.DataFrame, *, shared: bool,
) -> None:  # fmt: skip
    got, want = miner(composition), mine(composition, config, earlier=earlier)
    assert_frame_equal(got.knowledge, want.knowledge)
    assert got.own is not None and want.own is not None
    assert_frame_equal(got.own, want.own)
    assert_frame_equal(got.cases, want.cases)
    assert got.own.join(links, on=["drug_key", "disease"], how="semi").is_empty()  # no case in E_t
    assert (miner._own(composition) is None) == shared  # cross pairs possible: mined from the tables


def test_the_miners_quarter_e_is_the_folders(demo: Path) -> None:
    from faers_anon.anonymize.inputs import knowledge_table

    config = AnonymizeConfig(k=3)
    want = knowledge_table(demo, sensitive=config.sensitive, knowledge=None)
    got = Miner(config).quarter(demo)
    assert got is not None
    assert_frame_equal(got, want)
    assert Miner(AnonymizeConfig(k=3, sensitive=("reactions",))).quarter(demo) is None


def test_the_composition_with_links_left_out_writes_the_same_bytes(demo: Path, tmp_path: Path) -> None:
    config = AnonymizeConfig(k=3)
    ids = pl.read_parquet(demo / "cases.parquet").get_column("caseid")
    base = Composition(demo, ids.head(5), _added(demo, ids.slice(20, 15).to_list(), 10**9, 10**12))
    pairs = mine(base, config).knowledge.select("drug_key", "disease").head(6)
    composition = without_links(base, pairs)
    first, second = composition.write(tmp_path / "a"), composition.write(tmp_path / "b")
    for path in sorted(first.glob("*.parquet")):
        assert path.read_bytes() == (second / path.name).read_bytes(), path.name
    indi = pl.read_parquet(first / "indi.parquet")
    assert_frame_equal(indi, composition.table("indi").collect())
    assert indi.height < base.table("indi").collect().height  # the links' rows are left out
