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

Criteria (boolean columns), each with the minimum case count the field uses with it
(:data:`CRITERION_RULES`; the same in ``signals``, ``compare`` and the release report):

* ``signal_evans`` = PRR ≥ 2 and χ² ≥ 4 and a ≥ 3 (Evans, Waller & Davis 2001,
  Pharmacoepidemiol Drug Saf 10:483);
* ``signal_ror`` = ROR025 > 1 and a ≥ 3: EMA's screening rule (EMA/849944/2016, "Screening for
  adverse reactions in EudraVigilance": ROR025 > 1 with at least 3 cases for substances under
  additional monitoring, 5 for the others; the FAERS literature uses 3 to 5) — we take the lower,
  3. Without a count floor a rare event lifts the lower bound above 1 at a = 1;
* ``signal_ic`` = IC025 > 0 (Norén et al. 2013; no count floor is used with it, and none is needed:
  its shrinkage makes IC025 > 0 impossible below a = 3, as Gamma⁻¹(0.025; 2.5) < 0.5 ≤ E + 0.5);
* ``signal_eb`` = EB05 ≥ 2 (Szarfman, Machado & O'Neill 2002, Drug Saf 25:381, the FDA's MGPS
  screen; no count floor), added with the EBGM columns (:mod:`signals.ebgm`, :mod:`signals.extra`).

**Zero cells rank last.** A pair never reported together (a = 0; only reference panels list them)
is never a signal and never ranks above a reported pair: its PRR, ROR and their lower bounds are 0,
and its upper bounds are those of the Haldane–Anscombe-corrected table below (how large the ratio
could still be); its IC is log2(0.5/(E + 0.5)) ≤ 0, IC's own shrinkage, with IC975 stated. A sort
on any point estimate or lower bound thus puts it below every reported pair (all > 0 at a > 0).

**Zero-cell rule for a > 0** (every statistic defined and finite, never NaN or ±inf): when any of
a, b, c, d is below 0.5 — 0 for whole counts, less than half a case for the fractional counts of
the ``expected`` reading — PRR, ROR and their CIs are computed on a + 0.5, b + 0.5, c + 0.5,
d + 0.5 and ``zero_cell`` is true: the Haldane–Anscombe correction of the log odds ratio (Haldane
1956, Ann Hum Genet 20:309; Anscombe 1956, Biometrika 43:461), on all four cells and only for a
table holding a zero cell, as the textbooks apply it (Agresti, Categorical Data Analysis, 3rd ed.,
§3.1.1); PRR follows the same rule (statsmodels 0.15's ``shift_zeros`` shifts only the zero cells).
Every corrected cell is then ≥ 0.5, so SE(ln ROR) ≤ √8 and no interval reaches 0 or ∞. IC needs
no correction (its +0.5 is part of the estimator; E = 0 gives IC = 0). χ² uses the observed cells;
when a margin is 0 (every case has the drug, or the event, or none has) its denominator is 0 and χ²
is defined as 0: the table holds no contrast. An empty table (N = 0, a stratum without cases) has
a = 0: PRR = ROR = 0, IC = 0 (E := 0), χ² = 0 and no signal.

Fractional counts (the ``expected`` reading of released ranges) go through the same formulas: the
estimates are those of the expected table; their CIs and χ² treat the expected cells as if observed,
so they are approximate there; the IC quantiles use the non-integer gamma shape as is.

Ranges: PRR, ROR ∈ [0, ∞) and finite (0 exactly when a = 0); IC ∈ ℝ, IC025 < IC975; χ² ≥ 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy.special import gammaincinv, ndtri

from signals.errors import SignalsError

__all__ = ["Z95", "MEASURE_COLUMNS", "CRITERIA", "CRITERION_RULES", "CriterionRule", "disproportionality"]

Z95 = float(ndtri(0.975))  # scipy.stats.norm.ppf is ndtri; scipy.stats itself costs 0.5 CPU-s to import
MEASURE_COLUMNS = (
    "prr", "prr_lo", "prr_hi", "ror", "ror_lo", "ror_hi", "ic", "ic025", "ic975", "chi2", "zero_cell",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class CriterionRule:
    """A signal criterion: its column, its rule in words, its minimum case count and its source."""

    column: str
    rule: str
    min_a: int
    source: str


CRITERION_RULES = {
    "evans": CriterionRule("signal_evans", "PRR >= 2, chi2 >= 4, a >= 3", 3, "Evans et al. 2001"),
    "ror": CriterionRule("signal_ror", "ROR025 > 1, a >= 3", 3, "EMA/849944/2016 (EudraVigilance screening)"),
    "ic": CriterionRule("signal_ic", "IC025 > 0", 1, "Noren et al. 2013 (no count floor)"),
    "eb": CriterionRule("signal_eb", "EB05 >= 2", 1, "Szarfman et al. 2002, FDA MGPS (no count floor)"),
}
CRITERIA = {name: rule.column for name, rule in CRITERION_RULES.items()}


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
    never = a <= 0.0  # never reported together: point estimates and lower bounds 0
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
            prr=pl.when(never).then(0.0).otherwise(ln_prr.exp()),
            prr_lo=pl.when(never).then(0.0).otherwise((ln_prr - Z95 * se_prr).exp()),
            prr_hi=(ln_prr + Z95 * se_prr).exp(),
            ror=pl.when(never).then(0.0).otherwise(ln_ror.exp()),
            ror_lo=pl.when(never).then(0.0).otherwise((ln_ror - Z95 * se_ror).exp()),
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
        signal_evans=(pl.col("prr") >= 2) & (pl.col("chi2") >= 4) & (a >= CRITERION_RULES["evans"].min_a),
        signal_ror=(pl.col("ror_lo") > 1) & (a >= CRITERION_RULES["ror"].min_a),
        signal_ic=(pl.col("ic025") > 0) & (a >= CRITERION_RULES["ic"].min_a),
    )
