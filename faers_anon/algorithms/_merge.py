"""Numba merge loop of :mod:`faers_anon.algorithms.repair`: invalid groups merge until every group is valid.

State per group (arrays indexed by group position): cases, rows, weight state (known count, min lo, max
hi), age and sex node codes, and σ_s over the *over values* W only — the values some group exceeds
before the repair. W never grows: σ and the caps θ_s·|g| both add up under a merge, so a merged group
exceeds θ_s only if one of its parts did. The excess of a group is

    short(g) + Σ_{s∈W} max(0, σ_s(g) − θ_s·|g| − 1e-9),   short(g) = max(0, min_size − |g|)

(|g| in the model's units), 0 exactly when the group is valid.

Partner choice for an invalid group g (every other alive group h is considered, O(G·(C + |W_g|)) per
merge, W_g the values g exceeds): the h with g ∪ h valid and least ΔIL(g, h) = IL(g ∪ h) − IL(g) − IL(h)
(SPEC §6 IL, cases as |g|); if there is none, the h with least excess of g ∪ h, then least ΔIL (ties:
lowest position). For a valid h only the values of W_g can exceed in g ∪ h (both parts are under their
caps elsewhere), so a valid h costs O(C + |W_g|); an invalid h is checked over all of W.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from faers_anon._numba_cache import njit

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]

TOL = 1e-9  # faers_anon.models.base.CONF_TOLERANCE; a numba global must be a literal


class Merging(NamedTuple):
    """Per-group state (by group position): sizes, weight state (known count, min lo, max hi; NaN when
    no case is known), age and sex node codes, and ``sig[g, j]`` = σ of the j-th over value."""

    cases: I64
    rows: I64
    known: I64
    lo: F64
    hi: F64
    age: I64
    sex: I64
    sig: F64


@njit(cache=True)  # type: ignore[misc]
def group_loss(
    age_h: F64, sex_h: F64, inv_span: float, age: int, sex: int, cases: int, known: int, lo: float, hi: float
) -> float:
    """Loss per case L(g): normalized node heights plus the weight term (SPEC §5 missing rule)."""
    if known == cases:
        weight = (hi - lo) * inv_span if known > 0 else 0.0
    elif known == 0:
        weight = 0.0
    else:
        weight = 1.0
    return age_h[age] + sex_h[sex] + weight


@njit(cache=True)  # type: ignore[misc]
def _excess(sig: F64, theta: F64, g: int, size: int, cap: int, min_size: int) -> float:
    total = float(max(0, min_size - size))
    for j in range(sig.shape[1]):
        total += max(0.0, sig[g, j] - theta[j] * cap - TOL)
    return total


@njit(cache=True)  # type: ignore[misc]
def merge_invalid(
    m: Merging,
    theta: F64,
    age_lca: I64,
    age_h: F64,
    sex_lca: I64,
    sex_h: F64,
    inv_span: float,
    min_size: int,
    size_rows: bool,
    cap_rows: bool,
    into: I64,
) -> tuple[int, int]:
    """Merge invalid groups (module docstring) in place; ``into[g]`` = the group g merged into (−1: alive).

    Groups are taken in position order, a merged group that is still invalid goes to the back of the
    queue. Returns (merges made, groups still invalid).
    """
    cases, rows, known, lo, hi, age, sex, sig = m
    n = cases.shape[0]
    w = sig.shape[1]
    loss = np.empty(n)
    bad = np.zeros(n, np.bool_)
    queue = np.empty(2 * n + 1, np.int64)
    head, tail = 0, 0
    for g in range(n):
        into[g] = -1
        loss[g] = group_loss(age_h, sex_h, inv_span, age[g], sex[g], cases[g], known[g], lo[g], hi[g])
        size = rows[g] if size_rows else cases[g]
        cap = rows[g] if cap_rows else cases[g]
        if _excess(sig, theta, g, size, cap, min_size) > 0.0:
            bad[g] = True
            queue[tail] = g
            tail += 1
    over = np.empty(w, np.int64)
    merges = 0
    alive_count = n
    while head < tail and alive_count > 1:
        g = queue[head]
        head += 1
        if into[g] >= 0 or not bad[g]:
            continue
        n_over = 0
        cap_g = rows[g] if cap_rows else cases[g]
        for j in range(w):
            if sig[g, j] > theta[j] * cap_g + TOL:
                over[n_over] = j
                n_over += 1
        best_v, best_vd = -1, np.inf
        best_f, best_fe, best_fd = -1, np.inf, np.inf
        for h in range(n):
            if h == g or into[h] >= 0:
                continue
            nc = cases[g] + cases[h]
            nk = known[g] + known[h]
            a = age_lca[age[g], age[h]]
            s = sex_lca[sex[g], sex[h]]
            mlo = min(lo[g], lo[h]) if known[g] > 0 and known[h] > 0 else (lo[g] if known[g] > 0 else lo[h])
            mhi = max(hi[g], hi[h]) if known[g] > 0 and known[h] > 0 else (hi[g] if known[g] > 0 else hi[h])
            d = nc * group_loss(age_h, sex_h, inv_span, a, s, nc, nk, mlo, mhi)
            d -= cases[g] * loss[g] + cases[h] * loss[h]
            if best_v >= 0 and d >= best_vd:
                continue
            size = rows[g] + rows[h] if size_rows else nc
            cap = rows[g] + rows[h] if cap_rows else nc
            e = float(max(0, min_size - size))
            if bad[h]:
                for j in range(w):
                    e += max(0.0, sig[g, j] + sig[h, j] - theta[j] * cap - TOL)
            else:
                for i in range(n_over):
                    j = over[i]
                    e += max(0.0, sig[g, j] + sig[h, j] - theta[j] * cap - TOL)
            if e == 0.0:
                if d < best_vd:
                    best_v, best_vd = h, d
            elif best_v < 0 and (e < best_fe or (e == best_fe and d < best_fd)):
                best_f, best_fe, best_fd = h, e, d
        h = best_v if best_v >= 0 else best_f
        if h < 0:
            break
        _absorb(m, age_lca, sex_lca, h, g)
        into[g] = h
        alive_count -= 1
        merges += 1
        loss[h] = group_loss(age_h, sex_h, inv_span, age[h], sex[h], cases[h], known[h], lo[h], hi[h])
        size = rows[h] if size_rows else cases[h]
        cap = rows[h] if cap_rows else cases[h]
        bad[h] = _excess(sig, theta, h, size, cap, min_size) > 0.0
        if bad[h]:  # at most n initial entries plus one per merge: the queue never overflows
            queue[tail] = h
            tail += 1
    still = 0
    for g in range(n):
        if into[g] < 0 and bad[g]:
            still += 1
    return merges, still


@njit(cache=True)  # type: ignore[misc]
def _absorb(m: Merging, age_lca: I64, sex_lca: I64, h: int, g: int) -> None:
    """Group h takes group g's cases: sizes and σ add, nodes go to their LCA, weight intervals unite."""
    cases, rows, known, lo, hi, age, sex, sig = m
    if known[g] > 0:
        if known[h] > 0:
            lo[h] = min(lo[h], lo[g])
            hi[h] = max(hi[h], hi[g])
        else:
            lo[h], hi[h] = lo[g], hi[g]
    known[h] += known[g]
    cases[h] += cases[g]
    rows[h] += rows[g]
    age[h] = age_lca[age[h], age[g]]
    sex[h] = sex_lca[sex[h], sex[g]]
    for j in range(sig.shape[1]):
        sig[h, j] += sig[g, j]
