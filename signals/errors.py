"""The one error base of the ``signals`` package."""

from __future__ import annotations

__all__ = ["SignalsError"]


class SignalsError(ValueError):
    """Bad input to a disproportionality analysis (missing column, unknown stratum, bad option)."""
