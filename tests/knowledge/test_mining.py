"""Mining E from INDI ⋈ DRUG on a hand-built table whose counts are worked out below."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from knowledge import KnowledgeError
from knowledge.mining import MiningConfig, default_table, mine_from_indications

# (primaryid, caseid, drug_seq, role_cod, drug_key, indi_pt or None)
_ROWS: list[tuple[int, int, int, str, str, str | None]] = [
    *[(100 + c, c, 1, "PS", "A", "Pain" if c % 2 else "pain") for c in range(1, 7)],  # A: 6 x PAIN
    (201, 1, 1, "PS", "A", "Pain"),  # a second version of case 1: still one case
    *[(100 + c, c, 1, "PS", "A", "Fever") for c in (7, 8)],  # A: 2 x FEVER
    (109, 9, 1, "PS", "A", "product used for unknown indication"),  # filler only: not counted at all
    (110, 10, 1, "PS", "A", "Headache"),
    *[(100 + c, c, 1, "PS", "B", "Hypertension") for c in range(11, 15)],
    *[(100 + c, c, 1, "PS", "B", "Pain") for c in range(15, 18)],
    (118, 18, 1, "PS", "B", "Hypertension"),
    (118, 18, 1, "PS", "B", "Pain"),
    (119, 19, 1, "PS", "D", "Drug use for unknown indication"),
    (120, 20, 1, "C", "A", "Pain"),  # concomitant: not counted by default
    *[(100 + c, c, 1, "SS", "C", "Pain") for c in range(21, 41)],
    *[(100 + c, c, 1, "SS", "C", "Headache") for c in (21, 22, 23)],
    (121, 21, 2, "C", "E", "Diabetes mellitus"),  # INDI of drug_seq 2 belongs to E, not to C
    (141, 41, 1, "PS", "F", None),  # a suspect without INDI rows
]


def _tables() -> tuple[pl.DataFrame, pl.DataFrame]:
    frame = pl.DataFrame(
        _ROWS, schema=["primaryid", "caseid", "drug_seq", "role_cod", "drug_key", "indi_pt"], orient="row"
    )
    drug = frame.select("primaryid", "caseid", "drug_seq", "role_cod", "drug_key").unique()
    indi = frame.drop_nulls("indi_pt").select(
        "primaryid", "caseid", pl.col("drug_seq").alias("indi_drug_seq"), "indi_pt"
    )
    return drug, indi


def _rows(mined: pl.DataFrame) -> dict[tuple[str, str], tuple[int, float, float]]:
    return {(d, s): (n, c, lift) for d, s, _, n, c, lift in mined.iter_rows()}


def test_default_thresholds_keep_frequent_specific_pairs() -> None:
    # N = 37 cases (A: 1-8, 10; B: 11-18; C: 21-40); n(PAIN) = 30, n(HEADACHE) = 4, n(HYPERTENSION) = 5.
    mined = mine_from_indications(*_tables())
    assert mined.columns == ["drug_key", "disease", "weight", "cases", "confidence", "lift"]
    got = _rows(mined)
    assert set(got) == {("B", "HYPERTENSION"), ("C", "HEADACHE"), ("C", "PAIN")}
    assert got["B", "HYPERTENSION"] == (5, pytest.approx(5 / 8), pytest.approx((5 / 8) / (5 / 37)))
    assert got["C", "PAIN"] == (20, 1.0, pytest.approx(37 / 30))
    assert got["C", "HEADACHE"] == (3, pytest.approx(3 / 20), pytest.approx((3 / 20) / (4 / 37)))
    assert (mined["weight"] == mined["confidence"]).all()


def test_each_threshold_removes_what_it_should() -> None:
    everything = _rows(mine_from_indications(*_tables(), min_cases=1, min_confidence=0.0, min_lift=0.0))
    assert everything["A", "PAIN"][:2] == (6, pytest.approx(6 / 9))  # lift 0.82 < 1: dropped by default
    assert everything["A", "FEVER"][0] == 2  # fewer than 3 cases: dropped by default
    assert everything["B", "PAIN"][2] == pytest.approx(0.5 / (30 / 37))
    assert len(everything) == 7 and ("C", "DIABETES MELLITUS") not in everything
    assert not any(s.startswith("PRODUCT USED") or s.startswith("DRUG USE") for _, s in everything)
    strict = _rows(mine_from_indications(*_tables(), min_confidence=0.2))
    assert set(strict) == {("B", "HYPERTENSION"), ("C", "PAIN")}
    with_fever = _rows(mine_from_indications(*_tables(), min_cases=2))
    assert ("A", "FEVER") in with_fever and ("A", "HEADACHE") not in with_fever


def test_roles_choose_which_drugs_count() -> None:
    mined = _rows(mine_from_indications(*_tables(), roles=("ps", "SS", "C"), min_cases=1, min_lift=0.0))
    assert mined["A", "PAIN"][:2] == (7, pytest.approx(7 / 10))  # case 20's concomitant A now counts
    assert mined["E", "DIABETES MELLITUS"][:2] == (1, 1.0)  # joined on drug_seq 2, so E's, not C's
    assert ("C", "DIABETES MELLITUS") not in mined


def test_drug_keys_are_computed_when_absent() -> None:
    drug, indi = _tables()
    named = drug.with_columns(prod_ai=pl.lit(None, pl.Utf8), drugname=pl.col("drug_key") + " 5 MG").drop(
        "drug_key"
    )
    assert mine_from_indications(named, indi.lazy()).equals(mine_from_indications(drug, indi))


def test_default_table_reads_ingested_folders_and_counts_cases_once(tmp_path: Path) -> None:
    drug, indi = _tables()
    for quarter in ("q1", "q2"):
        (tmp_path / quarter).mkdir()
        drug.write_parquet(tmp_path / quarter / "drug.parquet")
        indi.write_parquet(tmp_path / quarter / "indi.parquet")
    pooled = default_table(tmp_path / "q1", extra_folders=[tmp_path / "q2"])
    assert pooled.equals(mine_from_indications(drug, indi))
    with pytest.raises(KnowledgeError, match=r"absent/drug.parquet: file not found"):
        default_table(tmp_path / "absent")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_cases": 0}, "min_cases must be an integer >= 1; got 0"),
        ({"min_confidence": 1.5}, r"min_confidence must be in \[0, 1\]; got 1.5"),
        ({"min_lift": -1.0}, "min_lift must be >= 0; got -1.0"),
        ({"roles": ()}, "roles must be a non-empty subset"),
        ({"roles": ("PS", "X")}, "roles must be a non-empty subset of PS, SS, C, I"),
    ],
)
def test_bad_thresholds_are_knowledge_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(KnowledgeError, match=message):
        MiningConfig(**kwargs)  # type: ignore[arg-type]


def test_missing_columns_name_the_table() -> None:
    drug, indi = _tables()
    with pytest.raises(KnowledgeError, match=r"indi: missing columns \['indi_drug_seq'\]"):
        mine_from_indications(drug, indi.drop("indi_drug_seq"))
    with pytest.raises(KnowledgeError, match=r"drug: missing columns \['prod_ai', 'drugname'\]"):
        mine_from_indications(drug.drop("drug_key"), indi)
