"""Nearest-first pattern streams of the clustering kernel (the candidate order of both stages).

Given a group g, every class (identical categorical nodes and weight-missing flag) yields its non-empty
patterns in nondecreasing order of a lower bound on ΔIL(g, r): when the weight term of the class is
constant (g or the class missing on weight, or g mixed) all its patterns share one exact ΔIL; otherwise
the stream walks outward from g's weight interval [a, b] through the lo-sorted patterns, with
ΔIL ≥ base + (|g|+1)·(a − lo)/range on the left and ≥ base + (|g|+1)·max(0, lo − b)/range on the right
(both nondecreasing along the walk). A heap merges the class streams; each popped pattern gets its exact
ΔIL. A class enters the heap keyed by its *base* bound (its ΔIL before the weight walk, a lower bound of
every pattern in it) and is positioned (a binary search in its lo-sorted patterns) only when it first
reaches the top, so a search that stops early never pays for the classes it did not reach.

Field QIDs (:mod:`faers_anon.algorithms._fields`): a class enters the heap with the group's own field
loss as its field part (a lower bound: the loss only grows), and its field bound
(:func:`~faers_anon.algorithms._fields.fields_bound`, O(levels)) is computed when it first reaches the
top, together with its positioning; a popped pattern's ΔIL adds its exact field terms minus that
bound. Heap keys stay lower bounds, every popped ΔIL is exact, and a search pays the field bound only
for the classes it reaches (computing it for every class made a search O(classes · levels): 90 s of
stage 1 at 50k cases with 1,583 classes).

:class:`Streams` holds references to exactly the pool arrays the walk reads plus the per-class state,
so the per-pattern call :func:`pop` passes 13 arrays rather than the whole pool (numba reference-counts
every array of every tuple argument on each call).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from faers_anon._numba_cache import njit
from faers_anon.algorithms._fields import fields_bound, fields_loss, fields_with
from faers_anon.algorithms._group import Group, loss_per_case
from faers_anon.algorithms._pool import (
    Pool,
    Tables,
    find_next,
    find_prev,
    heap_pop,
    heap_replace_top,
    heapify,
    lower_bound,
)

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]

UNOPENED = -2
"""``Streams.left`` of a class not yet positioned."""


class Streams(NamedTuple):
    """The walk over one pool: its pattern arrays (shared) and per-class heap and stream state.

    ``key``/``val`` are the heap; ``base`` the class's ΔIL before the weight walk; ``walk`` whether the
    class walks by weight; ``left``/``right`` the next pattern on each side (−1: exhausted; ``left`` =
    :data:`UNOPENED` before positioning); ``param`` = [a, b, |g|, 1/range, Σ_f F_f(g)] of the current
    group; ``fbound`` the class's lower bound of the field terms (Σ_f F_f(g) until positioned) and
    ``gfs`` the group's field state; ``cls_fcode``, ``f_lc`` as in the pool and tables.
    """

    pat_lo: F64
    pat_hi: F64
    nxt: I64
    prv: I64
    cls_start: I64
    cls_end: I64
    key: F64
    val: I64
    base: F64
    walk: NDArray[np.bool_]
    left: I64
    right: I64
    param: F64
    pat_fcode: I64
    f_off: I64
    f_height: I64
    fbound: F64
    gfs: I64
    cls_fcode: I64
    f_lc: I64


def new_streams(pool: Pool, tab: Tables) -> Streams:
    """Streams over ``pool`` (its pattern arrays are shared, so removals show through)."""
    n_cls = pool.cls_start.shape[0]
    return Streams(
        pool.pat_lo,
        pool.pat_hi,
        pool.nxt,
        pool.prv,
        pool.cls_start,
        pool.cls_end,
        np.empty(n_cls),
        np.empty(n_cls, np.int64),
        np.empty(n_cls),
        np.empty(n_cls, np.bool_),
        np.empty(n_cls, np.int64),
        np.empty(n_cls, np.int64),
        np.zeros(5),
        pool.pat_fcode,
        tab.f_off,
        tab.f_height,
        np.zeros(n_cls),
        np.zeros((tab.f_height.shape[0], 4), np.int64),
        pool.cls_fcode,
        tab.f_lc,
    )


@njit(cache=True)  # type: ignore[misc]
def open_streams(st: Streams, pool: Pool, tab: Tables, g: Group) -> int:
    """Put every non-empty class of ``pool`` on the heap for group g, keyed by its base bound, unpositioned;
    returns the heap size."""
    n = g.size[0]
    inv_r = tab.inv_range[0]
    lg = loss_per_case(tab, g.cat, g.w, g.fs)
    known, miss, a, b = g.w[0], g.w[1], g.w[2], g.w[3]
    lf = fields_loss(tab.f_off, tab.f_height, g.fs)
    st.param[0], st.param[1], st.param[2], st.param[3], st.param[4] = a, b, n, inv_r, lf
    st.gfs[:] = g.fs
    size = 0
    for c in range(pool.cls_start.shape[0]):
        if pool.cls_count[c] == 0:
            continue
        lcat = lf
        st.fbound[c] = lf
        for j in range(g.cat.shape[0]):
            lcat += tab.hnorm[j, tab.lca[j, g.cat[j], pool.cls_cat[c, j]]]
        walk = known > 0 and miss == 0 and not pool.cls_wmiss[c]
        if walk:
            wc = (b - a) * inv_r
        elif known == 0:
            wc = 0.0 if pool.cls_wmiss[c] else 1.0
        else:
            wc = 1.0
        st.base[c] = max(0.0, (n + 1) * (lcat + wc) - n * lg)
        st.walk[c] = walk
        st.left[c] = UNOPENED
        st.key[size] = st.base[c]
        st.val[size] = c
        size += 1
    heapify(st.key, st.val, size)  # O(classes), not O(classes · log classes) of one push each
    return size


@njit(cache=True, inline="always")  # type: ignore[misc]
def _walk_bound(st: Streams, c: int) -> float:
    a, b, scale = st.param[0], st.param[1], (st.param[2] + 1) * st.param[3]
    ext_l = (a - st.pat_lo[st.left[c]]) if st.left[c] >= 0 else np.inf
    ext_r = max(0.0, st.pat_lo[st.right[c]] - b) if st.right[c] >= 0 else np.inf
    return st.base[c] + scale * min(ext_l, ext_r)


@njit(cache=True, inline="always")  # type: ignore[misc]
def _field_excess(st: Streams, c: int, p: int) -> float:
    """Pattern p's exact field terms minus its class's bound (≥ 0; 0 without field QIDs)."""
    if st.f_height.shape[0] == 0:
        return 0.0
    return fields_with(st.f_off, st.f_height, st.gfs, st.pat_fcode, p) - st.fbound[c]  # type: ignore[no-any-return]


@njit(cache=True, inline="always")  # type: ignore[misc]
def pop_pattern(st: Streams, size: int, stop: float) -> tuple[int, int, float, int]:
    """The pattern with the least bound, its class and its weight change, or (−1, −1, 0, size) when the
    heap is empty or its least bound is ≥ ``stop``; returns (pattern, class, weight change, heap size).

    Unpositioned classes reaching the top are positioned and given their walk bound (≥ their base)
    first, so the top key is a lower bound of ΔIL over every pattern not yet popped. The popped class's
    stream is advanced and its key updated in place (:func:`~faers_anon.algorithms._pool.
    heap_replace_top`: a class whose key stays the least, as a class without a weight walk, is popped
    again in O(1)). The pattern's exact ΔIL is :func:`pattern_dil`, computed only when the caller
    needs it (the stage-1 search skips blocked patterns without it). The order of the patterns is the
    heap's order on (key, class), one entry per class: how the heap is kept does not change it.
    """
    a, b, n, inv_r = st.param[0], st.param[1], st.param[2], st.param[3]
    while size > 0 and st.left[st.val[0]] == UNOPENED:
        c = st.val[0]
        if st.f_height.shape[0] > 0:
            fb = fields_bound(st.f_off, st.f_height, st.f_lc, st.gfs, st.pat_fcode, st.cls_fcode, c)
            st.base[c] = max(0.0, st.base[c] + (n + 1) * (fb - st.param[4]))
            st.fbound[c] = fb
        s0, e0 = st.cls_start[c], st.cls_end[c]
        if st.walk[c]:
            pos = lower_bound(st.pat_lo, s0, e0, a)
            r = find_next(st.nxt, pos)
            st.right[c] = r if r < e0 else -1
            left = find_prev(st.prv, pos - 1)
            st.left[c] = left if left >= s0 else -1
            lb = _walk_bound(st, c)
        else:
            r = find_next(st.nxt, s0)
            st.right[c] = r if r < e0 else -1
            st.left[c] = -1
            lb = st.base[c]
        heap_replace_top(st.key, st.val, size, lb)
    if size == 0 or st.key[0] >= stop:
        return -1, -1, 0.0, size
    c = st.val[0]
    s0, e0 = st.cls_start[c], st.cls_end[c]
    if st.walk[c]:
        ext_l = (a - st.pat_lo[st.left[c]]) if st.left[c] >= 0 else np.inf
        ext_r = max(0.0, st.pat_lo[st.right[c]] - b) if st.right[c] >= 0 else np.inf
        if ext_r <= ext_l:
            p = st.right[c]
            q = find_next(st.nxt, p + 1)
            st.right[c] = q if q < e0 else -1
        else:
            p = st.left[c]
            q = find_prev(st.prv, p - 1)
            st.left[c] = q if q >= s0 else -1
        wd = (max(b, st.pat_hi[p]) - min(a, st.pat_lo[p])) * inv_r - (b - a) * inv_r
        if st.left[c] >= 0 or st.right[c] >= 0:
            heap_replace_top(st.key, st.val, size, _walk_bound(st, c))
        else:
            size = heap_pop(st.key, st.val, size)
        return p, c, wd, size
    p = st.right[c]
    q = find_next(st.nxt, p + 1)
    if q < e0:
        st.right[c] = q  # same key, still the least: the heap is unchanged
    else:
        size = heap_pop(st.key, st.val, size)
    return p, c, 0.0, size


@njit(cache=True, inline="always")  # type: ignore[misc]
def pattern_dil(st: Streams, c: int, p: int, wd: float) -> float:
    """The exact ΔIL(g, ·) of pattern p of class c popped with weight change ``wd``
    (:func:`pop_pattern`): base + (|g|+1)·(weight change + field terms beyond the class's bound)."""
    n = st.param[2]
    if st.walk[c]:
        dil = st.base[c] + (n + 1) * (wd + _field_excess(st, c, p))
    else:
        dil = st.base[c] + (n + 1) * _field_excess(st, c, p)
    return max(0.0, dil)


@njit(cache=True, inline="always")  # type: ignore[misc]
def pop(st: Streams, size: int, stop: float) -> tuple[int, float, int]:
    """:func:`pop_pattern` with the pattern's exact ΔIL: (pattern, ΔIL, heap size), or (−1, ∞, size)."""
    p, c, wd, size = pop_pattern(st, size, stop)
    if p < 0:
        return -1, np.inf, size
    return p, pattern_dil(st, c, p, wd), size
