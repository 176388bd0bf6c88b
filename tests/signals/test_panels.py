"""Reference panels: the bundled MedWatch Table 5, drug/event matching, the reference-pair loader."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from signals import (
    DEFAULT_PRIOR,
    CaseTables,
    SignalConfig,
    SignalsError,
    load_reference_pairs,
    medwatch_panel,
    panel_table,
)


def test_bundled_panel_is_table_5() -> None:
    panel = medwatch_panel()
    assert panel.select("drug", "event", "condition").rows() == [
        ("AVANDIA", "Myocardial infarction", "age>=18"),
        ("AVANDIA", "Death", "age>=18"),
        ("AVANDIA", "Cerebrovascular accident", "age>=18"),
        ("TYSABRI", "Progressive multifocal leukoencephalopathy", "age>=18"),
        ("ZELNORM", "Cerebrovascular accident", "sex=F"),
        ("WARFARIN", "Myocardial infarction", "age>=60"),
        ("REVATIO", "Death", "age<18"),
    ]
    assert panel.get_column("drug_keys").to_list()[5] == ["WARFARIN", "COUMADIN", "JANTOVEN"]


def _warfarin_tables(drug_keys: list[str]) -> CaseTables:
    """Six cases aged 70; case i takes drug_keys[i] (or nothing); cases 0-2 report MI."""
    n = 6
    cases = pl.DataFrame({"caseid": range(n), "age_years": [70.0] * n, "sex": ["F"] * n})
    drugs = pl.DataFrame({"caseid": range(len(drug_keys)), "drug_key": drug_keys, "role_cod": "PS"})
    events = pl.DataFrame({"caseid": [0, 1, 2, 3, 4, 5], "pt": ["MYOCARDIAL INFARCTION"] * 3 + ["Rash"] * 3})
    return CaseTables(cases, drugs, events)


def _warfarin_row(tables: CaseTables) -> dict:
    rows = panel_table(tables, medwatch_panel()).filter(pl.col("drug") == "WARFARIN")
    assert rows.height == 1
    return rows.row(0, named=True)


def test_drug_matches_a_key_or_the_key_and_more_words() -> None:
    # WARFARIN SODIUM and COUMADIN match; WARFARINE, a combination and ASPIRIN do not
    row = _warfarin_row(
        _warfarin_tables(["WARFARIN SODIUM", "WARFARINE", "COUMADIN", "ASPIRIN\\WARFARIN", "ASPIRIN"])
    )
    assert (row["a"], row["b"], row["c"], row["d"]) == (2, 0, 1, 3)  # a: cases 0, 2; c: 1; d: 3, 4, 5
    assert row["reading"] == "exact"


def test_rule_without_cases_is_reported_with_a_defined_value() -> None:
    row = _warfarin_row(_warfarin_tables(["ASPIRIN"]))
    assert (row["a"], row["b"], row["c"], row["d"]) == (0, 0, 3, 3)
    # a = 0: PRR 0, its upper bound that of the corrected table (0.5/1) / (3.5/7) = 1 widened
    assert row["zero_cell"] and (row["prr"], row["prr_lo"]) == (0.0, 0.0) and row["prr_hi"] > 1.0
    assert not row["signal_evans"]


def test_release_panel_has_three_readings() -> None:
    raw = _warfarin_tables(["WARFARIN", "WARFARIN"])
    release = CaseTables(
        raw.cases.drop("age_years").with_columns(age_min=pl.lit(45.0), age_max=pl.lit(None, pl.Float64)),
        raw.drugs,
        raw.events,
    )
    rows = panel_table(release, medwatch_panel(), config=SignalConfig()).filter(pl.col("drug") == "WARFARIN")
    assert rows.get_column("reading").to_list() == ["certain", "possible", "expected"]
    # [45, 120) lies 60/75 = 0.8 above 60: expected cells are 0.8 x (2, 0, 1, 3)
    assert rows.select("a", "b", "c", "d").rows() == [
        (0, 0, 0, 0),
        (2, 0, 1, 3),
        pytest.approx((1.6, 0, 0.8, 2.4)),
    ]


def test_unconditioned_rule_on_a_release_gets_its_adjusted_ror() -> None:
    # a reference pair without condition is read exact on released ranges (stratum all); its
    # Mantel-Haenszel bands are read expected (this raised "reading 'exact' does not apply")
    raw = _warfarin_tables(["WARFARIN", "WARFARIN"])
    release = CaseTables(
        raw.cases.drop("age_years").with_columns(age_min=pl.lit(45.0), age_max=pl.lit(None, pl.Float64)),
        raw.drugs,
        raw.events,
    )
    rule = medwatch_panel().filter(pl.col("drug") == "WARFARIN").with_columns(condition=pl.lit(None, pl.Utf8))
    config = SignalConfig(stratify=("sex",), measures="all")
    row = panel_table(release, rule, config=config, prior=DEFAULT_PRIOR).row(0, named=True)
    assert (row["reading"], row["a"], row["b"], row["c"], row["d"]) == ("exact", 2, 0, 1, 3)
    # all six cases are F: one stratum, b = 0, so MH is the corrected ROR 2.5 * 3.5 / (0.5 * 1.5)
    assert row["ror_mh_corrected"] and row["ror_mh"] == pytest.approx(2.5 * 3.5 / (0.5 * 1.5))


def test_reference_pairs_from_the_shared_data(shared_data: Path) -> None:
    folder = shared_data / "reference_signals"
    plain = load_reference_pairs(folder / "reference_pairs.csv")
    assert plain.height == 636
    assert plain.get_column("event_group").null_count() == 636
    lin = plain.filter(pl.col("condition").is_not_null())
    assert sorted(lin.get_column("condition").unique()) == ["age<18", "age>=18", "age>=60", "sex=F"]
    avandia = lin.filter(pl.col("drug") == "AVANDIA (rosiglitazone)").row(0, named=True)
    assert avandia["drug_keys"] == ["AVANDIA", "ROSIGLITAZONE"]
    grouped = load_reference_pairs(
        folder / "reference_pairs.csv", outcome_groups=folder / "outcome_pt_groups.csv"
    )
    liver = grouped.filter(pl.col("event_group") == "acute_liver_injury").row(0, named=True)
    assert "Hepatotoxicity" in liver["event_terms"] and len(liver["event_terms"]) > 5


def test_reference_file_faults(tmp_path: Path) -> None:
    with pytest.raises(SignalsError, match="reference file not found"):
        load_reference_pairs(tmp_path / "none.csv")
    bad = tmp_path / "pairs.csv"
    bad.write_text("drug,event\nx,y\n", encoding="utf-8")
    with pytest.raises(SignalsError, match="pairs.csv: missing column 'event_pt'"):
        load_reference_pairs(bad)
