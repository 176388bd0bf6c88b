"""Ingest end to end: hand-built quarters with every kind of bad row, and real files of every era."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from faers_anon.errors import ConfigError, InputError
from faers_anon.io.ingest import IngestConfig, _report_status, ingest_quarters
from faers_anon.io.ingest_report import DELETED_STATUS, KEPT, QUARANTINED, STATUS
from faers_anon.io.rules import QUARTER_CODE
from knowledge.drug_names import drug_key_expr

DEMO_HEADER = "primaryid$caseid$caseversion$fda_dt$age$age_cod$sex$wt$wt_cod"


def _write(folder: Path, name: str, lines: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("\n".join(lines) + "\n")


def _accounted(report: dict[str, Any]) -> None:
    for name, table in report["tables"].items():
        assert table["read"] == table["kept"] + table["quarantined"] + table["deleted"], name
        for f in table["files"]:
            assert f["read"] == f["kept"] + f["quarantined"] + f["deleted"], f["source_file"]


@pytest.fixture
def bad_quarter(tmp_path: Path) -> Path:
    folder = tmp_path / "q"
    _write(folder, "DEMO23Q1.txt", [
        DEMO_HEADER,
        "1001$100$1$20230105$42$YR$F$70$KG",  # 2 kept
        "1002$100$2$20230301$43$YR$M$$",  # 3 kept: version 2 of case 100
        "2001$200$1$20230101$30$YRS$UNK$$",  # 4 kept; age_cod unknown → age null, counted; sex UNK
        "X3001$300$1$20230101$$$$$",  # 5 primaryid not a number
        "4001$$1$20230101$$$$$",  # 6 caseid missing
        "1001$100$1$20230105$42$YR$F$70$KG",  # 7 duplicate primaryid in the quarter
        "5001$500$1$20230101$$$$$$extra",  # 8 one field too many
        "6001$600$1$20230101$$$$$",  # 9 case on the DELETE list
        "7001$700$1$20230101$150$YR$F$900$KG",  # 10 kept; age and weight implausible
        "8001$800",  # 11 short row (2 of 9 fields): quarantined
    ])  # fmt: skip
    _write(folder, "DRUG23Q1.txt", [
        "primaryid$caseid$drug_seq$role_cod$drugname$prod_ai",
        "1001$100$1$PS$ASPIRIN (100 MG)$",  # 2 kept
        "1002$100$1$PS$Tylenol$ACETAMINOPHEN",  # 3 kept
        "6001$600$1$PS$X$",  # 4 deleted with its case
        "9999$999$1$PS$Y$",  # 5 no such report
        "2001$201$1$PS$Z$",  # 6 caseid differs from its report's
        "3001$300$1$PS$W$",  # 7 its report was quarantined
        "abc$100$1$PS$V$",  # 8 primaryid not a number
    ])  # fmt: skip
    _write(folder, "REAC23Q1.txt", ["primaryid$caseid$pt", "1001$100$Headache", "1002$100$HEADACHE ",
                                    "2001$200$Nausea"])  # fmt: skip
    _write(folder, "DELETE23Q1.txt", [" ", "600"])
    return folder


def test_quarantine_and_deletion_accounting(bad_quarter: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    report = ingest_quarters([bad_quarter], out).report
    _accounted(report)
    reports, drug = report["tables"]["reports"], report["tables"]["drug"]
    assert (reports["read"], reports["kept"], reports["quarantined"], reports["deleted"]) == (10, 4, 5, 1)
    assert reports["reasons"] == {
        "caseid_present": 1,
        "enough_fields": 1,
        "no_extra_fields": 1,
        "primaryid_present": 1,
        "primaryid_unique": 1,
    }
    assert reports["files"][0]["short_rows"] == 1
    nulled = reports["values_nulled"]
    assert (nulled["age_cod_known"], nulled["age_plausible"], nulled["weight_plausible"]) == (1, 1, 1)
    assert report["normalization"] == {
        "age_unit_unknown": 1, "age_implausible": 1, "weight_unit_unknown": 0, "weight_implausible": 1,
        "sex_codes_missing": {"UNK": 1}, "age_years_missing": 2, "weight_kg_missing": 3, "sex_missing": 1,
    }  # fmt: skip
    assert (drug["read"], drug["kept"], drug["quarantined"], drug["deleted"]) == (7, 2, 4, 1)
    assert drug["reasons"] == {"caseid_matches_report": 1, "primaryid_present": 1, "report_known": 2}
    assert report["tables"]["deleted"]["read"] == 1
    assert {(m["quarter"], m["table"]) for m in report["missing_tables"]} == {
        ("2023Q1", t) for t in ("indi", "outc", "ther", "rpsr")
    }
    assert json.loads((out / "ingest_report.json").read_text()) == json.loads(json.dumps(report, default=str))

    rejects = pl.read_parquet(out / "rejects" / "reports.parquet").sort("line")
    assert rejects.select("line", "reason").rows() == [
        (5, "primaryid_present"), (6, "caseid_present"), (7, "primaryid_unique"), (8, "no_extra_fields"),
        (9, "caseid_deleted"), (11, "enough_fields"),
    ]  # fmt: skip
    assert rejects.filter(pl.col("line") == 8).get_column("extra_fields").item() == "extra"
    assert rejects.filter(pl.col("line") == 5).get_column("primaryid").item() == "X3001"
    assert rejects.filter(pl.col("line") == 5).get_column("age").item() is None  # empty raw text is null

    kept = pl.read_parquet(out / "reports.parquet").sort("line")
    assert kept.get_column("primaryid").to_list() == [1001, 1002, 2001, 7001]
    assert kept.get_column("age_years").to_list() == [42.0, 43.0, None, None]
    assert kept.get_column("weight_kg").to_list() == [70.0, None, None, None]
    assert kept.get_column("is_latest").to_list() == [False, True, True, True]
    assert kept.get_column("fda_dt").to_list()[:2] == [dt.date(2023, 1, 5), dt.date(2023, 3, 1)]
    assert kept.get_column("caseversion").dtype == pl.Int64 and kept.get_column("line").dtype == pl.Int64

    drug_rows = pl.read_parquet(out / "drug.parquet").sort("line")
    assert drug_rows.select("primaryid", "drug_key").rows() == [(1001, "ASPIRIN"), (1002, "ACETAMINOPHEN")]
    assert drug_rows.get_column("prod_ai").to_list() == [None, "ACETAMINOPHEN"]  # an empty field is missing
    assert kept.get_column("wt_cod").to_list() == ["KG", None, None, "KG"]
    deleted = pl.read_parquet(out / "deleted.parquet")
    assert deleted.select("caseid", "quarter", "line").rows() == [(600, "2023Q1", 2)]

    case = pl.read_parquet(out / "cases.parquet").filter(pl.col("caseid") == 100).row(0, named=True)
    assert case["primaryids"] == [1001, 1002] and case["latest_primaryid"] == 1002
    assert (case["sex"], case["age_min"], case["age_max"], case["wt_min"]) == ("*", 42.0, 43.0, 70.0)
    assert case["reactions"] == ["HEADACHE"] and case["drug_keys"] == ["ACETAMINOPHEN", "ASPIRIN"]


def test_versions_across_quarters_and_a_report_repeated_in_a_later_quarter(tmp_path: Path) -> None:
    q1, q2 = tmp_path / "q1", tmp_path / "q2"
    _write(q1, "DEMO23Q1.txt", [DEMO_HEADER, "1001$100$1$20230105$$$F$$", "1002$100$2$20230301$$$F$$"])
    _write(q1, "REAC23Q1.txt", ["primaryid$caseid$pt", "1001$100$Rash", "1002$100$Fever"])
    _write(q2, "DEMO23Q2.txt", [DEMO_HEADER, "1002$100$2$20230301$$$F$$", "1003$100$3$20230402$50$YR$$$"])
    _write(q2, "REAC23Q2.txt", ["primaryid$caseid$pt", "1002$100$Fever", "1003$100$Cough"])
    out = tmp_path / "out"
    report = ingest_quarters([q2, q1], out).report
    _accounted(report)
    assert report["quarters"] == ["2023Q1", "2023Q2"]
    assert report["tables"]["reports"]["reasons"] == {"primaryid_latest_quarter": 1}
    assert report["tables"]["reac"]["reasons"] == {"report_known": 1}
    reports = pl.read_parquet(out / "reports.parquet")
    assert sorted(reports.select("quarter", "primaryid").rows()) == [
        ("2023Q1", 1001), ("2023Q2", 1002), ("2023Q2", 1003)
    ]  # fmt: skip
    assert reports.filter(pl.col("is_latest")).get_column("primaryid").to_list() == [1003]
    case = pl.read_parquet(out / "cases.parquet").row(0, named=True)
    assert (case["caseid"], case["n_reports"], case["latest_primaryid"]) == (100, 3, 1003)
    assert case["primaryids"] == [1001, 1002, 1003] and case["caseversions"] == [1, 2, 3]
    assert case["reactions"] == ["COUGH", "FEVER", "RASH"]
    assert (case["sex"], case["age_min"], case["age_max"]) == ("F", 50.0, 50.0)


def test_missing_demo_is_an_input_error_and_leaves_no_output(tmp_path: Path) -> None:
    folder = tmp_path / "q"
    _write(folder, "DRUG23Q1.txt", ["primaryid$caseid$drug_seq", "1$1$1"])
    with pytest.raises(
        InputError, match=r"^2023Q1: DEMO file missing \(expected DEMO23Q1.txt beside DRUG23Q1.txt\)"
    ):
        ingest_quarters([folder], tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q"]


def test_output_folder_that_is_not_an_ingest_is_refused(bad_quarter: Path, tmp_path: Path) -> None:
    out = tmp_path / "precious"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(InputError, match="exists and is not an ingest folder"):
        ingest_quarters([bad_quarter], out)
    assert (out / "notes.txt").read_text() == "keep me"
    again = tmp_path / "out"
    ingest_quarters([bad_quarter], again)
    ingest_quarters([bad_quarter], again)  # a previous ingest is replaced
    assert (again / "ingest_report.json").is_file()


def test_legacy_zip_and_modern_folder_together(faers_samples: Path, tmp_path: Path) -> None:
    source = faers_samples / "yunuuuu-faers"
    report = ingest_quarters([source / "original" / "aers_ascii_2004q1.zip", source / "ascii" / "17Q2"],
                             tmp_path / "out").report  # fmt: skip
    _accounted(report)
    expected = {"reports": 200, "drug": 714, "reac": 702, "indi": 356, "outc": 168, "ther": 287, "rpsr": 121}
    assert {t: report["tables"][t]["kept"] for t in expected} == expected
    legacy = report["tables"]["reports"]["files"][0]
    assert legacy["source_file"] == "DEMO04Q1.TXT" and "v23" in legacy["ignored_columns"]
    drug = pl.read_parquet(tmp_path / "out" / "drug.parquet")
    assert drug.get_column("caseid").null_count() == 0  # legacy child rows took the caseid of their ISR
    first = drug.filter(pl.col("primaryid") == 4263742).sort("line").row(0, named=True)
    assert (first["caseid"], first["drug_seq"], first["drugname"]) == (4061110, 1004492716, "TAVOR")
    ther = pl.read_parquet(tmp_path / "out" / "ther.parquet")
    assert ther.get_column("dsg_drug_seq").null_count() == 0 and ther.get_column("start_dt").dtype == pl.Date


def test_2012q4_variant(faers_samples: Path, tmp_path: Path) -> None:
    report = ingest_quarters([faers_samples / "ubesp-faers.db" / "ascii" / "12Q4"], tmp_path / "out").report
    _accounted(report)
    reports = pl.read_parquet(tmp_path / "out" / "reports.parquet")
    first = reports.filter(pl.col("primaryid") == 35676563).row(0, named=True)
    assert (first["sex"], first["age_years"], first["rept_dt"]) == ("M", 86.0, dt.date(2012, 11, 12))
    assert reports.get_column("rept_dt").null_count() == 0  # header " rept_dt" was recognised
    drug = pl.read_parquet(tmp_path / "out" / "drug.parquet")  # BOM header, lot_nbr
    assert drug.filter(pl.col("primaryid") == 34483284).get_column("nda_num").to_list()[0] == "020972"
    assert "lot_num" in drug.columns and drug.height == 10
    assert pl.read_parquet(tmp_path / "out" / "outc.parquet").get_column("outc_cod").null_count() == 0


def test_fda_zip_with_deleted_folder(faers_samples: Path, tmp_path: Path) -> None:
    path = faers_samples / "faersquarterlydata" / "original" / "ascii_files" / "faers_ascii_2022Q4.zip"
    report = ingest_quarters([path], tmp_path / "out").report
    _accounted(report)
    assert report["tables"]["deleted"]["kept"] == 3624
    assert report["tables"]["reports"]["kept"] == 258
    outc = report["tables"]["outc"]  # an independent row subset: most OUTC rows have no DEMO row here
    assert outc["quarantined"] == outc["reasons"]["report_known"] > 0
    assert pl.read_parquet(tmp_path / "out" / "rejects" / "outc.parquet").height == outc["quarantined"]


def test_crlf_quarter_with_pandas_float_artefacts(faers_samples: Path, tmp_path: Path) -> None:
    report = ingest_quarters([faers_samples / "nico8270-2025q4" / "ascii"], tmp_path / "out").report
    _accounted(report)
    assert all(t["quarantined"] == 0 for t in report["tables"].values())
    reports = pl.read_parquet(tmp_path / "out" / "reports.parquet")
    row = reports.filter(pl.col("primaryid") == 1100310642).row(0, named=True)
    got = (row["event_dt"], row["age"], row["age_years"], row["caseversion"])
    assert got == (dt.date(2014, 12, 26), 61.0, 61.0, 42)
    drug = pl.read_parquet(tmp_path / "out" / "drug.parquet")
    expected = drug.select(drug_key_expr(pl.col("prod_ai"), pl.col("drugname"))).to_series()
    assert drug.get_column("drug_key").equals(expected, check_names=False)
    assert report["tables"]["deleted"]["kept"] == 4497


def test_versions_match_the_index_of_multi_version_cases(faers_samples: Path, tmp_path: Path) -> None:
    index = pl.read_csv(
        faers_samples / "_index" / "multi_version_cases.txt", separator="$", infer_schema=False
    )
    index = index.filter(pl.col("source") == "extractFAERS")
    ingest_quarters([faers_samples / "extractFAERS" / "ascii"], tmp_path / "out")
    cases = pl.read_parquet(tmp_path / "out" / "cases.parquet")
    expected: dict[int, tuple[set[int], int]] = {}
    for caseid, rows in index.group_by("caseid"):
        versions = rows.select("primaryid", "caseversion", "fda_dt", "quarter").rows()
        latest = max(versions, key=lambda v: (int(v[1]), v[2], v[3], int(v[0])))
        expected[int(str(caseid[0]))] = ({int(v[0]) for v in versions}, int(latest[0]))
    got = cases.filter(pl.col("caseid").is_in(list(expected)))
    assert got.height == len(expected)
    assert sum(len(primaryids) > 1 for primaryids, _ in expected.values()) == 42  # PROVENANCE.md §2
    for caseid, primaryids, latest in got.select("caseid", "primaryids", "latest_primaryid").rows():
        assert (set(primaryids), latest) == expected[caseid]


def test_drug_names_lookup_is_applied(bad_quarter: Path, tmp_path: Path) -> None:
    lookup = tmp_path / "names.tsv"
    lookup.write_text("name\tsubstance\nASPIRIN\tACETYLSALICYLIC ACID\n")
    ingest_quarters([bad_quarter], tmp_path / "out", config=IngestConfig(drug_names=lookup))
    keys = pl.read_parquet(tmp_path / "out" / "drug.parquet").sort("line").get_column("drug_key").to_list()
    assert keys == ["ACETYLSALICYLIC ACID", "ACETAMINOPHEN"]


def test_bundled_demo_quarter(tmp_path: Path) -> None:
    report = ingest_quarters([], tmp_path / "out", config=IngestConfig(demo=True)).report
    _accounted(report)
    assert report["quarters"] == ["2025Q1"] and report["tables"]["reports"]["kept"] > 0
    assert report["tables"]["reports"]["reasons"] == {
        "no_extra_fields": 1,
        "primaryid_present": 1,
        "primaryid_unique": 1,
    }


def test_no_source_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no sources given"):
        ingest_quarters([], tmp_path / "out")


def test_a_file_named_twice_is_read_once(bad_quarter: Path, tmp_path: Path) -> None:
    report = ingest_quarters([bad_quarter, bad_quarter / "DEMO23Q1.txt"], tmp_path / "out").report
    assert report["tables"]["reports"]["read"] == 10 and len(report["tables"]["reports"]["files"]) == 1


def test_header_only_tables_count_zero_rows(tmp_path: Path) -> None:
    folder = tmp_path / "q"
    _write(folder, "DEMO23Q1.txt", [DEMO_HEADER])
    _write(folder, "REAC23Q1.txt", ["primaryid$caseid$pt"])
    report = ingest_quarters([folder], tmp_path / "out").report
    _accounted(report)
    assert report["tables"]["reports"]["files"][0]["read"] == 0 and report["cases"]["cases"] == 0
    assert pl.read_parquet(tmp_path / "out" / "cases.parquet").height == 0


def test_missing_drug_names_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^drug_names: .*none.tsv: no such file"):
        IngestConfig(drug_names=tmp_path / "none.tsv")


def test_the_cyclic_gc_is_paused_during_ingest_and_restored_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    from faers_anon.io import ingest as ingest_module
    from faers_anon.io.workspace import paused_gc

    seen: list[bool] = []
    original = ingest_module._ingest

    def spy(*args: Any, **kwargs: Any) -> dict[str, Any]:
        seen.append(gc.isenabled())
        return original(*args, **kwargs)

    monkeypatch.setattr(ingest_module, "_ingest", spy)
    assert gc.isenabled()
    ingest_quarters([], tmp_path / "out", config=IngestConfig(demo=True))
    assert seen == [False]
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError), paused_gc():
        assert not gc.isenabled()
        _ = 1 / 0
    assert gc.isenabled()  # restored after an exception too
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()  # a disabled collector stays disabled
    finally:
        gc.enable()


def test_cases_are_merged_while_drug_is_still_being_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case merge needs only DEMO's versions and the value lists, given before each table's
    Parquet: DRUG's writing waits (up to 20 s) for cases.parquet to be started, which happens only
    if the merge does not wait for DRUG's whole task."""
    import threading

    from faers_anon.io import ingest as ingest_module

    merging = threading.Event()
    waited: list[bool] = []
    write_split, cases = ingest_module.write_split, ingest_module._cases

    def drug_waits(frame: pl.DataFrame, table: str, *args: Any, **kwargs: Any) -> Any:
        if table == "drug":
            waited.append(merging.wait(timeout=20))
        return write_split(frame, table, *args, **kwargs)

    def merge(*args: Any) -> dict[str, int]:
        merging.set()
        return cases(*args)

    monkeypatch.setattr(ingest_module, "write_split", drug_waits)
    monkeypatch.setattr(ingest_module, "_cases", merge)
    report = ingest_quarters([], tmp_path / "out", config=IngestConfig(demo=True)).report
    assert waited == [True]
    assert report["cases"]["cases"] == pl.read_parquet(tmp_path / "out" / "cases.parquet").height > 0
    assert report["tables"]["drug"]["kept"] == pl.read_parquet(tmp_path / "out" / "drug.parquet").height > 0


def test_a_table_failing_before_its_value_lists_fails_the_ingest_instead_of_hanging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from faers_anon.io import ingest as ingest_module

    annotated = ingest_module.annotated_children

    def broken(table: str, *args: Any, **kwargs: Any) -> pl.DataFrame:
        if table == "reac":
            raise RuntimeError("reac broke")
        return annotated(table, *args, **kwargs)

    monkeypatch.setattr(ingest_module, "annotated_children", broken)
    with pytest.raises(RuntimeError, match="^reac broke$"):
        ingest_quarters([], tmp_path / "out", config=IngestConfig(demo=True))
    assert not (tmp_path / "out").exists()


def test_report_status_keeps_one_row_per_key_kept_first_then_in_file_order() -> None:
    rows = pl.DataFrame(
        {
            "primaryid": [5, 3, 3, 7, 7, 9, 3, None, 1],
            "caseid": [50, 30, 31, 70, 71, 90, 32, 99, 10],
            STATUS: [
                KEPT,
                DELETED_STATUS,
                KEPT,
                DELETED_STATUS,
                DELETED_STATUS,
                QUARANTINED,
                KEPT,
                KEPT,
                KEPT,
            ],
            QUARTER_CODE: [0] * 9,
        },
        schema_overrides={QUARTER_CODE: pl.UInt32},
    )
    status = _report_status(rows, 1)
    # 3: kept rows before the deleted one, the first kept in file order (31); 7: both deleted, the
    # first (70); 9: quarantined, no report; no primaryid: no key
    assert status.rows() == [(1, 10, True), (3, 31, True), (5, 50, True), (7, 70, False)]
    assert status.columns == ["_report_key", "_report_caseid", "_report_kept"]
