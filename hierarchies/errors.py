"""The one error base of the ``hierarchies`` package."""

from __future__ import annotations

__all__ = ["HierarchyError"]


class HierarchyError(ValueError):
    """An invalid hierarchy (cycle, gap, overlap, unknown parent) or a value it cannot place."""
