"""Lint (ruff) and type checks (mypy, disallow_untyped_defs) are part of the test command."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _tool(name: str) -> list[str]:
    exe = Path(sys.executable).with_name(name)
    return [str(exe)] if exe.exists() else [shutil.which(name) or name]


def test_ruff_is_clean() -> None:
    done = subprocess.run(
        [*_tool("ruff"), "check", "faers_anon", "hierarchies", "knowledge", "signals", "tests", "scripts"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_is_clean() -> None:
    done = subprocess.run(
        [*_tool("mypy"), "--no-error-summary"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
