"""Every CLI error, click's option errors included, is one ``Error:`` line and exit 1 (issue 12, bullet 5).

Checked both in process (click's test runner) and through the installed console script, whose
stderr must hold exactly that line: no ``Usage:`` block, no traceback.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from faers_anon.cli import cli

FAERS_ANON = Path(sys.executable).with_name("faers-anon")

REL, TOP = "faers-anon release --help", "faers-anon --help"
CASES = [
    (["release", "--demo", "-o", "x", "--kk", "3"], "No such option '--kk'", REL),
    (["release", "--demo", "-o", "x", "--k", "five"], "'--k': 'five' is not a valid integer", REL),
    (["release", "--demo"], "Missing option '-o' / '--out'", REL),
    (["release", "--demo", "-o", "x", "--criterion", "bogus"], "Invalid value for '--criterion'", REL),
    (["verify", "/no/such/release"], "'/no/such/release' does not exist", "faers-anon verify --help"),
    (["anonymize"], "Missing argument 'INGESTED'", "faers-anon anonymize --help"),
    (["relase", "--demo"], "No such command 'relase'", TOP),
    (["--bogus"], "No such option '--bogus'", TOP),
]


@pytest.mark.parametrize(("args", "message", "hint"), CASES)
def test_option_errors_are_one_line(args: list[str], message: str, hint: str) -> None:
    result = CliRunner().invoke(cli, args, prog_name="faers-anon")
    assert result.exit_code == 1
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("Error: ") and message in line and f"(see '{hint}')" in line
    assert "Usage:" not in result.output


def test_console_script_prints_one_line() -> None:
    run = subprocess.run([str(FAERS_ANON), "release", "--kk"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    assert run.stdout == ""
    (line,) = run.stderr.splitlines()
    assert line.startswith("Error: No such option '--kk'.") and line.endswith(f"(see '{REL}')")


def test_user_errors_stay_one_line() -> None:
    result = CliRunner().invoke(cli, ["ingest", "/no/such/quarter.zip", "-o", "out"])
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("Error: ") and "quarter.zip" in line


def test_help_and_version_still_work() -> None:
    for args in (["--help"], ["release", "--help"], []):
        result = CliRunner().invoke(cli, args, prog_name="faers-anon")
        assert result.exit_code == 0 and result.output.startswith("Usage: ") and "Error" not in result.output
    assert CliRunner().invoke(cli, ["--version"]).output.startswith("faers-anon, version ")
