"""Numba group state of the clustering kernel: IL(g), ΔIL(g, r), PR(g, r) and validity.

Formulas (Lin, Yang & Wang 2016, Definitions 4–5, eq. 1–7; SPEC §5–§6), with |g| in distinct cases:

    L(g)  = Σ_j h(LCA_j(g)) / h(T_j) + W(g) + Σ_f F_f(g)   (loss per case; IL(g) = |g| · L(g);
                                                            F_f: field QIDs, :mod:`._fields`)
    W(g)  = (max hi − min lo) / (max N − min N)  all cases known on weight
          = 0                                      all missing (released missing: nothing generalized)
          = 1                                      a mix of missing and known (full loss, SPEC §5)
    ΔIL(g, r) = (|g| + 1) · L(g ∪ {r}) − |g| · L(g)  ≥ 0 (L only grows)
    PR(g, r)  = 1 + Σ_{s ∈ S_r} σ_s(g) / (η_s − σ_s(g)),  η_s = max{1, ⌊max{k, |g|+1} · θ_s⌋}, or ∞
                when some σ_s(g) + P(s | r) > η_s (the model's risk term; 1 when the model has none;
                the floor of 1 is :data:`faers_anon.models.ms_k_theta.ETA_FLOOR`)
    ΔIL'(g, r) = ΔIL · PR (∞ when PR = ∞, also when ΔIL = 0)

Validity is the model's :class:`~faers_anon.models.base.Requirements`, packed in ``req``:
``[min_size, size_in_rows, value_caps, caps_in_rows, eta_risk, k]``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from faers_anon._numba_cache import njit
from faers_anon.algorithms._fields import add_fields, fields_loss
from faers_anon.algorithms._pool import Cases, Tables

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]

TOL = 1e-9  # faers_anon.models.base.CONF_TOLERANCE; a numba global must be a literal
FLOOR_SLACK = 1e-9

REQ_MIN, REQ_ROWS, REQ_CAPS, REQ_CAPS_ROWS, REQ_RISK, REQ_K = 0, 1, 2, 3, 4, 5


class Group(NamedTuple):
    """A group under construction: categorical LCAs, weight state, field state, size and σ_s scratch.

    ``w`` = [known count, missing count, min lo, max hi]; ``fs[f]`` = [known, missing, level, rep
    pattern] of field QID f (:mod:`._fields`); ``size`` = [cases, rows]; ``sigma`` and ``seen`` are
    indexed by value id and reset through the ``touched`` list (``ntouched[0]`` long).
    """

    cat: I64
    w: F64
    fs: I64
    size: I64
    sigma: F64
    seen: NDArray[np.bool_]
    touched: I64
    ntouched: I64


def new_group(n_cat: int, n_values: int, n_fields: int = 0) -> Group:
    """An empty group for C categorical attributes, V value ids and F field QIDs."""
    return Group(
        np.zeros(n_cat, np.int64),
        np.zeros(4, np.float64),
        np.zeros((n_fields, 4), np.int64),
        np.zeros(2, np.int64),
        np.zeros(n_values, np.float64),
        np.zeros(n_values, np.bool_),
        np.zeros(n_values, np.int64),
        np.zeros(1, np.int64),
    )


@njit(cache=True, inline="always")  # type: ignore[misc]
def weight_term(known: float, missing: float, lo: float, hi: float, inv_r: float) -> float:
    """W(g) from the weight state (see the module docstring); 0 for an empty group."""
    if known > 0 and missing > 0:
        return 1.0
    if known == 0:
        return 0.0
    return (hi - lo) * inv_r


@njit(cache=True)  # type: ignore[misc]
def loss_per_case(tab: Tables, cat: I64, w: F64, fs: I64) -> float:
    """L(g) = Σ_j h(LCA_j) / h(T_j) + W(g) + Σ_f F_f(g)."""
    total = weight_term(w[0], w[1], w[2], w[3], tab.inv_range[0]) + fields_loss(tab.f_off, tab.f_height, fs)
    for j in range(cat.shape[0]):
        total += tab.hnorm[j, cat[j]]
    return total


@njit(cache=True)  # type: ignore[misc]
def reset(g: Group) -> None:
    """Empty the group (O(values touched))."""
    for t in range(g.ntouched[0]):
        v = g.touched[t]
        g.sigma[v] = 0.0
        g.seen[v] = False
    g.ntouched[0] = 0
    g.size[0] = 0
    g.size[1] = 0
    g.w[:] = 0.0
    g.fs[:] = 0


@njit(cache=True, inline="always")  # type: ignore[misc]
def add_case(
    g: Group,
    tab: Tables,
    cases: Cases,
    case: int,
    cat: I64,
    wmiss: bool,
    lo: float,
    hi: float,
    pat_fcode: I64,
    p: int,
) -> None:
    """Add a case with categorical nodes ``cat``, weight [lo, hi] (or missing) and the field codes of
    pattern p to the group."""
    add_fields(tab.f_off, tab.f_height, g.fs, pat_fcode, p)
    first = g.size[0] == 0
    for j in range(cat.shape[0]):
        g.cat[j] = cat[j] if first else tab.lca[j, g.cat[j], cat[j]]
    if wmiss:
        g.w[1] += 1.0
    elif g.w[0] == 0:
        g.w[0] = 1.0
        g.w[2] = lo
        g.w[3] = hi
    else:
        g.w[0] += 1.0
        g.w[2] = min(g.w[2], lo)
        g.w[3] = max(g.w[3], hi)
    g.size[0] += 1
    g.size[1] += cases.rows[case]
    for e in range(cases.val_ptr[case], cases.val_ptr[case + 1]):
        v = cases.val_id[e]
        if not g.seen[v]:
            g.seen[v] = True
            g.touched[g.ntouched[0]] = v
            g.ntouched[0] += 1
        g.sigma[v] += cases.val_p[e]


@njit(cache=True, inline="always")  # type: ignore[misc]
def ratio_risk(
    sigma: F64, size: int, val_ptr: I64, val_id: NDArray[np.int32], val_p: F64, theta: F64, case: int
) -> float:
    """PR(g, r) of the η-ratio term from g's σ (by value id) and η's size max{k, |g|+1} (array form of
    :func:`risk`, for hot loops that hold the arrays)."""
    total = 1.0
    for e in range(val_ptr[case], val_ptr[case + 1]):
        v = val_id[e]
        eta = max(1, math.floor(size * theta[v] + FLOOR_SLACK))
        s = sigma[v]
        if s + val_p[e] > eta + TOL:
            return np.inf
        total += s / (eta - s)
    return total


@njit(cache=True, inline="always")  # type: ignore[misc]
def risk(g: Group, cases: Cases, req: I64, case: int) -> float:
    """PR(g, r) ≥ 1 (module docstring); 1 when the model declares no risk term."""
    if req[REQ_RISK] == 0:
        return 1.0
    size = max(req[REQ_K], g.size[0] + 1)
    return ratio_risk(g.sigma, size, cases.val_ptr, cases.val_id, cases.val_p, cases.theta, case)  # type: ignore[no-any-return]


@njit(cache=True)  # type: ignore[misc]
def blocked_bits(g: Group, cases: Cases, req: I64) -> int:
    """Signature bits that make PR(g, r) = ∞: bit ``sig_bit[i] + l`` when σ_s(g) + ``sig_bound[i, l]`` > η_s.

    Every case whose signature has such a bit holds s with P(s | r) ≥ the bound, so :func:`risk` returns
    ∞ for it: skipping it is exact. 0 when the model declares no risk term.
    """
    if req[REQ_RISK] == 0:
        return 0
    size = max(req[REQ_K], g.size[0] + 1)
    bits = 0
    for i in range(cases.sig_val.shape[0]):
        v = cases.sig_val[i]
        eta = max(1, math.floor(size * cases.theta[v] + FLOOR_SLACK))
        s = g.sigma[v]
        for lev in range(cases.sig_bound.shape[1]):
            if s + cases.sig_bound[i, lev] > eta + TOL:
                bits |= np.int64(1) << (cases.sig_bit[i] + lev)
                break
    return bits


@njit(cache=True)  # type: ignore[misc]
def cap_bits(g: Group, cases: Cases, req: I64) -> int:
    """Signature bits that break a cap: bit ``sig_bit[i] + l`` when σ_s(g) + ``sig_bound[i, l]`` exceeds
    θ_s·(|g|+1).

    Every case whose signature has such a bit makes g ∪ {r} invalid. 0 unless the model has caps counted
    in cases (a cap in rows depends on the added case's rows).
    """
    if req[REQ_CAPS] == 0 or req[REQ_CAPS_ROWS] == 1:
        return 0
    den = g.size[0] + 1
    bits = 0
    for i in range(cases.sig_val.shape[0]):
        v = cases.sig_val[i]
        s = g.sigma[v]
        for lev in range(cases.sig_bound.shape[1]):
            if s + cases.sig_bound[i, lev] > cases.theta[v] * den + TOL:
                bits |= np.int64(1) << (cases.sig_bit[i] + lev)
                break
    return bits


@njit(cache=True)  # type: ignore[misc]
def excess(g: Group, cases: Cases, req: I64) -> float:
    """How far the group is from valid: missing units, else the largest σ_s − θ_s·|g| (≤ 0 when valid).

    A group short of the minimum size scores (min_size − size) + 1, above any cap excess ≤ 1·|g|
    normalized below; cap excesses are divided by |g| so they read as confidence excesses in [−1, 1].
    """
    units = g.size[1] if req[REQ_ROWS] else g.size[0]
    short = req[REQ_MIN] - units
    worst = -1.0
    if req[REQ_CAPS]:
        den = g.size[1] if req[REQ_CAPS_ROWS] else g.size[0]
        for t in range(g.ntouched[0]):
            v = g.touched[t]
            e = (g.sigma[v] - cases.theta[v] * den - TOL) / max(den, 1)
            if e > worst:
                worst = e
    if short > 0:
        return short + 1.0
    return worst


@njit(cache=True)  # type: ignore[misc]
def is_valid(g: Group, cases: Cases, req: I64) -> bool:
    """The model's requirements: size ≥ min_size and every cap σ_s ≤ θ_s·|g| + 1e-9."""
    units = g.size[1] if req[REQ_ROWS] else g.size[0]
    if units < req[REQ_MIN]:
        return False
    if req[REQ_CAPS]:
        den = g.size[1] if req[REQ_CAPS_ROWS] else g.size[0]
        for t in range(g.ntouched[0]):
            v = g.touched[t]
            if g.sigma[v] > cases.theta[v] * den + TOL:
                return False
    return True
