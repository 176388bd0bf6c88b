"""Shared fixtures: the public reference data beside the checkout, and temporary folders."""

from __future__ import annotations

import os
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
