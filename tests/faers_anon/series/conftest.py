"""Fixtures shared by the series tests: the bundled demo quarter, ingested once per test process."""

from __future__ import annotations

from pathlib import Path

import pytest

from faers_anon import api
from faers_anon.io.ingest import IngestConfig


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo quarter's ingested folder (tests read it, never write into it)."""
    root = tmp_path_factory.mktemp("demo")
    return api.ingest([], root / "ingested", config=IngestConfig(demo=True)).out
