"""Value classes and OUTC codes under θ (issue 18, SPEC §11), with hand-worked answers.

Two cases. Case 1: reaction BREAST CANCER (p 1), reaches LUNG CANCER through E (w 0.5), OUTC HO on
both of its reports. Case 2: reaches LUNG CANCER (0.5), reaction DEPRESSION (1), OUTC DE.
P(cancer | 1) = max(1, 0.5) = 1; P(cancer | 2) = 0.5; P(mental_health | 2) = 1; P(HO | 1) = 1.
One group {1, 2}: conf(cancer) = 1.5 / 2 = 0.75; conf(HO) = 1 / 2 = 0.5; conf(mental_health) = 0.5.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from faers_anon.anonymize.value_classes import (
    read_classes,
    release_files,
    sorted_by_case_value,
    with_class_thetas,
    with_classes_and_outcomes,
)
from faers_anon.errors import InputError
from faers_anon.verify.classes import class_violations, demo_field_violations

PROBABILITIES = pl.DataFrame(
    {"caseid": [1, 1, 2, 2], "value": ["BREAST CANCER", "LUNG CANCER", "DEPRESSION", "LUNG CANCER"],
     "p": [1.0, 0.5, 1.0, 0.5]}
)  # fmt: skip
OUTCOMES = pl.DataFrame({"caseid": [1, 1, 2], "outc_cod": ["HO", "ho ", "DE"]})
CLASS_FILE = (
    "# a comment\nvalue,class,theta\n*,cancer,0.3\nBreast  cancer,cancer,\nLUNG CANCER,cancer,\n"
    "DEPRESSION,mental_health,\n"
)


@pytest.fixture
def classes_path(tmp_path: Path) -> Path:
    path = tmp_path / "classes.csv"
    path.write_text(CLASS_FILE, encoding="utf-8")
    return path


def test_class_and_outcome_pseudo_values_take_the_max_and_one_per_code(classes_path: Path) -> None:
    classes = read_classes(classes_path)
    assert classes.thetas == {"cancer": 0.3}
    assert classes.members.rows() == [("BREAST CANCER", "cancer"), ("LUNG CANCER", "cancer"),
                                      ("DEPRESSION", "mental_health")]  # fmt: skip
    extended = with_classes_and_outcomes(PROBABILITIES, classes=classes, outcomes=OUTCOMES)
    pseudo = extended.filter(pl.col("value").str.contains(":")).rows()
    assert pseudo == [
        (1, "class:cancer", 1.0), (1, "outc:HO", 1.0),
        (2, "class:cancer", 0.5), (2, "class:mental_health", 1.0), (2, "outc:DE", 1.0),
    ]  # fmt: skip
    assert extended.height == PROBABILITIES.height + 5  # single values unchanged


def test_the_bundled_class_file_covers_the_five_classes() -> None:
    classes = read_classes(None)
    counts = dict(classes.members.group_by("class").len().iter_rows())
    assert set(counts) == {"cancer", "hiv", "mental_health", "pregnancy", "substance_use"}
    members = set(classes.members["value"])
    assert {"BREAST CANCER", "HIV INFECTION", "DEPRESSION", "EXPOSURE DURING PREGNANCY", "DRUG ABUSE"} <= (
        members
    )
    assert not {"RESPIRATORY DEPRESSION", "BONE MARROW DEPRESSION", "PHYSICAL ABUSE"} & members


@pytest.mark.parametrize(
    ("text", "message"),
    [("value\nX\n", "class: missing column"), ("value,class,theta\n*,c,1.5\n", r"theta 1.5")],
)
def test_a_bad_class_file_is_one_error_naming_it(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=f"bad.csv.*{message}"):
        read_classes(path)


def test_release_files_split_single_values_from_classes_and_outcomes(classes_path: Path) -> None:
    frame = pl.DataFrame(
        {"value": ["ALOPECIA", "class:cancer", "class:hiv", "outc:HO"], "theta": [0.4, 0.4, 0.4, 0.55],
         "share": [0.1, 0.2, 0.5, 0.5], "action": ["protected", "protected", "suppressed", "raised"]}
    )  # fmt: skip
    singles, files = release_files(frame, read_classes(classes_path))
    assert singles["value"].to_list() == ["ALOPECIA"]
    assert files["outcomes.csv"] == b"outc_cod,theta\nHO,0.55\n"
    lines = files["classes.csv"].decode().splitlines()
    assert lines[:2] == ["value,class,theta", "*,cancer,0.4"]  # hiv suppressed: no bound claimed
    assert "LUNG CANCER,cancer," in lines


def _release(tmp_path: Path, classes_theta: float, outcome_theta: float) -> Path:
    (tmp_path / "parquet").mkdir()
    pl.DataFrame({"caseid": [1, 2], "pt": ["BREAST CANCER", "DEPRESSION"]}).write_parquet(
        tmp_path / "parquet" / "reac.parquet"
    )
    drug = pl.DataFrame({"caseid": [1, 2], "drug_key": ["D", "D"]})
    drug.write_parquet(tmp_path / "parquet" / "drug.parquet")
    OUTCOMES.write_parquet(tmp_path / "parquet" / "outc.parquet")
    (tmp_path / "knowledge.csv").write_text("drug_key,disease,weight\nD,LUNG CANCER,0.5\n")
    (tmp_path / "classes.csv").write_text(CLASS_FILE.replace("0.3", str(classes_theta)))
    (tmp_path / "outcomes.csv").write_text(f"outc_cod,theta\nHO,{outcome_theta}\nDE,1\n")
    return tmp_path


def _read(release: Path):  # type: ignore[no-untyped-def]
    def read(table: str, columns: list[str], optional: tuple[str, ...] = ()) -> pl.LazyFrame:
        frame = pl.scan_parquet(release / "parquet" / f"{table}.parquet")
        present = frame.collect_schema().names()
        return frame.select([*columns, *(c for c in optional if c in present and c not in columns)])

    return read


@pytest.mark.parametrize(("theta_c", "theta_o", "expected"), [
    (0.3, 0.4, [(0, "class_theta", "conf(cancer) = 0.75 > theta 0.3"),
                (0, "outcome_theta", "conf(HO) = 0.5 > theta 0.4")]),
    (0.75, 0.5, []),  # at the bound: no violation
])  # fmt: skip
def test_the_verifier_recomputes_class_and_outcome_conf(
    tmp_path: Path, theta_c: float, theta_o: float, expected: list[tuple[int, str, str]]
) -> None:
    release = _release(tmp_path, theta_c, theta_o)
    members = pl.DataFrame({"caseid": [1, 2], "group": [0, 0]})
    found = class_violations(release, _read(release), members, tables=["reac"], tolerance=1e-9)
    assert found.rows() == expected


def test_the_verifier_counts_cases_sharing_every_released_demo_field() -> None:
    """Group 0 = cases 1-3 (k 3): case 3 publishes another fda_dt, so classes {1, 2} and {3} are < k."""
    demo = pl.DataFrame(
        {"primaryid": [11, 12, 21, 31], "caseid": [1, 1, 2, 3], "sex": ["F"] * 4,
         "fda_dt": ["2025Q1", "2025Q1", "2025Q1", "202502"], "is_latest": [False, True, True, True]}
    )  # fmt: skip
    members = pl.DataFrame({"caseid": [1, 2, 3], "group": [0, 0, 0]})
    found = demo_field_violations(demo, members, 3)
    detail = "2 case(s) share all 2 released DEMO fields of case 1 (k = 3)"
    assert found.rows() == [(0, "demo_fields", detail)]
    same = demo.with_columns(pl.lit("2025Q1").alias("fda_dt"))
    assert demo_field_violations(same, members, 3).height == 0


def test_a_class_files_theta_applies_when_feasible(tmp_path: Path) -> None:
    """cancer: file θ 0.3 ≥ share 0.2 → θ 0.3; hiv: file θ 0.3 < share 0.5 → rule θ kept with a reason."""
    path = tmp_path / "c.csv"
    path.write_text("value,class,theta\n*,cancer,0.3\n*,hiv,0.3\nX,cancer,\nY,hiv,\n", encoding="utf-8")
    frame = pl.DataFrame(
        {"value": ["ALOPECIA", "class:cancer", "class:hiv"], "theta": [0.4, 0.4, 0.6],
         "share": [0.1, 0.2, 0.5],
         "action": ["protected", "protected", "raised"], "reason": [None, None, "raised"]}
    )  # fmt: skip
    out = with_class_thetas(frame, read_classes(path))
    assert out.select("value", "theta", "action").rows() == [
        ("ALOPECIA", 0.4, "protected"), ("class:cancer", 0.3, "protected"), ("class:hiv", 0.6, "raised"),
    ]  # fmt: skip
    assert out["reason"][2] == "class file theta 0.3 below the share P(C): not met"


def _cv(rows: list[tuple[int | None, str | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        [(c, v, float(i)) for i, (c, v) in enumerate(rows)],
        schema={"caseid": pl.Int64, "value": pl.String, "p": pl.Float64},
        orient="row",
    )


def test_sorted_by_case_value_merges_or_sorts() -> None:
    """Merged: base in (caseid, value) order, every extra value after "B" ("class:x" > "B" bytewise);
    sorted: a base out of order, an extra value ("A") before a base one ("B"), a null value; each the
    rows of concat(base, extra) in (caseid, value) order, p carried along."""
    base = _cv([(1, "A"), (1, "B"), (2, "A")])
    extra = _cv([(2, "outc:HO"), (1, "class:x")])
    got = sorted_by_case_value(base, extra)
    assert got.rows() == [
        (1, "A", 0.0),
        (1, "B", 1.0),
        (1, "class:x", 1.0),
        (2, "A", 2.0),
        (2, "outc:HO", 0.0),
    ]
    assert sorted_by_case_value(_cv([(2, "A"), (1, "B")]), extra.head(0)).rows() == [
        (1, "B", 1.0),
        (2, "A", 0.0),
    ]
    assert sorted_by_case_value(_cv([(1, "B")]), _cv([(1, "A")])).rows() == [(1, "A", 0.0), (1, "B", 0.0)]
    assert sorted_by_case_value(_cv([(1, "B")]), _cv([(1, None)])).rows() == [(1, None, 0.0), (1, "B", 0.0)]
    assert sorted_by_case_value(base.head(0), extra).rows() == [(1, "class:x", 1.0), (2, "outc:HO", 0.0)]
