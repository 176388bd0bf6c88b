"""Mantel–Haenszel odds ratio across strata, its Robins–Breslow–Greenland CI, and Breslow–Day.

For one drug–event pair with a 2×2 table (a_s, b_s, c_s, d_s), n_s = a_s + b_s + c_s + d_s, in each
stratum s (the age × sex bands of ``--stratify``):

* ``ror_mh`` = R / S with R = Σ a_s d_s / n_s and S = Σ b_s c_s / n_s (Mantel & Haenszel 1959);
* Var(ln ROR_MH) = Σ P_s R_s / (2R²) + Σ (P_s S_s + Q_s R_s) / (2RS) + Σ Q_s S_s / (2S²), with
  P_s = (a_s + d_s)/n_s, Q_s = (b_s + c_s)/n_s and R_s, S_s the terms of R and S (Robins, Breslow &
  Greenland 1986, Biometrics 42:311); ``ror_mh_lo``/``ror_mh_hi`` = exp(ln ROR_MH ∓ z·SE), z = Φ⁻¹(0.975);
* ``breslow_day_p``: the Breslow–Day test of a common odds ratio (Breslow & Day 1980, §4.4, without
  Tarone's correction; ``statsmodels`` ``StratifiedTable.test_equal_odds(adjust=False)``):
  Σ_s (a_s − A_s)² / Var_s, A_s the count that gives stratum s odds ratio ROR_MH with its margins
  (the root in [max(0, m1+n1−n), min(m1, n1)] of a quadratic), Var_s = 1/(1/A_s + 1/(n1−A_s) +
  1/(m1−A_s) + 1/(n−n1−m1+A_s)); χ² with K − 1 degrees of freedom, K the *informative* strata.

Edges, each defined (no NaN): a stratum without cases adds nothing. A stratum is *informative* for
Breslow–Day when none of its four margins is 0 (otherwise its a_s is fixed, Var_s = 0, and it is left
out); with fewer than 2 informative strata nothing can differ and ``breslow_day_p`` = 1. One stratum
gives ROR_MH = that stratum's ROR. When R = 0 or S = 0 (no stratum has both a_s d_s > 0, or none has
b_s c_s > 0, e.g. a drug reported only with this event), ROR_MH and its CI are computed with 0.5
added to every cell of each stratum holding a zero cell (Haldane–Anscombe, as for the crude ROR in
:mod:`signals.measures`), and ``ror_mh_corrected`` is true. A pair never reported in any stratum
(Σ a_s = 0) gets ROR_MH = 0 and lower bound 0, the upper bound that of the corrected tables: the
zero-cell rule of the crude ROR. A pair with no case in any stratum (a condition nobody meets) is
the crude ROR's empty table: 0, 0 and exp(z·√8), the upper bound of the corrected table of four
0.5s. Cells below 10⁻⁹ are round-off of fractional sums (the ``expected`` reading of released
ranges: a margin minus a) and count as 0, as in :mod:`signals.counts`; otherwise a 4·10⁻¹⁶ left in
c would make S vanishingly small but positive, skip the correction and send the upper bound to
infinity.

Computation: numpy over a dense (pairs × strata) array of each cell (:func:`mh_arrays`), so a
quarter's 10⁶ pairs over 15 strata cost a few vectorized passes; :func:`mantel_haenszel` takes the
long form (one row per pair and stratum) and pads it into that array.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.special import chdtrc

from signals.errors import SignalsError

__all__ = ["MH_COLUMNS", "mh_arrays", "mantel_haenszel"]

MH_COLUMNS = ("ror_mh", "ror_mh_lo", "ror_mh_hi", "ror_mh_corrected", "breslow_day_p")
_Z95 = 1.959963984540054
_TINY = 1e-9  # cells below this are round-off of fractional sums: 0


def _log_mh(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, ...]:
    """(R, S, ln ROR_MH, its RBG standard error) per row; rows are pairs, columns strata."""
    n = a + b + c + d
    safe = np.where(n > 0, n, 1.0)
    r_s, s_s = a * d / safe, b * c / safe
    p_s, q_s = (a + d) / safe, (b + c) / safe
    r, s = r_s.sum(axis=1), s_s.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = (
            (p_s * r_s).sum(axis=1) / (2 * r**2)
            + (p_s * s_s + q_s * r_s).sum(axis=1) / (2 * r * s)
            + (q_s * s_s).sum(axis=1) / (2 * s**2)
        )
        return r, s, np.log(r / s), np.sqrt(var)


def _breslow_day(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray, psi: np.ndarray) -> np.ndarray:
    """Breslow–Day p-values against the common odds ratios ``psi`` (one per row)."""
    n1, m1 = a + b, a + c
    n = a + b + c + d
    rest = n - n1 - m1
    psi = psi[:, None]
    # A(rest + A) = ψ(n1 − A)(m1 − A): (1 − ψ)A² + (rest + ψ(n1 + m1))A − ψ n1 m1 = 0; the root in
    # range written as 2C / (−B − √(B² − 4·qa·C)), which needs no special case at ψ = 1 (qa = 0)
    qa, qb, qc = 1 - psi, rest + psi * (n1 + m1), -psi * n1 * m1
    informative = (n1 > 0) & (m1 > 0) & (n - n1 > 0) & (n - m1 > 0) & (psi > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = 2 * qc / (-qb - np.sqrt(np.maximum(qb**2 - 4 * qa * qc, 0.0)))
        var = 1 / (1 / x + 1 / (n1 - x) + 1 / (m1 - x) + 1 / (rest + x))
        informative &= np.isfinite(var) & (var > 0)
        stat = np.where(informative, (a - x) ** 2 / np.where(informative, var, 1.0), 0.0).sum(axis=1)
    df = informative.sum(axis=1) - 1
    p = chdtrc(np.maximum(df, 1), stat)  # = scipy.stats.chi2.sf(stat, df), without importing scipy.stats
    return np.where(df < 1, 1.0, np.clip(p, 0.0, 1.0))


def mh_arrays(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> dict[str, np.ndarray]:
    """The MH columns for cells given as (pairs × strata) arrays (module docstring); a stratum
    with no case (all four cells 0) is padding and changes nothing.

    Returns:
        ``n_strata`` and :data:`MH_COLUMNS`, one value per row.
    """
    a, b, c, d = (np.where(x < _TINY, 0.0, x) for x in (a, b, c, d))
    n = a + b + c + d
    r, s, ln_or, se = _log_mh(a, b, c, d)
    fix = (r <= 0) | (s <= 0)
    if fix.any():
        h = np.where((np.minimum(np.minimum(a, b), np.minimum(c, d)) < 0.5) & (n > 0), 0.5, 0.0)[fix]
        _, _, ln_h, se_h = _log_mh(a[fix] + h, b[fix] + h, c[fix] + h, d[fix] + h)
        ln_or[fix], se[fix] = ln_h, se_h
    empty = n.sum(axis=1) <= 0
    ln_or[empty], se[empty] = 0.0, np.sqrt(8.0)  # the corrected empty table: all four cells 0.5
    never = a.sum(axis=1) <= 0
    ror = np.where(never, 0.0, np.exp(ln_or))
    return {
        "n_strata": (n > 0).sum(axis=1).astype(np.uint32),
        "ror_mh": ror,
        "ror_mh_lo": np.where(never, 0.0, np.exp(ln_or - _Z95 * se)),
        "ror_mh_hi": np.exp(ln_or + _Z95 * se),
        "ror_mh_corrected": fix,
        "breslow_day_p": _breslow_day(a, b, c, d, ror),
    }


def mantel_haenszel(strata: pl.DataFrame, /, *, by: list[str]) -> pl.DataFrame:
    """ROR_MH, its RGB 95% CI and the Breslow–Day p-value per group of strata (module docstring).

    Args:
        strata: one row per pair and stratum, every stratum of the pair present (a = 0 included),
            with the ``by`` columns and ``a``, ``b``, ``c``, ``d`` ≥ 0.
        by: the columns naming a pair (e.g. ``drug``, ``event``).

    Returns:
        One row per group: ``by``, ``n_strata`` (strata with cases), ``ror_mh``, ``ror_mh_lo``,
        ``ror_mh_hi``, ``ror_mh_corrected``, ``breslow_day_p`` (in [0, 1]); sorted by ``by``.

    Raises:
        SignalsError: a missing column.
    """
    missing = [x for x in (*by, "a", "b", "c", "d") if x not in strata.columns]
    if missing:
        raise SignalsError(f"strata: missing column {missing[0]!r}")
    long = strata.sort(by, maintain_order=True).with_columns(
        (pl.struct(by).ne_missing(pl.struct(by).shift()).cast(pl.Int64).cum_sum() - 1).alias("_pair"),
        pl.int_range(pl.len()).over(by).alias("_slot"),
    )
    pairs = long.select(*by).unique(maintain_order=True)
    width = int(long.get_column("_slot").to_numpy().max(initial=0)) + 1
    rows, slots = long.get_column("_pair").to_numpy(), long.get_column("_slot").to_numpy()
    cells = []
    for x in "abcd":
        dense = np.zeros((pairs.height, width))
        dense[rows, slots] = long.get_column(x).cast(pl.Float64).to_numpy()
        cells.append(dense)
    result = mh_arrays(*cells)
    return pairs.with_columns(pl.Series(name, values) for name, values in result.items())
