"""Reading one FAERS file as raw text: headers of every era, widths, line numbers, DELETE lists."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from faers_anon.errors import InputError
from faers_anon.io.faers_ascii import EXTRA_FIELDS, SHORT_ROW, scan_deleted, scan_table
from faers_anon.io.sources import LocalFile, SourceFile


def _local(path: Path, table: str = "demo", quarter: str = "2004Q1") -> LocalFile:
    source = SourceFile(table=table, quarter=quarter, name=path.name, origin=path, member=None)
    return LocalFile(source=source, path=path, encoding="utf-8")


def test_legacy_header_stray_dollar_short_and_overflow_rows(tmp_path: Path) -> None:
    # Legacy OUTC: header "ISR$OUTC_COD", data rows end with a stray "$" (one empty extra field).
    path = tmp_path / "OUTC04Q1.TXT"
    path.write_bytes(
        b"ISR$OUTC_COD\r\n"
        b"4263742$HO$\r\n"  # line 2: normal legacy row
        b"\r\n"  # line 3: blank, skipped
        b"4264028\r\n"  # line 4: short row, padded
        b"4264029$DE$X\r\n"  # line 5: one extra non-empty field
        b"4264030$LT$$\r\n"  # line 6: two extra fields
        b"4264031$OT\r\n"  # line 7: exact width
    )
    scanned = scan_table(_local(path, "outc"), "outc")
    frame = scanned.frame.collect()
    assert frame.get_column("line").to_list() == [2, 4, 5, 6, 7]
    assert frame.get_column("primaryid").to_list() == ["4263742", "4264028", "4264029", "4264030", "4264031"]
    assert frame.get_column("outc_cod").to_list() == ["HO", None, "DE", "LT", "OT"]
    assert frame.get_column(SHORT_ROW).to_list() == [False, True, False, False, False]
    assert frame.get_column(EXTRA_FIELDS).to_list() == [None, None, "X", "$", None]
    assert frame.get_column("caseid").null_count() == 5  # legacy child files have no caseid
    assert set(frame.get_column("quarter")) == {"2004Q1"} and set(frame.get_column("source_file")) == {
        path.name
    }


def test_2012q4_variant_bom_padded_names_and_renames(tmp_path: Path) -> None:
    path = tmp_path / "demo12q4.txt"
    path.write_text(
        "\ufeffprimaryid$caseid$caseversion$I_F_COD$gndr_cod$wt_cod$ rept_dt$FOLL_SEQ\n"
        "34483284$3448328$4$F$F$KG$20121128$x\n",
        encoding="utf-8",
    )
    scanned = scan_table(_local(path, quarter="2012Q4"), "demo")
    row = scanned.frame.collect().row(0, named=True)
    assert (row["i_f_code"], row["sex"], row["rept_dt"], row["caseversion"]) == ("F", "F", "20121128", "4")
    assert scanned.ignored_columns == ("foll_seq",)
    assert "prod_ai" not in scanned.missing_columns and "age_grp" in scanned.missing_columns


def test_legacy_isr_and_case_become_primaryid_and_caseid(tmp_path: Path) -> None:
    path = tmp_path / "INDI04Q1.TXT"
    path.write_text("ISR$DRUG_SEQ$INDI_PT\n4264028$1004493847$BREAST CANCER\n")
    frame = scan_table(_local(path, "indi"), "indi").frame.collect()
    assert frame.select("primaryid", "indi_drug_seq", "indi_pt").row(0) == (
        "4264028",
        "1004493847",
        "BREAST CANCER",
    )


def test_header_without_a_key_column_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "DEMO23Q1.txt"
    path.write_text("primaryid$caseversion\n1$1\n")
    with pytest.raises(InputError, match=r"^DEMO23Q1.txt:1: DEMO header lacks column 'caseid'"):
        scan_table(_local(path), "demo")


def test_empty_file_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "DRUG23Q1.txt"
    path.write_text("")
    with pytest.raises(InputError, match=r"^DRUG23Q1.txt:1: empty header line"):
        scan_table(_local(path, "drug"), "drug")


def test_delete_list_with_leading_blank_line(tmp_path: Path) -> None:
    path = tmp_path / "DELETE22Q4.txt"
    path.write_bytes(b" \r\n10088013\r\n11913421.0\r\nABC\r\n")
    frame = scan_deleted(_local(path, "deleted", "2022Q4")).collect()
    assert frame.get_column("line").to_list() == [2, 3, 4]
    assert frame.get_column("caseid").to_list() == [10088013, 11913421, None]
    assert frame.get_column("raw_caseid").to_list() == ["10088013", "11913421.0", "ABC"]


def test_real_legacy_files_read_at_full_width(faers_samples: Path) -> None:
    # Every 04Q1 data row but INDI ends with a stray "$"; none may fail the width rule.
    folder = faers_samples / "yunuuuu-faers" / "ascii" / "04Q1"
    for path in sorted(folder.glob("*.TXT")):
        table = path.name[:4].lower()
        frame = scan_table(_local(path, table), table).frame.collect()
        assert frame.height > 0
        assert frame.get_column(EXTRA_FIELDS).null_count() == frame.height, path.name
        assert not frame.get_column(SHORT_ROW).any(), path.name
        assert frame.get_column("line").to_list() == list(range(2, frame.height + 2))


def test_crlf_file_values_carry_no_carriage_return(faers_samples: Path) -> None:
    path = faers_samples / "nico8270-2025q4" / "ascii" / "25Q4" / "DEMO25Q4.txt"
    frame = scan_table(_local(path, quarter="2025Q4"), "demo").frame.collect()
    assert frame.height == 1000
    assert not frame.get_column("occr_country").drop_nulls().str.contains("\r").any()
    assert frame.select(pl.col(EXTRA_FIELDS).is_null().all()).item()
