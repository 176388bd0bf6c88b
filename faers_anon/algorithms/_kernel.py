"""The numba kernel of the greedy clustering (Lin, Yang & Wang 2016, Algorithms 1–2; SPEC §6).

Stage 1 grows a group from a seed, adding the candidate with least ΔIL' = ΔIL·PR until the model's
requirements hold; the next seed is the remaining case farthest from the previous seed. Stage 2
places every leftover in the group with least ΔIL' that stays valid.

Candidate search (stage 1, :func:`search`). Candidates are visited in nondecreasing order of a lower
bound on ΔIL: each class (identical categorical nodes and weight-missing flag) contributes a stream of
its patterns — patterns of a class whose weight term is constant share one ΔIL; otherwise the stream
walks outward from the group's weight interval [a, b] through the lo-sorted patterns, with bound
ΔIL ≥ base + (|g|+1)·(a − lo)/range on the left and base + (|g|+1)·max(0, lo − b)/range on the right.
A heap merges the class streams. Every visited case gets its exact ΔIL and PR. The search stops when
(1) the next bound ≥ the best ΔIL' found — exact, since PR ≥ 1 means ΔIL' ≥ ΔIL — or (2) ``m_best``
cases have been evaluated and one of them has finite ΔIL', or (3) ``scan_limit`` cases have been
evaluated. Only (2) and (3) can miss the global argmin; both cut the search among candidates whose
ΔIL is already at least that of the considered ones, so what is missed is a farther case with a
smaller privacy risk. Cost per search: O(classes·C + log(classes)·patterns visited + Σ|S_r| over
≤ scan_limit cases), independent of the number of cases.

Stage 2 (:func:`stage2`) is exact over all groups: ΔIL is computed for every group in O(C), and PR and
validity only for groups whose ΔIL is below the best ΔIL' so far. A leftover that no group can take
validly goes to the group, among the ``m_best`` with least ΔIL, whose excess after adding it is least
(:func:`~faers_anon.algorithms._group.excess`); such placements are counted as forced and make the
group dangerous, which the DR metric and the verifier then report.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit
from numpy.typing import NDArray

from faers_anon.algorithms._group import (
    REQ_MIN,
    REQ_ROWS,
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
    farthest_case,
    find_next,
    find_prev,
    first_in_class,
    heap_pop,
    heap_push,
    remove_case,
)

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]


class Scratch(NamedTuple):
    """Per-class search state: heap, base ΔIL, walk flag and left/right pattern pointers."""

    key: F64
    val: I64
    base: F64
    walk: NDArray[np.bool_]
    left: I64
    right: I64


class Store(NamedTuple):
    """Committed groups: members (flat ``order`` + linked list for stage-2 additions) and state."""

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


@njit(cache=True)  # type: ignore[misc]
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
def search(
    pool: Pool, tab: Tables, cases: Cases, req: I64, g: Group, sc: Scratch, m_best: int, scan_limit: int
) -> int:
    """The pooled case with least ΔIL'(g, r) among the candidates considered (module docstring); −1 if none
    of them has finite ΔIL'."""
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
        elif known > 0 and miss > 0:
            wc = 1.0
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
    best = np.inf
    best_case = -1
    evals = 0
    while size > 0:
        if sc.key[0] >= best:
            break
        c = sc.val[0]
        size = heap_pop(sc.key, sc.val, size)
        go_right = True
        if sc.walk[c]:
            ext_l = (a - pool.pat_lo[sc.left[c]]) if sc.left[c] >= 0 else np.inf
            ext_r = max(0.0, pool.pat_lo[sc.right[c]] - b) if sc.right[c] >= 0 else np.inf
            go_right = ext_r <= ext_l
            p = sc.right[c] if go_right else sc.left[c]
            wnew = (max(b, pool.pat_hi[p]) - min(a, pool.pat_lo[p])) * inv_r
            dil = sc.base[c] + (n + 1) * (wnew - (b - a) * inv_r)
        else:
            p = sc.right[c]
            dil = sc.base[c]
        start = pool.pat_start[p]
        stop = False
        for t in range(pool.pat_count[p]):
            if dil >= best:
                break
            if evals >= scan_limit or (evals >= m_best and best < np.inf):
                stop = True
                break
            case = pool.slots[start + t]
            pr = risk(g, cases, req, case)
            evals += 1
            if pr < np.inf and dil * pr < best:
                best = dil * pr
                best_case = case
        if stop:
            break
        s0, e0 = pool.cls_start[c], pool.cls_end[c]
        if sc.walk[c]:
            if go_right:
                q = find_next(pool.nxt, p + 1)
                sc.right[c] = q if q < e0 else -1
            else:
                q = find_prev(pool.prv, p - 1)
                sc.left[c] = q if q >= s0 else -1
            if sc.left[c] >= 0 or sc.right[c] >= 0:
                size = heap_push(sc.key, sc.val, size, _walk_bound(pool, sc, c, a, b, scale), c)
        else:
            q = find_next(pool.nxt, p + 1)
            if q < e0:
                sc.right[c] = q
                size = heap_push(sc.key, sc.val, size, sc.base[c], c)
    return best_case


@njit(cache=True)  # type: ignore[misc]
def _commit(g: Group, tab: Tables, store: Store, gid: int, start: int, stop: int) -> None:
    store.first[gid] = start
    store.length[gid] = stop - start
    store.cat[gid, :] = g.cat
    store.w[gid, :] = g.w
    store.size[gid, :] = g.size
    store.loss[gid] = loss_per_case(tab, g.cat, g.w)
    for i in range(start, stop):
        store.group_of[store.order[i]] = gid


@njit(cache=True)  # type: ignore[misc]
def stage1(
    pool: Pool,
    tab: Tables,
    cases: Cases,
    req: I64,
    g: Group,
    sc: Scratch,
    store: Store,
    first_seed: int,
    m_best: int,
    scan_limit: int,
    leftovers: I64,
) -> tuple[int, int, int, int]:
    """Algorithm 1: returns (groups, leftovers, members stored, failed groups)."""
    n_groups = 0
    n_left = 0
    filled = 0
    failed = 0
    seed = first_seed
    while pool.remaining[0] > 0:
        units = pool.remaining[1] if req[REQ_ROWS] else pool.remaining[0]
        if units < req[REQ_MIN]:
            break
        reset(g)
        start = filled
        remove_case(pool, cases, seed)
        add_pooled(g, pool, tab, cases, seed)
        store.order[filled] = seed
        filled += 1
        ok = is_valid(g, cases, req)
        while not ok and pool.remaining[0] > 0:
            cand = search(pool, tab, cases, req, g, sc, m_best, scan_limit)
            if cand < 0:
                break
            remove_case(pool, cases, cand)
            add_pooled(g, pool, tab, cases, cand)
            store.order[filled] = cand
            filled += 1
            ok = is_valid(g, cases, req)
        if ok:
            _commit(g, tab, store, n_groups, start, filled)
            n_groups += 1
        else:
            failed += 1
            for i in range(start, filled):
                leftovers[n_left] = store.order[i]
                n_left += 1
            filled = start
        if pool.remaining[0] == 0:
            break
        p = pool.case_pattern[seed]
        c = pool.pat_class[p]
        seed = farthest_case(pool, tab, pool.cls_cat[c], pool.cls_wmiss[c], pool.pat_lo[p], pool.pat_hi[p])
    for p in range(pool.pat_start.shape[0]):
        for t in range(pool.pat_count[p]):
            leftovers[n_left] = pool.slots[pool.pat_start[p] + t]
            n_left += 1
    return n_groups, n_left, filled, failed


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
def _delta_to_group(pool: Pool, tab: Tables, store: Store, gid: int, case: int) -> float:
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
def stage2(
    pool: Pool,
    tab: Tables,
    cases: Cases,
    req: I64,
    g: Group,
    store: Store,
    n_groups: int,
    filled: int,
    leftovers: I64,
    n_left: int,
    m_best: int,
) -> tuple[int, int]:
    """Algorithm 2, first step: place the leftovers; returns (groups, forced placements)."""
    if n_left == 0:
        return n_groups, 0
    if n_groups == 0:
        reset(g)
        for i in range(n_left):
            add_pooled(g, pool, tab, cases, leftovers[i])
            store.order[filled + i] = leftovers[i]
        _commit(g, tab, store, 0, filled, filled + n_left)
        return 1, 0
    fb_key = np.empty(m_best, np.float64)
    fb_val = np.empty(m_best, np.int64)
    forced = 0
    for i in range(n_left):
        r = leftovers[i]
        best = np.inf
        best_g = -1
        fb = 0
        for gid in range(n_groups):
            dil = _delta_to_group(pool, tab, store, gid, r)
            if fb < m_best:
                fb = heap_push(fb_key, fb_val, fb, -dil, gid)
            elif -dil > fb_key[0]:
                fb = heap_pop(fb_key, fb_val, fb)
                fb = heap_push(fb_key, fb_val, fb, -dil, gid)
            if dil >= best:
                continue
            load_group(g, pool, tab, cases, store, gid)
            pr = risk(g, cases, req, r)
            if pr == np.inf or dil * pr >= best:
                continue
            add_pooled(g, pool, tab, cases, r)
            if is_valid(g, cases, req):
                best = dil * pr
                best_g = gid
        if best_g < 0:
            forced += 1
            best_e = np.inf
            best_d = np.inf
            for t in range(fb):
                gid = fb_val[t]
                dil = -fb_key[t]
                load_group(g, pool, tab, cases, store, gid)
                add_pooled(g, pool, tab, cases, r)
                e = excess(g, cases, req)
                if e < best_e or (e == best_e and (dil < best_d or (dil == best_d and gid < best_g))):
                    best_e, best_d, best_g = e, dil, gid
        load_group(g, pool, tab, cases, store, best_g)
        add_pooled(g, pool, tab, cases, r)
        store.extra_next[r] = store.extra_head[best_g]
        store.extra_head[best_g] = r
        store.group_of[r] = best_g
        store.cat[best_g, :] = g.cat
        store.w[best_g, :] = g.w
        store.size[best_g, :] = g.size
        store.loss[best_g] = loss_per_case(tab, g.cat, g.w)
    return n_groups, forced


@njit(cache=True)  # type: ignore[misc]
def count_invalid(
    pool: Pool, tab: Tables, cases: Cases, req: I64, g: Group, store: Store, n_groups: int
) -> int:
    """Number of committed groups that fail the model's requirements (0 unless placements were forced)."""
    bad = 0
    for gid in range(n_groups):
        load_group(g, pool, tab, cases, store, gid)
        if not is_valid(g, cases, req):
            bad += 1
    return bad


@njit(cache=True)  # type: ignore[misc]
def delta_il(g: Group, pool: Pool, tab: Tables, case: int) -> float:
    """ΔIL(g, r) = (|g|+1)·L(g ∪ {r}) − |g|·L(g) for a pooled or removed case r (g non-empty)."""
    p = pool.case_pattern[case]
    c = pool.pat_class[p]
    cat = g.cat.copy()
    for j in range(cat.shape[0]):
        cat[j] = tab.lca[j, cat[j], pool.cls_cat[c, j]]
    w = g.w.copy()
    if pool.cls_wmiss[c]:
        w[1] += 1.0
    elif w[0] == 0:
        w[0], w[2], w[3] = 1.0, pool.pat_lo[p], pool.pat_hi[p]
    else:
        w[0] += 1.0
        w[2] = min(w[2], pool.pat_lo[p])
        w[3] = max(w[3], pool.pat_hi[p])
    n = g.size[0]
    return max(0.0, (n + 1) * loss_per_case(tab, cat, w) - n * loss_per_case(tab, g.cat, g.w))
