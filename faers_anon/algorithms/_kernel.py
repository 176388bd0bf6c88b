"""The numba kernel of the greedy clustering (Lin, Yang & Wang 2016, Algorithms 1–2; SPEC §6).

Stage 1 (:func:`stage1`) grows a group from a seed, adding the candidate with least ΔIL' = ΔIL·PR
(:func:`~faers_anon.algorithms._search.search`) until the model's requirements hold; the next seed is
the remaining case farthest from the previous seed (:func:`~faers_anon.algorithms._pool.farthest_case`).
A group that cannot be completed (no candidate with finite ΔIL' within the search budget, or the pool
ran dry) is dissolved: its cases become leftovers. Stage 1 stops when the pool holds fewer units than
the minimum size. Stage 2 (:func:`stage2`) places each leftover, in order, in the group with least ΔIL'
that stays valid (:func:`~faers_anon.algorithms._groups.search_groups`, within a per-leftover budget of
``scan_limit // STAGE2_SHARE`` groups); if none of them can take it validly it goes where the excess is
least among its ``STAGE2_RANK·M`` nearest groups and the placement is counted as forced (the group is
then invalid until :mod:`faers_anon.algorithms.repair` merges it). If stage 1 made no group at all,
every case forms one group (valid only if the model allows it).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from faers_anon._numba_cache import njit
from faers_anon.algorithms._fields import add_fields, fields_with
from faers_anon.algorithms._group import REQ_MIN, REQ_ROWS, Group, is_valid, loss_per_case, reset
from faers_anon.algorithms._groups import Dirty, Store, load_group, mark_dirty, search_groups, store_state
from faers_anon.algorithms._pool import Cases, Pool, Tables, farthest_case, find_next, remove_case
from faers_anon.algorithms._search import add_pooled, search
from faers_anon.algorithms._streams import Streams

I64 = NDArray[np.int64]

STAGE2_SHARE = 4
"""Stage 2 considers at most ``scan_limit // STAGE2_SHARE`` groups per leftover (at least M)."""
STAGE2_RANK = 4
"""A leftover no considered group can take validly is placed among its ``STAGE2_RANK·M`` nearest groups."""


@njit(cache=True)  # type: ignore[misc]
def _commit(
    g: Group, tab: Tables, cases: Cases, req: I64, store: Store, gid: int, start: int, stop: int
) -> None:
    store.first[gid] = start
    store.length[gid] = stop - start
    store_state(g, tab, cases, req, store, gid)
    for i in range(start, stop):
        store.group_of[store.order[i]] = gid


@njit(cache=True)  # type: ignore[misc]
def stage1(
    pool: Pool,
    tab: Tables,
    cases: Cases,
    req: I64,
    g: Group,
    st: Streams,
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
    seed_fs = np.zeros_like(g.fs)
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
            cand = search(pool, tab, cases, req, g, st, m_best, scan_limit)
            if cand < 0:
                break
            remove_case(pool, cases, cand)
            add_pooled(g, pool, tab, cases, cand)
            store.order[filled] = cand
            filled += 1
            ok = is_valid(g, cases, req)
        if ok:
            _commit(g, tab, cases, req, store, n_groups, start, filled)
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
        seed_fs[:] = 0
        add_fields(tab.f_off, tab.f_height, seed_fs, pool.pat_fcode, p)
        seed = farthest_case(
            pool, tab, pool.cls_cat[c], pool.cls_wmiss[c], pool.pat_lo[p], pool.pat_hi[p], seed_fs
        )
    q = find_next(pool.slot_nxt, 0)
    while q < pool.slots.shape[0]:
        leftovers[n_left] = pool.slots[q]
        n_left += 1
        q = find_next(pool.slot_nxt, q + 1)
    return n_groups, n_left, filled, failed


@njit(cache=True)  # type: ignore[misc]
def stage2_budgets(m_best: int, scan_limit: int) -> tuple[int, int]:
    """Groups considered per leftover: (search, forced ranking) = (max(M, scan_limit // STAGE2_SHARE),
    min(that, STAGE2_RANK·M)); both ≥ M whenever scan_limit ≥ M."""
    budget = max(m_best, scan_limit // STAGE2_SHARE)
    return budget, min(budget, STAGE2_RANK * m_best)


@njit(cache=True)  # type: ignore[misc]
def stage2(
    pool: Pool,
    tab: Tables,
    cases: Cases,
    req: I64,
    g: Group,
    single: Group,
    st: Streams,
    store: Store,
    n_groups: int,
    filled: int,
    leftovers: I64,
    n_left: int,
    m_best: int,
    scan_limit: int,
) -> tuple[int, int]:
    """Algorithm 2, first step: place the leftovers (``pool`` holds every case); returns (groups, forced)."""
    if n_left == 0:
        return n_groups, 0
    if n_groups == 0:
        reset(g)
        for i in range(n_left):
            add_pooled(g, pool, tab, cases, leftovers[i])
            store.order[filled + i] = leftovers[i]
        _commit(g, tab, cases, req, store, n_groups, filled, filled + n_left)
        return 1, 0 if is_valid(g, cases, req) else n_left
    for i in range(n_left):
        remove_case(pool, cases, leftovers[i])
    dirty = Dirty(
        np.full(pool.pat_start.shape[0], -1, np.int64),
        np.full(pool.slots.shape[0], -1, np.int64),
        np.zeros(n_groups, np.bool_),
    )
    stamp = np.full(n_groups, -1, np.int64)
    budget, rank_budget = stage2_budgets(m_best, scan_limit)
    forced = 0
    for i in range(n_left):
        r = leftovers[i]
        gid, was_forced = search_groups(
            pool, tab, cases, req, single, g, st, store, dirty, stamp, 2 * i, r, m_best, budget, True
        )
        if gid < 0:  # every group in reach would break: rank the nearest ones for a forced placement
            gid, was_forced = search_groups(
                pool,
                tab,
                cases,
                req,
                single,
                g,
                st,
                store,
                dirty,
                stamp,
                2 * i + 1,
                r,
                m_best,
                rank_budget,
                False,
            )
        if was_forced:
            forced += 1
        mark_dirty(pool, store, dirty, gid)
        load_group(g, pool, tab, cases, store, gid)
        add_pooled(g, pool, tab, cases, r)
        store.extra_next[r] = store.extra_head[gid]
        store.extra_head[gid] = r
        store.group_of[r] = gid
        store_state(g, tab, cases, req, store, gid)
    return n_groups, forced


@njit(cache=True)  # type: ignore[misc]
def count_invalid(
    pool: Pool, tab: Tables, cases: Cases, req: I64, g: Group, store: Store, n_groups: int
) -> int:
    """Number of committed groups that fail the model's requirements (0 unless placements were forced).

    Stage 1 commits only valid groups, so only the groups that took leftovers are rebuilt and checked
    (and the single group of a stage 1 that made none).
    """
    bad = 0
    for gid in range(n_groups):
        if n_groups > 1 and store.extra_head[gid] < 0:
            continue
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
    base = loss_per_case(tab, cat, w, g.fs[:0])  # age, sex, weight: no field state
    after = base + fields_with(tab.f_off, tab.f_height, g.fs, pool.pat_fcode, p)
    return max(0.0, (n + 1) * after - n * loss_per_case(tab, g.cat, g.w, g.fs))
