"""The compiled line splitter (faers_anon.io._split) reads a file as the polars path does, field for field."""

from __future__ import annotations

import json
import random
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from faers_anon.io import faers_ascii
from faers_anon.io.ingest import ingest_quarters
from faers_anon.io.sources import discover, materialize

HEADER = "primaryid$caseid$pt$drug_rec_act\r\n"  # REAC: 4 fields
LINES = [
    "1$10$Pyrexia$",  # 2: four fields, the last empty
    "2$20$Nausea",  # 3: short (3 fields)
    "",  # 4: blank, skipped but counted
    "3$30$Headache$X$Y",  # 5: one field too many, not empty: surplus "Y"
    "4$40$Rash$$",  # 6: one empty field too many: accepted
    "5$50$Drug hypersensitivity reaction$N\r",  # 7: CRLF, a field over 12 bytes
    "   ",  # 8: spaces only: a row of one field
    "6$60$Fièvre 中\r\x00$ignored",  # 9: the text stops at NUL, less the \r before it
    "\r",  # 10: blank once the \r is dropped
    "7$70$a\rb$",  # 11: a \r inside a field stays
    "8$80$Vomiting$$$",  # 12: two empty fields too many: surplus "$"
    "9$90$Last$Z",  # 13: no newline at the end of the file
]


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[pl.DataFrame, pl.DataFrame]:
    found = [f for f in discover([path.parent]) if f.table == "reac"]
    local = materialize(found[0], path.parent / "_work")
    monkeypatch.setattr(faers_ascii, "KERNEL_MIN_BYTES", 1 << 40)
    by_polars = faers_ascii.scan_table(local, "reac").frame.collect()
    monkeypatch.setattr(faers_ascii, "KERNEL_MIN_BYTES", 0)
    by_kernel = faers_ascii.scan_table(local, "reac").frame.collect()
    return by_polars, by_kernel


def test_kernel_splits_every_odd_line_as_polars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "q"
    folder.mkdir()
    (folder / "DEMO25Q1.txt").write_text("primaryid$caseid\n1$10\n")
    path = folder / "REAC25Q1.txt"
    path.write_bytes((HEADER + "\n".join(LINES)).encode())
    by_polars, by_kernel = _both(path, monkeypatch)
    assert_frame_equal(by_kernel, by_polars, check_exact=True)
    rows = {
        line: row
        for line, *row in by_kernel.select(
            "line", "pt", "drug_rec_act", "_short_row", "extra_fields"
        ).iter_rows()
    }
    assert sorted(rows) == [2, 3, 5, 6, 7, 8, 9, 11, 12, 13]
    assert rows[2] == ["Pyrexia", "", False, None]
    assert rows[3] == ["Nausea", None, True, None]
    assert rows[5] == ["Headache", "X", False, "Y"]
    assert rows[6] == ["Rash", "", False, None]
    assert rows[7] == ["Drug hypersensitivity reaction", "N", False, None]
    assert rows[8] == [None, None, True, None]
    assert rows[9] == ["Fièvre 中", None, True, None]
    assert rows[11] == ["a\rb", "", False, None]
    assert rows[12] == ["Vomiting", "", False, "$"]
    assert rows[13] == ["Last", "Z", False, None]
    assert by_kernel.get_column("primaryid").to_list()[-1] == "9"


def test_ingest_by_kernel_writes_the_same_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "q"
    folder.mkdir()
    (folder / "DEMO25Q1.txt").write_text(
        "primaryid$caseid$caseversion$i_f_code$fda_dt$age$age_cod$sex\n"
        "1$10$1$I$20250105$42$YR$F\n2$20$1$I$20250105$7$DEC$M\n3$30$1$I$2025$$$\n1$10$1$I$20250105$42$YR$F\n4$40\n"
    )
    (folder / "REAC25Q1.txt").write_bytes((HEADER + "\n".join(LINES)).encode())
    outs = {}
    for name, limit in (("polars", 1 << 40), ("kernel", 0)):
        monkeypatch.setattr(faers_ascii, "KERNEL_MIN_BYTES", limit)
        outs[name] = tmp_path / name
        ingest_quarters([folder], outs[name])
    files = sorted(p.relative_to(outs["polars"]) for p in outs["polars"].rglob("*.parquet"))
    assert len(files) == 17  # 8 tables, cases.parquet and 8 reject files
    for relative in files:
        assert_frame_equal(
            pl.read_parquet(outs["kernel"] / relative), pl.read_parquet(outs["polars"] / relative)
        )
    reports = [json.loads((outs[n] / "ingest_report.json").read_text()) for n in ("polars", "kernel")]
    assert reports[0]["tables"] == reports[1]["tables"]
    assert reports[1]["tables"]["reac"]["read"] == 10
    assert (outs["kernel"] / "rejects" / "rejects.csv").read_text() == (
        outs["polars"] / "rejects" / "rejects.csv"
    ).read_text()


def test_nul_in_the_first_data_line_ends_its_text_on_both_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # polars 2.1 refused a NUL on the first data line (more fields than its schema): a traceback
    folder = tmp_path / "q"
    folder.mkdir()
    (folder / "DEMO25Q1.txt").write_text("primaryid$caseid\n1$10\n")
    path = folder / "REAC25Q1.txt"
    path.write_bytes(b"primaryid$caseid$pt$drug_rec_act\n1$10$Rash\x00$X$Y\n2$20$Cough$\n")
    by_polars, by_kernel = _both(path, monkeypatch)
    assert_frame_equal(by_kernel, by_polars, check_exact=True)
    assert by_polars.select("line", "pt", "drug_rec_act", "_short_row").rows() == [
        (2, "Rash", None, True),
        (3, "Cough", "", False),
    ]


_FRESH = """
import sys
from pathlib import Path
from faers_anon.io import faers_ascii
from faers_anon.io.ingest import ingest_quarters
faers_ascii.KERNEL_MIN_BYTES = 0
split, by_kernel = faers_ascii._split_by_kernel, []
def spy(file, *args):
    by_kernel.append(file.source.table)
    return split(file, *args)
faers_ascii._split_by_kernel = spy
ingest_quarters([Path(sys.argv[1])], Path(sys.argv[2]))
print(sorted(by_kernel), *(name in sys.modules for name in ("numba", "scipy", "cryptography")))
"""


def test_ingest_splits_every_large_file_by_the_kernel_without_numba_or_cryptography(tmp_path: Path) -> None:
    """The kernel costs no numba (≈ 0.85 CPU-s on one core per process, scipy.linalg included): an
    ingest in a new process splits every large file by it, DEMO too, and imports neither; nor
    cryptography (faers_anon.keys, for releases only: 0.03-0.1 s)."""
    import subprocess
    import sys

    folder = tmp_path / "q"
    folder.mkdir()
    (folder / "DEMO25Q1.txt").write_text("primaryid$caseid$caseversion\n1$10$1\n2$20$1\n")
    (folder / "REAC25Q1.txt").write_bytes((HEADER + "\n".join(LINES)).encode())
    (folder / "DRUG25Q1.txt").write_text(
        "primaryid$caseid$drug_seq$drugname$prod_ai\n1$10$1$A$a\n2$20$1$B$\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", _FRESH, str(folder), str(tmp_path / "out")],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['demo', 'drug', 'reac'] False False False"]
    report = json.loads((tmp_path / "out" / "ingest_report.json").read_text())
    assert [report["tables"][t]["read"] for t in ("reports", "drug", "reac")] == [2, 2, 10]


_ALPHABET = ["$", "\r", "\n", "\x00", " ", "a", "bc", "é中", "0123456789abcdef", "$$", "\r\n"]


@pytest.mark.parametrize("seed", range(4))
def test_kernel_splits_random_files_as_polars(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random lines of $, CR, LF, NUL, spaces, multi-byte text and long fields: the same frame."""
    rng = random.Random(seed)
    folder = tmp_path / "q"
    folder.mkdir()
    (folder / "DEMO25Q1.txt").write_text("primaryid$caseid\n1$10\n")
    path = folder / "REAC25Q1.txt"
    for _ in range(40):
        header = rng.choice([HEADER, "primaryid$caseid$pt\n", "primaryid$caseid$pt$drug_rec_act$\n"])
        body = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 400)))  # blocks of 64 bytes
        path.write_bytes((header + body).encode())
        by_polars, by_kernel = _both(path, monkeypatch)
        assert by_kernel.rows() == by_polars.rows()
        assert_frame_equal(by_kernel, by_polars, check_exact=True)
