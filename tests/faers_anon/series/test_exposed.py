"""P(s | c) of a series' members in chunks (:mod:`faers_anon.series.exposed`, issue 14 item 7): the same
frame as one call, each chunk's cases whole, computed chunk by chunk; the set union of a member's lists
gives the P of their concatenation made unique."""

from __future__ import annotations

import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.value_classes import read_classes, with_classes_and_outcomes
from faers_anon.series import exposed
from knowledge import case_value_probabilities

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


def _reference(members: pl.DataFrame, entries: pl.DataFrame, config: AnonymizeConfig,
               outcomes: pl.DataFrame) -> pl.DataFrame:  # fmt: skip
    """P(s | c) over each list's concatenation with the ledger's, nulls dropped, made unique (the union
    before the set union; a null list is an empty one: the set union dropped the ledger's values of a
    member whose current list was null, the arrays of :mod:`faers_anon.series.linked` keep them)."""
    lists = ("indications", "reactions", "drug_keys")
    past = entries.rename({"caseid": "pseudonym"}).select(
        "pseudonym", *[pl.col(n).list.drop_nulls().alias(f"_past_{n}") for n in lists]
    )
    empty = pl.lit([], _LIST)
    union = members.join(past, on="pseudonym", how="left").select(
        "caseid", *[pl.concat_list(pl.col(n).fill_null(empty), pl.col(f"_past_{n}").fill_null(empty))
                    .list.drop_nulls().list.unique().alias(n) for n in lists],
    )  # fmt: skip
    ids = members.select("caseid", "pseudonym")
    codes = entries.select(pl.col("caseid").alias("pseudonym"), pl.col("outcomes").alias("outc_cod"))
    codes = codes.explode("outc_cod").join(ids, on="pseudonym").select("caseid", "outc_cod")
    now = outcomes.join(members.select("caseid"), on="caseid", how="semi")
    p = case_value_probabilities(union, E, sensitive=config.sensitive)
    return with_classes_and_outcomes(
        p, classes=read_classes(config.classes), outcomes=pl.concat([now, codes])
    )


def test_the_set_union_gives_p_of_the_concatenated_lists() -> None:
    # random lists with repeats, null terms and null lists, against the concatenation made unique
    rng = random.Random(11)
    words = ["HEADACHE", "NAUSEA", "RASH", "DEATH", "GOUT", "ASPIRIN", "LIRILIOLOL", "PAIN", None]

    def some() -> list[str | None] | None:
        return None if rng.random() < 0.08 else [rng.choice(words) for _ in range(rng.randint(0, 4))]

    config = AnonymizeConfig(k=3)
    for _ in range(15):
        members = pl.DataFrame(
            [(c, c + 100, some(), some(), some()) for c in range(30)], orient="row",
            schema={"caseid": pl.Int64, "pseudonym": pl.Int64, "indications": _LIST, "reactions": _LIST,
                    "drug_keys": _LIST},
        )  # fmt: skip
        state = pl.DataFrame(
            [(c + 100, "1:1", some(), some(), some(), rng.sample(["DE", "HO", "LT"], rng.randint(0, 2)))
             for c in range(0, 40, 2)], orient="row",
            schema={"caseid": pl.Int64, "history": pl.Utf8, "reactions": _LIST, "indications": _LIST,
                    "drug_keys": _LIST, "outcomes": _LIST},
        )  # fmt: skip
        got = exposed.exposed_probabilities(members, state, E, config, OUTCOMES)
        assert got.height > 0
        assert_frame_equal(got, _reference(members, state, config, OUTCOMES))
