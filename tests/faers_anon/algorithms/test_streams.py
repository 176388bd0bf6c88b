"""The stage-1 candidate order and search (``_streams.pop_pattern``, ``_search.search``) against references.

The references are the previous kernel's code, kept here in plain Python: a pop that takes the top
class off the heap and pushes it back (``heap_pop`` + ``heap_push``) with every popped pattern's ΔIL
computed at once, and a search that computes that ΔIL before it looks at the blocked bits. The kernel
now updates the top key in place and skips a blocked pattern's ΔIL while no candidate is known: the
order of the patterns, their ΔIL and the chosen candidate must stay exactly the same (the release's
partition does not change).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from faers_anon.algorithms import QidHierarchies
from faers_anon.algorithms._fields import fields_bound
from faers_anon.algorithms._frame import Encoded, encode
from faers_anon.algorithms._group import REQ_K, REQ_RISK, Group, blocked_bits, new_group, ratio_risk
from faers_anon.algorithms._pool import (
    find_next,
    find_prev,
    heap_pop,
    heap_push,
    heap_replace_top,
    heapify,
    lower_bound,
    remove_case,
)
from faers_anon.algorithms._search import add_pooled, prev_free, search
from faers_anon.algorithms._streams import (
    UNOPENED,
    Streams,
    new_streams,
    open_streams,
    pattern_dil,
    pop,
    pop_pattern,
)
from faers_anon.algorithms.types import FieldQid
from faers_anon.models import MSKTheta

HIER = QidHierarchies(
    age=QidHierarchies.default().age,
    sex=QidHierarchies.default().sex,
    weight=True,
    fields=(FieldQid(name="x", height=1), FieldQid(name="y", height=3)),
)


def test_replacing_the_top_key_keeps_the_heap_order() -> None:
    # keys (3, 1, 2, 1) on classes 0..3: the order is (1, 1) (1, 3) (2, 2) (3, 0); the top (1, 1)
    # gets key 2.5 in place: the order becomes (1, 3) (2, 2) (2.5, 1) (3, 0); a top that stays the
    # least ((1, 3) -> 1.0 again) stays on top without a swap
    key, val = np.array([3.0, 1.0, 2.0, 1.0]), np.array([0, 1, 2, 3], np.int64)
    heapify(key, val, 4)
    assert (key[0], val[0]) == (1.0, 1)
    heap_replace_top(key, val, 4, 2.5)
    assert (key[0], val[0]) == (1.0, 3)
    heap_replace_top(key, val, 4, 1.0)
    assert (key[0], val[0]) == (1.0, 3)
    out, size = [], 4
    while size:
        out.append((key[0], int(val[0])))
        size = heap_pop(key, val, size)
    assert out == [(1.0, 3), (2.0, 2), (2.5, 1), (3.0, 0)]


def _old_pop(st: Streams, size: int, stop: float) -> tuple[int, float, int]:
    """The previous kernel's pop (pop and push on the heap, the ΔIL computed at once)."""
    a, b, n, inv_r = st.param[0], st.param[1], st.param[2], st.param[3]
    while size > 0 and st.left[st.val[0]] == UNOPENED:
        c = int(st.val[0])
        size = heap_pop(st.key, st.val, size)
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
            lb = _walk(st, c)
        else:
            r = find_next(st.nxt, s0)
            st.right[c] = r if r < e0 else -1
            st.left[c] = -1
            lb = st.base[c]
        size = heap_push(st.key, st.val, size, lb, c)
    if size == 0 or st.key[0] >= stop:
        return -1, np.inf, size
    c = int(st.val[0])
    size = heap_pop(st.key, st.val, size)
    s0, e0 = st.cls_start[c], st.cls_end[c]
    if st.walk[c]:
        ext_l = (a - st.pat_lo[st.left[c]]) if st.left[c] >= 0 else np.inf
        ext_r = max(0.0, st.pat_lo[st.right[c]] - b) if st.right[c] >= 0 else np.inf
        if ext_r <= ext_l:
            p = int(st.right[c])
            q = find_next(st.nxt, p + 1)
            st.right[c] = q if q < e0 else -1
        else:
            p = int(st.left[c])
            q = find_prev(st.prv, p - 1)
            st.left[c] = q if q >= s0 else -1
        wnew = (max(b, st.pat_hi[p]) - min(a, st.pat_lo[p])) * inv_r
        dil = st.base[c] + (n + 1) * (wnew - (b - a) * inv_r + _excess(st, c, p))
        if st.left[c] >= 0 or st.right[c] >= 0:
            size = heap_push(st.key, st.val, size, _walk(st, c), c)
    else:
        p = int(st.right[c])
        dil = st.base[c] + (n + 1) * _excess(st, c, p)
        q = find_next(st.nxt, p + 1)
        if q < e0:
            st.right[c] = q
            size = heap_push(st.key, st.val, size, st.base[c], c)
    return p, max(0.0, dil), size


def _walk(st: Streams, c: int) -> float:
    a, b, scale = st.param[0], st.param[1], (st.param[2] + 1) * st.param[3]
    ext_l = (a - st.pat_lo[st.left[c]]) if st.left[c] >= 0 else np.inf
    ext_r = max(0.0, st.pat_lo[st.right[c]] - b) if st.right[c] >= 0 else np.inf
    return float(st.base[c] + scale * min(ext_l, ext_r))


def _excess(st: Streams, c: int, p: int) -> float:
    from faers_anon.algorithms._fields import fields_with

    return float(fields_with(st.f_off, st.f_height, st.gfs, st.pat_fcode, p) - st.fbound[c])


def _old_search(enc: Encoded, g: Group, st: Streams, m_best: int, scan_limit: int) -> int:
    """The previous kernel's stage-1 search (every popped pattern's ΔIL before its blocked bits)."""
    pool, cases, req = enc.pool, enc.cases, enc.req
    blocked = blocked_bits(g, cases, req)
    eta_size = max(req[REQ_K], g.size[0] + 1)
    size = open_streams(st, pool, enc.tab, g)
    best, best_case, evals, visits = np.inf, -1, 0, 0
    while visits < scan_limit:
        p, dil, size = _old_pop(st, size, best)
        if p < 0:
            break
        visits += 1
        if dil >= best:
            evals += 1
            if evals >= scan_limit or evals >= m_best:
                return best_case
            continue
        if (pool.pat_common[p] & blocked) != 0:
            continue
        pos, end = pool.pat_start[p], pool.pat_start[p] + pool.pat_size[p]
        while dil < best:
            q = find_next(pool.slot_nxt, pos)
            if q >= end:
                break
            x = -pool.slot_key[q]
            if (x & blocked) != 0:
                visits += 1
                pos = lower_bound(pool.slot_key, q, end, -prev_free(x, blocked))
                continue
            if evals >= scan_limit or (evals >= m_best and best < np.inf):
                return best_case
            case = int(pool.slots[q])
            pr = 1.0
            if req[REQ_RISK] != 0:
                pr = ratio_risk(
                    g.sigma, eta_size, cases.val_ptr, cases.val_id, cases.val_p, cases.theta, case
                )
            evals += 1
            if pr < np.inf and dil * pr < best:
                best, best_case = dil * pr, case
            pos = q + 1
    return best_case


def _quarter(seed: int) -> tuple[Encoded, Group]:
    """Random cases on age, sex, weight and two field QIDs (few distinct values, some missing), a few
    protected values at θ 0.3–0.5, a random class cap; a random group taken out of the pool."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 60))
    age = np.where(rng.random(n) < 0.3, np.nan, rng.choice([20.0, 40.0, 45.0, 70.0], n))
    wt = np.where(rng.random(n) < 0.4, np.nan, rng.choice([50.0, 60.0, 75.0, 90.0], n))
    wt_hi = np.where(rng.random(n) < 0.3, wt + rng.integers(0, 20, n), wt)
    top = rng.integers(0, 2, n)
    mid = 3 * top + rng.integers(0, 3, n)
    leaf = 3 * mid + rng.integers(0, 3, n)
    y = [
        None if rng.random() < 0.15 else [int(a), int(b), int(c)]
        for a, b, c in zip(leaf, mid, top, strict=True)
    ]
    x = [None if rng.random() < 0.2 else [int(rng.integers(-1, 3))] for _ in range(n)]
    cases = pl.DataFrame(
        {
            "caseid": np.arange(n) + 1,
            "age_min": age,
            "age_max": age,
            "sex": rng.choice(np.array(["F", "M", None], dtype=object), n).tolist(),
            "wt_min": wt,
            "wt_max": wt_hi,
            "x": x,
            "y": y,
        },
        schema_overrides={"x": pl.List(pl.Int64), "y": pl.List(pl.Int64)},
    ).with_columns(pl.col(pl.Float64).fill_nan(None))
    held = rng.random((n, 3)) < 0.35
    ids, vals = np.nonzero(held)
    probs = pl.DataFrame(
        {
            "caseid": ids + 1,
            "value": np.array(["A", "B", "C"])[vals],
            "p": rng.choice([1.0, 0.5], ids.shape[0]),
        }
    )
    theta = float(rng.choice([0.3, 0.4, 0.5]))
    model = MSKTheta(k=int(rng.integers(2, 5)), thetas={"A": theta, "B": theta, "C": theta})
    enc = encode(cases, probs, model.requirements(), HIER, max_classes=int(rng.integers(1, 12)))
    members = rng.permutation(n)[: rng.integers(1, 5)]
    g = new_group(enc.tab.lca.shape[0], enc.n_values, 2)
    for c in members:
        remove_case(enc.pool, enc.cases, int(c))
        add_pooled(g, enc.pool, enc.tab, enc.cases, int(c))
    return enc, g


@pytest.mark.parametrize("seed", range(40))
def test_the_stream_order_and_delta_il_are_the_previous_kernels(seed: int) -> None:
    enc, g = _quarter(seed)
    new, old = new_streams(enc.pool, enc.tab), new_streams(enc.pool, enc.tab)
    size_new = open_streams(new, enc.pool, enc.tab, g)
    size_old = open_streams(old, enc.pool, enc.tab, g)
    got, want = [], []
    while True:
        p, c, wd, size_new = pop_pattern(new, size_new, np.inf)
        got.append((p, pattern_dil(new, c, p, wd) if p >= 0 else np.inf))
        q, dil, size_old = _old_pop(old, size_old, np.inf)
        want.append((q, dil))
        if p < 0 or q < 0:
            break
    assert got == want  # same patterns, same order, bit-identical ΔIL
    assert len(got) - 1 == int((enc.pool.pat_count > 0).sum())


@pytest.mark.parametrize("seed", range(40))
def test_pop_gives_the_delta_il_of_pop_pattern(seed: int) -> None:
    enc, g = _quarter(seed)
    a, b = new_streams(enc.pool, enc.tab), new_streams(enc.pool, enc.tab)
    sa, sb = open_streams(a, enc.pool, enc.tab, g), open_streams(b, enc.pool, enc.tab, g)
    while True:
        p, c, wd, sa = pop_pattern(a, sa, np.inf)
        q, dil, sb = pop(b, sb, np.inf)
        assert q == p
        if p < 0:
            break
        assert dil == pattern_dil(a, c, p, wd)


@pytest.mark.parametrize("seed", range(60))
def test_search_returns_the_previous_kernels_candidate_within_any_budget(seed: int) -> None:
    # small budgets make the visit and evaluation limits bite: the blocked patterns skipped without
    # their ΔIL must still count as visits, and those with ΔIL >= the best as evaluations
    enc, g = _quarter(seed)
    rng = np.random.default_rng(seed + 1000)
    for _ in range(4):
        m_best = int(rng.integers(1, 6))
        scan = int(rng.integers(m_best, 12))
        got = search(enc.pool, enc.tab, enc.cases, enc.req, g, new_streams(enc.pool, enc.tab), m_best, scan)
        want = _old_search(enc, g, new_streams(enc.pool, enc.tab), m_best, scan)
        assert got == want
