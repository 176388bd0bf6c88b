"""Random anonymization (RA) and enhanced RA (Yang & Qiao 2010, ``seeds/random_anonymization_yang_qiao2010``).

RA breaks the link between a record's quasi-identifier and its sensitive values by re-drawing part of
the QID from each attribute's own distribution; nothing is generalized, so the release holds points.

* Algorithm 1 (RA): for every record pick one QID attribute Q_i with probability p_i and replace its
  value by a draw from Dist_i, the distribution of Q_i's values in the original data.
  Proposition 7: the probabilistic anonymity Pa(D') is largest when p_i ∝ e^{Entropy(Q_i)}.
* Algorithm 2 (enhanced RA, Section 6): pick k of the m QID attributes uniformly at random and re-draw
  each. The paper proposes it against an attacker who knows some QID associations.

QIDs and their views (decisions):

* age: the released value is a point in years; its *category* (for entropies, Pa and Proposition 12)
  is the leaf of the MeSH age tree holding it (``missing`` is a category). Exact years would give
  larger entropies and a larger Pa; the leaf is the granularity analysts stratify on and gives the
  smaller, conservative Pa.
* sex: ``F``, ``M``, ``*`` (versions disagree) or missing, each a category.
* weight: a point in kg; its category is its band [b·w, (b+1)·w) of ``weight_band_kg`` w (default 10 kg),
  missing a category of its own.

"Randomly generate a new value based on Dist_k" is sampling from the empirical distribution: the new
value is the value of a record drawn uniformly from D (missing included), so the marginal of every
attribute is preserved in expectation at every granularity, points and categories alike.

Probabilistic anonymity (Definition 6): Pa(D') = 1 / P(r(QI) | r'(QI)); the proof of Proposition 7
computes it as the exponential of the entropy of the random replacement (attribute chosen, new value):

    ln Pa(D') = Σ_i p_i (−ln p_i + Entropy(Q_i))                                   (eq. 1)

with Entropy(Q_i) = −Σ_j Freq(c_ij) ln Freq(c_ij) (natural log). The extraction garbles the minus signs
and fraction bars; the form above is the only one for which the Lagrange condition printed after it,
ln(p_i / p_j) = Entropy(Q_i) − Entropy(Q_j) (eq. 2), is the stationarity condition, and it gives eq. 3,
ln Pa = ln m + (1/m) Σ_i Entropy(Q_i), for p_i = 1/m. At the optimum p_i = e^{H_i} / Σ_j e^{H_j},
ln Pa = ln Σ_j e^{H_j}, so Pa_max = Σ_j Diversity_j (Diversity_j = e^{H_j}).

For Algorithm 2 the paper gives no Pa; the same reading (entropy of the uniformly chosen k-subset and
its new values) gives ln Pa = ln C(m, k) + (k/m) Σ_i Entropy(Q_i), which is eq. 3 at k = 1 and
Π_i Diversity_i at k = m.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon.algorithms.types import QIDS, QidHierarchies
from faers_anon.errors import ConfigError
from faers_anon.methods.base import (
    MethodResult,
    case_points,
    check_cases,
    point_release,
    sex_codes,
)

__all__ = [
    "QIDS",  # re-exported: defined in faers_anon.algorithms.types
    "EnhancedRAConfig",
    "RAConfig",
    "enhanced_random_anonymization",
    "expected_relative_difference",
    "probabilistic_anonymity",
    "random_anonymization",
]


def _check_qids(qids: tuple[str, ...], band: float) -> None:
    if not qids or len(set(qids)) != len(qids) or not set(qids) <= set(QIDS):
        raise ConfigError(f"qids must be distinct names among {QIDS}; got {qids!r}")
    if not (isinstance(band, int | float) and math.isfinite(band) and band > 0):
        raise ConfigError(f"weight_band_kg must be a number > 0; got {band!r}")


@dataclass(frozen=True, kw_only=True, slots=True)
class RAConfig:
    """Algorithm 1: one QID attribute per record is re-drawn.

    Args:
        selection: ``"entropy"`` takes p_i ∝ e^{Entropy(Q_i)} (Proposition 7, the largest Pa);
            ``"uniform"`` takes p_i = 1/m (the paper's worked example).
        qids: The QID attributes, a subset of :data:`QIDS`.
        weight_band_kg: Width of the weight categories in kg (> 0).
    """

    selection: Literal["entropy", "uniform"] = "entropy"
    qids: tuple[str, ...] = QIDS
    weight_band_kg: float = 10.0

    def __post_init__(self) -> None:
        if self.selection not in ("entropy", "uniform"):
            raise ConfigError(f"selection must be 'entropy' or 'uniform'; got {self.selection!r}")
        _check_qids(self.qids, self.weight_band_kg)

    def describe(self) -> dict[str, Any]:
        """Parameters as JSON-serializable data."""
        return {"selection": self.selection, "qids": list(self.qids), "weight_band_kg": self.weight_band_kg}


@dataclass(frozen=True, kw_only=True, slots=True)
class EnhancedRAConfig:
    """Algorithm 2: k QID attributes per record, chosen uniformly, are re-drawn.

    Args:
        k: Attributes re-drawn per record, 1 <= k <= len(qids) (k = 1 is Algorithm 1 with p_i = 1/m).
        qids: The QID attributes, a subset of :data:`QIDS`.
        weight_band_kg: Width of the weight categories in kg (> 0).
    """

    k: int = 2
    qids: tuple[str, ...] = QIDS
    weight_band_kg: float = 10.0

    def __post_init__(self) -> None:
        _check_qids(self.qids, self.weight_band_kg)
        if isinstance(self.k, bool) or not isinstance(self.k, int) or not 1 <= self.k <= len(self.qids):
            raise ConfigError(
                f"k must be an integer in 1..{len(self.qids)} (the number of qids); got {self.k!r}"
            )

    def describe(self) -> dict[str, Any]:
        """Parameters as JSON-serializable data."""
        return {"k": self.k, "qids": list(self.qids), "weight_band_kg": self.weight_band_kg}


@dataclass(frozen=True, slots=True)
class _View:
    """Per attribute: released values (float: years, sex code, kg) and category codes 0..J-1."""

    values: dict[str, NDArray[np.float64]]
    categories: dict[str, NDArray[np.int64]]
    labels: dict[str, list[str]]


def _band_label(b: int, width: float) -> str:
    return "missing" if b < 0 else f"[{b * width:g}, {(b + 1) * width:g})"


def _views(cases: pl.DataFrame, qids: tuple[str, ...], band: float, trees: QidHierarchies) -> _View:
    age, wt = case_points(cases)
    sex = sex_codes(cases, trees.sex_tree).astype(np.float64)
    raw = {
        "age": (age, trees.age_tree.leaf_of(age), lambda c: str(trees.age_tree.names[c])),
        "sex": (sex, sex.astype(np.int64), lambda c: str(trees.sex_tree.names[c])),
        "weight": (
            wt,
            np.where(np.isnan(wt), -1, np.floor(np.nan_to_num(wt) / band)).astype(np.int64),
            lambda c: _band_label(c, band),
        ),
    }
    values, categories, labels = {}, {}, {}
    for q in qids:
        v, c, name = raw[q]
        uniq, dense = np.unique(c, return_inverse=True)
        values[q], categories[q] = v, dense.ravel().astype(np.int64)
        labels[q] = [name(int(u)) for u in uniq]
    return _View(values, categories, labels)


def _entropy(codes: NDArray[np.int64]) -> float:
    """Entropy(Q_i) = −Σ_j Freq(c_ij) ln Freq(c_ij) in nats; 0 for an empty or constant attribute."""
    if codes.size == 0:
        return 0.0
    f = np.bincount(codes) / codes.size
    f = f[f > 0]
    return float(-(f * np.log(f)).sum())


def _selection(entropies: NDArray[np.float64], selection: str) -> NDArray[np.float64]:
    """p_i of Algorithm 1: ∝ e^{H_i} (Proposition 7, computed stably) or 1/m."""
    if selection == "uniform":
        return np.full(entropies.size, 1.0 / entropies.size)
    w = np.exp(entropies - entropies.max())
    return w / w.sum()


def probabilistic_anonymity(
    entropies: NDArray[np.float64], *, p: NDArray[np.float64] | None = None, k: int = 1
) -> float:
    """Pa(D') of the module docstring: eq. 1 for Algorithm 1 (given p), the k-subset form for Algorithm 2.

    Args:
        entropies: Entropy(Q_i) in nats, shape (m,).
        p: Selection probabilities of Algorithm 1 (sum 1); required when k == 1.
        k: Attributes re-drawn per record (Algorithm 2 when > 1, uniform k-subsets).

    Returns:
        Pa(D') >= 1 (1 only for m = 1 and a constant attribute); 1/Pa is the user's confidence in guessing
        a record's original QID.
    """
    h = np.asarray(entropies, dtype=np.float64)
    if k == 1:
        if p is None:
            raise ConfigError("probabilistic_anonymity: k = 1 needs the selection probabilities p")
        q = np.asarray(p, dtype=np.float64)
        pos = q > 0
        return float(math.exp(float((q[pos] * (-np.log(q[pos]) + h[pos])).sum())))
    m = h.size
    return float(math.exp(math.log(math.comb(m, k)) + k / m * float(h.sum())))


def _redraw(
    values: NDArray[np.float64], rows: NDArray[np.bool_], rng: np.random.Generator
) -> NDArray[np.float64]:
    """Replace ``values[rows]`` by values of records drawn uniformly from all n (the empirical Dist_i)."""
    out = values.copy()
    donors = rng.integers(0, values.size, size=int(rows.sum()))
    out[rows] = values[donors]
    return out


def _run(
    cases: pl.DataFrame,
    *,
    qids: tuple[str, ...],
    band: float,
    k: int,
    selection: str,
    rng: np.random.Generator,
    trees: QidHierarchies | None,
    name: str,
    parameters: dict[str, Any],
) -> MethodResult:
    start = time.perf_counter()
    check_cases(cases, name)
    tr = trees or QidHierarchies.default()
    view = _views(cases, qids, band, tr)
    m, n = len(qids), cases.height
    h = np.array([_entropy(view.categories[q]) for q in qids])
    if k == 1:
        p = _selection(h, selection)
        chosen = rng.choice(m, size=n, p=p) if n else np.zeros(0, dtype=np.int64)
        mask = chosen[:, None] == np.arange(m)[None, :]
    else:
        p = np.full(m, k / m)
        order = np.argsort(rng.random((n, m)), axis=1)
        mask = np.zeros((n, m), dtype=bool)
        np.put_along_axis(mask, order[:, :k], True, axis=1)
    released = {q: _redraw(view.values[q], mask[:, i], rng) for i, q in enumerate(qids)}
    age, wt = case_points(cases)
    sex = sex_codes(cases, tr.sex_tree)
    age = released.get("age", age)
    wt = released.get("weight", wt)
    sex = released["sex"].astype(np.int64) if "sex" in released else sex
    changed = np.zeros(n, dtype=bool)
    for q in qids:
        before, after = view.values[q], released[q]
        changed |= ~((before == after) | (np.isnan(before) & np.isnan(after)))
    pa = probabilistic_anonymity(h, p=p if k == 1 else None, k=k)
    privacy: dict[str, Any] = {
        "probabilistic_anonymity": pa,
        "inference_probability": 1.0 / pa,
        "probabilistic_anonymity_max": float(np.exp(h).sum()) if k == 1 else pa,
        "changed_share": float(changed.mean()) if n else 0.0,
        "entropy": {q: float(x) for q, x in zip(qids, h, strict=True)},
        "redraw_probability": {q: float(x) for q, x in zip(qids, p, strict=True)},
    }
    release = point_release(cases["caseid"].to_numpy().astype(np.int64), age, sex, wt, tr)
    return MethodResult(name, release, privacy, parameters, time.perf_counter() - start)


def random_anonymization(
    cases: pl.DataFrame, /, *, config: RAConfig, rng: np.random.Generator, trees: QidHierarchies | None = None
) -> MethodResult:
    """Algorithm 1 of Yang & Qiao 2010 on a cases frame (module docstring).

    Args:
        cases: The cases.parquet frame (one row per caseid).
        config: Selection rule, QIDs, weight band width.
        rng: The only source of randomness.
        trees: Hierarchies (default :meth:`QidHierarchies.default`).

    Returns:
        A point release; privacy: ``probabilistic_anonymity`` (Pa of eq. 1 for the p used),
        ``probabilistic_anonymity_max`` (Σ_i e^{H_i}, Proposition 7), ``inference_probability`` (1/Pa),
        ``changed_share`` (cases whose released QID differs; a re-draw may return the same value),
        ``entropy`` and ``redraw_probability`` per attribute.
    """
    return _run(
        cases,
        qids=config.qids,
        band=config.weight_band_kg,
        k=1,
        selection=config.selection,
        rng=rng,
        trees=trees,
        name="ra",
        parameters=config.describe(),
    )


def enhanced_random_anonymization(
    cases: pl.DataFrame,
    /,
    *,
    config: EnhancedRAConfig,
    rng: np.random.Generator,
    trees: QidHierarchies | None = None,
) -> MethodResult:
    """Algorithm 2 of Yang & Qiao 2010 (k attributes per record, chosen uniformly); see
    :func:`random_anonymization` for the arguments and figures (``redraw_probability`` is k/m here and
    ``probabilistic_anonymity_max`` equals Pa: there is no selection to optimize)."""
    return _run(
        cases,
        qids=config.qids,
        band=config.weight_band_kg,
        k=config.k,
        selection="uniform",
        rng=rng,
        trees=trees,
        name="enhanced-ra",
        parameters=config.describe(),
    )


def expected_relative_difference(
    cases: pl.DataFrame,
    combination: Mapping[str, str],
    /,
    *,
    config: RAConfig | None = None,
    trees: QidHierarchies | None = None,
) -> float:
    """E[R(q)] of Algorithm 1 for one value combination q (Yang & Qiao 2010, Proposition 12, eq. 10).

    R(q) = (supp_D'(q) − supp_D(q)) / supp_D(q). A record keeps q's values unless its re-drawn attribute i
    is one of q's, in which case it matches q when it matched q∖q_i and the new value is q_i, so

        E[R(q)] = Σ_{i ∈ q} p_i · (supp(q∖q_i)·P(Q_i = q_i) / supp(q) − 1) = Σ_{i ∈ q} p_i (1/lift_i − 1)

    with lift_i = lift(q_i, q∖q_i) = supp(q) / (supp(q∖q_i)·P(Q_i = q_i)) and supp(∅) = 1. The printed
    eq. 10 (with p_i = 1/m) has the same value; its middle step is garbled. The relative bias is
    B(q) = |E[R(q)]|: 0 for a single value (lift 1), growing with |q| when values are associated.

    Args:
        cases: The original cases frame.
        combination: Attribute → category label (age: MeSH leaf name; sex: ``F``, ``M``, ``*``,
            ``missing``; weight: band label like ``"[60, 70)"`` or ``missing``).
        config: The RA configuration whose p_i are used (default :class:`RAConfig`).
        trees: Hierarchies (default :meth:`QidHierarchies.default`).

    Raises:
        ConfigError: an attribute outside ``config.qids``, an unknown label, or supp(q) = 0.
    """
    cfg = config or RAConfig()
    view = _views(cases, cfg.qids, cfg.weight_band_kg, trees or QidHierarchies.default())
    p = _selection(np.array([_entropy(view.categories[q]) for q in cfg.qids]), cfg.selection)
    hit: dict[str, NDArray[np.bool_]] = {}
    for attr, label in combination.items():
        if attr not in cfg.qids or label not in view.labels[attr]:
            raise ConfigError(f"expected_relative_difference: unknown attribute or value {attr}={label!r}")
        hit[attr] = view.categories[attr] == view.labels[attr].index(label)
    n = cases.height
    both = np.logical_and.reduce(list(hit.values()))
    supp = both.sum() / n
    if supp == 0:
        raise ConfigError("expected_relative_difference: the combination does not occur (supp = 0)")
    total = 0.0
    for i, attr in enumerate(cfg.qids):
        if attr not in hit:
            continue
        rest = [v for a, v in hit.items() if a != attr]
        supp_rest = np.logical_and.reduce(rest).sum() / n if rest else 1.0
        total += p[i] * (supp_rest * hit[attr].mean() / supp - 1.0)
    return float(total)
