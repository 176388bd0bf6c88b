"""The allocator setting made on import (faers_anon._runtime): only before polars, never over the user's."""

from __future__ import annotations

import os
import subprocess
import sys

from faers_anon._runtime import ALLOCATOR_CONF, ALLOCATOR_ENV

_SHOW = "import os; print(os.environ.get({name!r}, '<unset>'))"


def _run(code: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, timeout=120
    )
    return done.stdout.strip()


def _env(**more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != ALLOCATOR_ENV}
    return env | more


def test_import_before_polars_turns_purging_off() -> None:
    code = "import faers_anon; import polars; " + _SHOW.format(name=ALLOCATOR_ENV)
    # polars prepends its own options; jemalloc reads left to right, so the last setting wins
    assert _run(code, _env()).endswith("," + ALLOCATOR_CONF)


def test_the_users_setting_wins() -> None:
    code = "import faers_anon; import polars; " + _SHOW.format(name=ALLOCATOR_ENV)
    value = _run(code, _env(**{ALLOCATOR_ENV: "dirty_decay_ms:1000"}))
    assert value.endswith(",dirty_decay_ms:1000") and ALLOCATOR_CONF not in value


def test_import_after_polars_changes_nothing() -> None:
    code = "import polars; import faers_anon; " + _SHOW.format(name=ALLOCATOR_ENV)
    assert ALLOCATOR_CONF not in _run(code, _env())
