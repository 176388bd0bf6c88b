"""The parts P(s | c) was made cheaper by (fifteenth session): each against the form it replaced, on
random cases — the cases numbered by one argsort (:func:`.exposed._numbered_cases`), the ledger's rows
found with one search when its keys are distinct (:func:`.linked.matches`), and the OUTC codes read per
chunk from one sorted frame (:func:`.exposed._codes`: chunks of a call give the frame of one call)."""

from __future__ import annotations

import random

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.series import exposed, linked

_LIST = pl.List(pl.Utf8)
_LISTS = ("indications", "reactions", "drug_keys")


@pytest.mark.parametrize("seed", range(20))
def test_cases_numbered_by_one_argsort_as_by_unique_sort_and_search(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ids = rng.integers(-5, 30 if seed % 2 else 10**12, size=int(rng.integers(0, 60)))
    caseids = pl.Series("caseid", ids, pl.Int64)
    if seed % 5 == 4:
        caseids = caseids.scatter([0], [None]) if caseids.len() else caseids
    cases, number = exposed._numbered_cases(caseids)
    expected = caseids.unique().sort()
    assert cases.equals(expected, check_names=False)
    assert np.array_equal(number, linked.search(expected.to_numpy(), caseids.to_numpy()))


def _matches_by_join(keys: pl.DataFrame, wanted: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    found = (
        wanted.cast(pl.Int64).to_frame("caseid").with_row_index("_i")
        .join(keys.select(pl.col("caseid").cast(pl.Int64), "_row"), on="caseid")
        .sort("_i", "caseid", maintain_order=True)
    )  # fmt: skip
    return found.get_column("_i").to_numpy().astype(np.int64), found.get_column("_row").to_numpy()


@pytest.mark.parametrize("seed", range(20))
def test_matches_with_distinct_keys_and_with_repeats(seed: int) -> None:
    rng = random.Random(seed)
    pool = list(range(-3, 40))
    distinct = seed % 2 == 0
    keys = rng.sample(pool, rng.randint(0, 30)) if distinct else [rng.choice(pool) for _ in range(30)]
    frame = pl.DataFrame({"caseid": keys}, schema={"caseid": pl.Int64}).with_row_index("_row")
    size = rng.choice([0, 5, 50, 5000])  # 5000: the sorted search
    wanted = pl.Series([rng.choice([*pool, None]) for _ in range(size)], dtype=pl.Int64)
    got = linked.matches(frame, "caseid", wanted)
    expected = _matches_by_join(frame, wanted)
    if not distinct:  # the rows of a repeated key in the sorted keys' (stable) order
        assert np.array_equal(got[0], expected[0])
        assert sorted(zip(*got, strict=True)) == sorted(zip(*expected, strict=True))
    else:
        assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])


def test_chunks_read_the_sorted_codes_as_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 3 members, OUTC codes unsorted with nulls and cases of no member: one call's frame."""
    rng = random.Random(7)
    words = ["HEADACHE", "Nausea", "PAIN", None]
    members = pl.DataFrame(
        {"caseid": list(range(40, 0, -3)), "pseudonym": [None] * 14,
         "indications": [[rng.choice(words)] for _ in range(14)], "reactions": [[] for _ in range(14)],
         "drug_keys": [["ASPIRIN"] if i % 2 else [] for i in range(14)]},
        schema_overrides={"pseudonym": pl.Int64, **dict.fromkeys(_LISTS, _LIST)},
    )  # fmt: skip
    outcomes = pl.DataFrame({
        "caseid": [rng.choice([*range(0, 45), None]) for _ in range(60)],
        "outc_cod": [rng.choice(["HO", "DE", "ri", None]) for _ in range(60)],
    })  # fmt: skip
    entries = pl.DataFrame(schema={"caseid": pl.Int64, "indications": _LIST, "reactions": _LIST,
                                   "drug_keys": _LIST, "outcomes": _LIST})  # fmt: skip
    e = pl.DataFrame({"drug_key": ["ASPIRIN"], "disease": ["pain"], "weight": [0.5]})
    config = AnonymizeConfig(k=3)
    whole = exposed.exposed_probabilities(members, entries, e, config, outcomes)
    monkeypatch.setattr(exposed, "CHUNK", 3)
    assert_frame_equal(exposed.exposed_probabilities(members, entries, e, config, outcomes), whole)
    assert whole.filter(pl.col("value").str.starts_with("outc:")).height > 0
