"""P(s | case) and conf(q → s, E): the paper's Example 1 and hand-worked frames (SPEC §5)."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge import (
    E_SCHEMA,
    KnowledgeError,
    case_value_probabilities,
    confidence,
    with_combinations,
    with_default_weights,
)


def _table_3b() -> pl.DataFrame:
    """Lin, Yang & Wang 2016, Table 3(b): the external table E, without weights."""
    pairs = {
        "Asprin": ["Flu", "Headache", "Fever"],
        "Intron A": ["Hepatitis B", "Hepatitis C", "Leukemia", "Melanoma"],
        "Paracetamol": ["Headache", "Fever"],
        "Antacid": ["Stomachache", "GERD"],
    }
    rows = [(drug.upper(), disease) for drug, diseases in pairs.items() for disease in diseases]
    return with_default_weights(pl.DataFrame(rows, schema=["drug_key", "disease"], orient="row"))


def _table_3a() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Table 3(a) as super-records (ISRs 001–006 → cases 1–4) and their QID-groups."""
    cases = pl.DataFrame(
        {
            "caseid": [1, 2, 3, 4],
            "indications": [[], [], [], []],
            "reactions": [[], [], [], []],
            "drug_keys": [["PARACETAMOL"], ["ANTACID", "INTRON A"], ["PARACETAMOL"], ["ANTACID"]],
        },
        schema_overrides={"indications": pl.List(pl.Utf8), "reactions": pl.List(pl.Utf8)},
    )
    # group 0 = ([20–30], M, USA), group 1 = ([30–40], F, UK)
    groups = pl.DataFrame({"caseid": [1, 2, 3, 4], "group_id": [0, 0, 1, 1]})
    return cases, groups


def test_example_1_headache_confidence_is_a_quarter_and_ms_2_04_holds() -> None:
    cases, groups = _table_3a()
    conf = confidence(groups, case_value_probabilities(cases, _table_3b()))
    uk = dict(conf.filter(pl.col("group_id") == 1).select("value", "conf").iter_rows())
    assert uk == {"HEADACHE": 0.25, "FEVER": 0.25, "STOMACHACHE": 0.25, "GERD": 0.25}
    assert max(conf["conf"].to_list()) <= 0.4
    usa = dict(conf.filter(pl.col("group_id") == 0).select("value", "conf").iter_rows())
    assert usa["HEPATITIS B"] == pytest.approx(0.125)
    assert usa["HEADACHE"] == pytest.approx(0.25)
    assert min(groups.group_by("group_id").len()["len"].to_list()) >= 2  # k = 2 distinct cases per group


def test_default_weights_spread_a_drug_evenly() -> None:
    table = _table_3b()
    assert table.filter(pl.col("drug_key") == "INTRON A")["weight"].to_list() == [0.25] * 4
    sums = table.group_by("drug_key").agg(pl.col("weight").sum())["weight"]
    assert sums.to_list() == pytest.approx([1.0] * 4)


def test_own_terms_give_one_and_drugs_give_their_largest_weight() -> None:
    cases = pl.DataFrame(
        {
            "caseid": [7, 8],
            "indications": [["headache "], None],
            "reactions": [["Nausea", "NAUSEA"], []],
            "drug_keys": [["PARACETAMOL", "ASPRIN"], ["ASPRIN", "UNKNOWN DRUG", None]],
        }
    )
    probs = case_value_probabilities(cases, _table_3b())
    got = {(c, v): p for c, v, p in probs.iter_rows()}
    third = pytest.approx(1 / 3)
    assert got == {
        (7, "HEADACHE"): 1.0,
        (7, "NAUSEA"): 1.0,
        (7, "FEVER"): 0.5,
        (7, "FLU"): third,
        (8, "FLU"): third,
        (8, "HEADACHE"): third,
        (8, "FEVER"): third,
    }
    assert probs.schema == pl.Schema({"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})


def test_sensitive_choice_limits_the_sources() -> None:
    cases = pl.DataFrame(
        {"caseid": [1], "indications": [["Fever"]], "reactions": [["Rash"]], "drug_keys": [["ANTACID"]]}
    )
    only_drugs = case_value_probabilities(cases, _table_3b(), sensitive=("diseases",))
    assert only_drugs["value"].to_list() == ["GERD", "STOMACHACHE"]
    only_reactions = case_value_probabilities(cases.drop("drug_keys"), _table_3b(), sensitive=("reactions",))
    assert only_reactions.rows() == [(1, "RASH", 1.0)]
    assert case_value_probabilities(cases, _table_3b(), sensitive=()).height == 0


def test_a_combination_links_through_its_ingredients_once_e_has_its_rows() -> None:
    table = pl.DataFrame({"drug_key": ["A", "A\\B"], "disease": ["Pain", "Cough"], "weight": [0.5, 1.0]})
    cases = pl.DataFrame({"caseid": [1], "indications": [[]], "reactions": [[]], "drug_keys": [["A\\B"]]})
    assert case_value_probabilities(cases.lazy(), table).rows() == [(1, "COUGH", 1.0)]  # SPEC §5 as stated
    expanded = with_combinations(table, cases["drug_keys"].explode())
    assert case_value_probabilities(cases.lazy(), expanded).rows() == [(1, "COUGH", 1.0), (1, "PAIN", 0.5)]


def test_bad_arguments_raise_one_line_errors() -> None:
    cases, groups = _table_3a()
    with pytest.raises(KnowledgeError, match=r"sensitive: unknown attributes \['drugs'\]"):
        case_value_probabilities(cases, _table_3b(), sensitive=("drugs",))
    with pytest.raises(KnowledgeError, match=r"cases: missing columns \['drug_keys'\]"):
        case_value_probabilities(cases.drop("drug_keys"), _table_3b())
    bad_e = _table_3b().with_columns(weight=pl.lit(1.5))
    with pytest.raises(KnowledgeError, match=r"E: row 0: weight: 1.5 is invalid"):
        case_value_probabilities(cases, bad_e)
    twice = pl.concat([groups, pl.DataFrame({"caseid": [1], "group_id": [1]})])
    with pytest.raises(KnowledgeError, match="caseid 1 is in 2 groups"):
        confidence(twice, case_value_probabilities(cases, _table_3b()))


_TERMS = st.sampled_from(["Flu", "flu ", "Fever", "GERD", "Rash", "Nausea"])
_DRUGS = st.sampled_from(["ASPRIN", "PARACETAMOL", "ANTACID", "INTRON A", "ANTACID\\PARACETAMOL", "NONE"])
_CASES = st.lists(
    st.tuples(st.lists(_TERMS, max_size=3), st.lists(_TERMS, max_size=3), st.lists(_DRUGS, max_size=3)),
    min_size=1,
    max_size=8,
)


@settings(deadline=None, max_examples=60)  # polars calls: timing varies on a shared machine
@given(_CASES)
def test_vectorized_probabilities_equal_the_definition(
    rows: list[tuple[list[str], list[str], list[str]]],
) -> None:
    table = _table_3b()
    weights: dict[tuple[str, str], float] = {(d, s.upper()): w for d, s, w in table.iter_rows()}
    expected: dict[tuple[int, str], float] = {}
    for caseid, (indications, reactions, drugs) in enumerate(rows):
        own = {t.strip().upper() for t in indications + reactions}
        reach = {part for d in drugs for part in (d, *d.split("\\"))}
        for (drug, value), weight in weights.items():
            if drug in reach and value not in own:
                expected[caseid, value] = max(expected.get((caseid, value), 0.0), weight)
        expected.update({(caseid, value): 1.0 for value in own})
    cases = pl.DataFrame(
        {
            "caseid": list(range(len(rows))),
            "indications": [r[0] for r in rows],
            "reactions": [r[1] for r in rows],
            "drug_keys": [r[2] for r in rows],
        },
        schema_overrides={c: pl.List(pl.Utf8) for c in ("indications", "reactions", "drug_keys")},
    )
    probs = case_value_probabilities(cases, with_combinations(table, cases["drug_keys"].explode()))
    assert {(c, v): p for c, v, p in probs.iter_rows()} == pytest.approx(expected)
    assert probs.select("caseid", "value").is_duplicated().sum() == 0
    assert probs.rows() == sorted(probs.rows(), key=lambda r: (r[0], r[1]))


def test_a_hand_written_table_meets_case_keys() -> None:
    table = pl.DataFrame({"drug_key": ["Rosiglitazone maleate"], "disease": ["diabetes"], "weight": [0.5]})
    cases = pl.DataFrame(
        {"caseid": [3], "indications": [[]], "reactions": [[]], "drug_keys": [["ROSIGLITAZONE"]]}
    )
    assert case_value_probabilities(cases, table).rows() == [(3, "DIABETES", 0.5)]


def test_filler_indications_are_not_sensitive_values() -> None:
    cases = pl.DataFrame(
        {
            "caseid": [1, 2],
            "indications": [
                ["Product used for unknown indication", "Headache"],
                ["Drug use for unknown indication"],
            ],
            "reactions": [["Off label use"], ["Nausea"]],
            "drug_keys": [[], []],
        },
        schema_overrides={"drug_keys": pl.List(pl.Utf8)},
    )
    probabilities = case_value_probabilities(cases, pl.DataFrame(schema=E_SCHEMA))
    assert probabilities.select("caseid", "value").rows() == [(1, "HEADACHE"), (2, "NAUSEA")]
