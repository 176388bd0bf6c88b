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
zero-cell rule of the crude ROR.
"""

from __future__ import annotations

import polars as pl
from scipy.stats import chi2

from signals.errors import SignalsError

__all__ = ["MH_COLUMNS", "mantel_haenszel"]

MH_COLUMNS = ("ror_mh", "ror_mh_lo", "ror_mh_hi", "ror_mh_corrected", "breslow_day_p")
_Z95 = 1.959963984540054


def _sums(a: pl.Expr, b: pl.Expr, c: pl.Expr, d: pl.Expr, suffix: str) -> list[pl.Expr]:
    n = a + b + c + d
    safe = pl.when(n > 0).then(n).otherwise(1.0)
    r, s = a * d / safe, b * c / safe
    p, q = (a + d) / safe, (b + c) / safe
    return [
        r.sum().alias(f"_r{suffix}"),
        s.sum().alias(f"_s{suffix}"),
        (p * r).sum().alias(f"_pr{suffix}"),
        (p * s + q * r).sum().alias(f"_mix{suffix}"),
        (q * s).sum().alias(f"_qs{suffix}"),
    ]


def _ci(suffix: str) -> tuple[pl.Expr, pl.Expr]:
    r, s = pl.col(f"_r{suffix}"), pl.col(f"_s{suffix}")
    var = pl.col(f"_pr{suffix}") / (2 * r**2) + pl.col(f"_mix{suffix}") / (2 * r * s)
    var = var + pl.col(f"_qs{suffix}") / (2 * s**2)
    return (r / s).log(), var.sqrt()


def mantel_haenszel(strata: pl.DataFrame, /, *, by: list[str]) -> pl.DataFrame:
    """ROR_MH, its RGB 95% CI and the Breslow–Day p-value per group of strata (module docstring).

    Args:
        strata: one row per pair and stratum, every stratum of the pair present (a = 0 included),
            with the ``by`` columns and ``a``, ``b``, ``c``, ``d`` ≥ 0.
        by: the columns naming a pair (e.g. ``drug``, ``event``).

    Returns:
        One row per group: ``by``, ``n_strata`` (strata with cases), ``ror_mh``, ``ror_mh_lo``,
        ``ror_mh_hi``, ``ror_mh_corrected``, ``breslow_day_p`` (in [0, 1]); sorted by ``by``.
    """
    missing = [x for x in (*by, "a", "b", "c", "d") if x not in strata.columns]
    if missing:
        raise SignalsError(f"strata: missing column {missing[0]!r}")
    cells = strata.with_columns(pl.col("a", "b", "c", "d").cast(pl.Float64))
    a, b, c, d = (pl.col(x) for x in "abcd")
    n = a + b + c + d
    h = pl.when((pl.min_horizontal(a, b, c, d) < 0.5) & (n > 0)).then(0.5).otherwise(0.0)
    sums = cells.group_by(by).agg(
        (n > 0).sum().alias("n_strata"),
        a.sum().alias("_a"),
        *_sums(a, b, c, d, ""),
        *_sums(a + h, b + h, c + h, d + h, "_h"),
    )
    ln_or, se = _ci("")
    ln_h, se_h = _ci("_h")
    fix = (pl.col("_r") <= 0) | (pl.col("_s") <= 0)
    ln_used, se_used = pl.when(fix).then(ln_h).otherwise(ln_or), pl.when(fix).then(se_h).otherwise(se)
    none = pl.col("_a") <= 0
    pooled = sums.with_columns(
        ror_mh=pl.when(none).then(0.0).otherwise(ln_used.exp()),
        ror_mh_lo=pl.when(none).then(0.0).otherwise((ln_used - _Z95 * se_used).exp()),
        ror_mh_hi=(ln_used + _Z95 * se_used).exp(),
        ror_mh_corrected=fix,
    ).select(*by, "n_strata", *MH_COLUMNS[:4])
    return pooled.join(_breslow_day(cells, pooled, by), on=by, how="left").sort(by)


def _breslow_day(cells: pl.DataFrame, pooled: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Breslow–Day statistic against ROR_MH, its degrees of freedom and p-value, per group."""
    a, b, c, d = (pl.col(x) for x in "abcd")
    n1, m1 = a + b, a + c  # drug margin, event margin
    n = a + b + c + d
    psi = pl.col("ror_mh")
    # A(n − n1 − m1 + A) = ψ(n1 − A)(m1 − A):  (1 − ψ)A² + (n − n1 − m1 + ψ(n1 + m1))A − ψ n1 m1 = 0;
    # the root in range, written as 2C / (−B − √(B² − 4·qa·C)) so that ψ = 1 (qa = 0) needs no case
    qa, qb, qc = 1 - psi, n - n1 - m1 + psi * (n1 + m1), -psi * n1 * m1
    root = 2 * qc / (-qb - (qb**2 - 4 * qa * qc).clip(lower_bound=0.0).sqrt())
    informative = (n1 > 0) & (m1 > 0) & (n - n1 > 0) & (n - m1 > 0) & (psi > 0)
    terms = (
        cells.join(pooled.select(*by, "ror_mh"), on=by, how="left")
        .with_columns(_x=root)
        .with_columns(
            _v=1
            / (
                1 / pl.col("_x")
                + 1 / (n1 - pl.col("_x"))
                + 1 / (m1 - pl.col("_x"))
                + 1 / (n - n1 - m1 + pl.col("_x"))
            ),
            _in=informative,
        )  # fmt: skip
        .with_columns(_in=pl.col("_in") & (pl.col("_v") > 0) & pl.col("_v").is_finite())
        .group_by(by)
        .agg(
            pl.when(pl.col("_in"))
            .then((a - pl.col("_x")) ** 2 / pl.col("_v"))
            .otherwise(0.0)
            .sum()
            .alias("_bd"),
            pl.col("_in").sum().alias("_k"),
        )
    )
    df = (terms.get_column("_k").to_numpy() - 1).clip(min=0)
    stat = terms.get_column("_bd").to_numpy()
    p = chi2.sf(stat, df.clip(min=1))
    p[df < 1] = 1.0
    return terms.select(*by).with_columns(pl.Series("breslow_day_p", p.clip(0.0, 1.0)))
