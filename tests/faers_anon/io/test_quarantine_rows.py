"""Quarantine checks every row against its header: field count, encoding, integer ids; rejects.csv."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.io.ingest import ingest_quarters

DEMO_HEADER = "primaryid$caseid$caseversion$i_f_code$fda_dt$age$age_cod$sex"  # 8 fields


def _write(folder: Path, name: str, data: bytes) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


def _lines(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def _rejects(out: Path, table: str = "reports") -> dict[int, str]:
    frame = pl.read_parquet(out / "rejects" / f"{table}.parquet")
    return dict(frame.select("line", "reason").iter_rows())


def _accounted(report: dict[str, Any]) -> int:
    """Every row read is kept, quarantined or deleted, per table and file; returns the rows rejected."""
    rejected = 0
    for name, table in report["tables"].items():
        assert table["read"] == table["kept"] + table["quarantined"] + table["deleted"], name
        for f in table["files"]:
            assert f["read"] == f["kept"] + f["quarantined"] + f["deleted"], f["source_file"]
        rejected += table["quarantined"] + table["deleted"]
    return rejected


def test_rows_with_fewer_or_more_fields_than_the_header_are_quarantined(tmp_path: Path) -> None:
    folder = tmp_path / "q"
    _write(folder, "DEMO23Q1.txt", _lines(
        DEMO_HEADER,
        "1001$100$1$I$20230105$42$YR$F",  # 2 kept: 8 fields
        "1$2$3",  # 3 quarantined: 3 of 8 fields (was padded and published)
        "1003$103$1$I$20230105$42$YR",  # 4 quarantined: 7 of 8 fields
        "1004$104$1$I$20230105$42$YR$F$",  # 5 kept: one empty trailing field (legacy's stray $)
        "1005$105$1$I$20230105$42$YR$F$X",  # 6 quarantined: a ninth field that holds a value
        "1006$106$1$I$20230105$42$YR$F$$",  # 7 quarantined: two fields too many, even if empty
        "1007$107$1$I$20230105$42$YR$",  # 8 kept: the last field (sex) empty, the line ends in $
    ))  # fmt: skip
    out = tmp_path / "out"
    report = ingest_quarters([folder], out).report
    _accounted(report)
    assert _rejects(out) == {
        3: "enough_fields",
        4: "enough_fields",
        6: "no_extra_fields",
        7: "no_extra_fields",
    }
    kept = pl.read_parquet(out / "reports.parquet").sort("line")
    assert kept.get_column("primaryid").to_list() == [1001, 1004, 1007]
    assert kept.get_column("sex").to_list() == ["F", "F", None]
    assert report["tables"]["reports"]["files"][0]["short_rows"] == 2


def test_legacy_rows_may_carry_one_stray_trailing_dollar(tmp_path: Path) -> None:
    folder = tmp_path / "q"
    _write(folder, "DEMO04Q1.TXT", _lines(
        "ISR$CASE$I_F_COD$FDA_DT",
        "5001$50$I$20040105$",  # kept: stray trailing $ (empty fifth field)
        "5002$51$I$20040105",  # kept: no trailing $
        "5003$52$I",  # quarantined: 3 of 4 fields
    ))  # fmt: skip
    out = tmp_path / "out"
    ingest_quarters([folder], out)
    assert _rejects(out) == {4: "enough_fields"}
    assert pl.read_parquet(out / "reports.parquet").get_column("primaryid").to_list() == [5001, 5002]


def test_ids_that_are_not_integers_are_quarantined(tmp_path: Path) -> None:
    folder = tmp_path / "q"
    _write(folder, "DEMO23Q1.txt", _lines(
        DEMO_HEADER,
        "12a$100$1$I$20230105$42$YR$F",  # 2 primaryid not an integer
        "1002$1.5$1$I$20230105$42$YR$F",  # 3 caseid not an integer
        "1003$-4$1$I$20230105$42$YR$F",  # 4 caseid not positive
        "1004.0$104$1$I$20230105$42$YR$F",  # 5 kept: pandas' float artefact of 1004
        "1005$105$1$I$20230105$42$YR$F",  # 6 kept
    ))  # fmt: skip
    _write(folder, "REAC23Q1.txt", _lines("primaryid$caseid$pt", "1005$x5$Rash", "1005$105$Fever"))
    out = tmp_path / "out"
    report = ingest_quarters([folder], out).report
    _accounted(report)
    assert _rejects(out) == {2: "primaryid_present", 3: "caseid_present", 4: "caseid_present"}
    assert pl.read_parquet(out / "reports.parquet").get_column("primaryid").to_list() == [1004, 1005]
    assert _rejects(out, "reac") == {2: "caseid_readable"}


def test_invalid_bytes_in_a_utf8_file_quarantine_their_line_naming_the_encoding(tmp_path: Path) -> None:
    folder = tmp_path / "q"
    data = _lines(DEMO_HEADER, "1001$100$1$I$20230105$42$YR$F", "1002$101$1$Fé$20230105$42$YR$F")
    _write(folder, "DEMO23Q1.txt", data + b"1003$102$1$F\xe9$20230105$42$YR$F\n")  # Latin-1 byte
    out = tmp_path / "out"
    report = ingest_quarters([folder], out).report
    _accounted(report)
    assert _rejects(out) == {4: "valid_encoding"}
    kept = pl.read_parquet(out / "reports.parquet").sort("line")
    assert kept.get_column("i_f_code").to_list() == ["I", "Fé"]  # valid UTF-8 stays as it is
    entry = report["tables"]["reports"]["files"][0]
    assert (entry["encoding"], entry["invalid_bytes"]) == ("utf-8", True)
    assert report["warnings"] == [
        "DEMO23Q1.txt: invalid UTF-8 byte sequences; the lines holding them are quarantined (valid_encoding)"
    ]
    listing = pl.read_csv(out / "rejects" / "rejects.csv")
    assert listing.row(0) == (
        "DEMO23Q1.txt",
        4,
        "DEMO",
        "invalid byte sequence for UTF-8, the file's encoding",
        "valid_encoding",
    )


def test_a_single_byte_file_is_decoded_whole_and_said_so(tmp_path: Path) -> None:
    folder = tmp_path / "q"
    data = _lines(DEMO_HEADER, "1001$100$1$I$20230105$42$YR$F")
    _write(folder, "DEMO23Q1.txt", data + b"1003$102$1$F\xe9$20230105$42$YR$F\n")
    out = tmp_path / "out"
    report = ingest_quarters([folder], out).report
    assert report["tables"]["reports"]["quarantined"] == 0
    kept = pl.read_parquet(out / "reports.parquet").sort("line")
    assert kept.get_column("i_f_code").to_list() == ["I", "Fé"]  # decoded, not mixed: the file is cp1252
    assert report["tables"]["reports"]["files"][0]["encoding"] == "cp1252"
    assert report["warnings"] == ["DEMO23Q1.txt: not UTF-8; decoded as cp1252 (the whole file)"]
    assert "Warning: DEMO23Q1.txt: not UTF-8; decoded as cp1252" in ingest_quarters([folder], out).summary()


def test_children_of_a_quarantined_report_are_orphans_and_every_row_is_listed(tmp_path: Path) -> None:
    folder = tmp_path / "q"
    _write(folder, "DEMO23Q1.txt", _lines(
        DEMO_HEADER,
        "1001$100$1$I$20230105$87$YR$F",  # kept
        "1002$101$1$I$20230105$93$YR",  # quarantined (7 fields): its DRUG and REAC rows are orphans
        "1003$103$1$I$20230105$61$YR$M",  # deleted
    ))  # fmt: skip
    _write(folder, "DRUG23Q1.txt", _lines(
        "primaryid$caseid$drug_seq$role_cod$drugname",
        "1001$100$1$PS$ASPIRIN", "1002$101$1$PS$SECRETDRUG", "1003$103$1$PS$OTHER",
    ))  # fmt: skip
    _write(folder, "REAC23Q1.txt", _lines("primaryid$caseid$pt", "1002$101$Rash$extra"))
    _write(folder, "DELETE23Q1.txt", _lines("103"))
    out = tmp_path / "out"
    report = ingest_quarters([folder], out).report
    rejected = _accounted(report)
    assert _rejects(out, "drug") == {3: "report_known", 4: "caseid_deleted"}
    assert _rejects(out, "reac") == {2: "no_extra_fields"}
    listing = pl.read_csv(out / "rejects" / "rejects.csv")
    assert listing.columns == ["file", "line", "table", "reason", "rules"]
    assert listing.height == rejected == 5
    assert listing.rows() == [
        ("DEMO23Q1.txt", 3, "DEMO", "fewer fields than the header", "enough_fields"),
        ("DEMO23Q1.txt", 4, "DEMO", "case on a DELETE list (removed, not quarantined)", "caseid_deleted"),
        ("DRUG23Q1.txt", 3, "DRUG",
         "no kept DEMO report with this primaryid in the quarter (absent or quarantined)", "report_known"),
        ("DRUG23Q1.txt", 4, "DRUG", "case on a DELETE list (removed, not quarantined)", "caseid_deleted"),
        ("REAC23Q1.txt", 2, "REAC",
         "more fields than the header (an embedded $ or two records on one line)", "no_extra_fields"),
    ]  # fmt: skip
    text = (out / "rejects" / "rejects.csv").read_text()
    assert "93" not in text and "SECRETDRUG" not in text  # no field of a rejected row


def _malformed_demo(faers_samples: Path, folder: Path) -> None:
    """The real 2024Q1 DEMO (200 reports) with three lines added: ``1$2$3``, a report whose i_f_code
    holds a Latin-1 byte, and a good report spelling ``Société`` in UTF-8 (so the file is UTF-8)."""
    real = (faers_samples / "stutterk1d-2024q1" / "ascii" / "24Q1" / "DEMO24Q1.txt").read_bytes()
    fields = real.splitlines()[1].split(b"$")
    latin = [b"990000001", b"99000001", b"1", b"F\xe9", *fields[4:10], b"SECRET-MFR-123", *fields[11:]]
    good = [b"990000002", b"99000002", *fields[2:11], "Société".encode(), *fields[12:]]
    lines = [b"1$2$3", b"$".join(latin), b"$".join(good)]
    _write(folder, "DEMO24Q1.txt", real.rstrip(b"\r\n") + b"\n" + b"\n".join(lines) + b"\n")


def test_malformed_rows_never_reach_the_release(faers_samples: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from faers_anon.cli import cli

    source, out = tmp_path / "q", tmp_path / "release"
    _malformed_demo(faers_samples, source)
    args = ["release", str(source), "-o", str(out), "--k", "5", "--theta", "0.4"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    counts = json.loads((out / "report.json").read_text())["counts"]
    assert (counts["reports_read"], counts["reports_out"], counts["reports_quarantined"]) == (203, 201, 2)
    released = pl.read_parquet(out / "parquet" / "demo.parquet")
    assert released.height == 201
    assert released.get_column("i_f_code").unique().to_list() == ["F"]  # no "Fé", no "F\ufffd"
    # the good UTF-8 report is kept (rejects name only lines 202, 203); mfr_sndr is now released as its
    # group's common value (issue 18's column policy), so its text is checked for garbling only
    assert not released.get_column("mfr_sndr").str.contains("\ufffd").any()
    listing = pl.read_csv(out / "rejects" / "rejects.csv")
    assert listing.select("file", "line", "table", "rules").rows() == [
        ("DEMO24Q1.txt", 202, "DEMO", "enough_fields"), ("DEMO24Q1.txt", 203, "DEMO", "valid_encoding")
    ]  # fmt: skip
    public = pl.read_parquet(out / "rejects" / "reports.parquet")
    assert set(public.columns) <= {"quarter", "source_file", "line", "reason"}
    for path in (out / "rejects").iterdir():
        assert b"SECRET-MFR-123" not in path.read_bytes(), path.name  # no raw row content is public
