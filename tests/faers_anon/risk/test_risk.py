"""faers-anon risk on hand-built releases whose figures are worked out by hand (SPEC §11).

Release A, ten cases (k = 5):
    G1 = cases 1-4: Adult [30, 40), F, [60, 70] kg       (a class of 4); case 1 has two versions
    G5 = case 5:    Aged [80, ∞), M, weight missing      (a unique case)
    G6 = cases 6-10: Middle aged [50, 60), M, missing    (a class of 5)
Drugs: cases 1-4 take D; case 5 none; 6 {A, B}, 7 {A, B, C}, 8 {A}, 9 {B}, 10 {A, C} (drugname spells
the key in lower case, so both columns give one item).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from faers_anon.cli import cli
from faers_anon.risk import RiskConfig, assess_risk, raw_cases
from faers_anon.risk._classes import class_sizes
from faers_anon.risk._codes import encode_fields
from faers_anon.risk._population import Population

QIDS = ["age_group", "age_min", "age_max", "sex", "wt_min", "wt_max"]
G1: tuple[object, ...] = ("Adult", 30.0, 40.0, "F", 60.0, 70.0)
G5: tuple[object, ...] = ("Aged", 80.0, None, "M", None, None)
G6: tuple[object, ...] = ("Middle Aged", 50.0, 60.0, "M", None, None)
DRUGS = {1: "D", 2: "D", 3: "D", 4: "D", 6: "AB", 7: "ABC", 8: "A", 9: "B", 10: "AC"}
JAN1, JAN15, FEB1 = dt.date(2025, 1, 1), dt.date(2025, 1, 15), dt.date(2025, 2, 1)


Row = tuple[int, int, int, dt.date, tuple[object, ...]]


def _demo(rows: list[Row]) -> pl.DataFrame:
    return pl.DataFrame(
        [(pid, cid, ver, fda, *q, "2025Q1", True) for pid, cid, ver, fda, q in rows],
        schema={"primaryid": pl.Int64, "caseid": pl.Int64, "caseversion": pl.Int64, "fda_dt": pl.Date,
                "age_group": pl.String, "age_min": pl.Float64, "age_max": pl.Float64, "sex": pl.String,
                "wt_min": pl.Float64, "wt_max": pl.Float64, "quarter": pl.String, "is_latest": pl.Boolean},
        orient="row",
    )  # fmt: skip


def _write(folder: Path, demo: pl.DataFrame, tables: dict[str, pl.DataFrame], thresholds: str) -> Path:
    (folder / "parquet").mkdir(parents=True)
    demo.write_parquet(folder / "parquet" / "demo.parquet")
    for name, frame in tables.items():
        frame.write_parquet(folder / "parquet" / f"{name}.parquet")
    (folder / "knowledge.csv").write_text("drug_key,disease,weight\nD,HYPERTENSION,1\n")
    (folder / "thresholds.csv").write_text(thresholds)
    return folder


def _rows(pairs: list[tuple[int, str]], column: str) -> pl.DataFrame:
    return pl.DataFrame(
        {"caseid": [c for c, _ in pairs], column: [v for _, v in pairs]},
        schema={"caseid": pl.Int64, column: pl.String},
    )


@pytest.fixture
def release_a(tmp_path: Path) -> Path:
    rows: list[Row] = [(101, 1, 1, JAN1, G1), (102, 1, 2, JAN15, G1)]
    rows += [(100 + c + 1, c, 1, JAN1, G1) for c in (2, 3, 4)] + [(106, 5, 1, FEB1, G5)]
    rows += [(100 + c + 1, c, 1, JAN1, G6) for c in range(6, 11)]
    drugs = [(c, d) for c, letters in DRUGS.items() for d in letters]
    drug = _rows(drugs, "drug_key").with_columns(pl.col("drug_key").str.to_lowercase().alias("drugname"))
    tables = {
        "drug": drug,
        "reac": _rows([(1, "HIV infection"), (6, "Nausea")], "pt"),
        "indi": _rows([(2, "Syphilis")], "indi_pt"),
        "outc": _rows([(5, "DE"), (6, "HO")], "outc_cod"),
    }
    return _write(tmp_path / "A", _demo(rows), tables, "value,theta\nHIV INFECTION,0.4\nSYPHILIS,0.4\n")


def _record(figures: dict[str, object], knows: list[str], items: object = None) -> dict[str, object]:
    rows = [r for r in figures["reidentification"] if r["knows"] == knows and r["items"] == items]  # type: ignore[attr-defined,index]
    assert len(rows) == 1
    return rows[0]  # type: ignore[no-any-return]


def test_qids_alone_a_unique_case_and_a_class_of_4(release_a: Path) -> None:
    figures = assess_risk(release_a, config=RiskConfig(k=5)).figures
    row = _record(figures, QIDS)
    # sizes 4,4,4,4 | 1 | 5,5,5,5,5 (case 1's two versions count once)
    assert row["cases"] == 10
    assert row["unique"] == pytest.approx(0.1)
    assert row["below_k"] == pytest.approx(0.5)
    assert row["prosecutor_max"] == 1.0
    assert row["prosecutor_mean"] == pytest.approx((4 * 0.25 + 1 + 5 * 0.2) / 10)


def test_a_field_uses_the_latest_version(release_a: Path) -> None:
    # case 1's latest version (2) was received on Jan 15: alone in G1 on fda_dt
    row = _record(assess_risk(release_a, config=RiskConfig(k=5)).figures, [*QIDS, "fda_dt"])
    # sizes: case 1 -> 1, cases 2-4 -> 3, case 5 -> 1, cases 6-10 -> 5
    assert row["unique"] == pytest.approx(0.2)
    assert row["below_k"] == pytest.approx(0.5)
    assert row["prosecutor_mean"] == pytest.approx((1 + 3 / 3 + 1 + 5 * 0.2) / 10)


def test_one_and_two_drug_combinations(release_a: Path) -> None:
    figures = assess_risk(release_a, config=RiskConfig(k=5)).figures
    one = _record(figures, QIDS, {"drugs": 1})
    # min over own drugs of holders in the group: 4,4,4,4 | 1 (no drug) | 6:3, 7:2, 8:4, 9:3, 10:2
    assert one["unique"] == pytest.approx(0.1) and one["below_k"] == pytest.approx(1.0)
    assert one["prosecutor_mean"] == pytest.approx((4 * 0.25 + 1 + 1 / 3 + 0.5 + 0.25 + 1 / 3 + 0.5) / 10)
    two = _record(figures, QIDS, {"drugs": 2})
    # pairs: 6 {A,B} -> {6,7}: 2; 7 {B,C} -> {7}: 1; 10 {A,C} -> {7,10}: 2; one-drug cases keep their item
    assert two["unique"] == pytest.approx(0.2)
    assert two["prosecutor_mean"] == pytest.approx((4 * 0.25 + 1 + 0.5 + 1 + 0.25 + 1 / 3 + 0.5) / 10)


def test_whole_drug_list_counts_supersets(release_a: Path) -> None:
    row = _record(assess_risk(release_a, config=RiskConfig(k=5)).figures, [], {"drugs": "all"})
    # {D}: 1-4 -> 4; case 5 (no drug): all 10; {A,B}: 6,7; {A,B,C}: 7; {A}: 6,7,8,10; {B}: 6,7,9; {A,C}: 7,10
    assert row["exact"] is True
    assert row["unique"] == pytest.approx(0.1)
    assert row["prosecutor_mean"] == pytest.approx((4 * 0.25 + 0.1 + 0.5 + 1 + 0.25 + 1 / 3 + 0.5) / 10)


def test_class_sizes_with_a_separate_population() -> None:
    targets = pl.DataFrame({"caseid": [1, 2], "kt": [0, 1]}, schema={"caseid": pl.Int64, "kt": pl.UInt32})
    members = pl.DataFrame(
        {"kt": [0, 0, 0, 1], "p": [10, 11, 12, 13]}, schema={"kt": pl.UInt32, "p": pl.Int64}
    )
    sizes, exact = class_sizes(targets, members)
    assert dict(sizes.iter_rows()) == {1: 3, 2: 1} and exact


def test_journalist_reads_a_released_star_as_any_value() -> None:
    view = pl.DataFrame({"caseid": [1, 2, 3], "sex": ["F"] * 3, "rept_cod": ["*", "EXP", "EXP"],
                         "occp_cod": ["health professional", "MD", "MD"]})  # fmt: skip
    raw = pl.DataFrame({"caseid": [1, 2, 3, 4, 5], "sex": ["F", "F", "F", "F", "M"],
                        "rept_cod": ["EXP", "EXP", "PER", "EXP", "EXP"], "occp_cod": ["MD"] * 5,
                        "age_years": [30.0] * 5, "weight_kg": [60.0] * 5})  # fmt: skip
    journalist = Population(view, raw, encode_fields(view, raw, ["sex", "rept_cod", "occp_cod"]))
    sizes = journalist.sizes(["sex", "rept_cod"])
    assert sizes is not None
    # case 1 released "*": every raw woman (4); cases 2, 3: the raw women reported as EXP (3)
    assert dict(sizes.sort("caseid").iter_rows()) == {1: 4, 2: 3, 3: 3}
    # an occupation class the raw field never holds cannot be matched value for value
    assert journalist.sizes(["sex", "occp_cod"]) is None


def test_pairs_skip_items_one_case_holds_with_the_same_sizes() -> None:
    targets = pl.DataFrame(
        {"caseid": [1, 2, 3], "kt": [0, 0, 0]}, schema={"caseid": pl.Int64, "kt": pl.UInt32}
    )
    items = pl.DataFrame({"caseid": [1, 1, 2, 2, 3, 3], "item": [7, 8, 8, 9, 8, 9]},
                         schema={"caseid": pl.Int64, "item": pl.UInt32})  # fmt: skip
    # case 1 alone holds item 7: class 1; cases 2 and 3 share the pair {8, 9}: class 2
    pruned, _ = class_sizes(targets, items=2, target_items=items)
    assert dict(pruned.sort("caseid").iter_rows()) == {1: 1, 2: 2, 3: 2}
    members = targets.select("kt", pl.col("caseid").alias("p"))
    full, _ = class_sizes(targets, members, items=2, target_items=items,
                          population_items=items.rename({"caseid": "p"}))  # fmt: skip
    assert full.sort("caseid").equals(pruned.sort("caseid"))


def test_a_demo_only_release_is_measured_on_its_fields(release_a: Path, tmp_path: Path) -> None:
    folder = tmp_path / "demo-only"
    (folder / "parquet").mkdir(parents=True)
    (release_a / "parquet" / "demo.parquet").rename(folder / "parquet" / "demo.parquet")
    figures = assess_risk(folder, config=RiskConfig(k=5)).figures
    # no drug list: knowing "1 drug" adds nothing to the QIDs (sizes 4,4,4,4 | 1 | 5 x 5)
    assert _record(figures, QIDS, {"drugs": 1})["prosecutor_mean"] == pytest.approx(0.3)
    assert figures["inference"]["outcomes"]["max_conf"] == 0.0


@pytest.fixture
def raw_a(tmp_path: Path) -> Path:
    """The raw quarter of release A: true ages and weights, FDA's ids, and case 11 the release lacks."""
    ids = [(101, 1, 1, JAN1), (102, 1, 2, JAN15), *[(100 + c + 1, c, 1, JAN1) for c in (2, 3, 4)]]
    ids += [(106, 5, 1, FEB1), *[(100 + c + 1, c, 1, JAN1) for c in range(6, 11)], (112, 11, 1, JAN1)]
    ages = [31.0, 31.0, 32.0, 33.0, 34.0, 85.0, 55.0, 55.0, 55.0, 55.0, 55.0, 35.0]
    weights = [65.0] * 5 + [None] * 6 + [66.0]
    sexes = ["F"] * 5 + ["M"] * 6 + ["F"]
    frame = pl.DataFrame(
        {"primaryid": [i[0] for i in ids], "caseid": [i[1] for i in ids], "caseversion": [i[2] for i in ids],
         "fda_dt": [i[3] for i in ids], "age_years": ages, "sex": sexes, "weight_kg": weights,
         "quarter": ["2025Q1"] * 12, "is_latest": [False] + [True] * 11},
        schema_overrides={"weight_kg": pl.Float64},
    )  # fmt: skip
    folder = tmp_path / "raw"
    folder.mkdir()
    frame.write_parquet(folder / "reports.parquet")
    # the raw drug lists: the released ones, and case 11 takes D
    drugs = [(c, d) for c, letters in {**DRUGS, 11: "D"}.items() for d in letters]
    drug = _rows(drugs, "drug_key").with_columns(pl.col("drug_key").str.to_lowercase().alias("drugname"))
    drug.write_parquet(folder / "drug.parquet")
    return folder


def test_linkage_a_relinkable_row_and_journalist_risk(release_a: Path, raw_a: Path) -> None:
    figures = assess_risk(release_a, config=RiskConfig(k=5, raw=raw_a)).figures
    link = figures["linkage"]
    # every released id equals a raw id here (no pseudonyms); by fields (caseversion, fda_dt, sex,
    # quarter): case 1's version 2 (Jan 15) and case 5 (Feb 1, M) are alone among the 12 raw rows
    assert link["by_ids"] == 1.0
    assert link["by_fields"] == pytest.approx(2 / 11)
    assert set(link["fields"]) == {"caseversion", "fda_dt", "sex", "quarter"}
    row = _record(figures, QIDS)
    # raw case 11 (35 years, F, 66 kg) falls in G1's ranges: 5 raw cases there; case 5 stays alone
    assert row["journalist_max"] == 1.0
    assert row["journalist_mean"] == pytest.approx((4 * 0.2 + 1 + 5 * 0.2) / 10)


def test_journalist_risk_with_one_and_two_known_drugs(release_a: Path, raw_a: Path) -> None:
    figures = assess_risk(release_a, config=RiskConfig(k=5, raw=raw_a)).figures
    one = _record(figures, QIDS, {"drugs": 1})
    # raw holders inside each released range: G1 {D}: cases 1-4 and 11 -> 5; case 5 (no drug): the raw
    # cases aged 80+, male, any weight -> 1; G6: A 6,7,8,10; B 6,7,9; C 7,10 -> 6:3, 7:2, 8:4, 9:3, 10:2
    assert one["journalist_max"] == 1.0
    assert one["journalist_mean"] == pytest.approx((4 * 0.2 + 1 + 1 / 3 + 0.5 + 0.25 + 1 / 3 + 0.5) / 10)
    two = _record(figures, QIDS, {"drugs": 2})
    # pairs: 6 {A,B} -> 6,7: 2; 7 {B,C} -> 7: 1; 10 {A,C} -> 7,10: 2; one-drug cases keep their item
    assert two["journalist_mean"] == pytest.approx((4 * 0.2 + 1 + 0.5 + 1 + 0.25 + 1 / 3 + 0.5) / 10)
    whole = _record(figures, [], {"drugs": "all"})
    # supersets among the 11 raw cases: {D}: 5; case 5 (no drug): all 11; {A,B}: 6,7; {A,B,C}: 7;
    # {A}: 6,7,8,10; {B}: 6,7,9; {A,C}: 7,10
    assert whole["journalist_mean"] == pytest.approx((4 * 0.2 + 1 / 11 + 0.5 + 1 + 0.25 + 1 / 3 + 0.5) / 10)


def test_whole_list_over_the_candidate_budget_is_bounded_on_both_sides(
    release_a: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("faers_anon.risk._classes.CANDIDATE_BUDGET", 0)
    row = _record(assess_risk(release_a, config=RiskConfig(k=5)).figures, [], {"drugs": "all"})
    assert row["exact"] is False
    # equal lists: {D} 4 x 4 | case 5 (none) 10 | {A,B}, {A,B,C}, {A}, {B}, {A,C} each alone: unique 0.5
    assert row["unique"] == pytest.approx(0.5)
    # holders of the rarest item: 4 x 4 | 10 | A,B -> B 3; A,B,C -> C 2; A 4; B 3; A,C -> C 2: none alone
    bounds: dict[str, float] = row["bounds"]  # type: ignore[assignment]
    assert bounds["unique"] == 0.0 and bounds["below_k"] == pytest.approx(0.9)  # all but case 5
    assert bounds["prosecutor_mean"] == pytest.approx(
        (4 * 0.25 + 0.1 + 1 / 3 + 0.5 + 0.25 + 1 / 3 + 0.5) / 10
    )
    # the exact figures (test_whole_drug_list_counts_supersets: unique 0.1) lie between
    assert bounds["unique"] <= 0.1 <= float(row["unique"])  # type: ignore[arg-type]


def test_inference_per_value_class_and_outcome(release_a: Path, tmp_path: Path) -> None:
    classes = tmp_path / "classes.csv"
    classes.write_text("value,class,theta\n*,stigma,0.3\nHIV infection,stigma,\nSyphilis,stigma,\n")
    inference = assess_risk(release_a, config=RiskConfig(k=5, theta=0.4, classes=classes)).figures[
        "inference"
    ]
    # one of G1's 4 cases has HIV, another syphilis: each value 0.25, the class 2/4
    assert inference["protected_values"]["max_conf"] == pytest.approx(0.25)
    assert inference["protected_values"]["groups_above_theta"] == 0
    assert inference["classes"] == {"max_conf": 0.5, "class": "stigma", "theta_there": 0.3,
                                    "pairs_above_theta": 1, "groups_above_theta": 1}  # fmt: skip
    # G1 all take D, which treats HYPERTENSION (not protected: θ 1)
    assert inference["values"]["max_conf"] == 1.0 and inference["values"]["pairs_above_theta"] == 0
    # case 5 alone in G5 died: conf(G5 -> DE) = 1 > θ 0.4; HO in G6 is 1/5
    assert inference["outcomes"]["max_conf"] == 1.0 and inference["outcomes"]["code"] == "DE"
    assert inference["outcomes"]["groups_above_theta"] == 1


@pytest.fixture
def release_b(tmp_path: Path) -> Path:
    """A second release: cases 1, 2 with new cases 20-22 (H1); 3, 4, 5 with 23, 24 (H2)."""
    h1: tuple[object, ...] = ("Adult", 19.0, 45.0, "*", 50.0, 80.0)
    h2: tuple[object, ...] = ("Adult", 19.0, 90.0, "*", None, None)
    rows: list[Row] = [(200 + c, c, 3, FEB1, h1) for c in (1, 2, 20, 21, 22)]
    rows += [(200 + c, c, 3, FEB1, h2) for c in (3, 4, 5, 23, 24)]
    return _write(tmp_path / "B", _demo(rows), {}, "value,theta\nHIV INFECTION,0.4\n")


def test_composition_intersects_group_member_sets(release_a: Path, release_b: Path) -> None:
    composition = assess_risk(release_a, config=RiskConfig(k=5, series=(release_b,))).figures["composition"]
    # in both: 1,2 -> G1 ∩ H1 = {1,2}; 3,4 -> {3,4}; 5 -> G5 ∩ H2 = {5}
    assert composition["cases"] == 15 and composition["cases_in_several"] == 5
    assert composition["below_k"] == 1.0 and composition["unique"] == pytest.approx(0.2)
    assert composition["below_k_all"] == pytest.approx(5 / 15)
    # HIV (case 1) over {1,2}: 0.5 > 0.4, though 0.25 in A's G1 alone
    assert composition["max_conf"] == 0.5 and composition["max_conf_value"] == "HIV INFECTION"
    assert composition["intersections_above_theta"] == 1


def test_cli_writes_risk_json(release_a: Path, tmp_path: Path) -> None:
    out = tmp_path / "risk.json"
    result = CliRunner().invoke(cli, ["risk", str(release_a), "-o", str(out), "--k", "5",
                                      "--knows", "sex,age_min", "--knows-items", "drugs:1"])  # fmt: skip
    assert result.exit_code == 0, result.output
    records = json.loads(out.read_text())["reidentification"]
    assert [(r["knows"], r["items"]) for r in records] == [(["sex", "age_min"], {"drugs": 1})]
    assert "below k" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--knows", "age,nonsense"], "Error: --knows: age, nonsense not in the released case view"),
        (["--knows-items", "drugs:3"], "Error: --knows-items: expected drugs:M or reactions:M"),
    ],
)
def test_cli_mistakes_are_one_error_line(
    release_a: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    result = CliRunner().invoke(cli, ["risk", str(release_a), "-o", str(tmp_path / "r.json"), *args])
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output


def test_cli_help() -> None:
    result = CliRunner().invoke(cli, ["risk", "--help"])
    assert result.exit_code == 0 and "--knows-items" in result.output and "Example:" in result.output


@pytest.mark.parametrize("columns", [("drug_key", "drugname"), ("drug_key",)])
def test_raw_side_read_first_gives_the_same_figures(
    release_a: Path, raw_a: Path, columns: tuple[str, ...]
) -> None:
    side = raw_cases(raw_a, drug_columns=columns)  # before the release exists: every DEMO field
    assert "age_years" in side.data.fields and "caseversion" in side.data.fields
    figures = assess_risk(release_a, config=RiskConfig(k=5, raw=raw_a), raw_side=side).figures
    # the drug columns the release publishes (both) are read again when the side holds others
    assert figures == assess_risk(release_a, config=RiskConfig(k=5, raw=raw_a)).figures
    one = _record(figures, QIDS, {"drugs": 1})  # test_journalist_risk_with_one_and_two_known_drugs
    assert one["journalist_mean"] == pytest.approx((4 * 0.2 + 1 + 1 / 3 + 0.5 + 0.25 + 1 / 3 + 0.5) / 10)
    assert figures["linkage"]["by_fields"] == pytest.approx(2 / 11)


def test_journalist_items_by_polars_when_words_do_not_fit(
    release_a: Path, raw_a: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    words = assess_risk(release_a, config=RiskConfig(k=5, raw=raw_a)).figures
    monkeypatch.setattr("faers_anon.risk._reidentify.covered_minima", lambda *_a, **_k: None)
    counted = assess_risk(release_a, config=RiskConfig(k=5, raw=raw_a)).figures
    assert counted == words
    two = _record(counted, QIDS, {"drugs": 2})  # test_journalist_risk_with_one_and_two_known_drugs
    assert two["journalist_mean"] == pytest.approx((4 * 0.2 + 1 + 0.5 + 1 + 0.25 + 1 / 3 + 0.5) / 10)


def test_share_linked_counts_rows_equal_to_exactly_one_raw_row_missing_equal_to_missing() -> None:
    from faers_anon.risk._linkage import _share_linked

    released = pl.DataFrame({"a": ["A", "B", "C"], "b": ["x", None, "z"]})
    # (A, x) twice in raw: no link; (B, missing) once: linked; (C, z): no raw row has both values
    raw = pl.DataFrame({"a": ["A", "A", "B", "C", "D"], "b": ["x", "x", None, "y", "z"]})
    assert _share_linked(released, raw, ["a", "b"]) == pytest.approx(1 / 3)
    assert _share_linked(released, raw, ["a"]) == pytest.approx(2 / 3)  # B and C are one raw row each
    assert _share_linked(released, raw.head(0), ["a", "b"]) == 0.0
