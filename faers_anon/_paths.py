"""Where bundled data and the shared reference data live."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

__all__ = ["bundled", "shared_data_dir"]


def bundled(*parts: str) -> Path:
    """Path of a file shipped inside ``faers_anon/data`` (works from an installed wheel)."""
    root = resources.files("faers_anon") / "data"
    return Path(str(root.joinpath(*parts)))


def shared_data_dir() -> Path | None:
    """The public reference data folder ``../shared/data`` beside the checkout, if present.

    ``FAERS_ANON_SHARED_DATA`` overrides the location.
    """
    env = os.environ.get("FAERS_ANON_SHARED_DATA")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parents[2] / "shared" / "data"
    return here if here.is_dir() else None
