"""Matching MeSH-style disease names to FAERS terms: case, comma inversion, spelling, word order."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from knowledge import load_table
from knowledge.terms import MATCH_METHODS, match_table, match_terms, vocabulary_of_cases

VOCABULARY = pl.Series(
    [
        "Type 2 diabetes mellitus",
        "Pulmonary hypertension",
        "Acute myeloid leukaemia",
        "Colitis ulcerative",
        "HIV infection",
        "Crohn's disease",
        "Headache",
        "Oedema peripheral",
        "Rheumatoid arthritis",
        "rheumatoid arthritis",
        "Gastrooesophageal reflux disease",
    ]
)


@pytest.mark.parametrize(
    ("disease", "value", "method"),
    [
        ("headache", "HEADACHE", "case"),
        ("Diabetes Mellitus, Type 2", "TYPE 2 DIABETES MELLITUS", "inversion"),
        ("Hypertension, Pulmonary", "PULMONARY HYPERTENSION", "inversion"),
        ("Arthritis, Rheumatoid", "RHEUMATOID ARTHRITIS", "inversion"),
        ("Leukemia, Myeloid, Acute", "ACUTE MYELOID LEUKAEMIA", "spelling"),
        ("HIV Infections", "HIV INFECTION", "spelling"),
        ("Crohn Disease", "CROHN'S DISEASE", "spelling"),
        ("Edema, Peripheral", "OEDEMA PERIPHERAL", "word_order"),
        ("Colitis, Ulcerative", "COLITIS ULCERATIVE", "word_order"),
        ("Gastroesophageal Reflux", "GASTROESOPHAGEAL REFLUX", "unmatched"),
    ],
)
def test_each_tier_matches_its_examples(disease: str, value: str, method: str) -> None:
    mapping, _ = match_terms(pl.Series([disease]), VOCABULARY)
    assert mapping.rows() == [(disease, value, method)]


def test_report_counts_distinct_names_and_keeps_the_unmatched() -> None:
    diseases = pl.Series(
        ["Headache", "HEADACHE", "Hypertension, Pulmonary", "Zebra fever", "zebra Fever", None, " "]
    )
    mapping, report = match_terms(diseases, VOCABULARY)
    assert mapping.height == 5  # distinct spellings, blanks ignored
    assert report.n_diseases == 3 and report.n_matched == 2 and report.share == pytest.approx(2 / 3)
    assert dict(report.by_method) == {
        "case": 1,
        "inversion": 1,
        "spelling": 0,
        "word_order": 0,
        "unmatched": 1,
    }
    assert [m for m, _ in report.by_method] == list(MATCH_METHODS)
    assert report.unmatched == ("Zebra fever",)
    assert "matched 2 of 3" in report.summary() and "1 unmatched kept" in report.summary()
    assert report.to_dict()["by_method"] == dict(report.by_method)
    _, empty = match_terms(pl.Series([], dtype=pl.Utf8), VOCABULARY)
    assert empty.n_diseases == 0 and empty.share == 1.0


def test_match_table_merges_names_of_one_term_by_summing_weights() -> None:
    table = pl.DataFrame(
        {
            "drug_key": ["A", "A", "A", "B"],
            "disease": ["Crohn Disease", "Crohn's disease", "Zebra fever", "Headache"],
            "weight": [0.5, 0.7, 0.2, 1.0],
        }
    )
    matched, report = match_table(table, VOCABULARY)
    assert matched.rows() == [
        ("A", "CROHN'S DISEASE", 1.0),
        ("A", "ZEBRA FEVER", 0.2),
        ("B", "HEADACHE", 1.0),
    ]
    assert (report.n_diseases, report.n_matched) == (
        4,
        3,
    )  # "Crohn Disease" and "Crohn's disease" are two names


def test_public_table_matches_part_of_a_faers_vocabulary(shared_data: Path) -> None:
    table = load_table(shared_data / "knowledge/labeledin/indications.tsv")
    matched, report = match_table(table, VOCABULARY)
    assert 0 < report.n_matched < report.n_diseases
    assert matched.filter(pl.col("disease") == "RHEUMATOID ARTHRITIS").height > 0  # "Arthritis, Rheumatoid"
    assert matched["weight"].max() <= 1.0  # type: ignore[operator]


def test_vocabulary_of_cases_is_the_canonical_union() -> None:
    cases = pl.DataFrame(
        {"caseid": [1, 2], "indications": [["Pain", None], []], "reactions": [["pain ", "Rash"], None]},
        schema_overrides={"indications": pl.List(pl.Utf8)},
    )
    assert vocabulary_of_cases(cases).to_list() == ["PAIN", "RASH"]
