"""Disproportionality analysis: 2x2 counts, PRR, ROR, IC, chi-square, strata, raw-vs-release comparison.

Imports polars, numpy, scipy and statsmodels; never imports ``faers_anon``, ``hierarchies`` or ``knowledge``.
"""

from signals.errors import SignalsError

__all__ = ["SignalsError"]
