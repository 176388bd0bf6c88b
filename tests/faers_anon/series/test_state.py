"""The ledger's current state (faers_anon.series.state): one release's rows merged into it, worked by hand."""

from __future__ import annotations

import polars as pl

from faers_anon.series.state import STATE_SCHEMA, advance

_REGION = {"age_group": "[18,45)", "age_min": 18.0, "age_max": 45.0, "sex": "F", "wt_min": 50.0,
           "wt_max": 70.0}  # fmt: skip


def _state(rows: list[dict[str, object]]) -> pl.DataFrame:
    return pl.DataFrame([{**_REGION, "last": 1, "outcomes": [], **r} for r in rows], schema=STATE_SCHEMA)


def _entries(rows: list[dict[str, object]]) -> pl.DataFrame:
    return pl.DataFrame([{**_REGION, "outcomes": [], **r} for r in rows]).with_columns(
        pl.col("group").cast(pl.UInt32)
    )


def test_advance_unions_only_what_a_case_exposed_anew() -> None:
    # 1 stays out of release 2; 2 is republished with what it showed before (a subset);
    # 3 returns with a new reaction and a new drug; 4 is new in release 2
    state = _state([
        {"caseid": 1, "history": "1:0", "reactions": ["NAUSEA"], "indications": [], "drug_keys": ["A"]},
        {"caseid": 2, "history": "1:0", "reactions": ["FALL", "RASH"], "indications": ["PAIN"],
         "drug_keys": ["B"]},
        {"caseid": 3, "history": "1:1", "reactions": ["RASH"], "indications": [], "drug_keys": ["C"]},
    ])  # fmt: skip
    entries = _entries([
        {"caseid": 2, "group": 4, "reactions": ["RASH"], "indications": ["PAIN"], "drug_keys": ["B"]},
        {"caseid": 3, "group": 4, "reactions": ["ANAEMIA", "RASH"], "indications": [], "drug_keys": ["D"]},
        {"caseid": 4, "group": 0, "reactions": ["FALL"], "indications": [], "drug_keys": []},
    ])  # fmt: skip
    after = advance(state, entries, 2)
    assert after.schema == pl.Schema(STATE_SCHEMA)
    assert after.get_column("caseid").to_list() == [1, 2, 3, 4]
    assert after.get_column("history").to_list() == ["1:0", "1:0|2:4", "1:1|2:4", "2:0"]
    assert after.get_column("last").to_list() == [1, 2, 2, 2]
    reactions = [["NAUSEA"], ["FALL", "RASH"], ["ANAEMIA", "RASH"], ["FALL"]]
    assert after.get_column("reactions").to_list() == reactions
    assert after.get_column("indications").to_list() == [[], ["PAIN"], [], []]
    assert after.get_column("drug_keys").to_list() == [["A"], ["B"], ["C", "D"], []]


def test_advance_of_an_empty_state_is_the_release() -> None:
    entries = _entries([{"caseid": 7, "group": 2, "reactions": ["B", "A"], "indications": [],
                         "drug_keys": []}])  # fmt: skip
    after = advance(pl.DataFrame(schema=STATE_SCHEMA), entries, 1)
    assert after.select("caseid", "history", "last").rows() == [(7, "1:2", 1)]
    assert after.get_column("reactions").to_list() == [["B", "A"]]  # taken as the release lists them
