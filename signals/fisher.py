"""Fisher's exact test (one-sided, greater) and Benjamini–Hochberg q-values, for all pairs at once.

* ``fisher_p`` = P(X ≥ a) for X hypergeometric with the table's margins fixed: N cases, a + c with
  the event, a + b drawn with the drug (Fisher 1935; ``scipy.stats.fisher_exact(alternative=
  "greater")`` gives the same number). It tests "more co-reports than independence predicts", the
  direction of a signal. a = 0 gives p = 1 exactly. Fractional cells (the ``expected`` reading of
  released ranges) are rounded to the nearest whole case first (the hypergeometric needs whole
  counts); the p-value is then that of the rounded table.
* ``fisher_q``: Benjamini & Hochberg 1995 step-up adjusted p-values over the m pairs tested together
  (one stratum and reading of a signal table): q_(i) = min_{j ≥ i} min(1, p_(j)·m/j) for p sorted
  ascending. A pair is a discovery at FDR level α when q ≤ α. Range: p ≤ q ≤ 1.

Both are computed by scipy's vectorized ``hypergeom.sf`` and a sort; no Python loop over pairs.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.stats import hypergeom

__all__ = ["fisher_greater", "bh_qvalues", "with_fisher"]


def fisher_greater(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """One-sided (greater) Fisher exact p-values of the 2×2 tables [[a, b], [c, d]] (rounded cells)."""
    a, b, c, d = (np.rint(np.asarray(x, dtype=np.float64)) for x in (a, b, c, d))
    n = a + b + c + d
    if not n.size:
        return np.zeros(0)
    p = hypergeom.sf(a - 1, n, a + c, a + b)
    return np.clip(np.where(a <= 0, 1.0, p), 0.0, 1.0)


def bh_qvalues(p: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values of one family of tests (module docstring)."""
    p = np.asarray(p, dtype=np.float64)
    m = p.size
    if not m:
        return p.copy()
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    q = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(q, 1.0)
    return out


def with_fisher(frame: pl.DataFrame, /, *, by: list[str]) -> pl.DataFrame:
    """Add ``fisher_p`` and ``fisher_q`` to a frame of a, b, c, d; q adjusts within each ``by`` group.

    Args:
        frame: rows with Float64 ``a``, ``b``, ``c``, ``d``.
        by: the columns naming one family of tests (e.g. ``stratum``, ``reading``); [] = one family.
    """
    cells = [frame.get_column(x).to_numpy() for x in "abcd"]
    out = frame.with_columns(pl.Series("fisher_p", fisher_greater(*cells)))
    rank = pl.col("fisher_p").rank("ordinal")
    size = pl.len()
    if by:
        rank, size = rank.over(by), size.over(by)
    # BH as expressions: p·m/rank, then the running minimum from the largest p down
    scaled = (pl.col("fisher_p") * size / rank).alias("_scaled")
    order = [*by, "fisher_p"]
    q = pl.col("_scaled").reverse().cum_min().reverse()
    q = q.over(by) if by else q
    return (
        out.with_row_index("_row")
        .with_columns(scaled)
        .sort(order, maintain_order=True)
        .with_columns(fisher_q=q.clip(upper_bound=1.0))
        .sort("_row")
        .drop("_row", "_scaled")
    )
