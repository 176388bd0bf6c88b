"""Shared fixtures: the public reference data beside the checkout, and temporary folders."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("FAERS_ANON_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data``: real FAERS excerpts, knowledge tables, MeSH facts (read, never copied)."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"reference data not found at {SHARED_DATA}; set FAERS_ANON_SHARED_DATA")
    return SHARED_DATA


@pytest.fixture(scope="session")
def faers_samples(shared_data: Path) -> Path:
    """Real FAERS excerpts in FDA layout (``faers_samples/<source>/ascii/yyQq/``) and their zips."""
    return shared_data / "faers_samples"


@pytest.fixture(scope="session", autouse=True)
def agency_key_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh agency key for the session (``FAERS_ANON_KEY_FILE``; created on first use, mode 0600).

    Releases need a key (faers_anon.keys); tests that compare keys pass their own ``key=``/``--key-file``.
    """
    path = tmp_path_factory.mktemp("agency") / "agency.key"
    before = os.environ.get("FAERS_ANON_KEY_FILE")
    os.environ["FAERS_ANON_KEY_FILE"] = str(path)
    yield path
    if before is None:
        os.environ.pop("FAERS_ANON_KEY_FILE", None)
    else:
        os.environ["FAERS_ANON_KEY_FILE"] = before
