"""A re-plan's stored rows as the last attempt's less the dropped cases' (:class:`.store.Rows`), and the
miner's E from what it joined of the last attempt (:class:`.composition.Miner`), against the full work.

* :class:`StoredRows` says ``since`` (the last answer's token, the caseids dropped) only when its rows are
  the last ones less every row of those cases: not after a read (a case asked for again, a case moved to
  another store), nor when a dropped caseid is among the offered rows.
* The miner's E of each re-plan (filtered joined rows) equals :func:`mine` of the composition's tables.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.series import composition as composition_module
from faers_anon.series.composition import Composition, Miner, mine, without_links
from faers_anon.series.store import StoredRows, republished_rows
from knowledge.mining import indication_rows
from tests.faers_anon.series.store_rows import as_other_cases, two_stores, write_store_of


def _ask(pairs: list[tuple[int, int]]) -> pl.DataFrame:
    return pl.DataFrame(pairs, schema={"caseid": pl.Int64, "store": pl.Int64}, orient="row")


def test_the_rows_say_which_cases_they_dropped_only_when_nothing_else_changed(tmp_path: Path) -> None:
    releases = two_stores(tmp_path)
    rows = StoredRows(tmp_path, releases)
    first = rows(_ask([(1, 1), (2, 1), (7, 2), (8, 2)]))
    assert first.since is None  # the first answer: rows read
    again = rows(_ask([(1, 1), (2, 1), (7, 2), (8, 2)]))
    assert again.token is first.token and again.since is None and again["drug"] is first["drug"]
    fewer = rows(_ask([(1, 1), (8, 2)]))  # a re-plan dropped cases 2 and 7: nothing read
    assert fewer.since is not None and fewer.since[0] is first.token
    assert sorted(fewer.since[1].to_list()) == [2, 7]
    fewest = rows(_ask([(8, 2)]))
    assert fewest.since is not None and fewest.since[0] is fewer.token and fewest.since[1].to_list() == [1]
    assert rows(_ask([(8, 2), (3, 1)])).since is None  # case 3 read: rows added
    assert rows(_ask([(8, 2), (3, 2)])).since is None  # case 3 moved to another store: read again
    for pairs in ([(8, 2), (3, 2)], [(8, 2)]):
        expected = republished_rows(tmp_path, releases, _ask(pairs))
        got = rows(_ask(pairs))
        assert sorted(got) == sorted(expected)
        for name in expected:
            assert_frame_equal(got[name], expected[name])
    offered = {
        "drug": pl.DataFrame({"caseid": [1], "drug_key": ["Z"]}),
        "cases": pl.DataFrame({"caseid": [1]}),
    }
    rows = StoredRows(tmp_path, releases, extra=offered)
    rows(_ask([(1, 1), (2, 1)]))
    assert rows(_ask([(2, 1)])).since is None  # case 1 dropped, but offered rows of caseid 1 remain


def test_the_miners_e_of_a_replan_from_the_last_joined_rows_is_the_compositions(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    joins: list[int] = []
    monkeypatch.setattr(
        composition_module, "indication_rows", lambda *a: joins.append(1) or indication_rows(*a)
    )
    config = AnonymizeConfig(k=3)
    ids = pl.read_parquet(demo / "cases.parquet").get_column("caseid")
    shift = 10**9
    releases = [
        write_store_of(tmp_path, 1, as_other_cases(demo, ids.slice(20, 40).to_list(), shift, reports=True))
    ]
    stored_ids = (ids.slice(20, 40) + shift).to_list()
    rows, miner = StoredRows(tmp_path, releases), Miner(config)
    pairs = mine(Composition(demo, ids.head(0)), config).knowledge.select("drug_key", "disease")
    attempts = [(ids.head(3), stored_ids, 0), (ids.head(5), stored_ids[5:], 0),
                (ids.head(5), stored_ids[5:], 4), (ids.head(9), stored_ids[5:30], 4),
                (ids.head(9), stored_ids[8:30:2], 6)]  # fmt: skip
    lineage = 0
    for withheld, republished, links in attempts:
        added = rows(_ask([(c, 1) for c in republished]))
        lineage += added.since is not None
        composition = without_links(Composition(demo, withheld, added), pairs.head(links))
        got, want = miner(composition), mine(composition, config)
        assert got.own is not None and want.own is not None
        assert_frame_equal(got.own, want.own)
        assert_frame_equal(got.knowledge, want.knowledge)
        assert miner._last is not None and miner._last[4] is added.token
        assert miner._own(composition) is not None  # mined from the joined rows, not the tables
    assert len(joins) == 2  # the quarter's rows and the first attempt's added rows: joined once each
    assert lineage == 4  # the re-plans (and the same plan again): the joined rows filtered, not joined again
    assert pairs.height > 6
