"""P(s | c) as arrays (:mod:`faers_anon.series.linked`, issue 14 item 7) against the polars form it
replaced: :func:`knowledge.case_value_probabilities` over each member's lists and the ledger's, then
:func:`faers_anon.anonymize.value_classes.with_classes_and_outcomes`: the same frame, float for float,
with value classes, own values, filler terms, drugs with several E rows (and a key E writes twice),
empty and null lists, OUTC codes, and each choice of sensitive attributes."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.value_classes import read_classes, with_classes_and_outcomes
from faers_anon.series import exposed
from knowledge import case_value_probabilities

_LIST = pl.List(pl.Utf8)
_LISTS = ("indications", "reactions", "drug_keys")
# E: drugs with several rows, a disease written in two spellings, a key written twice (Aspirin and
# ASPIRIN: P reads both as ASPIRIN and keeps the larger weight), a combination key
E = pl.DataFrame(
    {"drug_key": ["ASPIRIN", "ASPIRIN", "Aspirin", "LIRILIOLOL", "LIRILIOLOL", "LIRILIOLOL", "A\\B", "ZED"],
     "disease": ["pain", "Fever", "PAIN", "Xateosis  arthritis", "headache", "lung cancer", "gout", "hiv"],
     "weight": [0.5, 0.25, 0.75, 1.0, 0.3333333333333333, 0.2, 0.125, 0.6]},
)  # fmt: skip
CLASSES = (
    "value,class,theta\nLung cancer,cancer,\nBREAST CANCER,cancer,\nHIV,hiv,\nheadache,pain,\nPAIN,pain,\n"
)
WORDS = ["HEADACHE", "Nausea", "RASH", "lung  cancer", "GOUT", "Pain", "BREAST CANCER", "  ", None,
         "Product used for unknown indication", "HIV", "fever"]  # fmt: skip
DRUGS = ["ASPIRIN", "LIRILIOLOL", "A\\B", "ZED", "NOTINE", None]


def _reference(members: pl.DataFrame, entries: pl.DataFrame, config: AnonymizeConfig,
               outcomes: pl.DataFrame | None) -> pl.DataFrame:  # fmt: skip
    """The polars form: each list concatenated with the ledger's (a null list read as empty), P of
    knowledge, then the classes and OUTC codes."""
    empty = pl.lit([], _LIST)
    past = entries.group_by(pl.col("caseid").alias("pseudonym")).agg(
        pl.col(n).explode().drop_nulls().alias(f"_past_{n}") for n in _LISTS
    )
    union = members.join(past, on="pseudonym", how="left").select(
        "caseid", *[pl.concat_list(pl.col(n).fill_null(empty), pl.col(f"_past_{n}").fill_null(empty)).alias(n)
                    for n in _LISTS],
    )  # fmt: skip
    p = case_value_probabilities(union, E, sensitive=config.sensitive)
    codes = None
    if outcomes is not None:
        ids = members.select("caseid", "pseudonym")
        before = entries.select(pl.col("caseid").alias("pseudonym"), pl.col("outcomes").alias("outc_cod"))
        before = before.explode("outc_cod").join(ids, on="pseudonym").select("caseid", "outc_cod")
        now = outcomes.join(members.select("caseid"), on="caseid", how="semi")
        codes = pl.concat([now, before])
    return with_classes_and_outcomes(p, classes=read_classes(config.classes), outcomes=codes)


def _some(rng: random.Random, words: list[str | None]) -> list[str | None] | None:
    return None if rng.random() < 0.05 else [rng.choice(words) for _ in range(rng.randint(0, 4))]


def _frames(rng: random.Random, rows: bool) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Members (raw caseid, pseudonym = caseid + 100, a raw caseid twice), the ledger (its state, or
    several rows per case when ``rows``) and this quarter's OUTC codes."""
    members = pl.DataFrame(
        [(c, c + 100, _some(rng, WORDS), _some(rng, WORDS), _some(rng, DRUGS)) for c in [*range(25), 3]],
        orient="row", schema={"caseid": pl.Int64, "pseudonym": pl.Int64, "indications": _LIST,
                              "reactions": _LIST, "drug_keys": _LIST},
    )  # fmt: skip
    ledger = [c + 100 for c in range(0, 30, 2)] * (2 if rows else 1)
    entries = pl.DataFrame(
        [(c, "1:1", _some(rng, WORDS), _some(rng, WORDS), _some(rng, DRUGS),
          rng.sample(["DE", "HO", "lt ", None], rng.randint(0, 2))) for c in ledger],
        orient="row", schema={"caseid": pl.Int64, "history": pl.Utf8, "reactions": _LIST,
                              "indications": _LIST, "drug_keys": _LIST, "outcomes": _LIST},
    )  # fmt: skip
    if rows:
        entries = entries.drop("history")
    outcomes = pl.DataFrame({"caseid": [1, 2, 2, 7, 40], "outc_cod": ["HO", "DE", None, "ri", "HO"]})
    return members, entries, outcomes


@pytest.mark.parametrize(
    "sensitive",
    [("indications", "reactions", "diseases"), ("reactions",), ("diseases",), ("indications", "diseases")],
)
def test_the_arrays_give_the_polars_frame(sensitive: tuple[str, ...], tmp_path: Path) -> None:
    (tmp_path / "classes.csv").write_text(CLASSES)
    config = AnonymizeConfig(k=3, sensitive=sensitive, classes=tmp_path / "classes.csv")
    rng = random.Random(len(sensitive))
    rows = 0
    for trial in range(12):
        members, entries, outcomes = _frames(rng, rows=trial % 3 == 2)
        codes = None if trial % 4 == 3 else outcomes
        got = exposed.exposed_probabilities(members, entries, E, config, codes)
        assert_frame_equal(got, _reference(members, entries, config, codes), check_exact=True)
        rows += got.height
    assert rows > 0  # the random members reach values: the frames compared are not empty


def test_a_hand_worked_member(tmp_path: Path) -> None:
    (tmp_path / "classes.csv").write_text(CLASSES)
    config = AnonymizeConfig(k=3, classes=tmp_path / "classes.csv")
    members = pl.DataFrame(
        {"caseid": [7], "pseudonym": [107], "indications": [["Product used for unknown indication"]],
         "reactions": [["Headache"]], "drug_keys": [["LIRILIOLOL"]]},
        schema_overrides={n: _LIST for n in _LISTS},
    )  # fmt: skip
    entries = pl.DataFrame(
        {"caseid": [107], "history": ["1:1"], "indications": [[]], "reactions": [[]],
         "drug_keys": [["ASPIRIN"]], "outcomes": [["DE"]]},
        schema_overrides={n: _LIST for n in (*_LISTS, "outcomes")},
    )  # fmt: skip
    got = exposed.exposed_probabilities(members, entries, E, config, None)
    # own HEADACHE 1 (the filler term none); LIRILIOLOL: XATEOSIS ARTHRITIS 1, LUNG CANCER 0.2
    # (HEADACHE's 1/3 below its own 1); the ledger's ASPIRIN: PAIN max(0.5, 0.75), FEVER 0.25; classes:
    # cancer 0.2, pain max(HEADACHE 1, PAIN 0.75); no OUTC codes (None)
    assert got.rows() == [
        (7, "FEVER", 0.25), (7, "HEADACHE", 1.0), (7, "LUNG CANCER", 0.2), (7, "PAIN", 0.75),
        (7, "XATEOSIS ARTHRITIS", 1.0), (7, "class:cancer", 0.2), (7, "class:pain", 1.0),
    ]  # fmt: skip
    with_codes = exposed.exposed_probabilities(members, entries, E, config, pl.DataFrame({"caseid": [7],
                                               "outc_cod": ["ho"]}))  # fmt: skip
    assert with_codes.filter(pl.col("value").str.starts_with("outc:")).rows() == [
        (7, "outc:DE", 1.0),
        (7, "outc:HO", 1.0),
    ]


def test_no_members_no_rows() -> None:
    members, entries, outcomes = _frames(random.Random(1), rows=False)
    got = exposed.exposed_probabilities(members.clear(), entries, E, AnonymizeConfig(k=3), outcomes)
    assert got.is_empty() and got.schema == pl.Schema({"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})
