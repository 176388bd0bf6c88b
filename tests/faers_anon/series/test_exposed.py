"""P(s | c) of a series' members in chunks (:mod:`faers_anon.series.exposed`, issue 14 item 7): the same
frame as one call, each chunk's cases whole, computed chunk by chunk."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.series import exposed

_LIST = pl.List(pl.Utf8)
# five members (raw caseid, pseudonym = caseid + 100); cases 3 and 9 exposed values in the ledger
MEMBERS = pl.DataFrame(
    {"caseid": [5, 3, 9, 1, 7], "pseudonym": [105, 103, 109, 101, 107],
     "indications": [["HEADACHE"], [], ["ASTHMA"], [], ["GOUT"]],
     "reactions": [["NAUSEA"], ["RASH"], [], ["DEATH"], []],
     "drug_keys": [["ASPIRIN"], ["LIRILIOLOL"], [], ["ASPIRIN"], ["LIRILIOLOL"]]},
    schema_overrides={n: _LIST for n in ("indications", "reactions", "drug_keys")},
)  # fmt: skip
STATE = pl.DataFrame(
    {"caseid": [103, 109, 200], "history": ["1:1", "1:2", "1:1"],
     "reactions": [["DEATH"], ["RASH"], ["COUGH"]], "indications": [[], ["GOUT"], []],
     "drug_keys": [["ASPIRIN"], [], []], "outcomes": [["DE"], [], ["HO"]]},
    schema_overrides={n: _LIST for n in ("reactions", "indications", "drug_keys", "outcomes")},
)  # fmt: skip
E = pl.DataFrame({"drug_key": ["ASPIRIN", "LIRILIOLOL"], "disease": ["PAIN", "XATEOSIS ARTHRITIS"],
                  "weight": [0.5, 1.0]})  # fmt: skip
OUTCOMES = pl.DataFrame({"caseid": [5, 1], "outc_cod": ["HO", "DE"]})


def test_chunks_give_the_frame_of_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    config = AnonymizeConfig(k=3)
    whole = exposed.exposed_probabilities(MEMBERS, STATE, E, config, OUTCOMES)
    assert whole.height > 10 and whole.get_column("caseid").unique().sort().to_list() == [1, 3, 5, 7, 9]
    # hand-worked rows: case 3 adds its ledger DEATH and ASPIRIN (PAIN 0.5) to its own RASH, LIRILIOLOL
    three = dict(whole.filter(pl.col("caseid") == 3).select("value", "p").iter_rows())
    assert three["DEATH"] == three["RASH"] == three["XATEOSIS ARTHRITIS"] == 1.0 and three["PAIN"] == 0.5
    calls: list[int] = []
    inner = exposed._exposed

    def counted(members: pl.DataFrame, *args: object) -> pl.DataFrame:
        calls.append(members.height)
        return inner(members, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(exposed, "_exposed", counted)
    monkeypatch.setattr(exposed, "CHUNK", 2)
    chunked = exposed.exposed_probabilities(MEMBERS, STATE, E, config, OUTCOMES)
    assert calls == [2, 2, 1]  # caseids 1, 3 | 5, 7 | 9
    assert_frame_equal(chunked, whole)  # same rows, sorted by caseid then value
