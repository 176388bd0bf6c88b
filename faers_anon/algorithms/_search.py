"""Candidate search of the clustering kernel: cases for a growing group, groups for a leftover case.

Streams. Given a group g, every class (identical categorical nodes and weight-missing flag) yields its
non-empty patterns in nondecreasing order of a lower bound on ΔIL(g, r): when the weight term of the
class is constant (g or the class missing on weight, or g mixed) all its patterns share one exact ΔIL;
otherwise the stream walks outward from g's weight interval [a, b] through the lo-sorted patterns, with
ΔIL ≥ base + (|g|+1)·(a − lo)/range on the left and ≥ base + (|g|+1)·max(0, lo − b)/range on the right
(both nondecreasing along the walk). A heap merges the class streams (:func:`open_streams`,
:func:`next_pattern`); each popped pattern gets its exact ΔIL.

Stage 1 (:func:`search`): every case of a popped pattern gets its exact PR and ΔIL' = ΔIL·PR. The search
stops when (1) the next bound ≥ the best ΔIL' so far — exact, since PR ≥ 1 gives ΔIL' ≥ ΔIL — or (2)
``m_best`` cases have been evaluated and one has finite ΔIL', or (3) ``scan_limit`` cases have been
evaluated. Only (2) and (3) can miss the global argmin, and only in favour of a candidate whose ΔIL is
at least that of every considered one (a farther case with a smaller privacy risk). Cost per search:
O(classes·C + log(classes)·patterns visited + Σ|S_r| over ≤ scan_limit cases), independent of N.

Stage 2 (:func:`search_groups`): streams are opened for the singleton {r} over all assigned cases, and a
popped case stands for its group. Since L is monotone under set inclusion, ΔIL(g, r) ≥ L(g ∪ {r}) ≥
L({r, c}) for every member c, so a group none of whose members has been reached yet has ΔIL at least
the current L({r, c}) bound; the search stops exactly when that bound ≥ the best ΔIL', or under the
same caps (2) and (3) counted in groups.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit
from numpy.typing import NDArray

from faers_anon.algorithms._group import (
    REQ_CAPS,
    REQ_CAPS_ROWS,
    TOL,
    Group,
    add_case,
    excess,
    is_valid,
    loss_per_case,
    reset,
    risk,
    weight_term,
)
from faers_anon.algorithms._pool import (
    Cases,
    Pool,
    Tables,
    find_next,
    find_prev,
    first_in_class,
    heap_pop,
    heap_push,
)

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]


class Scratch(NamedTuple):
    """Per-class stream state: heap, base ΔIL, walk flag, left/right pattern pointers."""

    key: F64
    val: I64
    base: F64
    walk: NDArray[np.bool_]
    left: I64
    right: I64


class Store(NamedTuple):
    """Committed groups: members (flat ``order`` + linked list for stage-2 additions), QID state, and
    ``fsig[g, f]`` = σ of the f-th most frequent protected value (``Cases.freq_val``)."""

    group_of: I64
    order: I64
    first: I64
    length: I64
    extra_head: I64
    extra_next: I64
    cat: I64
    w: F64
    size: I64
    loss: F64
    fsig: F64


@njit(cache=True, inline="always")  # type: ignore[misc]
def add_pooled(g: Group, pool: Pool, tab: Tables, cases: Cases, case: int) -> None:
    """Add a case to the group using its pattern's QID."""
    p = pool.case_pattern[case]
    c = pool.pat_class[p]
    add_case(g, tab, cases, case, pool.cls_cat[c], pool.cls_wmiss[c], pool.pat_lo[p], pool.pat_hi[p])


@njit(cache=True)  # type: ignore[misc]
def _walk_bound(pool: Pool, sc: Scratch, c: int, a: float, b: float, scale: float) -> float:
    ext_l = (a - pool.pat_lo[sc.left[c]]) if sc.left[c] >= 0 else np.inf
    ext_r = max(0.0, pool.pat_lo[sc.right[c]] - b) if sc.right[c] >= 0 else np.inf
    return sc.base[c] + scale * min(ext_l, ext_r)


@njit(cache=True)  # type: ignore[misc]
def open_streams(pool: Pool, tab: Tables, g: Group, sc: Scratch) -> int:
    """Start one stream per non-empty class for group g; returns the heap size."""
    n = g.size[0]
    inv_r = tab.inv_range[0]
    lg = loss_per_case(tab, g.cat, g.w)
    known, miss, a, b = g.w[0], g.w[1], g.w[2], g.w[3]
    scale = (n + 1) * inv_r
    size = 0
    for c in range(pool.cls_start.shape[0]):
        if pool.cls_count[c] == 0:
            continue
        lcat = 0.0
        for j in range(g.cat.shape[0]):
            lcat += tab.hnorm[j, tab.lca[j, g.cat[j], pool.cls_cat[c, j]]]
        walk = known > 0 and miss == 0 and not pool.cls_wmiss[c]
        if walk:
            wc = (b - a) * inv_r
        elif known == 0:
            wc = 0.0 if pool.cls_wmiss[c] else 1.0
        else:
            wc = 1.0
        sc.base[c] = max(0.0, (n + 1) * (lcat + wc) - n * lg)
        sc.walk[c] = walk
        if walk:
            s0, e0 = pool.cls_start[c], pool.cls_end[c]
            pos = s0 + np.searchsorted(pool.pat_lo[s0:e0], a)
            r = find_next(pool.nxt, pos)
            sc.right[c] = r if r < e0 else -1
            left = find_prev(pool.prv, pos - 1)
            sc.left[c] = left if left >= s0 else -1
            lb = _walk_bound(pool, sc, c, a, b, scale)
        else:
            sc.right[c] = first_in_class(pool, c)
            sc.left[c] = -1
            lb = sc.base[c]
        size = heap_push(sc.key, sc.val, size, lb, c)
    return size


@njit(cache=True)  # type: ignore[misc]
def next_pattern(pool: Pool, tab: Tables, g: Group, sc: Scratch, size: int) -> tuple[int, float, int]:
    """Pop the pattern with the least bound; returns (pattern, its exact ΔIL(g, ·), new heap size).

    The popped class's stream is advanced and pushed back before returning.
    """
    n = g.size[0]
    inv_r = tab.inv_range[0]
    a, b = g.w[2], g.w[3]
    c = sc.val[0]
    size = heap_pop(sc.key, sc.val, size)
    s0, e0 = pool.cls_start[c], pool.cls_end[c]
    if sc.walk[c]:
        ext_l = (a - pool.pat_lo[sc.left[c]]) if sc.left[c] >= 0 else np.inf
        ext_r = max(0.0, pool.pat_lo[sc.right[c]] - b) if sc.right[c] >= 0 else np.inf
        if ext_r <= ext_l:
            p = sc.right[c]
            q = find_next(pool.nxt, p + 1)
            sc.right[c] = q if q < e0 else -1
        else:
            p = sc.left[c]
            q = find_prev(pool.prv, p - 1)
            sc.left[c] = q if q >= s0 else -1
        wnew = (max(b, pool.pat_hi[p]) - min(a, pool.pat_lo[p])) * inv_r
        dil = sc.base[c] + (n + 1) * (wnew - (b - a) * inv_r)
        if sc.left[c] >= 0 or sc.right[c] >= 0:
            size = heap_push(sc.key, sc.val, size, _walk_bound(pool, sc, c, a, b, (n + 1) * inv_r), c)
    else:
        p = sc.right[c]
        dil = sc.base[c]
        q = find_next(pool.nxt, p + 1)
        if q < e0:
            sc.right[c] = q
            size = heap_push(sc.key, sc.val, size, sc.base[c], c)
    return p, max(0.0, dil), size


@njit(cache=True)  # type: ignore[misc]
def search(
    pool: Pool, tab: Tables, cases: Cases, req: I64, g: Group, sc: Scratch, m_best: int, scan_limit: int
) -> int:
    """Stage 1: the pooled case with least ΔIL'(g, r) among those considered; −1 if none is finite."""
    size = open_streams(pool, tab, g, sc)
    best = np.inf
    best_case = -1
    evals = 0
    while size > 0 and sc.key[0] < best:
        p, dil, size = next_pattern(pool, tab, g, sc, size)
        start = pool.pat_start[p]
        for t in range(pool.pat_count[p]):
            if dil >= best:
                break
            if evals >= scan_limit or (evals >= m_best and best < np.inf):
                return best_case
            case = pool.slots[start + t]
            pr = risk(g, cases, req, case)
            evals += 1
            if pr < np.inf and dil * pr < best:
                best = dil * pr
                best_case = case
    return best_case


@njit(cache=True)  # type: ignore[misc]
def store_state(g: Group, tab: Tables, cases: Cases, store: Store, gid: int) -> None:
    """Copy a group's QID state, size, loss and frequent-value σ into the store."""
    store.cat[gid, :] = g.cat
    store.w[gid, :] = g.w
    store.size[gid, :] = g.size
    store.loss[gid] = loss_per_case(tab, g.cat, g.w)
    for f in range(cases.freq_val.shape[0]):
        store.fsig[gid, f] = g.sigma[cases.freq_val[f]]


@njit(cache=True, inline="always")  # type: ignore[misc]
def frequent_excess(cases: Cases, req: I64, store: Store, gid: int, r: int) -> float:
    """Largest (σ_s(g) + P(s | r) − θ_s·(|g|+1)) / (|g|+1) over r's frequent values (−1 if none).

    Positive means g ∪ {r} breaks a cap: the group is ruled out without being rebuilt. Only for
    models with caps counted in cases (the stage-2 pre-filter); otherwise −1.
    """
    worst = -1.0
    if req[REQ_CAPS] == 0 or req[REQ_CAPS_ROWS] == 1:
        return worst
    den = store.size[gid, 0] + 1
    for e in range(cases.val_ptr[r], cases.val_ptr[r + 1]):
        f = cases.freq_slot[cases.val_id[e]]
        if f >= 0:
            v = cases.freq_val[f]
            x = (store.fsig[gid, f] + cases.val_p[e] - cases.theta[v] * den - TOL) / den
            if x > worst:
                worst = x
    return worst


@njit(cache=True)  # type: ignore[misc]
def load_group(g: Group, pool: Pool, tab: Tables, cases: Cases, store: Store, gid: int) -> None:
    """Rebuild a committed group's state (σ_s included) in ``g`` from its members."""
    reset(g)
    for i in range(store.first[gid], store.first[gid] + store.length[gid]):
        add_pooled(g, pool, tab, cases, store.order[i])
    m = store.extra_head[gid]
    while m >= 0:
        add_pooled(g, pool, tab, cases, m)
        m = store.extra_next[m]


@njit(cache=True)  # type: ignore[misc]
def delta_to_group(pool: Pool, tab: Tables, store: Store, gid: int, case: int) -> float:
    """ΔIL(g, r) for a committed group from its stored QID state, O(C)."""
    p = pool.case_pattern[case]
    c = pool.pat_class[p]
    lc = 0.0
    for j in range(store.cat.shape[1]):
        lc += tab.hnorm[j, tab.lca[j, store.cat[gid, j], pool.cls_cat[c, j]]]
    known, miss, a, b = store.w[gid, 0], store.w[gid, 1], store.w[gid, 2], store.w[gid, 3]
    if pool.cls_wmiss[c]:
        wt = weight_term(known, miss + 1, a, b, tab.inv_range[0])
    elif known > 0:
        wt = weight_term(known + 1, miss, min(a, pool.pat_lo[p]), max(b, pool.pat_hi[p]), tab.inv_range[0])
    else:
        wt = weight_term(1.0, miss, pool.pat_lo[p], pool.pat_hi[p], tab.inv_range[0])
    n = store.size[gid, 0]
    return max(0.0, (n + 1) * (lc + wt) - n * store.loss[gid])


@njit(cache=True)  # type: ignore[misc]
def search_groups(
    pool: Pool,
    tab: Tables,
    cases: Cases,
    req: I64,
    single: Group,
    g: Group,
    sc: Scratch,
    store: Store,
    stamp: I64,
    epoch: int,
    r: int,
    m_best: int,
    scan_limit: int,
) -> tuple[int, bool]:
    """Stage 2: the group with least ΔIL'(g, r) that stays valid, among those considered.

    ``pool`` holds every case (nothing removed); ``stamp``/``epoch`` mark groups already seen. Returns
    (group, forced). A group that stays valid but has PR = ∞ (the floor in η_s is stricter than the
    cap) has no finite ΔIL'; it is taken only when no considered group has a finite one. When no
    considered group stays valid, the one whose excess after adding r is least is returned with
    forced = True (ties: least ΔIL, then lowest id); (−1, True) if no group was reached at all.
    """
    reset(single)
    add_pooled(single, pool, tab, cases, r)
    lr = loss_per_case(tab, single.cat, single.w)
    size = open_streams(pool, tab, single, sc)
    best, best_g = np.inf, -1
    fb_e, fb_d, fb_g = np.inf, np.inf, -1
    evals = 0
    while size > 0 and 0.5 * (sc.key[0] + lr) < best:
        p, dil_rc, size = next_pattern(pool, tab, single, sc, size)
        if 0.5 * (dil_rc + lr) >= best:
            continue
        start = pool.pat_start[p]
        for t in range(pool.pat_count[p]):
            gid = store.group_of[pool.slots[start + t]]
            if gid < 0 or stamp[gid] == epoch:
                continue
            if evals >= scan_limit or (evals >= m_best and best < np.inf):
                return (best_g, False) if best_g >= 0 else (fb_g, fb_e > 0)
            stamp[gid] = epoch
            evals += 1
            dg = delta_to_group(pool, tab, store, gid, r)
            if dg >= best:
                continue
            fe = frequent_excess(cases, req, store, gid, r)
            if fe > 0:
                if best_g < 0 and (fe < fb_e or (fe == fb_e and (dg < fb_d or (dg == fb_d and gid < fb_g)))):
                    fb_e, fb_d, fb_g = fe, dg, gid
                continue
            load_group(g, pool, tab, cases, store, gid)
            pr = risk(g, cases, req, r)
            add_pooled(g, pool, tab, cases, r)
            if pr < np.inf and is_valid(g, cases, req):
                if dg * pr < best:
                    best, best_g = dg * pr, gid
            elif best_g < 0:
                e = excess(g, cases, req)
                if e < fb_e or (e == fb_e and (dg < fb_d or (dg == fb_d and gid < fb_g))):
                    fb_e, fb_d, fb_g = e, dg, gid
    return (best_g, False) if best_g >= 0 else (fb_g, fb_e > 0)
