"""The one error base of the ``knowledge`` package."""

from __future__ import annotations

__all__ = ["KnowledgeError"]


class KnowledgeError(ValueError):
    """An unreadable or inconsistent drug→disease table, or a bad mining parameter."""
