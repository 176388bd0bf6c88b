"""Stage-2 group search of the clustering kernel: the committed group that best takes a leftover case.

Streams (:mod:`faers_anon.algorithms._streams`) are opened for the singleton {r} over the cases stage 1
grouped, and a popped case stands for its group. Since L is monotone under set inclusion,
ΔIL(g, r) ≥ L(g ∪ {r}) ≥ L({r, c}) for every member c, so a group none of whose members has been reached
yet has ΔIL at least the current L({r, c}) bound; the search stops exactly when that bound ≥ the best
ΔIL', after ``m_best`` groups once one with finite ΔIL' is known, or after ``scan_limit`` groups — a
per-leftover budget that does not grow with N; a leftover that finds no valid group within it is placed
where the excess is least (forced) and left to :mod:`faers_anon.algorithms.repair`.

Group index. Each committed group keeps in :class:`Store` the σ of the most pressing values and two
signature masks: ``pmask`` (bits that give PR = ∞) and ``cmask`` (bits that break a cap). A group is
ruled on against r's signature in O(1) and rebuilt from its members only when it could be the answer.
Each pattern's members are sorted by their group's ``cmask`` (:func:`order_by_caps`), so the walk
jumps over runs of groups that r would make invalid, as stage 1 jumps over blocked cases; a group whose
masks changed (it took a leftover) leaves the sorted order for its pattern's dirty list
(:func:`mark_dirty`), walked member by member.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from faers_anon._numba_cache import njit
from faers_anon.algorithms._fields import fields_with
from faers_anon.algorithms._group import (
    REQ_CAPS,
    REQ_CAPS_ROWS,
    TOL,
    Group,
    blocked_bits,
    cap_bits,
    excess,
    is_valid,
    loss_per_case,
    reset,
    risk,
    weight_term,
)
from faers_anon.algorithms._pool import Cases, Pool, Tables, find_next, lower_bound
from faers_anon.algorithms._search import add_pooled, prev_free
from faers_anon.algorithms._streams import Streams, open_streams, pop

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]


class Store(NamedTuple):
    """Committed groups: members (flat ``order`` + linked list for stage-2 additions), QID state,
    ``fsig[g, f]`` = σ of the f-th most pressing protected value (``Cases.freq_val``), and the signature
    bits that one more case may not hold: ``pmask`` (PR = ∞, :func:`~faers_anon.algorithms._group.
    blocked_bits`) and ``cmask`` (a cap breaks, :func:`~faers_anon.algorithms._group.cap_bits`)."""

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
    pmask: I64
    cmask: I64
    fs: I64


def new_store(n: int, n_cat: int, n_freq: int, n_fields: int = 0) -> Store:
    """An empty store for n cases (at most n groups), C categorical attributes, F pressing values and
    the field QIDs' state (:mod:`faers_anon.algorithms._fields`)."""
    return Store(
        np.full(n, -1, np.int64),
        np.empty(n, np.int64),
        np.empty(n, np.int64),
        np.empty(n, np.int64),
        np.full(n, -1, np.int64),
        np.full(n, -1, np.int64),
        np.empty((n, n_cat), np.int64),
        np.empty((n, 4)),
        np.empty((n, 2), np.int64),
        np.empty(n),
        np.zeros((n, n_freq)),
        np.zeros(n, np.int64),
        np.zeros(n, np.int64),
        np.zeros((n, n_fields, 4), np.int64),
    )


@njit(cache=True)  # type: ignore[misc]
def store_state(g: Group, tab: Tables, cases: Cases, req: I64, store: Store, gid: int) -> None:
    """Copy a group's QID state, size, loss, pressing values' σ and signature masks into the store."""
    store.cat[gid, :] = g.cat
    store.w[gid, :] = g.w
    store.size[gid, :] = g.size
    store.fs[gid] = g.fs
    store.loss[gid] = loss_per_case(tab, g.cat, g.w, g.fs)
    for f in range(cases.freq_val.shape[0]):
        store.fsig[gid, f] = g.sigma[cases.freq_val[f]]
    store.pmask[gid] = blocked_bits(g, cases, req)
    store.cmask[gid] = cap_bits(g, cases, req)


@njit(cache=True, inline="always")  # type: ignore[misc]
def frequent_excess(cases: Cases, req: I64, store: Store, gid: int, r: int) -> float:
    """Largest (σ_s(g) + P(s | r) − θ_s·(|g|+1)) / (|g|+1) over r's pressing values (−1 if none).

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


@njit(cache=True, inline="always")  # type: ignore[misc]
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
    lf = fields_with(tab.f_off, tab.f_height, store.fs[gid], pool.pat_fcode, p)
    n = store.size[gid, 0]
    return max(0.0, (n + 1) * (lc + wt + lf) - n * store.loss[gid])


def order_by_caps(pool: Pool, store: Store) -> None:
    """Re-sort each pattern's slots of the stage-2 pool by descending ``cmask`` of the member's group.

    The stage-2 walk then jumps over runs of members whose group a leftover would break, as stage 1
    jumps over blocked cases. Called once, after stage 1; ties keep the previous slot order.
    """
    slots = pool.slots.copy()
    gid = store.group_of[slots]
    key = np.where(gid >= 0, -store.cmask[np.maximum(gid, 0)], 0)
    order = np.lexsort((key, pool.case_pattern[slots]))
    pool.slots[:] = slots[order]
    pool.slot_key[:] = key[order]
    pool.slot_of[pool.slots] = np.arange(slots.shape[0], dtype=np.int64)


class Dirty(NamedTuple):
    """Groups changed in stage 2 (``group``), whose stage-1 members left the sorted walk for their
    pattern's list (``head`` per pattern, ``next`` per case; −1 ends a list)."""

    head: I64
    next: I64
    group: NDArray[np.bool_]


@njit(cache=True)  # type: ignore[misc]
def mark_dirty(pool: Pool, store: Store, dirty: Dirty, gid: int) -> None:
    """Take a group that took a leftover (its ``cmask`` changed) out of the sorted walk, once: its
    stage-1 members leave their slots and join their pattern's dirty list."""
    if dirty.group[gid]:
        return
    dirty.group[gid] = True
    for i in range(store.first[gid], store.first[gid] + store.length[gid]):
        m = store.order[i]
        pos = pool.slot_of[m]
        pool.slot_nxt[pos] = pos + 1
        p = pool.case_pattern[m]
        dirty.next[m] = dirty.head[p]
        dirty.head[p] = m


@njit(cache=True)  # type: ignore[misc]
def search_groups(
    pool: Pool,
    tab: Tables,
    cases: Cases,
    req: I64,
    single: Group,
    g: Group,
    st: Streams,
    store: Store,
    dirty: Dirty,
    stamp: I64,
    epoch: int,
    r: int,
    m_best: int,
    scan_limit: int,
    skip: bool,
) -> tuple[int, bool]:
    """Stage 2: the group with least ΔIL'(g, r) that stays valid, among those considered.

    ``pool`` holds the cases stage 1 grouped, each pattern's slots sorted by their group's ``cmask``
    (:func:`order_by_caps`); groups changed since are on the patterns' dirty lists (:func:`mark_dirty`).
    A popped pattern's slots are walked jumping over runs of groups that r would make invalid, then its
    dirty members one by one (``skip`` false: no jumps, every member's group is considered).
    ``stamp``/``epoch`` mark groups already seen; at most ``scan_limit`` groups are considered and
    ``scan_limit`` patterns and jumps visited. Returns (group, forced).

    A group whose ``pmask`` meets r's signature has PR = ∞ and one whose ``cmask`` meets it turns
    invalid: both are ruled on in O(1) and rebuilt only when they could be the answer. A group that
    stays valid but has PR = ∞ (the floor in η_s is stricter than the cap) has no finite ΔIL'; when no
    considered group has a finite one, the valid one with least ΔIL is taken (ties: lowest id). When
    no considered group stays valid, the one whose excess after adding r is least is returned with
    forced = True (ties: least ΔIL, then lowest id); (−1, True) if no group was reached at all.
    """
    reset(single)
    add_pooled(single, pool, tab, cases, r)
    lr = loss_per_case(tab, single.cat, single.w, single.fs)
    sig = cases.sig[r]
    jump = sig if skip else 0
    size = open_streams(st, pool, tab, single)
    best, best_g = np.inf, -1
    va_d, va_g = np.inf, -1
    fb_e, fb_d, fb_g = np.inf, np.inf, -1
    evals = 0
    visits = 0
    slots, slot_key, slot_nxt, group_of = pool.slots, pool.slot_key, pool.slot_nxt, store.group_of
    while visits < scan_limit:
        p, dil_rc, size = pop(st, size, 2.0 * best - lr)
        if p < 0:
            break
        visits += 1
        if 0.5 * (dil_rc + lr) >= best:
            continue
        pos = pool.pat_start[p]
        end = pos + pool.pat_size[p]
        m = dirty.head[p]
        while True:
            if pos < end:
                q = find_next(slot_nxt, pos)
                if q >= end:
                    pos = end
                    continue
                x = -slot_key[q]
                if (x & jump) != 0:
                    visits += 1
                    pos = lower_bound(slot_key, q, end, -prev_free(x, jump))
                    continue
                gid = group_of[slots[q]]
                pos = q + 1
            elif m >= 0:
                gid = group_of[m]
                m = dirty.next[m]
            else:
                break
            if stamp[gid] == epoch:
                continue
            if evals >= scan_limit or (evals >= m_best and best < np.inf):
                return _answer(best_g, va_g, fb_g)
            stamp[gid] = epoch
            evals += 1
            dg = delta_to_group(pool, tab, store, gid, r)
            if dg >= best:
                continue
            infinite = (sig & store.pmask[gid]) != 0
            if infinite and (best_g >= 0 or dg > va_d or (dg == va_d and gid > va_g)):
                continue
            if best_g < 0 and va_g < 0:
                fe = frequent_excess(cases, req, store, gid, r)
                if fe > 0:
                    if fe < fb_e or (fe == fb_e and (dg < fb_d or (dg == fb_d and gid < fb_g))):
                        fb_e, fb_d, fb_g = fe, dg, gid
                    continue
            elif (sig & store.cmask[gid]) != 0:
                continue
            load_group(g, pool, tab, cases, store, gid)
            pr = np.inf if infinite else risk(g, cases, req, r)
            add_pooled(g, pool, tab, cases, r)
            valid = is_valid(g, cases, req)
            if valid and pr < np.inf:
                if dg * pr < best:
                    best, best_g = dg * pr, gid
            elif valid:
                if best_g < 0 and (dg < va_d or (dg == va_d and gid < va_g)):
                    va_d, va_g = dg, gid
            elif best_g < 0 and va_g < 0:
                e = excess(g, cases, req)
                if e < fb_e or (e == fb_e and (dg < fb_d or (dg == fb_d and gid < fb_g))):
                    fb_e, fb_d, fb_g = e, dg, gid
    return _answer(best_g, va_g, fb_g)


@njit(cache=True, inline="always")  # type: ignore[misc]
def _answer(best_g: int, va_g: int, fb_g: int) -> tuple[int, bool]:
    if best_g >= 0:
        return best_g, False
    if va_g >= 0:
        return va_g, False
    return fb_g, True
