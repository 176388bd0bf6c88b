"""Loading, validating and writing the knowledge table E (SPEC §5, §10)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from knowledge import (
    E_SCHEMA,
    KnowledgeError,
    combine_tables,
    load_drug_names,
    load_table,
    validate_table,
    with_combinations,
    write_table,
)

LABELEDIN = Path("knowledge/labeledin/indications.tsv")
PHARMACOTHERAPYDB = Path("knowledge/pharmacotherapydb/indications.tsv")
UNII = Path("drug_names/fda_unii_names_bn_of/unii_names_bn_of.tsv")


def _write(tmp_path: Path, text: str, name: str = "e.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_labeledin_loads_with_mesh_names_and_default_weights(shared_data: Path) -> None:
    table = load_table(shared_data / LABELEDIN)
    assert table.schema == pl.Schema(E_SCHEMA)
    sucralfate = table.filter(pl.col("drug_key") == "SUCRALFATE")
    assert "Duodenal Ulcer" in sucralfate["disease"].to_list()
    assert sucralfate["weight"].to_list() == pytest.approx([1 / sucralfate.height] * sucralfate.height)
    assert table.filter(pl.col("disease") == "").height == 0  # rows without a MeSH name are skipped
    sums = table.group_by("drug_key").agg(pl.col("weight").sum())["weight"]
    assert sums.min() == pytest.approx(1.0) and sums.max() == pytest.approx(1.0)


def test_pharmacotherapydb_drops_non_indications(shared_data: Path) -> None:
    raw = pl.read_csv(shared_data / PHARMACOTHERAPYDB, separator="\t")
    table = load_table(shared_data / PHARMACOTHERAPYDB)
    not_pairs = raw.filter(pl.col("category") == "NOT").select(
        pl.col("drug").str.to_uppercase().alias("drug_key"), "disease"
    )
    assert not_pairs.height > 0
    assert table.join(not_pairs, on=["drug_key", "disease"], how="semi").height == 0
    assert (
        table.filter(
            (pl.col("drug_key") == "DONEPEZIL") & (pl.col("disease") == "Alzheimer's disease")
        ).height
        == 1
    )


def test_brand_names_and_ingredients_meet_through_the_lookup(shared_data: Path, tmp_path: Path) -> None:
    lookup = load_drug_names(shared_data / UNII)
    path = _write(tmp_path, "drug,disease\nAVANDIA,Type 2 diabetes mellitus\nROSIGLITAZONE MALEATE,Oedema\n")
    table = load_table(path, lookup=lookup)
    assert table.rows() == [
        ("ROSIGLITAZONE", "Oedema", 0.5),
        ("ROSIGLITAZONE", "Type 2 diabetes mellitus", 0.5),
    ]


def test_separator_and_columns_are_sniffed_and_can_be_named(tmp_path: Path) -> None:
    semicolon = _write(tmp_path, "Drug;Indication;Weight\nAspirin;Headache;0.7\nAspirin;HEADACHE;0.9\n")
    assert load_table(semicolon).rows() == [("ASPIRIN", "Headache", 0.9)]  # one pair up to case: max
    custom = _write(tmp_path, "a\tb\tc\nx\tFlu\t1\n", "e.tsv")
    assert load_table(custom, drug_col="a", disease_col="b", weight_col="c").rows() == [("X", "Flu", 1.0)]
    unweighted = _write(tmp_path, "drug,disease\nA,Flu\nA,Fever\nA,flu\nB,Flu\n", "u.csv")
    assert load_table(unweighted).rows() == [("A", "Fever", 0.5), ("A", "Flu", 0.5), ("B", "Flu", 1.0)]


@pytest.mark.parametrize(
    ("text", "kwargs", "message"),
    [
        ("medicine,disease\nA,Flu\n", {}, r"e.csv:1: no drug column in header \['medicine', 'disease'\]"),
        ("drug,illness\nA,Flu\n", {}, r"e.csv:1: no disease column"),
        ("drug,disease\nA,Flu\n", {"weight_col": "w8"}, r"e.csv:1: weight_col: 'w8' not in header"),
        ("drug,disease\nA,Flu\n,Fever\n", {}, r"e.csv:3: drug: empty name \(expected a drug name\)"),
        ("drug,disease\nA,Flu\n(5 MG),Fever\n", {}, r"e.csv:3: drug: '\(5 MG\)' normalizes to nothing"),
        ("drug,disease\nA,Flu\nB,  \n", {}, r"e.csv:3: disease: empty name \(expected a disease name\)"),
        ("drug,disease,weight\nA,Flu,0.5\nB,Flu,high\n", {}, r"e.csv:3: weight: 'high' is not a number"),
        ("drug,disease,weight\nA,Flu,0\n", {}, r"e.csv:2: weight: 0.0 is outside \(0, 1\]"),
        ("drug,disease,weight\nA,Flu,1\nB,Flu,1.01\n", {}, r"e.csv:3: weight: 1.01 is outside \(0, 1\]"),
        ("", {}, r"e.csv:1: empty file"),
    ],
)
def test_bad_tables_name_file_line_and_field(
    tmp_path: Path, text: str, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(KnowledgeError, match=message):
        load_table(_write(tmp_path, text), **kwargs)


def test_missing_file_is_a_knowledge_error(tmp_path: Path) -> None:
    with pytest.raises(KnowledgeError, match="file not found"):
        load_table(tmp_path / "absent.csv")


def test_write_then_load_round_trips(tmp_path: Path) -> None:
    table = pl.DataFrame(
        {"drug_key": ["A\\B", "C"], "disease": ["Flu, severe", "Fever"], "weight": [0.25, 1.0]}
    )
    path = tmp_path / "knowledge.csv"
    write_table(table, path)
    assert load_table(path).sort("drug_key").rows() == table.sort("drug_key").rows()


def test_validate_table_rejects_frames_outside_the_contract() -> None:
    with pytest.raises(KnowledgeError, match=r"E: missing columns \['weight'\]"):
        validate_table(pl.DataFrame({"drug_key": ["A"], "disease": ["Flu"]}))
    with pytest.raises(KnowledgeError, match="E: row 1: disease: None is invalid"):
        validate_table(pl.DataFrame({"drug_key": ["A", "B"], "disease": ["Flu", None], "weight": [1.0, 1.0]}))


def test_combine_tables_keeps_the_strongest_belief() -> None:
    mined = pl.DataFrame({"drug_key": ["A", "A"], "disease": ["PAIN", "FEVER"], "weight": [0.3, 0.9]})
    loaded = pl.DataFrame({"drug_key": ["A", "B"], "disease": ["Pain", "Flu"], "weight": [0.5, 1.0]})
    assert combine_tables(mined, loaded).rows() == [
        ("A", "FEVER", 0.9),
        ("A", "PAIN", 0.5),
        ("B", "Flu", 1.0),
    ]
    with pytest.raises(KnowledgeError, match="E #2: missing columns"):
        combine_tables(mined, loaded.drop("weight"))
    with pytest.raises(KnowledgeError, match="no table given"):
        combine_tables()


def test_with_combinations_adds_rows_from_ingredients() -> None:
    table = pl.DataFrame(
        {
            "drug_key": ["A", "A", "B", "A\\B"],
            "disease": ["Pain", "Cough", "Pain", "Cough"],
            "weight": [0.5, 0.2, 0.8, 0.6],
        }
    )
    keys = pl.Series(["A\\B", "A\\B", "A\\C", "C\\D", "A", None])
    expanded = with_combinations(table, keys)
    assert expanded.filter(pl.col("drug_key").str.contains("\\", literal=True)).rows() == [
        ("A\\B", "Cough", 0.6),  # E's own row beats the ingredient's 0.2
        ("A\\B", "Pain", 0.8),  # max over ingredients A (0.5) and B (0.8)
        ("A\\C", "Cough", 0.2),
        ("A\\C", "Pain", 0.5),
    ]
    assert expanded.filter(~pl.col("drug_key").str.contains("\\", literal=True)).equals(
        validate_table(table)
        .filter(~pl.col("drug_key").str.contains("\\", literal=True))
        .sort("drug_key", "disease")
    )
