"""Multivariate equi-depth (MEDS) and equi-width (MEWS) swapping of age and weight.

Source: "Multivariate equi-width data swapping for private data publication" (``seeds/
equi_width_swapping_mews.txt``; the extraction loses every formula, Algorithms 1-2 and the lemmas, so
each step below is reconstructed from the surrounding text and says how).

Swapping set S = {age, weight}: the two values of a case move together to another case of the same
bin, so the joint distribution of (age, weight), and every statistic of it, is released unchanged
("value-invariant"); only the links to the rest of the record (sex, drugs, reactions) are broken. Sex
is not numeric and is not swapped. Cases missing one attribute are swapped on the other alone, among
cases with the same missing pattern; cases missing both are untouched. Values are compared on the
range-normalized scale z = (x − min) / (max − min) of all known values (the paper's experiments use
a common scale, the binormal clipped to [−2, 2]).

* MEDS (Section 3.1, Algorithm 1): bins of k tuples ("swapping distance" k = depth), formed by
  clustering: the tuple x_r farthest from the rest and its k − 1 nearest, then x_s farthest from x_r and
  its k − 1 nearest, repeated. Departure: the paper takes the exact most distant pair, O(n²) per step
  and O(n³/k) in all; we take MDAV's linear-time choice (x_r farthest from the centroid, x_s farthest
  from x_r), O(n²/k), the standard reading of that heuristic at 100k cases.
* MEWS (Section 3.2, Algorithm 2): an equi-width grid with cells of width t·(max − min) on each
  attribute (t in (0, 1]); the non-empty cells are the bins and their number is the partition degree d
  (Definition 1). The "iteration step" whose worst case the paper states (d − 1 bins of one tuple) is read
  as: a bin of one tuple cannot swap, so it joins the nearest non-empty bin (Chebyshev distance between
  cells); its value change may then exceed t (counted as ``merged_tuples``).
* Within a bin, values move along a uniformly random cycle through all its tuples, so no tuple keeps its
  own values (a random permutation would leave one fixed point per bin on average, a disclosure).
* Pruning scheme (Section 3.2). Step 1: t_ub = ``max_width`` (utility: no value moves more than t_ub of
  its range). Step 2: t_lb is the smallest width on the ladder t_ub · 2^(−j/4), j = 0..candidates − 1, at
  which "each non-empty bin holds at least two tuples", except a share ``outlier_share`` of isolated
  tuples that the iteration step merges (departure: with one isolated outlier the strict rule has no
  solution on real data). Step 3: ladder widths in [t_lb, t_ub] that give "similar" partitionings, the
  same partition degree d and the same minimal depth N* of the minimal depth bin (MDB), are kept once.
  The q_ew widths left are the candidates; unless ``width`` is given one is drawn with ``rng``, so the
  swapping distance is not published. MEDS uses the depths ``min_depth..max_depth`` likewise (q_ed).

Disclosure (Section 4): P = max_i Pr(X = x_i), the probability of revealing the swapping pair of the
most exposed tuple. Lemmas 1-2 are lost; we compute P exactly for this attacker: knowing a target's
true (age, weight), and the method, he takes the bin of that value under one candidate partitioning
(bins are functions of the value multiset, which the release preserves) and guesses the target's record
uniformly among the other tuples of that bin. Under the true partitioning he succeeds with
1/(N_b − 1); under a wrong one with 1/(N_j − 1) if the target's record is still in his bin, else 0.
``swap_disclosure`` averages over the q candidates (partitioning hidden, the paper's setting: "only
relative to the number of possible partitionings"); ``swap_disclosure_known`` is max 1/(N_b − 1) =
1/(N* − 1) when the partitioning is known. The two are not ordered: averaging over candidates lowers
most cases' risk, but a finer candidate can by chance keep a case with its swap partner in a small bin,
so the most exposed case (the max) may fare worse than under the known partitioning; compare the means.
Cases whose stratum has one tuple cannot be swapped; they are counted in ``unswapped_cases`` and left
out of P.

Utility (Section 5.2): correlation bias Δρ_ij = |ρ_ij − ρ'_ij| over the pairs of case variables (age,
weight, sex = F, numbers of indications, reactions and drugs), on cases with all of them known;
``correlation_bias`` is its mean over pairs and ``correlation_bias_std`` its standard deviation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon.algorithms.types import QidHierarchies
from faers_anon.errors import ConfigError
from faers_anon.methods._swap_kernels import cyclic_sources, grid_bins, mdav_labels, pair_risk
from faers_anon.methods.base import MethodResult, case_points, check_cases, point_release, sex_codes

__all__ = [
    "EquiDepthConfig",
    "EquiWidthConfig",
    "correlation_bias",
    "equi_depth_swapping",
    "equi_width_swapping",
    "grid_bins",
]

_LIST_VARIABLES = ("indications", "reactions", "drug_keys")


@dataclass(frozen=True, kw_only=True, slots=True)
class EquiWidthConfig:
    """MEWS parameters.

    Args:
        width: Bin width t as a fraction of each attribute's range, in (0, max_width]; None draws it from
            the pruned candidates (the swapping distance stays hidden).
        max_width: t_ub of the pruning scheme, in (0, 1].
        candidates: Length of the width ladder t_ub · 2^(−j/4), >= 1.
        outlier_share: Share of tuples allowed in one-tuple bins at t_lb, in [0, 1).
    """

    width: float | None = None
    max_width: float = 0.1
    candidates: int = 12
    outlier_share: float = 0.001

    def __post_init__(self) -> None:
        if not (isinstance(self.max_width, int | float) and 0 < self.max_width <= 1):
            raise ConfigError(f"max_width must be a number in (0, 1]; got {self.max_width!r}")
        if self.width is not None and not (
            isinstance(self.width, int | float) and 0 < self.width <= self.max_width
        ):
            raise ConfigError(
                f"width must be None or a number in (0, max_width={self.max_width}]; got {self.width!r}"
            )
        if isinstance(self.candidates, bool) or not isinstance(self.candidates, int) or self.candidates < 1:
            raise ConfigError(f"candidates must be an integer >= 1; got {self.candidates!r}")
        if not (isinstance(self.outlier_share, int | float) and 0 <= self.outlier_share < 1):
            raise ConfigError(f"outlier_share must be a number in [0, 1); got {self.outlier_share!r}")

    def describe(self) -> dict[str, Any]:
        """Parameters as JSON-serializable data."""
        return {
            "width": self.width,
            "max_width": self.max_width,
            "candidates": self.candidates,
            "outlier_share": self.outlier_share,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class EquiDepthConfig:
    """MEDS parameters.

    Args:
        depth: Swapping distance k (tuples per bin; bins hold k..2k−1), in [min_depth, max_depth]; None
            draws it from that range.
        min_depth: Smallest candidate depth, >= 2 (a bin must hold two tuples to swap).
        max_depth: Largest candidate depth (utility bound), >= min_depth.
    """

    depth: int | None = None
    min_depth: int = 3
    max_depth: int = 8

    def __post_init__(self) -> None:
        for name in ("min_depth", "max_depth"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 2:
                raise ConfigError(f"{name} must be an integer >= 2; got {v!r}")
        if self.max_depth < self.min_depth:
            raise ConfigError(f"max_depth must be >= min_depth={self.min_depth}; got {self.max_depth!r}")
        d = self.depth
        if d is not None and (
            isinstance(d, bool) or not isinstance(d, int) or not self.min_depth <= d <= self.max_depth
        ):
            raise ConfigError(
                f"depth must be None or an integer in [{self.min_depth}, {self.max_depth}]; got {d!r}"
            )

    def describe(self) -> dict[str, Any]:
        """Parameters as JSON-serializable data."""
        return {"depth": self.depth, "min_depth": self.min_depth, "max_depth": self.max_depth}


def _normalized(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """z = (x − min) / (max − min) over the known values; 0 for a constant attribute; NaN stays NaN."""
    known = x[~np.isnan(x)]
    if known.size == 0:
        return x.copy()
    span = float(known.max() - known.min())
    return (x - known.min()) / span if span > 0 else np.where(np.isnan(x), np.nan, 0.0)


def _strata(
    age: NDArray[np.float64], wt: NDArray[np.float64]
) -> list[tuple[NDArray[np.int64], NDArray[np.float64]]]:
    """(rows, z-values of the known swapping attributes) per missing pattern with at least one tuple."""
    za, zw = _normalized(age), _normalized(wt)
    ka, kw = ~np.isnan(age), ~np.isnan(wt)
    out = []
    for mask, cols in ((ka & kw, (za, zw)), (ka & ~kw, (za,)), (~ka & kw, (zw,))):
        rows = np.flatnonzero(mask)
        if rows.size:
            out.append((rows, np.column_stack([c[rows] for c in cols])))
    return out


def correlation_bias(before: NDArray[np.float64], after: NDArray[np.float64]) -> tuple[float, float]:
    """Mean and standard deviation over variable pairs i < j of |ρ_ij − ρ'_ij| (Section 5.2).

    Args:
        before: Original variables, shape (n, v), rows with NaN ignored (in either array).
        after: Released variables, same shape.

    Returns:
        (mean, std); pairs involving a constant variable (ρ undefined) are skipped; (0, 0) with no pair.
    """
    ok = ~(np.isnan(before).any(axis=1) | np.isnan(after).any(axis=1))
    a, b = before[ok], after[ok]
    if a.shape[0] < 2:
        return 0.0, 0.0
    keep = (a.std(axis=0) > 0) & (b.std(axis=0) > 0)
    a, b = a[:, keep], b[:, keep]
    if a.shape[1] < 2:
        return 0.0, 0.0
    iu = np.triu_indices(a.shape[1], 1)
    rho_a: NDArray[np.float64] = np.atleast_2d(np.corrcoef(a, rowvar=False))
    rho_b: NDArray[np.float64] = np.atleast_2d(np.corrcoef(b, rowvar=False))
    diff = np.abs(rho_a[iu] - rho_b[iu])
    return float(diff.mean()), float(diff.std())


def _variables(
    cases: pl.DataFrame, age: NDArray[np.float64], wt: NDArray[np.float64], sex: NDArray[np.float64]
) -> NDArray[np.float64]:
    cols = [age, wt, sex]
    for name in _LIST_VARIABLES:
        if name in cases.columns:
            cols.append(cases[name].list.len().fill_null(0).to_numpy().astype(np.float64))
    return np.column_stack(cols)


Partitioner = Callable[[NDArray[np.float64]], NDArray[np.int64]]


def _grid_partitioner(t: float) -> Partitioner:
    def partition(z: NDArray[np.float64]) -> NDArray[np.int64]:
        return grid_bins(z, t)[0]

    return partition


def _mdav_partitioner(k: int) -> Partitioner:
    def partition(z: NDArray[np.float64]) -> NDArray[np.int64]:
        return np.asarray(mdav_labels(np.ascontiguousarray(z), k), dtype=np.int64)

    return partition


def _swap(
    cases: pl.DataFrame,
    *,
    name: str,
    parameters: dict[str, Any],
    rng: np.random.Generator,
    trees: QidHierarchies | None,
    candidates: list[Partitioner],
    chosen: int,
    extra: dict[str, Any],
    start: float,
) -> MethodResult:
    """Swap within the bins of candidate ``chosen``; disclosure over all candidates (module docstring)."""
    tr = trees or QidHierarchies.default()
    age, wt = case_points(cases)
    new_age, new_wt = age.copy(), wt.copy()
    risk_hidden, risk_known, sizes, degree = [], [], [], 0
    unswapped = 0
    for rows, z in _strata(age, wt):
        every = [partition(z) for partition in candidates]
        labels = every[chosen]
        src = cyclic_sources(labels, rng)
        new_age[rows], new_wt[rows] = age[rows][src], wt[rows][src]
        size = np.bincount(labels)
        degree += size.size
        if rows.size < 2:
            unswapped += rows.size
            continue
        sizes.append(int(size.min()))
        risk_known.append(pair_risk(labels, src))
        risk_hidden.append(np.mean([pair_risk(lab, src) for lab in every], axis=0))
    sex = sex_codes(cases, tr.sex_tree)
    sex_f = np.where(sex == tr.sex_tree.code("F"), 1.0, np.where(sex == tr.sex_tree.code("M"), 0.0, np.nan))
    bias, bias_sd = correlation_bias(
        _variables(cases, age, wt, sex_f), _variables(cases, new_age, new_wt, sex_f)
    )
    hidden = np.concatenate(risk_hidden) if risk_hidden else np.zeros(1)
    known = np.concatenate(risk_known) if risk_known else np.zeros(1)
    privacy: dict[str, Any] = {
        "swap_disclosure": float(hidden.max()),
        "swap_disclosure_mean": float(hidden.mean()),
        "swap_disclosure_known": float(known.max()),
        "swap_disclosure_known_mean": float(known.mean()),
        "partitionings": len(candidates),
        "partition_degree": degree,
        "min_bin_depth": min(sizes, default=0),
        "unswapped_cases": unswapped,
        "correlation_bias": bias,
        "correlation_bias_std": bias_sd,
        **extra,
    }
    release = point_release(cases["caseid"].to_numpy().astype(np.int64), new_age, sex, new_wt, tr)
    return MethodResult(name, release, privacy, parameters, time.perf_counter() - start)


def equi_width_swapping(
    cases: pl.DataFrame,
    /,
    *,
    config: EquiWidthConfig,
    rng: np.random.Generator,
    trees: QidHierarchies | None = None,
) -> MethodResult:
    """MEWS on a cases frame (module docstring).

    Returns:
        A point release (sex unchanged; age and weight swapped together). Privacy: ``swap_disclosure``
        (P, partitioning hidden among the candidates), ``swap_disclosure_mean``, ``swap_disclosure_known``
        (1/(N* − 1)) and ``swap_disclosure_known_mean``, ``partitionings`` (q_ew), ``partition_degree``
        (d), ``min_bin_depth`` (N*), ``width``, ``width_lower`` (t_lb), ``width_upper`` (t_ub),
        ``merged_tuples``, ``unswapped_cases``, ``correlation_bias``, ``correlation_bias_std``.
    """
    start = time.perf_counter()
    check_cases(cases, "mews")
    age, wt = case_points(cases)
    strata = _strata(age, wt)
    n_swap = sum(rows.size for rows, _ in strata)
    ladder = [config.max_width * 2 ** (-j / 4) for j in range(config.candidates)]
    stats = []
    for t in ladder:
        runs = [grid_bins(z, t) for _, z in strata]
        lonely = sum(r[1] for r in runs)
        depth = min((int(np.bincount(r[0]).min()) for r in runs), default=0)
        stats.append((t, lonely, depth, sum(int(r[0].max()) + 1 for r in runs)))
    admissible = [s for s in stats if s[1] <= config.outlier_share * n_swap] or stats[:1]
    t_lb = min(s[0] for s in admissible)
    kept: dict[tuple[int, int], float] = {}
    for t, _, depth, d in stats:
        if t >= t_lb and (depth, d) not in kept:
            kept[(depth, d)] = t
    widths = sorted(kept.values(), reverse=True)
    if config.width is not None and config.width not in widths:
        widths.append(config.width)
    chosen = widths.index(config.width) if config.width is not None else int(rng.integers(len(widths)))
    t_used = widths[chosen]
    merged = sum(grid_bins(z, t_used)[1] for _, z in strata)
    extra = {"width": t_used, "width_lower": t_lb, "width_upper": config.max_width, "merged_tuples": merged}
    partitioners = [_grid_partitioner(t) for t in widths]
    return _swap(
        cases,
        name="mews",
        parameters=config.describe(),
        rng=rng,
        trees=trees,
        candidates=partitioners,
        chosen=chosen,
        extra=extra,
        start=start,
    )


def equi_depth_swapping(
    cases: pl.DataFrame,
    /,
    *,
    config: EquiDepthConfig,
    rng: np.random.Generator,
    trees: QidHierarchies | None = None,
) -> MethodResult:
    """MEDS on a cases frame (module docstring); MDAV bins of k..2k−1 tuples.

    Returns:
        A point release; privacy as :func:`equi_width_swapping` with ``depth`` (k used) and
        ``partitionings`` = q_ed = max_depth − min_depth + 1.
    """
    start = time.perf_counter()
    check_cases(cases, "meds")
    depths = list(range(config.min_depth, config.max_depth + 1))
    chosen = depths.index(config.depth) if config.depth is not None else int(rng.integers(len(depths)))
    partitioners = [_mdav_partitioner(k) for k in depths]
    return _swap(
        cases,
        name="meds",
        parameters=config.describe(),
        rng=rng,
        trees=trees,
        candidates=partitioners,
        chosen=chosen,
        extra={"depth": depths[chosen]},
        start=start,
    )
