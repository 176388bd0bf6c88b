"""The split kernel's compile starts ahead, in a thread, as soon as the ingest finds a file that needs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from faers_anon.io import _split

_FRESH = """
import sys
from pathlib import Path
from faers_anon.io import _split, faers_ascii
from faers_anon.io.ingest import ingest_quarters
faers_ascii.KERNEL_MIN_BYTES = int(sys.argv[3])
events = []
materialize, compile_soon = faers_ascii.materialize, _split.compile_soon
def spy_materialize(file, work):
    events.append(file.table)
    return materialize(file, work)
def spy_compile():
    events.append("compile")
    compile_soon()
faers_ascii.materialize, _split.compile_soon = spy_materialize, spy_compile
ingest_quarters([Path(sys.argv[1])], Path(sys.argv[2]))
print(events, len(_split._STARTED), len(_split._COMPILED), "llvmlite.binding" in sys.modules)
"""


def _quarter(tmp_path: Path) -> Path:
    folder = tmp_path / "q"
    folder.mkdir()
    (folder / "DEMO25Q1.txt").write_text("primaryid$caseid$caseversion\n1$10$1\n2$20$1\n")
    (folder / "DRUG25Q1.txt").write_text("primaryid$caseid$drug_seq$drugname$prod_ai\n1$10$1$A$a\n")
    (folder / "REAC25Q1.txt").write_text("primaryid$caseid$pt\n1$10$Rash\n2$20$Cough\n")
    return folder


def _fresh_ingest(tmp_path: Path, min_bytes: int) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _FRESH, str(_quarter(tmp_path)), str(tmp_path / "out"), str(min_bytes)],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_compile_starts_right_after_the_first_large_file_is_made_local(tmp_path: Path) -> None:
    """Every file large enough (all, with the threshold at 0): the compile thread starts once, right
    after DEMO (the first file) is made local and before the others are; one compile in all."""
    assert _fresh_ingest(tmp_path, 0) == (
        "['demo', 'compile', 'drug', 'compile', 'reac', 'compile'] 1 2 True"
    )


def test_a_quarter_of_small_files_never_starts_the_compile(tmp_path: Path) -> None:
    """Below the threshold no file is split by the kernel: no compile, no llvmlite's compiler."""
    assert _fresh_ingest(tmp_path, 16 << 20) == "['demo', 'drug', 'reac'] 0 0 False"


def test_a_failed_early_compile_leaves_its_error_to_the_split(monkeypatch: pytest.MonkeyPatch) -> None:
    """The early compile raises nothing; the split's own call compiles again and raises the error."""
    monkeypatch.setattr(_split, "_COMPILED", [])
    monkeypatch.setattr(_split, "_STARTED", [])
    calls: list[int] = []

    def broken() -> None:
        calls.append(1)
        raise RuntimeError("no LLVM here")

    monkeypatch.setattr(_split, "_split_module", broken)
    _split.compile_soon()
    _split.compile_soon()  # started once only
    _split._STARTED[0].join()
    assert len(_split._STARTED) == 1
    assert calls == [1]
    with pytest.raises(RuntimeError, match="no LLVM here"):
        _split._kernel()
    assert calls == [1, 1]
    assert _split._COMPILED == []
