"""Numba structures of the clustering kernel: the pool of unassigned cases, skip lists, a small heap.

The pool compresses cases into QID *patterns* (identical categorical nodes, weight-missing flag, weight
[lo, hi] and field codes) and patterns into *classes* (identical categorical nodes, weight-missing flag
and field codes at the class levels, :mod:`faers_anon.algorithms._fields`).
Patterns are stored sorted by (class, lo, hi), so each class owns a contiguous range of pattern
positions. Three orders of every class's patterns are kept: by lo (the storage order), by hi and by
width hi − lo; each has a *skip list* (union-find "next/previous alive position" with path
compression), so finding the nearest non-empty pattern in any direction is amortized O(α(P)) even
after most patterns are exhausted. A pattern's cases occupy a fixed range of *slots* sorted by
descending signature (:class:`Cases`; ``slot_key`` = −signature, ascending, for binary search;
``pat_common`` = the bits every case of the pattern holds); a fourth skip list over slots marks the
cases still pooled. Removing a case is O(1) and the slots keep their order, which lets the search jump
over runs of cases whose signature rules them out (:mod:`faers_anon.algorithms._search`).

All functions here are ``@njit(cache=True)``; they work on the :class:`Pool` and :class:`Tables`
named tuples of arrays built by :mod:`faers_anon.algorithms._encode`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from faers_anon._numba_cache import njit
from faers_anon.algorithms._fields import fields_bound

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]


class Tables(NamedTuple):
    """Read-only QID tables: LCA per categorical attribute and normalized node heights.

    ``lca[j, a, b]`` is the LCA code of nodes a, b of attribute j (padded to the largest tree);
    ``hnorm[j, a]`` = h(a) / h(T_j) (0 when h(T_j) = 0); ``inv_range[0]`` = 1 / (max N − min N) of the
    weight domain (0 when the range is empty). Field QIDs (:mod:`faers_anon.algorithms._fields`): field
    f owns columns ``f_off[f] … f_off[f] + f_height[f] − 1`` of the code rows; ``f_lc[f]`` is its class
    level.
    """

    lca: I64
    hnorm: F64
    inv_range: F64
    f_off: I64
    f_height: I64
    f_lc: I64
    w_cap: F64  # [0]: the largest weight term of any pair of cases (≥ 1: a missing/known mix costs 1)


class Cases(NamedTuple):
    """Per-case arrays: rows (reports) and the protected sensitive values in CSR form.

    ``freq_val[f]`` is the value id of the f-th most pressing protected value (F of them) and
    ``freq_slot[v]`` its slot f, or −1; committed groups keep σ_s for these values in a dense matrix so
    that stage 2 can rule a group out without rebuilding it. ``sig[c]`` is the case's signature over
    the indexed values ``sig_val`` (bits ``sig_bit[i] + level``, least p per level ``sig_bound[i, l]``;
    :func:`faers_anon.algorithms._encode.build_cases`).
    """

    rows: I64
    val_ptr: I64
    val_id: NDArray[np.int32]
    val_p: F64
    theta: F64
    freq_val: I64
    freq_slot: I64
    sig: I64
    sig_val: I64
    sig_bit: I64
    sig_bound: F64


class Pool(NamedTuple):
    """Unassigned cases grouped by pattern and class (see the module docstring)."""

    pat_class: I64
    pat_lo: F64
    pat_hi: F64
    pat_start: I64
    pat_size: I64
    pat_common: I64
    pat_count: I64
    slots: I64
    slot_of: I64
    slot_key: I64
    slot_nxt: I64
    case_pattern: I64
    nxt: I64
    prv: I64
    hi_order: I64
    hi_pos: I64
    hi_prv: I64
    wd_order: I64
    wd_pos: I64
    wd_prv: I64
    cls_start: I64
    cls_end: I64
    cls_cat: I64
    cls_wmiss: NDArray[np.bool_]
    cls_count: I64
    remaining: I64  # [cases, rows]
    pat_fcode: I64  # per pattern its field codes (:mod:`faers_anon.algorithms._fields`)
    cls_fcode: I64  # per class its field codes at the class levels, UNKNOWN below


@njit(cache=True, inline="always")  # type: ignore[misc]
def find_next(nxt: I64, i: int) -> int:
    """Smallest alive position ≥ i (alive: ``nxt[p] == p``; the last position is an alive sentinel)."""
    root = i
    while nxt[root] != root:
        root = nxt[root]
    while nxt[i] != root:
        t = nxt[i]
        nxt[i] = root
        i = t
    return root


@njit(cache=True, inline="always")  # type: ignore[misc]
def find_prev(prv: I64, i: int) -> int:
    """Largest alive position ≤ i, or −1 (arrays are shifted by one: slot 0 is an alive sentinel)."""
    j = i + 1
    root = j
    while prv[root] != root:
        root = prv[root]
    while prv[j] != root:
        t = prv[j]
        prv[j] = root
        j = t
    return root - 1


@njit(cache=True)  # type: ignore[misc]
def remove_case(pool: Pool, cases: Cases, case: int) -> None:
    """Take one case out of the pool (kill its slot); kill its pattern in the three pattern skip lists
    when it empties."""
    p = pool.case_pattern[case]
    pos = pool.slot_of[case]
    pool.slot_nxt[pos] = pos + 1
    pool.pat_count[p] -= 1
    pool.cls_count[pool.pat_class[p]] -= 1
    pool.remaining[0] -= 1
    pool.remaining[1] -= cases.rows[case]
    if pool.pat_count[p] == 0:
        pool.nxt[p] = p + 1
        pool.prv[p + 1] = p
        h = pool.hi_pos[p]
        pool.hi_prv[h + 1] = h
        w = pool.wd_pos[p]
        pool.wd_prv[w + 1] = w


@njit(cache=True, inline="always")  # type: ignore[misc]
def first_in_class(pool: Pool, c: int) -> int:
    """The non-empty pattern of class c with the smallest lo (−1 if the class is empty)."""
    p = find_next(pool.nxt, pool.cls_start[c])
    return p if p < pool.cls_end[c] else -1


@njit(cache=True)  # type: ignore[misc]
def farthest_case(pool: Pool, tab: Tables, cat: I64, wmiss: bool, lo: float, hi: float, fs: I64) -> int:
    """The remaining case farthest from a point (categorical nodes ``cat``, weight [lo, hi] or missing,
    field state ``fs`` of the point alone).

    Distance = the normalized loss of generalizing the pair: Σ_j h(LCA(a_j, b_j)) / h(T_j) plus the
    weight term ((max hi − min lo) / range; 1 if exactly one is missing; 0 if both are) plus the field
    terms. Exact on age, sex and weight: per class the weight part is maximized by the pattern with the
    least lo, the greatest hi or the greatest width (the pair's width is max(seed width, hi_s − lo,
    hi − lo_s, hi − lo)), all three found through the skip lists; the field terms are the class's
    lower bound (:func:`~faers_anon.algorithms._fields.fields_bound`, exact for fields whose class
    level is 0), computed only for a class whose other terms plus one per field could beat the best;
    the class's patterns are looked up only when its terms plus the largest weight term could. Ties go
    to the lower class, then to that order of the three.
    """
    n_fields = float(tab.f_height.shape[0])
    inv_r, w_cap = tab.inv_range[0], tab.w_cap[0]
    best = -1.0
    best_p = -1
    for c in range(pool.cls_start.shape[0]):
        if pool.cls_count[c] == 0:
            continue
        d = 0.0
        for j in range(cat.shape[0]):
            d += tab.hnorm[j, tab.lca[j, cat[j], pool.cls_cat[c, j]]]
        if n_fields > 0 and d + n_fields + w_cap > best:
            d += fields_bound(tab.f_off, tab.f_height, tab.f_lc, fs, pool.pat_fcode, pool.cls_fcode, c)
        if d + w_cap <= best:  # no pattern of the class can beat the best: skip its skip-list walks
            continue
        p_first = first_in_class(pool, c)
        if wmiss or pool.cls_wmiss[c]:
            w = 0.0 if (wmiss and pool.cls_wmiss[c]) else 1.0
            if d + w > best:
                best = d + w
                best_p = p_first
            continue
        p_hi = pool.hi_order[find_prev(pool.hi_prv, pool.cls_end[c] - 1)]
        p_wd = pool.wd_order[find_prev(pool.wd_prv, pool.cls_end[c] - 1)]
        for q in (p_first, p_hi, p_wd):
            w = (max(hi, pool.pat_hi[q]) - min(lo, pool.pat_lo[q])) * inv_r
            if d + w > best:
                best = d + w
                best_p = q
    if best_p < 0:
        return -1
    return pool.slots[find_next(pool.slot_nxt, pool.pat_start[best_p])]


@njit(cache=True, inline="always")  # type: ignore[misc]
def lower_bound(a: F64, lo: int, hi: int, x: float) -> int:
    """The first i in [lo, hi) with a[i] ≥ x (hi if none), a sorted there: ``lo + np.searchsorted(a[lo:hi],
    x)`` without the slice (an array view, whose reference count numba updates atomically)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, inline="always")  # type: ignore[misc]
def heap_push(key: F64, val: I64, size: int, k: float, v: int) -> int:
    """Push (k, v) on a binary min-heap ordered by (key, val); returns the new size."""
    i = size
    key[i] = k
    val[i] = v
    while i > 0:
        parent = (i - 1) // 2
        if key[parent] < key[i] or (key[parent] == key[i] and val[parent] <= val[i]):
            break
        key[parent], key[i] = key[i], key[parent]
        val[parent], val[i] = val[i], val[parent]
        i = parent
    return size + 1


@njit(cache=True, inline="always")  # type: ignore[misc]
def heap_pop(key: F64, val: I64, size: int) -> int:
    """Remove the top (key[0], val[0]) — read them before calling; returns the new size."""
    size -= 1
    key[0] = key[size]
    val[0] = val[size]
    _sift_down(key, val, size, 0)
    return size


@njit(cache=True, inline="always")  # type: ignore[misc]
def heap_replace_top(key: F64, val: I64, size: int, k: float) -> None:
    """Give the top entry (key[0], val[0]) the key k and restore the heap: one sift-down, where a pop
    and a push of the same value would sift twice. A key that stays the least costs O(1)."""
    key[0] = k
    _sift_down(key, val, size, 0)


@njit(cache=True)  # type: ignore[misc]
def heapify(key: F64, val: I64, size: int) -> None:
    """Make the first ``size`` entries a min-heap ordered by (key, val), bottom-up in O(size)."""
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(key, val, size, i)


@njit(cache=True, inline="always")  # type: ignore[misc]
def _sift_down(key: F64, val: I64, size: int, i: int) -> None:
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        m = left
        right = left + 1
        if right < size and (key[right] < key[left] or (key[right] == key[left] and val[right] < val[left])):
            m = right
        if key[i] < key[m] or (key[i] == key[m] and val[i] <= val[m]):
            break
        key[m], key[i] = key[i], key[m]
        val[m], val[i] = val[i], val[m]
        i = m
