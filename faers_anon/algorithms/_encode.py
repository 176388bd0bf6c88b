"""Build the kernel's arrays (:class:`Tables`, :class:`Cases`, :class:`Pool`) from per-case numpy arrays.

Vectorized numpy (lexsort, run boundaries), plus one numba pass over the P(s | c) entries for the case
signatures (:func:`_signatures`). Cases must arrive in a fixed order (the caller sorts by caseid) so that
patterns, classes and every tie in the kernel are deterministic.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon._numba_cache import njit
from faers_anon.algorithms._fields import MISSING, UNKNOWN
from faers_anon.algorithms._pool import Cases, Pool, Tables
from hierarchies import Hierarchy

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]


def build_tables(
    trees: Sequence[Hierarchy],
    lo: F64,
    hi: F64,
    wmiss: NDArray[np.bool_],
    domain: tuple[float, float] | None,
    heights: I64,
    class_levels: I64,
) -> Tables:
    """LCA tables (padded to the largest tree), normalized heights, 1 / weight range, the field QIDs'
    column offsets, heights and class levels, and the largest weight term of a pair (max(1, span / range)).

    The weight range is ``domain[1] − domain[0]`` when given, else max(hi) − min(lo) over the known
    weights; an empty range (one weight value, or none known) gives 1 / range := 0, so the weight term
    is 0 for every all-known group, which is exact since all widths are then 0.
    """
    size = max((len(t.names) for t in trees), default=1)
    lca = np.zeros((len(trees), size, size), np.int64)
    hnorm = np.zeros((len(trees), size), np.float64)
    for j, tree in enumerate(trees):
        n = len(tree.names)
        lca[j, :n, :n] = tree.lca_table
        if tree.height > 0:
            hnorm[j, :n] = tree.node_height / tree.height
    if domain is not None:
        width = float(domain[1]) - float(domain[0])
    elif bool(np.any(~wmiss)):
        width = float(np.max(hi[~wmiss]) - np.min(lo[~wmiss]))
    else:
        width = 0.0
    inv = np.array([1.0 / width if width > 0 else 0.0])
    span = float(np.max(hi[~wmiss]) - np.min(lo[~wmiss])) * inv[0] if bool(np.any(~wmiss)) else 0.0
    off = np.zeros(heights.shape[0] + 1, np.int64)
    np.cumsum(heights, out=off[1:])
    return Tables(
        lca,
        hnorm,
        inv,
        off,
        np.ascontiguousarray(heights, np.int64),
        np.ascontiguousarray(class_levels, np.int64),
        np.array([max(1.0, span)]),
    )


CLASS_WORK = 1 << 28
"""Class visits a run may spend (about): the class cap is CLASS_WORK / N, at least :data:`MIN_CLASSES`
(a stage-1 search visits every non-empty class, and there are about N / k searches)."""
MIN_CLASSES = 256


_CLASS_BASIS: ContextVar[int] = ContextVar("class_basis", default=0)


@contextmanager
def class_basis(cases: int) -> Iterator[None]:
    """Within the block, an engine run over n cases is one part of a run over ``cases`` cases (a stratum
    split by sex, :func:`faers_anon.anonymize.strata.split_by_sex`): its class cap is that
    run's cap times its share n / ``cases`` (:func:`class_cap`). Per thread (a context variable)."""
    token = _CLASS_BASIS.set(cases)
    try:
        yield
    finally:
        _CLASS_BASIS.reset(token)


def class_cap(n: int) -> int:
    """The most classes the pool may have for n cases: max(MIN_CLASSES, CLASS_WORK / N · n / N), N = the
    :func:`class_basis` when set (≥ n), else n (then CLASS_WORK / n, :data:`CLASS_WORK`).

    A part of N cases gets its share of N's classes, so the parts' classes are about as fine as the
    whole's (the same cases per class) and each search visits fewer of them (docs/engine.md, "Strata
    by sex")."""
    whole = max(n, _CLASS_BASIS.get(), 1)
    return max(MIN_CLASSES, CLASS_WORK // whole * max(n, 1) // whole)


def lexsort(keys: Sequence[NDArray[Any]]) -> I64:
    """``np.lexsort(keys)`` (the last key primary, ties in index order) by polars' multi-column sort, which
    is several times faster with the engine's ~30 keys; a float key's −0.0 is read as 0.0, as numpy
    compares it."""
    frame = pl.DataFrame({f"k{i}": (k + 0.0 if k.dtype.kind == "f" else k) for i, k in enumerate(keys)})
    by = [pl.col(f"k{i}") for i in reversed(range(len(keys)))]
    return frame.select(pl.arg_sort_by(by, maintain_order=True)).to_series().to_numpy().astype(np.int64)


DENSE_SPAN = 8
"""Keys spanning at most this many values per key are ranked by a presence table (:func:`_dense`)."""


def _dense(keys: I64) -> tuple[I64, int]:
    """Dense ids 0.. of int64 keys in sorted key order, and their number.

    When max − min < DENSE_SPAN · n (n keys), in O(n + span): mark the keys present, a running count
    gives each its rank; else by sorting (np.unique). The same ids either way.
    """
    if keys.shape[0] == 0:
        return np.zeros(0, np.int64), 0
    low = int(keys.min())
    span = int(keys.max()) - low + 1
    if span > DENSE_SPAN * keys.shape[0]:
        uniq, inverse = np.unique(keys, return_inverse=True)
        return inverse.astype(np.int64).reshape(-1), int(uniq.shape[0])
    present = np.zeros(span, np.bool_)
    present[keys - low] = True
    rank = np.cumsum(present, dtype=np.int64) - 1
    return rank[keys - low], int(rank[-1]) + 1


def _distinct(keys: I64) -> int:
    """The number of distinct keys (a presence table when the span is small, else a sort)."""
    if keys.shape[0] == 0:
        return 0
    low = int(keys.min())
    span = int(keys.max()) - low + 1
    if span <= DENSE_SPAN * keys.shape[0]:
        present = np.zeros(span, np.bool_)
        present[keys - low] = True
        return int(np.count_nonzero(present))
    ordered = np.sort(keys)
    return 1 + int(np.count_nonzero(ordered[1:] != ordered[:-1]))


def class_levels(base: I64, fcode: I64, heights: I64, cap: int) -> tuple[I64, I64]:
    """Per field QID the class level: the lowest level whose codes (with every level above) still keep
    the classes at ≤ ``cap``; returns (levels, class id per case).

    ``base`` is the class id of age, sex and the missing flags. Greedy: start with every field above its
    top (not in the class key) and refine, one level at a time, the field whose next level adds the
    fewest classes, while the count stays ≤ cap. Codes are shifted by 3 so that −3 … −1 stay distinct.
    """
    off = np.zeros(heights.shape[0] + 1, np.int64)
    np.cumsum(heights, out=off[1:])
    levels = heights.copy()
    ids, count = _dense(base)
    width = np.int64(int(fcode.max(initial=0)) + 4)
    while True:
        best, best_f = count, -1
        for f in range(heights.shape[0]):
            if levels[f] == 0:
                continue
            n_trial = _distinct(ids * width + fcode[:, off[f] + levels[f] - 1] + 3)
            if n_trial <= cap and (best_f < 0 or n_trial < best):
                best, best_f = n_trial, f
        if best_f < 0:
            return levels, ids
        levels[best_f] -= 1
        ids, count = _dense(ids * width + fcode[:, off[best_f] + levels[best_f]] + 3)


def build_pool(
    cat: I64,
    wmiss: NDArray[np.bool_],
    lo: F64,
    hi: F64,
    rows: I64,
    sig: I64,
    fcode: I64,
    class_id: I64,
    heights: I64,
    levels: I64,
) -> Pool:
    """Patterns sorted by (class, lo, hi, field codes), classes as pattern ranges, three skip-listed orders.

    ``class_id`` (from :func:`class_levels`) orders the classes; a class is one value of (categorical
    nodes, weight-missing flag, field missing flags, field codes at the class ``levels``). Inside a
    pattern the cases are sorted by descending signature (``sig``, see :func:`build_cases`), then by
    index: the cases holding the most pressing values come first.
    """
    n = cat.shape[0]
    lo0 = np.where(wmiss, 0.0, lo)
    hi0 = np.where(wmiss, 0.0, hi)
    keys = (-sig, *(fcode[:, j] for j in reversed(range(fcode.shape[1]))), hi0, lo0, class_id)
    order = lexsort(keys)
    s_cat, s_wm, s_lo, s_hi, s_f = cat[order], wmiss[order], lo0[order], hi0[order], fcode[order]
    s_cls = class_id[order]
    new_class = np.ones(n, np.bool_)
    if n > 1:
        new_class[1:] = s_cls[1:] != s_cls[:-1]
    new_pat = new_class.copy()
    if n > 1:
        new_pat[1:] |= (s_lo[1:] != s_lo[:-1]) | (s_hi[1:] != s_hi[:-1]) | np.any(s_f[1:] != s_f[:-1], axis=1)
    pat_start = np.flatnonzero(new_pat).astype(np.int64)
    n_pat = pat_start.shape[0]
    pat_count = np.diff(np.append(pat_start, n)).astype(np.int64)
    cls_of_case = np.cumsum(new_class) - 1
    pat_class = cls_of_case[pat_start].astype(np.int64)
    cls_start = np.flatnonzero(np.diff(np.append(-1, pat_class)) != 0).astype(np.int64)
    cls_end = np.append(cls_start[1:], n_pat).astype(np.int64)
    case_pattern = np.empty(n, np.int64)
    case_pattern[order] = np.cumsum(new_pat) - 1
    slot_of = np.empty(n, np.int64)
    slot_of[order] = np.arange(n, dtype=np.int64)
    pat_lo, pat_hi = s_lo[pat_start], s_hi[pat_start]
    hi_order = np.lexsort((np.arange(n_pat), pat_hi, pat_class)).astype(np.int64)
    wd_order = np.lexsort((np.arange(n_pat), pat_hi - pat_lo, pat_class)).astype(np.int64)
    hi_pos = np.empty(n_pat, np.int64)
    hi_pos[hi_order] = np.arange(n_pat)
    wd_pos = np.empty(n_pat, np.int64)
    wd_pos[wd_order] = np.arange(n_pat)
    cls_count = np.add.reduceat(pat_count, cls_start) if n_pat else np.zeros(0, np.int64)
    alive = np.arange(n_pat + 1, dtype=np.int64)
    return Pool(
        pat_class=pat_class,
        pat_lo=pat_lo,
        pat_hi=pat_hi,
        pat_start=pat_start,
        pat_size=pat_count.copy(),
        pat_common=np.bitwise_and.reduceat(sig[order], pat_start) if n_pat else np.zeros(0, np.int64),
        pat_count=pat_count,
        slots=order,
        slot_of=slot_of,
        slot_key=np.ascontiguousarray(-sig[order], np.int64),
        slot_nxt=np.arange(n + 1, dtype=np.int64),
        case_pattern=case_pattern,
        nxt=alive.copy(),
        prv=alive.copy(),
        hi_order=hi_order,
        hi_pos=hi_pos,
        hi_prv=alive.copy(),
        wd_order=wd_order,
        wd_pos=wd_pos,
        wd_prv=alive.copy(),
        cls_start=cls_start,
        cls_end=cls_end,
        cls_cat=s_cat[pat_start[cls_start]].astype(np.int64),
        cls_wmiss=s_wm[pat_start[cls_start]].astype(np.bool_),
        cls_count=cls_count.astype(np.int64),
        remaining=np.array([n, int(rows.sum())], np.int64),
        pat_fcode=np.ascontiguousarray(s_f[pat_start], np.int64),
        cls_fcode=_class_codes(s_f[pat_start[cls_start]], heights, levels),
    )


def _class_codes(first: I64, heights: I64, levels: I64) -> I64:
    """Each class's field codes (its first pattern's) at levels ≥ the class level, UNKNOWN below; a
    missing field keeps MISSING at every level (the missing flag is part of the class key)."""
    out = first.copy()
    start = 0
    for h, lev in zip(heights.tolist(), levels.tolist(), strict=True):
        block = out[:, start : start + h]
        known = block[:, 0] != MISSING
        block[np.ix_(known, np.arange(lev))] = UNKNOWN
        start += h
    return np.ascontiguousarray(out, np.int64)


def csr_links(case: I64, value: I64, p: F64, n: int) -> tuple[I64, NDArray[np.int32], F64]:
    """P(s | c) entries (case index, value id, p) in CSR form: (val_ptr, value ids, p), the entries
    sorted by (case, value), ties in input order; case c's entries are val_ptr[c] … val_ptr[c + 1] − 1.
    Entries already in that order (P(s | c) comes sorted by caseid and value) are not sorted again.
    """
    key = case * (int(value.max(initial=0)) + 1) + value
    if not bool(np.all(key[1:] >= key[:-1])):
        order = np.argsort(key, kind="stable")
        case, value, p = case[order], value[order], p[order]
    val_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(case, minlength=n), out=val_ptr[1:])
    return val_ptr, np.ascontiguousarray(value, np.int32), np.ascontiguousarray(p, np.float64)


FREQUENT = 32
"""Number of most pressing protected values whose σ_s every committed group keeps densely."""

SIG_CUTS = (1.0 / 3.0, 0.5, 1.0)
"""P(s | c) levels of the signature: level l holds the p with exactly l cuts ≤ p (p = 1 is the top level)."""

SIG_LEVELS = len(SIG_CUTS) + 1
SIG_VALUES = 63 // SIG_LEVELS
"""Protected values indexed by the case signature: SIG_LEVELS bits each, at most 63 bits in an int64."""


@njit(cache=True)  # type: ignore[misc]
def _sign(
    val_ptr: I64, val_id: NDArray[np.int32], val_p: F64, slot: I64, bit: I64, cuts: F64
) -> tuple[I64, F64]:
    """Per case the OR of its thermometer codes; per indexed value and level the least p at that level or
    above (∞ if none)."""
    n = val_ptr.shape[0] - 1
    sig = np.zeros(n, np.int64)
    bound = np.full((bit.shape[0], cuts.shape[0] + 1), np.inf)
    for c in range(n):
        x = np.int64(0)
        for e in range(val_ptr[c], val_ptr[c + 1]):
            i = slot[val_id[e]]
            if i < 0:
                continue
            p = val_p[e]
            lev = 0
            while lev < cuts.shape[0] and p >= cuts[lev]:
                lev += 1
            x |= ((np.int64(2) << lev) - 1) << bit[i]
            bound[i, lev] = min(bound[i, lev], p)
        sig[c] = x
    for i in range(bound.shape[0]):
        for lev in range(bound.shape[1] - 2, -1, -1):
            bound[i, lev] = min(bound[i, lev], bound[i, lev + 1])
    return sig, bound


def _pressing(val_id: NDArray[np.int32], val_p: F64, theta: F64, count: int) -> I64:
    """The ``count`` protected values with the largest Σ p / θ_s (ties by id), most pressing first."""
    n_values = theta.shape[0]
    pressure = np.bincount(val_id, weights=val_p, minlength=n_values) / np.maximum(theta, 1e-12)
    order = np.lexsort((np.arange(n_values), -pressure))[:count]
    return order[pressure[order] > 0].astype(np.int64)


def _signatures(val_ptr: I64, val_id: NDArray[np.int32], val_p: F64, theta: F64) -> tuple[I64, I64, I64, F64]:
    """Case signatures over the most pressing values (:func:`_pressing`): (sig, value, bit, bound).

    Value i of the index owns SIG_LEVELS bits from ``bit[i]``; a case holding it at level l sets bits
    ``bit[i] .. bit[i] + l`` (a thermometer code), so "level ≥ l" is the single bit ``bit[i] + l``.
    ``bound[i, l]`` is the least p of value i over the cases at level ≥ l (∞ if none): a case with that
    bit has P(s | c) ≥ bound. More pressing values get the higher bits.
    """
    index = _pressing(val_id, val_p, theta, SIG_VALUES)
    slot = np.full(max(theta.shape[0], 1), -1, np.int64)
    slot[index] = np.arange(index.shape[0])
    bit = SIG_LEVELS * (SIG_VALUES - 1 - np.arange(index.shape[0], dtype=np.int64))
    sig, bound = _sign(val_ptr, val_id, val_p, slot, bit, np.array(SIG_CUTS))
    return sig, index, bit, bound


def build_cases(rows: I64, val_ptr: I64, val_id: NDArray[np.int32], val_p: F64, theta: F64) -> Cases:
    """Per-case rows, protected values in CSR form, the F most pressing values (:func:`_pressing`) and
    the case signatures (:func:`_signatures`)."""
    n_values = theta.shape[0]
    freq_val = _pressing(val_id, val_p, theta, FREQUENT)
    freq_slot = np.full(max(n_values, 1), -1, np.int64)
    freq_slot[freq_val] = np.arange(freq_val.shape[0])
    sig, sig_val, sig_bit, sig_bound = _signatures(val_ptr, val_id, val_p, theta)
    return Cases(
        np.require(rows, np.int64, ["C", "W"]),  # writable: one kernel signature whatever made the rows
        np.ascontiguousarray(val_ptr, np.int64),
        np.ascontiguousarray(val_id, np.int32),
        np.ascontiguousarray(val_p, np.float64),
        np.ascontiguousarray(theta, np.float64),
        freq_val,
        freq_slot,
        sig,
        sig_val,
        sig_bit,
        sig_bound,
    )
