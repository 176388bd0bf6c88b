"""Finding FAERS files in zips and folders, their quarters, and reading them as UTF-8."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from faers_anon.errors import InputError
from faers_anon.io.sources import discover, materialize, quarter_of

NAMES = [
    ("DEMO23Q1.txt", ("demo", "2023Q1")),
    ("demo12q4.txt", ("demo", "2012Q4")),
    ("DEMO04Q1.TXT", ("demo", "2004Q1")),
    ("DEMO18Q1_new.txt", ("demo", "2018Q1")),
    ("THER26Q2.txt", ("ther", "2026Q2")),
    ("DELETE22Q4.txt", ("deleted", "2022Q4")),
    ("ADR19Q1DeletedCases.txt", ("deleted", "2019Q1")),
    ("21Q1DeletedCases.txt", ("deleted", "2021Q1")),
    ("AllDeletedCases.txt", ("deleted", None)),
    ("DEMO22Q4.pdf", None),
    ("STAT04Q1.TXT", None),
    ("ADR22Q1.xml", None),
    ("DEMO23Q5.txt", None),
]


@pytest.mark.parametrize(("name", "expected"), NAMES)
def test_quarter_of(name: str, expected: tuple[str, str | None] | None) -> None:
    assert quarter_of(name) == expected


def test_fda_zip_with_ascii_and_deleted_folders(faers_samples: Path, tmp_path: Path) -> None:
    path = faers_samples / "faersquarterlydata" / "original" / "ascii_files" / "faers_ascii_2022Q4.zip"
    found = discover([path])
    assert [(f.table, f.quarter, f.member) for f in found] == [
        ("demo", "2022Q4", "ASCII/DEMO22Q4.txt"),
        ("drug", "2022Q4", "ASCII/DRUG22Q4.txt"),
        ("reac", "2022Q4", "ASCII/REAC22Q4.txt"),
        ("indi", "2022Q4", "ASCII/INDI22Q4.txt"),
        ("outc", "2022Q4", "ASCII/OUTC22Q4.txt"),
        ("ther", "2022Q4", "ASCII/THER22Q4.txt"),
        ("rpsr", "2022Q4", "ASCII/RPSR22Q4.txt"),
        ("deleted", "2022Q4", "Deleted/DELETE22Q4.txt"),
    ]
    local = materialize(found[0], tmp_path)
    inside = zipfile.ZipFile(path).read("ASCII/DEMO22Q4.txt")
    assert local.path.read_bytes() == inside and local.encoding == "utf-8"


def test_folder_of_several_quarters_in_time_order(faers_samples: Path) -> None:
    found = discover([faers_samples / "yunuuuu-faers" / "ascii"])
    assert sorted({f.quarter or "" for f in found}) == ["2004Q1", "2017Q2"]
    assert [f.quarter for f in found] == sorted(f.quarter or "" for f in found)
    assert all(f.member is None for f in found)


def test_folder_holding_only_zips_reads_the_zips(faers_samples: Path) -> None:
    found = discover([faers_samples / "extractFAERS" / "original"])
    assert sorted({f.quarter or "" for f in found}) == ["2015Q1", "2015Q2", "2015Q3", "2015Q4"]
    assert {f.member for f in found if f.quarter == "2015Q4"} >= {"ascii2/DEMO15Q4.txt"}


def test_all_deleted_cases_takes_the_quarter_of_its_zip(tmp_path: Path) -> None:
    path = tmp_path / "faers_ascii_2019q1.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("deleted/AllDeletedCases.txt", "1\n2\n")
    assert [(f.table, f.quarter) for f in discover([path])] == [("deleted", "2019Q1")]


def test_missing_path_corrupt_zip_and_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file or folder"):
        discover([tmp_path / "nowhere.zip"])
    bad = tmp_path / "faers_ascii_2023q1.zip"
    bad.write_bytes(b"PK\x03\x04 this is not a zip")
    with pytest.raises(InputError, match="not a readable zip file"):
        discover([bad])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="no FAERS files found"):
        discover([empty])


def test_single_byte_file_is_decoded_whole_as_cp1252(tmp_path: Path) -> None:
    path = tmp_path / "DRUG19Q3.txt"
    path.write_bytes(b"primaryid$caseid$drugname\n1$1$CAF\xc9INE\n2$2$O\x92NEIL\n")
    local = materialize(discover([path])[0], tmp_path)
    assert (local.encoding, local.invalid_bytes) == ("cp1252", False)
    assert local.path.read_text(encoding="utf-8").splitlines()[1:] == ["1$1$CAFÉINE", "2$2$O’NEIL"]


def test_byte_undefined_in_cp1252_makes_the_file_latin1(tmp_path: Path) -> None:
    path = tmp_path / "DRUG19Q3.txt"
    path.write_bytes(b"primaryid$caseid$drugname\n1$1$CAF\xc9INE\x81\n")
    local = materialize(discover([path])[0], tmp_path)
    assert (local.encoding, local.invalid_bytes) == ("latin-1", False)
    assert local.path.read_text(encoding="utf-8").splitlines()[1] == "1$1$CAFÉINE\x81"


def test_utf8_file_with_invalid_bytes_is_not_decoded_as_latin1(tmp_path: Path) -> None:
    path = tmp_path / "DRUG19Q3.txt"
    path.write_bytes("primaryid$caseid$drugname\n1$1$CAFÉINE\n".encode() + b"2$2$CAF\xc9INE\n")
    local = materialize(discover([path])[0], tmp_path / "work")
    assert (local.path, local.encoding, local.invalid_bytes) == (path, "utf-8", True)


def test_utf8_file_is_read_in_place(tmp_path: Path) -> None:
    path = tmp_path / "DRUG19Q3.txt"
    path.write_text("primaryid$caseid$drugname\n1$1$CAFÉINE\n", encoding="utf-8")
    local = materialize(discover([path])[0], tmp_path / "work")
    assert local.path == path and local.encoding == "utf-8"


def test_corrupt_member_data_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "faers_ascii_2023q1.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("ASCII/DEMO23Q1.txt", "primaryid$caseid\n" + "1001$100\n" * 5000)
    data = bytearray(path.read_bytes())
    start = data.find(b"DEMO23Q1.txt") + 40  # inside the compressed data of the member
    data[start : start + 50] = bytes(50)
    path.write_bytes(bytes(data))
    found = discover([path])  # the central directory is intact
    with pytest.raises(InputError, match=r"^faers_ascii_2023q1.zip:ASCII/DEMO23Q1.txt: cannot extract"):
        materialize(found[0], tmp_path)


def test_one_high_byte_anywhere_makes_a_file_not_ascii(tmp_path: Path) -> None:
    # The ASCII check reads the largest byte of the whole (mapped) file: the last byte counts, and
    # an empty file is ASCII (cannot be mapped, so it is answered before).
    body = b"primaryid$caseid$drugname\n" + b"1$1$ASPIRIN\n" * 100_000
    for tail, ascii_only in ((b"", True), (b"2$2$X\x80", False), (b"2$2$X\x7f", True)):
        path = tmp_path / "DRUG19Q3.txt"
        path.write_bytes(body + tail)
        local = materialize(discover([path])[0], tmp_path)
        assert (local.path == path) is ascii_only  # a non-ASCII file is transcoded to a copy
    empty = tmp_path / "DRUG19Q4.txt"
    empty.write_bytes(b"")
    assert materialize(discover([empty])[0], tmp_path).encoding == "utf-8"
