"""The case's OUTC set as a field QID (SPEC §11; issue 18): hand-worked sets, levels, losses and rows."""

from __future__ import annotations

import polars as pl
import pytest

from faers_anon.io.column_policy import DEFAULT_POLICY, ColumnPolicy
from faers_anon.io.qid_fields import (
    OUTCOME_FIELD,
    certain_codes,
    field_codes,
    generalize_fields,
    outcome_texts,
    released_outcome_rows,
    with_outcome_sets,
)

# reports: case 1 has two versions (HO, then DE and OT), case 2 one (DE), case 3 one (HO), case 4 and 5 none
DEMO = pl.DataFrame(
    {
        "primaryid": [11, 12, 21, 31, 41, 51],
        "caseid": [1, 1, 2, 3, 4, 5],
        "quarter": ["2025Q1"] * 6,
    }
)
OUTC = pl.DataFrame(
    {
        "primaryid": [11, 12, 12, 21, 31],
        "caseid": [1, 1, 1, 2, 3],
        "outc_cod": ["HO", "ot", "DE", "DE", "HO"],
        "quarter": ["2025Q1"] * 5,
    }
)


def _outcome_only() -> ColumnPolicy:
    """The default policy with ``outcome`` its only field qid besides age, sex and weight."""
    demo = {
        c: a for c, a in DEFAULT_POLICY.columns["demo"].items() if a != "qid" or c in ("age", "sex", "wt")
    }
    return ColumnPolicy(
        columns={**DEFAULT_POLICY.columns, "demo": demo | {"outcome": "qid"}},
        qids={**DEFAULT_POLICY.qids, OUTCOME_FIELD: "outcome"},  # this file tests the full hierarchy
        trees=DEFAULT_POLICY.trees,
    )


def test_the_set_is_the_union_over_versions_in_severity_order() -> None:
    sets = with_outcome_sets(DEMO, OUTC)
    assert sets[OUTCOME_FIELD].to_list() == ["DE,HO,OT", "DE,HO,OT", "DE", "HO", "none", "none"]
    # a quarter without OUTC rows (a source without the table) says nothing: missing, not non-serious
    assert with_outcome_sets(DEMO, OUTC.clear())[OUTCOME_FIELD].null_count() == DEMO.height


def test_engine_codes_follow_set_most_severe_seriousness() -> None:
    policy = _outcome_only()
    codes, specs = field_codes(with_outcome_sets(DEMO, OUTC), policy)
    assert [(s.name, s.height) for s in specs] == [(OUTCOME_FIELD, 3)]
    rows = dict(codes.select("caseid", OUTCOME_FIELD).iter_rows())
    # dense ranks from 1: level 0 DE < DE,HO,OT < HO < none; level 1 most severe DE < most severe HO <
    # none; level 2 non-serious < serious. Cases 1 and 2 agree from level 1, 1 and 3 from level 2.
    assert rows == {1: [2, 1, 2], 2: [1, 1, 2], 3: [3, 2, 2], 4: [4, 3, 1], 5: [4, 3, 1]}


@pytest.mark.parametrize(
    ("groups", "released", "nil"),
    [
        # {1, 2}: both most severe DE (level 1 of 3); {3}: exact; {4, 5}: exact none
        ([0, 0, 1, 2, 2], ["most severe DE", "most severe DE", "HO", "none", "none"], 2 * (1 / 3) / 5),
        # {1, 3}: serious (2/3); {2, 4}: serious and not: * (1); {5}: exact
        ([0, 1, 0, 1, 2], ["serious", "*", "serious", "*", "none"], (2 * 2 / 3 + 2 * 1.0) / 5),
    ],
)
def test_a_group_releases_its_lowest_common_level(groups: list[int], released: list[str], nil: float) -> None:
    partition = pl.DataFrame({"caseid": [1, 2, 3, 4, 5], "group_id": groups})
    out, losses = generalize_fields(partition, with_outcome_sets(DEMO, OUTC), _outcome_only())
    assert out[OUTCOME_FIELD].to_list() == released
    assert losses[OUTCOME_FIELD] == pytest.approx(nil)


def test_released_rows_are_the_certain_codes_on_every_version() -> None:
    partition = pl.DataFrame(
        {"caseid": [1, 2, 3, 4, 5], OUTCOME_FIELD: ["DE,HO,OT", "most severe DE", "serious", "*", "none"]}
    )
    rows = released_outcome_rows(OUTC, DEMO, partition)
    assert rows.columns == OUTC.columns and rows.schema == OUTC.schema
    # case 1 exact: both its reports carry DE, HO, OT (report 11 had only HO); case 2: DE; 3, 4, 5: none
    assert rows.select("primaryid", "outc_cod").rows() == [
        (11, "DE"), (11, "HO"), (11, "OT"), (12, "DE"), (12, "HO"), (12, "OT"), (21, "DE"),
    ]  # fmt: skip
    assert released_outcome_rows(OUTC, DEMO, partition.drop(OUTCOME_FIELD)).equals(OUTC)


def test_certain_codes_of_each_level() -> None:
    texts = pl.Series(["DE,HO", "most severe LT", "serious", "non-serious", "none", "*", None])
    got = texts.to_frame("t").select(certain_codes(pl.col("t"))).to_series().to_list()
    assert got == [["DE", "HO"], ["LT"], [], [], [], [], []]


def test_outcome_texts_by_bit_set_and_by_sort() -> None:
    """Case 1: OT, DE, OT, HO -> bits 2^6 | 2^0 | 2^2 = 69 -> "DE,HO,OT"; case 2: CA alone -> 2^4 -> "CA";
    case 3 has the unknown ZZ and an AB: sorted by (rank, code), DS (rank 3) first, then AB, ZZ (rank 7,
    alphabetically), duplicates once."""
    codes = pl.DataFrame(
        {
            "caseid": [1, 1, 1, 1, 2, 3, 3, 3, 3],
            "code": ["OT", "DE", "OT", "HO", "CA", "ZZ", "DS", "AB", "ZZ"],
        }
    )
    got = dict(outcome_texts(codes).iter_rows())
    assert got == {1: "DE,HO,OT", 2: "CA", 3: "DS,AB,ZZ"}
    assert outcome_texts(codes.head(0)).height == 0
