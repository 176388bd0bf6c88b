"""Fisher's exact test (one-sided, greater) and Benjamini–Hochberg q-values (signals.fisher)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy.stats import fisher_exact
from statsmodels.stats.multitest import multipletests

from signals import bh_qvalues, fisher_greater
from signals.fisher import with_fisher


def test_known_table() -> None:
    # [[3, 1], [1, 3]]: P(X >= 3) = (C(4,3)C(4,1) + C(4,4)C(4,0)) / C(8,4) = 17/70
    p = fisher_greater(np.array([3.0]), np.array([1.0]), np.array([1.0]), np.array([3.0]))
    assert p[0] == pytest.approx(17 / 70, rel=1e-12)


def test_agrees_with_scipy_fisher_exact() -> None:
    rng = np.random.default_rng(5)
    cells = rng.integers(0, 40, size=(4, 300)).astype(float)
    cells[3] *= 50  # large d, as in FAERS
    p = fisher_greater(*cells)
    for i in range(cells.shape[1]):
        a, b, c, d = cells[:, i]
        expected = fisher_exact([[a, b], [c, d]], alternative="greater").pvalue
        assert p[i] == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_zero_cells_and_fractions_are_defined() -> None:
    # a = 0: P(X >= 0) = 1; b = c = d = 0 with a > 0: the only table there is, p = 1; 2.4 rounds to 2
    p = fisher_greater(np.array([0.0, 4.0, 2.4]), np.array([5.0, 0.0, 1.0]), np.array([3.0, 0.0, 1.0]),
                       np.array([9.0, 0.0, 3.0]))  # fmt: skip
    assert p[:2].tolist() == [1.0, 1.0]
    assert p[2] == pytest.approx(fisher_exact([[2, 1], [1, 3]], alternative="greater").pvalue)


def test_benjamini_hochberg_by_hand() -> None:
    # sorted 0.01, 0.03, 0.04, 0.5 -> 0.04, 0.06, 0.0533, 0.5 -> running min from the top
    q = bh_qvalues(np.array([0.01, 0.04, 0.03, 0.5]))
    assert q == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.5])


def test_q_per_family_agrees_with_statsmodels() -> None:
    rng = np.random.default_rng(2)
    frame = pl.DataFrame(
        {
            "stratum": rng.choice(["all", "sex=F"], 400),
            "a": rng.integers(0, 8, 400).astype(float),
            "b": rng.integers(0, 30, 400).astype(float),
            "c": rng.integers(0, 30, 400).astype(float),
            "d": rng.integers(0, 900, 400).astype(float),
        }
    )
    out = with_fisher(frame, by=["stratum"])
    assert out.select("stratum", "a").equals(frame.select("stratum", "a"))  # row order kept
    for stratum in ("all", "sex=F"):
        part = out.filter(pl.col("stratum") == stratum)
        expected = multipletests(part.get_column("fisher_p").to_numpy(), method="fdr_bh")[1]
        assert part.get_column("fisher_q").to_numpy() == pytest.approx(expected)
    assert (out.get_column("fisher_q") >= out.get_column("fisher_p")).all()


def test_faers_sized_margins_agree_with_scipy_hypergeom() -> None:
    # N = 400,000 and margins up to 40,000: both series (rising above the mode, falling below it)
    # run for hundreds of terms; scipy's own sf is the reference
    from scipy.stats import hypergeom

    rng = np.random.default_rng(9)
    n = 400_000.0
    nd, ne = rng.integers(1, 20_000, 2_000).astype(float), rng.integers(1, 40_000, 2_000).astype(float)
    a = np.minimum(rng.poisson(nd * ne / n * rng.gamma(1.0, 1.5, 2_000)), np.minimum(nd, ne)).astype(float)
    p = fisher_greater(a, nd - a, ne - a, n - nd - ne + a)
    expected = np.where(a <= 0, 1.0, hypergeom.sf(a - 1, n, ne, nd))
    assert p == pytest.approx(expected, rel=1e-7, abs=1e-12)
    assert ((a > nd * ne / n) & (p < 0.5)).any() and ((a < nd * ne / n) & (p > 0.5)).any()  # both sides
