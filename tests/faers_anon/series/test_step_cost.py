"""The series step's repeated work removed (issue 14 item 7), each shortcut against the full computation.

* :class:`EarlierCheck`: a subset of the placed members checks only the histories it newly keeps and
  those failing for the whole set; hand-built ledger (θ DEATH 0.5) with worked answers, every subset.
* :class:`StoredRows`: the republished rows of successive attempts, as :func:`republished_rows` gives them.
* :func:`release_inputs`: E, P(s | c) and θ* of a composition in memory equal those of its written folder
  (the anonymizer's), with the default policy and with brand names published.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
import shutil
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from faers_anon import api
from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.series.composition import Composition, release_inputs
from faers_anon.series.earlier import EarlierCheck, _contained, earlier_over_theta
from faers_anon.series.step import _release_inputs
from faers_anon.series.store import StoredRows, republished_rows
from faers_anon.series.units import unit_of
from tests.faers_anon.series.store_rows import as_other_cases, two_stores, write_store_of

_LIST = pl.List(pl.Utf8)
# Ledger: release 1 group 4 = {g, z}, group 9 = {w, r}; release 2 group 7 = {g, x, y}, group 8 = {w}.
# Pseudonyms 1..6 (g, z, x, y, w, r); raw caseids 101..106. Now g (unit V = "1:4|2:7"), x and y
# (unit U = "2:7") and w (unit W = "1:9|2:8") are published; g and w newly expose DEATH, which
# x, y had, r had; z had nothing.
PAST = pl.DataFrame(
    {"pseudonym": [1, 2, 3, 4, 5, 6], "history": ["1:4|2:7", "1:4", "2:7", "2:7", "1:9|2:8", "1:9"]}
)
PUBLISHED = pl.DataFrame(
    {"caseid": [101, 103, 104, 105], "pseudonym": [1, 3, 4, 5], "unit": ["1:4|2:7", "2:7", "2:7", "1:9|2:8"],
     "history": ["1:4|2:7", "2:7", "2:7", "1:9|2:8"]}
)  # fmt: skip
BEFORE = {3: 1.0, 4: 0.0, 6: 1.0}  # pseudonym -> P(DEATH) over the ledger's values
NOW = {101: 1.0, 103: 1.0, 104: 0.0, 105: 1.0}  # raw caseid -> P(DEATH) over now and before


def _probabilities(frame: pl.DataFrame) -> pl.DataFrame:
    """P(DEATH | c): a ledger-only frame has caseid = pseudonym, a published one its raw caseid."""
    table = {**BEFORE, **NOW}
    rows = [(c, "DEATH", table[c]) for c in frame.get_column("caseid").to_list() if table.get(c, 0.0) > 0]
    return pl.DataFrame(rows, schema={"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64}, orient="row")


def test_an_earlier_check_of_a_subset_equals_the_full_check() -> None:
    thetas = {"DEATH": 0.5}
    check = EarlierCheck(PUBLISHED, PAST, _probabilities, thetas, now=_probabilities)
    # all published: "2:7" is not kept (x, y, g all published); "1:4": (g 1 + z 0) / 2 = 0.5, not over;
    # "1:9": (w 1 + r 1) / 2 = 1 > 0.5, raised by w: W fails.
    assert check(PUBLISHED) == {"1:9|2:8"}
    # U withheld: "2:7" is kept now, I = {g, x, y}: (1 + 1 + 0) / 3 > 0.5, raised by g: V fails too
    without_u = PUBLISHED.filter(pl.col("unit") != "2:7")
    assert check(without_u) == {"1:4|2:7", "1:9|2:8"}
    for n in range(4):
        for units in itertools.combinations(["1:4|2:7", "2:7", "1:9|2:8"], n):
            subset = PUBLISHED.filter(pl.col("unit").is_in(list(units)))
            assert check(subset) == earlier_over_theta(subset, PAST, _probabilities, thetas)


@pytest.mark.parametrize("seed", range(6))
def test_containment_by_cut_histories_equals_the_pairs(seed: int) -> None:
    # random ledgers of up to 4 releases with a few groups each (big groups: many histories share a
    # pair); h lies in H when every release:group pair of h is one of H's
    rng = random.Random(seed)
    histories = set()
    for _ in range(300):
        releases = sorted(rng.sample(range(1, 5), rng.randint(1, 4)))
        histories.add("|".join(f"{r}:{rng.randint(0, 3)}" for r in releases))
    outer = pl.DataFrame({"pseudonym": range(len(histories)), "history": sorted(histories)})
    outer = pl.concat([outer, outer.with_columns(pl.col("pseudonym") + 1000)])  # two cases a history
    inner = pl.DataFrame({"history": rng.sample(sorted(histories), 60)})
    expected = {
        (h, c) for h in inner.get_column("history") for c, big in outer.iter_rows()
        if set(h.split("|")) <= set(big.split("|"))
    }  # fmt: skip
    found = _contained(outer, inner, "pseudonym")
    assert set(found.iter_rows()) == expected and found.height == len(expected)


def test_stored_rows_come_as_republished_rows_gives_them_call_after_call(tmp_path: Path) -> None:
    releases = two_stores(tmp_path)
    rows = StoredRows(tmp_path, releases)
    asked = [[(1, 1), (3, 2)], [(3, 1), (1, 1), (8, 2)], [(2, 1)], [(3, 2), (7, 2), (1, 1)]]
    for pairs in asked:
        republish = pl.DataFrame(pairs, schema={"caseid": pl.Int64, "store": pl.Int64}, orient="row")
        got, expected = rows(republish), republished_rows(tmp_path, releases, republish)
        assert sorted(got) == sorted(expected) == ["cases", "drug"]
        for name in expected:
            assert_frame_equal(got[name], expected[name])
    last = rows(pl.DataFrame({"caseid": [3, 1], "store": [1, 1]}))
    assert last["drug"].rows() == [(3, "A"), (1, "B"), (1, "D")]  # by store, then in the file's order


def test_stored_rows_keep_only_the_last_calls_rows(tmp_path: Path) -> None:
    """Between attempts only the rows of the last call are held (not every row read beside them), and
    a case left out and asked for again is read again, in the same order as before."""
    drug = pl.DataFrame({"caseid": [3, 1, 2, 1], "drug_key": ["A", "B", "C", "D"]})
    cases = pl.DataFrame({"caseid": [1, 2, 3], "pseudonym": [4, 5, 6]})
    releases = [write_store_of(tmp_path, 1, {"drug": drug, "cases": cases})]
    rows = StoredRows(tmp_path, releases)
    every = rows(pl.DataFrame({"caseid": [1, 2, 3], "store": [1, 1, 1]}))
    assert every["drug"].rows() == [(3, "A"), (1, "B"), (2, "C"), (1, "D")]
    subset = rows(pl.DataFrame({"caseid": [1], "store": [1]}))  # a re-plan withheld cases 2 and 3
    assert subset["drug"].rows() == [(1, "B"), (1, "D")]
    held = [part.select("caseid", "drug_key").rows() for part in rows._rows["drug"]]
    assert held == [[(1, "B"), (1, "D")]]  # case 1's rows only: 2 rows held, not the 4 read
    again = rows(pl.DataFrame({"caseid": [2, 1, 3], "store": [1, 1, 1]}))
    assert again["drug"].rows() == every["drug"].rows()
    same = rows(pl.DataFrame({"caseid": [2, 1, 3], "store": [1, 1, 1]}))  # the same cases: the last rows
    assert same.keys() == again.keys() and all(same[n] is again[n] for n in same)


@pytest.mark.parametrize("brands", [False, True])
def test_the_composition_in_memory_gives_its_folders_inputs(demo: Path, tmp_path: Path, brands: bool) -> None:
    policy = None
    if brands:  # the other drug columns published: P(s | c) reads them through E
        policy = tmp_path / "brands.csv"
        policy.write_text("table,column,role,why\ndrug,drugname,keep,brand\ndrug,prod_ai,keep,ai\n")
    config = AnonymizeConfig(k=3, column_policy=policy)
    ids = pl.read_parquet(demo / "cases.parquet").get_column("caseid")
    withheld, copied = ids.head(7), ids.slice(20, 15).to_list()
    composition = Composition(demo, withheld, as_other_cases(demo, copied, 10**9))
    folder = composition.write(tmp_path / "composed")
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in demo.iterdir())
    inputs = release_inputs(composition, config)
    cases, knowledge, outcomes, thetas = _release_inputs(folder, config)
    assert cases.height == ids.len() - 7 + 15
    assert_frame_equal(inputs.cases, cases)
    assert_frame_equal(inputs.knowledge, knowledge)
    assert outcomes is not None and inputs.outcomes is not None
    assert_frame_equal(inputs.outcomes, outcomes)
    assert inputs.thresholds.thetas == thetas
    composed = json.dumps(sorted(inputs.probabilities.rows()))
    assert composed == json.dumps(sorted(_probabilities_of(folder, config).rows()))


def _probabilities_of(folder: Path, config: AnonymizeConfig) -> pl.DataFrame:
    """P(s | c) as the anonymizer computes it from a folder."""
    from faers_anon.anonymize.inputs import knowledge_table, sensitive_thresholds
    from faers_anon.anonymize.value_classes import read_classes, read_outcomes

    cases = pl.read_parquet(folder / "cases.parquet")
    knowledge = knowledge_table(folder, sensitive=config.sensitive, knowledge=None)
    probabilities, _ = sensitive_thresholds(
        cases, knowledge, config=config, classes=read_classes(config.classes), outcomes=read_outcomes(folder),
        ingested=folder,
    )  # fmt: skip
    return probabilities


def test_units_vectorized_over_prefix_lengths() -> None:
    """unit_of: a returning history is a unit unless a proper prefix of it returns too; every ledger
    history goes to the unit among its prefixes (worked by hand; releases skipped as in a real ledger)."""
    histories = pl.Series(["1:4", "1:4|2:7", "1:4|2:7|4:1", "1:4|3:2", "2:5", "2:5|3:3", "1:9", "3:1|4:2"])
    returning = pl.Series(["1:4|2:7", "1:4|2:7|4:1", "2:5|3:3", "3:1|4:2", "1:4|2:7"])
    units = unit_of(histories, returning).sort("history")
    assert units.rows() == [
        ("1:4|2:7", "1:4|2:7"),  # its own unit
        ("1:4|2:7|4:1", "1:4|2:7"),  # inside "1:4|2:7", which also returns: not a unit of its own
        ("2:5|3:3", "2:5|3:3"),
        ("3:1|4:2", "3:1|4:2"),
    ]  # "1:4", "1:4|3:2", "2:5", "1:9": no returning history is a prefix of them
    empty = unit_of(histories, pl.Series([], dtype=pl.Utf8))
    assert empty.height == 0 and empty.schema == pl.Schema({"history": pl.Utf8, "unit": pl.Utf8})


def test_the_anonymizer_takes_the_steps_inputs_and_writes_the_same_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ledgered quarter's anonymizer reads E, P(s | c) and θ* from the series step (no E mined, no
    P computed again), and the release equals the one made with them computed from the folder."""
    import faers_anon.anonymize.pipeline as pipeline
    import faers_anon.release.pipeline as release_pipeline
    from faers_anon.series.generate import make_series
    from faers_anon.series.step import SeriesStep

    monkeypatch.setenv("FAERS_ANON_KEY_FILE", str(tmp_path / "agency.key"))
    raws = make_series(300, tmp_path / "raw", quarters=2, follow=0.3, seed=3)
    ledger = tmp_path / "ledger"
    flags: dict[str, object] = {"k": 3, "ledger": ledger, "republish": True}
    api.release([raws[0]], tmp_path / "rel0", config=api.release_config(None, flags))
    shutil.copytree(ledger, tmp_path / "ledger-copy")
    calls: list[str] = []
    mined, thresholds = pipeline.knowledge_table, pipeline.sensitive_thresholds
    monkeypatch.setattr(pipeline, "knowledge_table", lambda *a, **kw: calls.append("E") or mined(*a, **kw))
    monkeypatch.setattr(pipeline, "sensitive_thresholds",
                        lambda *a, **kw: calls.append("P") or thresholds(*a, **kw))  # fmt: skip
    api.release([raws[1]], tmp_path / "handed", config=api.release_config(None, flags))
    assert calls == []  # both taken from the step
    series_step = release_pipeline._series

    def without_inputs(*args: object) -> SeriesStep | None:  # the same step, E, P(s | c), θ* not handed over
        made = series_step(*args)  # type: ignore[arg-type]
        return None if made is None else dataclasses.replace(made, inputs=None)

    monkeypatch.setattr(release_pipeline, "_series", without_inputs)
    flags["ledger"] = tmp_path / "ledger-copy"
    api.release([raws[1]], tmp_path / "computed", config=api.release_config(None, flags))
    assert calls == ["E", "P"]
    for name in ("demo", "reac", "drug", "outc"):
        handed = pl.read_parquet(tmp_path / "handed" / "parquet" / f"{name}.parquet")
        assert_frame_equal(handed, pl.read_parquet(tmp_path / "computed" / "parquet" / f"{name}.parquet"))
    for name in ("knowledge.csv", "thresholds.csv"):
        assert (tmp_path / "handed" / name).read_bytes() == (tmp_path / "computed" / name).read_bytes()


def test_stored_rows_add_the_extra_rows_and_give_the_same_frames_for_the_same_cases(tmp_path: Path) -> None:
    """The offered pending rows come after the republished ones (the composition's added rows, the step
    keeps no copy of its own); the same cases again give the same frames (the miner reuses their rows)."""
    drug = pl.DataFrame({"caseid": [3, 1, 2, 1], "drug_key": ["A", "B", "C", "D"]})
    cases = pl.DataFrame({"caseid": [1, 2, 3], "pseudonym": [4, 5, 6]})
    releases = [write_store_of(tmp_path, 1, {"drug": drug, "cases": cases})]
    offered = {"drug": pl.DataFrame({"caseid": [9], "drug_key": ["P"]}),
               "reac": pl.DataFrame({"caseid": [9], "pt": ["X"]})}  # fmt: skip
    rows = StoredRows(tmp_path, releases, extra=offered)
    first = rows(pl.DataFrame({"caseid": [1, 3], "store": [1, 1]}))
    assert first["drug"].rows() == [(3, "A"), (1, "B"), (1, "D"), (9, "P")]
    assert sorted(first) == ["cases", "drug", "reac"] and first["reac"].rows() == [(9, "X")]
    again = rows(pl.DataFrame({"caseid": [1, 3], "store": [1, 1]}))
    assert all(again[name] is first[name] for name in first)
    none = rows(pl.DataFrame(schema={"caseid": pl.Int64, "store": pl.Int64}))
    assert none["drug"].rows() == [(9, "P")] and none["cases"].is_empty()
