"""Path-level twins of the CLI commands (dashes become underscores).

Each function takes paths and a frozen config dataclass, does the work through the library modules
and returns a result object with a ``summary()`` the CLI prints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from faers_anon.fetch import FetchConfig, FetchResult, fetch_quarters

__all__ = ["fetch"]


def fetch(
    quarters: Sequence[str],
    out: Path,
    /,
    *,
    config: FetchConfig | None = None,
    progress: Callable[[str], None] | None = None,
) -> FetchResult:
    """Download the FDA's quarterly ASCII zips into ``out``; see :func:`faers_anon.fetch.fetch_quarters`."""
    return fetch_quarters(quarters, out, config=config, progress=progress)
