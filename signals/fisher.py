"""Fisher's exact test (one-sided, greater) and Benjamini–Hochberg q-values, for all pairs at once.

* ``fisher_p`` = P(X ≥ a) for X hypergeometric with the table's margins fixed: N cases, a + c with
  the event, a + b drawn with the drug (Fisher 1935; ``scipy.stats.fisher_exact(alternative=
  "greater")`` gives the same number). It tests "more co-reports than independence predicts", the
  direction of a signal. a = 0 gives p = 1 exactly. Fractional cells (the ``expected`` reading of
  released ranges) are rounded to the nearest whole case first (the hypergeometric needs whole
  counts; halves to even), after rounding them to 6 decimals: a cell summed from fractional weights
  carries round-off (2189.5 ± 1e-13) whose sign depends on the summation order, and must not
  decide the side a half rounds to. The p-value is then that of the rounded table.
* ``fisher_q``: Benjamini & Hochberg 1995 step-up adjusted p-values over the m pairs tested together
  (one stratum and reading of a signal table): q_(i) = min_{j ≥ i} min(1, p_(j)·m/j) for p sorted
  ascending. A pair is a discovery at FDR level α when q ≤ α. Range: p ≤ q ≤ 1.

Both are vectorized over pairs: the p-values by a hypergeometric tail series whose loop runs over
the terms, not the pairs (:func:`fisher_greater`), the q-values by a sort per family.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.special import gammaln

__all__ = ["fisher_greater", "bh_qvalues", "with_fisher"]


def _tail_sum(
    x: np.ndarray, stop: np.ndarray, u: np.ndarray, v: np.ndarray, w: np.ndarray, *, up: bool
) -> np.ndarray:
    """Σ_k t_k with t_0 = 1 and t_{k+1}/t_k = r(x_k) (``up``, x rising) or s(x_k) (x falling), until
    x reaches ``stop`` or a term no longer changes the sum. u, v, w = n1, m1, N − n1 − m1.

    The loop runs over k, on the tables still summing (compacted as they finish), never over tables.
    """
    total = np.ones_like(x)
    out = total.copy()
    where = np.flatnonzero(x != stop)
    term = np.ones(where.size)
    x, stop, u, v, w, total = x[where], stop[where], u[where], v[where], w[where], total[where]
    while where.size:
        if up:
            term *= (u - x) * (v - x) / ((x + 1) * (w + x + 1))
            x = x + 1
        else:
            term *= x * (w + x) / ((u - x + 1) * (v - x + 1))
            x = x - 1
        total += term
        done = (x == stop) | (term <= 1e-17 * total)
        if done.any():
            out[where[done]] = total[done]
            keep = ~done
            where, term, x, stop, u, v, w, total = (
                where[keep],
                term[keep],
                x[keep],
                stop[keep],
                u[keep],
                v[keep],
                w[keep],
                total[keep],
            )
    return out


def _log_pmf(x: np.ndarray, n: np.ndarray, m1: np.ndarray, n1: np.ndarray) -> np.ndarray:
    """ln of the hypergeometric pmf C(m1, x)·C(n − m1, n1 − x)/C(n, n1), by log-gamma functions."""

    def log_choose(top: np.ndarray, k: np.ndarray) -> np.ndarray:
        return gammaln(top + 1) - gammaln(k + 1) - gammaln(top - k + 1)

    return log_choose(m1, x) + log_choose(n - m1, n1 - x) - log_choose(n, n1)


def fisher_greater(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """One-sided (greater) Fisher exact p-values of the 2×2 tables [[a, b], [c, d]] (rounded cells).

    With n1 = a + b, m1 = a + c, N: P(X ≥ a) for X hypergeometric. Above the mode it is
    pmf(a)·Σ_k Π r(x), r(x) = (n1 − x)(m1 − x) / ((x + 1)(N − n1 − m1 + x + 1)), summed upward;
    at or below it, 1 − pmf(a − 1)·Σ_k Π s(x), s(x) = x(N − n1 − m1 + x) / ((n1 − x + 1)(m1 − x + 1)),
    summed downward (the short side each time, so no cancellation where p is small); the pmf from
    log-gamma functions. Same values as ``scipy.stats.hypergeom.sf`` up to the rounding of those
    log-gammas (relative error ~1e-9 at N = 4·10⁵, measured), and 2–3 times faster on FAERS-sized
    margins (``hypergeom.pmf`` itself would cost more than the whole series).
    """
    a, b, c, d = (np.rint(np.round(np.asarray(x, dtype=np.float64), 6)) for x in (a, b, c, d))
    n = a + b + c + d
    n1, m1 = a + b, a + c
    rest = n - n1 - m1  # = d - a
    low, high = np.maximum(0.0, -rest), np.minimum(n1, m1)
    mode = np.floor((n1 + 1) * (m1 + 1) / (n + 2))
    upper = a > mode
    p = np.ones_like(a)

    up = np.flatnonzero(upper & (a > 0))
    if up.size:
        rise = _tail_sum(a[up], high[up], n1[up], m1[up], rest[up], up=True)
        p[up] = np.exp(_log_pmf(a[up], n[up], m1[up], n1[up])) * rise
    down = np.flatnonzero(~upper & (a - 1 >= low) & (a > 0))
    if down.size:
        start = a[down] - 1
        fall = _tail_sum(start, low[down], n1[down], m1[down], rest[down], up=False)
        p[down] = 1.0 - np.exp(_log_pmf(start, n[down], m1[down], n1[down])) * fall
    return np.clip(p, 0.0, 1.0)


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
    p = fisher_greater(*(frame.get_column(x).to_numpy() for x in "abcd"))
    q = np.empty_like(p)
    if by and frame.height:
        family = frame.select(pl.struct(by).rank("dense")).to_series().to_numpy()
        order = np.argsort(family, kind="stable")
        starts = np.flatnonzero(np.r_[True, family[order][1:] != family[order][:-1]])
        for rows in np.split(order, starts[1:]):  # one family per stratum and reading: a few
            q[rows] = bh_qvalues(p[rows])
    else:
        q = bh_qvalues(p)
    return frame.with_columns(pl.Series("fisher_p", p), pl.Series("fisher_q", q))
