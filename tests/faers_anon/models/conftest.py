"""A small ingested synthetic quarter shared by the model tests (ingested once per session)."""

from __future__ import annotations

from pathlib import Path

import pytest

from faers_anon.io.ingest import ingest_quarters
from faers_anon.synthetic import make_quarter, write_quarter


@pytest.fixture(scope="session")
def small_ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """240 synthetic cases (~280 reports, follow-ups included), ingested."""
    root = tmp_path_factory.mktemp("models")
    raw = write_quarter(make_quarter(240, seed=8), root / "raw")
    ingest_quarters([raw], root / "ingested")
    return root / "ingested"
