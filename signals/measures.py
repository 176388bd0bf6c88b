"""Disproportionality measures over a frame of 2×2 counts, for every row at once (SPEC §9).

With a = drug & event, b = drug without event, c = event without drug, d = neither, N = a+b+c+d:

* PRR = [a/(a+b)] / [c/(c+d)]; SE(ln PRR) = √(1/a − 1/(a+b) + 1/c − 1/(c+d)) (Evans et al. 2001).
* ROR = (a/c)/(b/d) = ad/(bc); SE(ln ROR) = √(1/a + 1/b + 1/c + 1/d) (van Puijenbroek et al. 2002).
* 95% CIs are exp(ln x ∓ z·SE) with z = Φ⁻¹(0.975) = 1.95996… (the exact quantile, as statsmodels
  uses; the paper's "1.96" rounds it).
* IC = log2((a + 0.5)/(E + 0.5)), E = (a+b)(a+c)/N: the shrinkage observed-to-expected ratio of
  Norén et al. 2013 (Stat Methods Med Res 22:57). IC025 and IC975 are **exact** quantiles of its
  posterior: μ ~ Gamma(shape a + 0.5, rate E + 0.5), ICq = log2(Gamma⁻¹(q; a + 0.5, E + 0.5)), not
  the closed-form approximation IC ∓ 3.3(a+0.5)^-½ … of the same paper.
* χ² is Pearson's statistic **with Yates' continuity correction**, as in Evans et al. 2001 and MHRA
  practice: χ² = N·max(|ad − bc| − N/2, 0)² / ((a+b)(c+d)(a+c)(b+d)); equal to
  ``scipy.stats.chi2_contingency(correction=True)``.

Criteria (boolean columns): ``signal_evans`` = PRR ≥ 2 and χ² ≥ 4 and a ≥ 3 (Evans 2001);
``signal_ror`` = ROR025 > 1 and a > 0; ``signal_ic`` = IC025 > 0. Departure: the ``a > 0`` in the
ROR criterion, so a pair never reported together is never a signal whatever the zero-cell rule
below makes of its table (IC025 > 0 already implies a > 0, Evans needs a ≥ 3).

**Zero-cell rule** (one rule, every statistic defined and finite, never NaN or ±inf): when any of
a, b, c, d is below 0.5 — that is 0 for whole counts, less than half a case for the fractional
counts of the ``expected`` reading — PRR, ROR and their CIs are computed on a + 0.5, b + 0.5,
c + 0.5, d + 0.5 (the Haldane–Anscombe correction, on all four cells; statsmodels 0.15's
``shift_zeros`` shifts only the zero cells), and ``zero_cell`` is true. Every corrected cell is then
≥ 0.5, so SE(ln ROR) ≤ √8 and no interval reaches 0 or ∞. IC needs no correction (its +0.5
already keeps it finite; E = 0 gives IC = 0). χ² uses the observed cells; when a margin is 0
(every case has the drug, or the event, or none has) its denominator is 0 and χ² is defined as 0:
the table holds no contrast. An empty table (N = 0, a stratum without cases) thus gives
PRR = ROR = 1, IC = 0 (E := 0), χ² = 0 and no signal.

Fractional counts (the ``expected`` reading of released ranges) go through the same formulas: the
estimates are those of the expected table; their CIs and χ² treat the expected cells as if observed,
so they are approximate there; the IC quantiles use the non-integer gamma shape as is.

Ranges: PRR, ROR ∈ (0, ∞) and finite; IC ∈ ℝ, IC025 < IC975; χ² ≥ 0.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.special import gammaincinv
from scipy.stats import norm

from signals.errors import SignalsError

__all__ = ["Z95", "MEASURE_COLUMNS", "CRITERIA", "disproportionality"]

Z95 = float(norm.ppf(0.975))
MEASURE_COLUMNS = (
    "prr", "prr_lo", "prr_hi", "ror", "ror_lo", "ror_hi", "ic", "ic025", "ic975", "chi2", "zero_cell",
)  # fmt: skip
CRITERIA = {"evans": "signal_evans", "ror": "signal_ror", "ic": "signal_ic"}


def _ic_quantiles(a: pl.Series) -> pl.DataFrame:
    """log2 of the 2.5% and 97.5% quantiles of Gamma(a + 0.5, rate 1), once per distinct a."""
    shapes = a.unique().drop_nulls()
    values = shapes.to_numpy().astype(np.float64) + 0.5
    return pl.DataFrame(
        {
            "a": shapes,
            "_g025": np.log2(gammaincinv(values, 0.025)),
            "_g975": np.log2(gammaincinv(values, 0.975)),
        }
    )


def disproportionality(counts: pl.DataFrame, /) -> pl.DataFrame:
    """Add PRR, ROR, IC with their intervals, χ², ``zero_cell`` and the criteria to a counts frame.

    Formulas, sources, the zero-cell rule and the ranges are in the module docstring (SPEC §9).

    Args:
        counts: any frame with Float64-castable ``a``, ``b``, ``c``, ``d`` ≥ 0.

    Returns:
        ``counts`` with ``prr, prr_lo, prr_hi, ror, ror_lo, ror_hi, ic, ic025, ic975, chi2, zero_cell,
        signal_evans, signal_ror, signal_ic`` appended; row order kept.

    Raises:
        SignalsError: a missing cell column or a negative cell.
    """
    for cell in "abcd":
        if cell not in counts.columns:
            raise SignalsError(f"counts: missing column {cell!r} (expected a, b, c, d)")
    frame = counts.with_columns(pl.col("a", "b", "c", "d").cast(pl.Float64))
    if frame.height:
        low = frame.select(pl.min_horizontal("a", "b", "c", "d").min()).item()
        if low < 0:
            raise SignalsError(f"counts: negative cell {low:g} (expected a, b, c, d >= 0)")
    a, b, c, d = (pl.col(x) for x in "abcd")
    zero = (a < 0.5) | (b < 0.5) | (c < 0.5) | (d < 0.5)
    h = pl.when(zero).then(0.5).otherwise(0.0)
    a_, b_, c_, d_ = a + h, b + h, c + h, d + h
    n = a + b + c + d
    ln_prr = ((a_ / (a_ + b_)) / (c_ / (c_ + d_))).log()
    se_prr = (1 / a_ - 1 / (a_ + b_) + 1 / c_ - 1 / (c_ + d_)).clip(lower_bound=0.0).sqrt()
    ln_ror = (a_ * d_ / (b_ * c_)).log()
    se_ror = (1 / a_ + 1 / b_ + 1 / c_ + 1 / d_).sqrt()
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    excess = ((a * d - b * c).abs() - n / 2).clip(lower_bound=0.0)
    expected = pl.when(n > 0).then((a + b) * (a + c) / n).otherwise(0.0)
    out = (
        frame.with_columns(
            prr=ln_prr.exp(),
            prr_lo=(ln_prr - Z95 * se_prr).exp(),
            prr_hi=(ln_prr + Z95 * se_prr).exp(),
            ror=ln_ror.exp(),
            ror_lo=(ln_ror - Z95 * se_ror).exp(),
            ror_hi=(ln_ror + Z95 * se_ror).exp(),
            ic=((a + 0.5) / (expected + 0.5)).log(2),
            _log_e=(expected + 0.5).log(2),
            chi2=pl.when(margins > 0).then(n * excess**2 / margins).otherwise(0.0),
            zero_cell=zero,
        )
        .join(_ic_quantiles(frame.get_column("a")), on="a", how="left", maintain_order="left")
        .with_columns(ic025=pl.col("_g025") - pl.col("_log_e"), ic975=pl.col("_g975") - pl.col("_log_e"))
        .drop("_g025", "_g975", "_log_e")
    )
    order = [c for c in counts.columns if c not in MEASURE_COLUMNS and not c.startswith("signal_")]
    return out.select(
        *order,
        *MEASURE_COLUMNS[:9],
        "chi2",
        "zero_cell",
        signal_evans=(pl.col("prr") >= 2) & (pl.col("chi2") >= 4) & (a >= 3),
        signal_ror=(pl.col("ror_lo") > 1) & (a > 0),
        signal_ic=pl.col("ic025") > 0,
    )
