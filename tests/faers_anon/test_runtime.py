"""Process settings (faers_anon._runtime): none on import; the command and faers_anon.configure() set
polars' allocator before polars is loaded, never over the user's choice."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from faers_anon._numba_cache import STAMP
from faers_anon._runtime import ALLOCATOR_CONF, ALLOCATOR_ENV

ROOT = Path(__file__).resolve().parents[2]
_SHOW = "import os; print(os.environ.get({name!r}, '<unset>'))"
_CLI = "import sys; sys.argv = ['faers-anon', '--version']\ntry:\n    main()\nexcept SystemExit:\n    pass\n"


def _run(code: str, env: dict[str, str], cwd: Path | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, cwd=cwd
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _env(**more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != ALLOCATOR_ENV}
    return env | more


def test_importing_faers_anon_leaves_the_environment_and_the_kernel_caches_alone(tmp_path: Path) -> None:
    copy = tmp_path / "faers_anon"
    shutil.copytree(ROOT / "faers_anon", copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    stale = copy / "algorithms" / "__pycache__" / "_kernel.stage1-1.py311.nbi"
    stale.parent.mkdir()
    stale.write_bytes(b"index")  # no stamp: a refresh would delete it
    code = "import os; before = dict(os.environ); import faers_anon; print(dict(os.environ) == before)"
    assert _run(code, _env(PYTHONPATH=str(tmp_path)), cwd=tmp_path) == "True"
    assert sorted(p.name for p in stale.parent.iterdir()) == [stale.name]


def test_the_command_sets_the_allocator_before_polars() -> None:
    # --version loads no polars (tests/faers_anon/test_cli_startup.py): the setting is made before it is
    allocator = "import polars\n" + _SHOW.format(name=ALLOCATOR_ENV)
    code = "from faers_anon.__main__ import main\n" + _CLI + allocator
    # polars prepends its own options when it is imported; jemalloc reads left to right: ours win
    assert _run(code, _env()).endswith("," + ALLOCATOR_CONF)
    shown = "import click; from faers_anon import _numba_cache; print(_numba_cache._progress == [click.echo])"
    assert _run("from faers_anon.__main__ import main\n" + _CLI + shown, _env()).endswith("\nTrue")
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts["faers-anon"] == "faers_anon.__main__:main"


def test_configure_sets_it_for_library_users_and_refreshes_the_caches() -> None:
    code = "import faers_anon; faers_anon.configure(); import polars; " + _SHOW.format(name=ALLOCATOR_ENV)
    assert _run(code, _env()).endswith("," + ALLOCATOR_CONF)
    assert (ROOT / "faers_anon" / "algorithms" / "__pycache__" / STAMP).is_file()


def test_the_users_setting_wins() -> None:
    code = "import faers_anon; faers_anon.configure(); import polars; " + _SHOW.format(name=ALLOCATOR_ENV)
    value = _run(code, _env(**{ALLOCATOR_ENV: "dirty_decay_ms:1000"}))
    assert value.endswith(",dirty_decay_ms:1000") and ALLOCATOR_CONF not in value


def test_configure_after_polars_changes_nothing() -> None:
    code = "import polars; import faers_anon; faers_anon.configure(); " + _SHOW.format(name=ALLOCATOR_ENV)
    assert ALLOCATOR_CONF not in _run(code, _env())


def test_the_step_child_gets_a_short_decay_unless_the_user_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    from faers_anon._runtime import STEP_ALLOCATOR_CONF, child_environment

    polars_own = "dirty_decay_ms:500,muzzy_decay_ms:1000"
    monkeypatch.setenv(ALLOCATOR_ENV, polars_own + "," + ALLOCATOR_CONF)  # configure's, after polars' import
    assert child_environment()[ALLOCATOR_ENV] == STEP_ALLOCATOR_CONF == "dirty_decay_ms:1000,muzzy_decay_ms:0"
    monkeypatch.setenv(ALLOCATOR_ENV, polars_own)  # nobody chose: polars' own
    assert child_environment()[ALLOCATOR_ENV] == STEP_ALLOCATOR_CONF
    monkeypatch.delenv(ALLOCATOR_ENV)
    assert child_environment()[ALLOCATOR_ENV] == STEP_ALLOCATOR_CONF
    monkeypatch.setenv(ALLOCATOR_ENV, polars_own + ",dirty_decay_ms:0")  # the user's: inherited as it is
    assert child_environment()[ALLOCATOR_ENV] == polars_own + ",dirty_decay_ms:0"
    assert os.environ[ALLOCATOR_ENV] == polars_own + ",dirty_decay_ms:0"  # this process's left alone
