"""Sequential kernels of (k,l)-anonymity (numba): diversity witnesses, cluster cost, aggregation, splits.

A cluster is summarized by one row of aggregates (columns ``N`` .. ``B2`` below) from which its
generalization cost S (``kl_anonymity`` module docstring, formula 11) follows in O(1), and two rows merge
in O(1): LCAs through the trees' n x n tables, the rest by sums, min and max.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from faers_anon._numba_cache import njit

__all__ = [
    "AGG_COLUMNS",
    "aggregate",
    "cost",
    "decompose",
    "diverse_by_group",
    "greedy_diverse",
    "group_costs",
    "merge_rows",
]

AGG_COLUMNS = ("N", "LA", "A1A", "A2A", "LS", "A1S", "A2S", "WMIN", "WMAX", "NMISS", "B1", "B2")
"""Aggregates of a cluster: size; age LCA code, Σ 1/vl(v), Σ depth(v)/vl(v); the same for sex; weight min,
max (NaN when none known), count of missing weights, Σ 1/(w_t + u), Σ w_t/(w_t + u) (w_t a case's own
weight width)."""
N, LA, A1A, A2A, LS, A1S, A2S, WMIN, WMAX, NMISS, B1, B2 = range(12)

Tables = tuple[
    NDArray[np.int64],
    NDArray[np.int64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
]
"""(age LCA table, sex LCA table, value leaves and depth per age node, the same two for sex, ``par``)."""

# Parameters vector ``par``: tree heights, weight domain width, attribute factors c_i, weight unit u.
H_AGE, H_SEX, WDOM, C_AGE, C_SEX, C_WT, UNIT = range(7)


@njit(cache=True)
def _disjoint(ptr: NDArray[np.int64], codes: NDArray[np.int64], a: int, b: int) -> bool:
    """True when cases a and b share no sensitive value (sorted code lists, merge walk)."""
    i, j = ptr[a], ptr[b]
    ie, je = ptr[a + 1], ptr[b + 1]
    while i < ie and j < je:
        if codes[i] == codes[j]:
            return False
        if codes[i] < codes[j]:
            i += 1
        else:
            j += 1
    return True


@njit(cache=True)
def _try_add(
    wit: NDArray[np.int64], wn: int, c: int, ptr: NDArray[np.int64], codes: NDArray[np.int64]
) -> int:
    """Append case c to the witness ``wit[:wn]`` if it is completely different from every member."""
    for x in range(wn):
        if wit[x] == c or not _disjoint(ptr, codes, wit[x], c):
            return wn
    wit[wn] = c
    return wn + 1


@njit(cache=True)
def greedy_diverse(
    cases: NDArray[np.int64], ptr: NDArray[np.int64], codes: NDArray[np.int64], cap: int
) -> int:
    """Size of the greedy set of pairwise completely different cases, scanning ``cases`` in order.

    A lower bound on Diverse (the largest such set, a maximum-clique problem); stops at ``cap``.
    """
    wit = np.empty(max(cap, 1), dtype=np.int64)
    wn = 0
    for c in cases:
        wn = _try_add(wit, wn, c, ptr, codes)
        if wn >= cap:
            break
    return wn


@njit(cache=True)
def merge_rows(a: NDArray[np.float64], b: NDArray[np.float64], out: NDArray[np.float64], tab: Tables) -> None:
    """Aggregates of the union of two disjoint clusters into ``out``."""
    for c in (N, A1A, A2A, A1S, A2S, NMISS, B1, B2):
        out[c] = a[c] + b[c]
    out[LA] = tab[0][int(a[LA]), int(b[LA])]
    out[LS] = tab[1][int(a[LS]), int(b[LS])]
    out[WMIN] = np.fmin(a[WMIN], b[WMIN])
    out[WMAX] = np.fmax(a[WMAX], b[WMAX])


@njit(cache=True)
def cost(r: NDArray[np.float64], tab: Tables) -> float:
    """S of a cluster from its aggregates (formula 11 as reconstructed in ``kl_anonymity``)."""
    s = 0.0
    la, ls = int(r[LA]), int(r[LS])
    vl_age, dp_age, vl_sex, dp_sex, par = tab[2], tab[3], tab[4], tab[5], tab[6]
    if par[H_AGE] > 0:
        s += par[C_AGE] * vl_age[la] / par[H_AGE] * (r[A2A] - dp_age[la] * r[A1A])
    if par[H_SEX] > 0:
        s += par[C_SEX] * vl_sex[ls] / par[H_SEX] * (r[A2S] - dp_sex[ls] * r[A1S])
    if par[WDOM] > 0 and r[NMISS] < r[N]:
        w = r[WMAX] - r[WMIN] if r[NMISS] == 0 else par[WDOM]
        s += par[C_WT] * (w + par[UNIT]) / par[WDOM] * (w * r[B1] - r[B2])
    return s


@njit(cache=True)
def _find(parent: NDArray[np.int64], x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@njit(cache=True)
def _refresh_witness(
    r: int,
    head: NDArray[np.int64],
    nxt: NDArray[np.int64],
    pat_ptr: NDArray[np.int64],
    pat_cases: NDArray[np.int64],
    wit: NDArray[np.int64],
    wn: NDArray[np.int64],
    lmin: int,
    ptr: NDArray[np.int64],
    codes: NDArray[np.int64],
) -> None:
    """Extend r's witness greedily over all its cases; if still short, restart from an empty witness."""
    for attempt in range(2):
        if attempt == 1:
            wn[r] = 0
        p = head[r]
        while p >= 0 and wn[r] < lmin:
            for q in range(pat_ptr[p], pat_ptr[p + 1]):
                wn[r] = _try_add(wit[r], wn[r], pat_cases[q], ptr, codes)
                if wn[r] >= lmin:
                    break
            p = nxt[p]
        if wn[r] >= lmin:
            return


@njit(cache=True)
def aggregate(
    comp: NDArray[np.float64],
    pat_ptr: NDArray[np.int64],
    pat_cases: NDArray[np.int64],
    orders: NDArray[np.int64],
    positions: NDArray[np.int64],
    window: int,
    k: int,
    lmin: int,
    ptr: NDArray[np.int64],
    codes: NDArray[np.int64],
    tab: Tables,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Aggregation rounds of the approximation algorithm (``kl_anonymity`` module docstring).

    ``comp`` starts as one aggregate row per pattern (identical QIDs) and is updated in place for roots.
    Each round every invalid cluster (fewer than k cases, or fewer than l completely different ones)
    picks the cluster with the least ΔS = S(C ∪ D) − S(C) − S(D) among the clusters holding the
    patterns within ``window`` places of one of its patterns in any of the sort ``orders`` (the window
    doubles while it finds no other cluster); then all picks are merged. Rounds end when every cluster
    is valid or one cluster is left.

    Returns:
        (the root pattern of each pattern's cluster, shape (P,); the witness size of each root, capped
        at l: the size of a set of pairwise completely different cases found in the cluster).
    """
    P = comp.shape[0]
    parent = np.arange(P)
    head = np.arange(P)
    tail = np.arange(P)
    nxt = np.full(P, -1, dtype=np.int64)
    wit = np.full((P, lmin), -1, dtype=np.int64)
    wn = np.zeros(P, dtype=np.int64)
    valid = np.zeros(P, dtype=np.bool_)
    cst = np.zeros(P)
    tmp = np.empty(comp.shape[1])
    for r in range(P):
        _refresh_witness(r, head, nxt, pat_ptr, pat_cases, wit, wn, lmin, ptr, codes)
        valid[r] = comp[r, N] >= k and wn[r] >= lmin
        cst[r] = cost(comp[r], tab)
    roots = P
    choice = np.full(P, -1, dtype=np.int64)
    while roots > 1:
        invalid = [r for r in range(P) if parent[r] == r and not valid[r]]
        if len(invalid) == 0:
            break
        for r in invalid:
            best, best_d, w = -1, np.inf, window
            while best < 0:
                p = head[r]
                while p >= 0:
                    for o in range(orders.shape[0]):
                        at = positions[o, p]
                        for off in range(-w, w + 1):
                            if off == 0 or at + off < 0 or at + off >= P:
                                continue
                            d = _find(parent, orders[o, at + off])
                            if d == r:
                                continue
                            merge_rows(comp[r], comp[d], tmp, tab)
                            delta = cost(tmp, tab) - cst[r] - cst[d]
                            if delta < best_d or (delta == best_d and d < best):
                                best, best_d = d, delta
                    p = nxt[p]
                w *= 2
            choice[r] = best
        for r in invalid:
            a, b = _find(parent, r), _find(parent, choice[r])
            if a == b:
                continue
            if comp[a, N] < comp[b, N] or (comp[a, N] == comp[b, N] and b < a):
                a, b = b, a
            merge_rows(comp[a], comp[b], tmp, tab)
            comp[a, :] = tmp
            parent[b] = a
            nxt[tail[a]] = head[b]
            tail[a] = tail[b]
            if wn[b] > wn[a]:
                wit[a, :] = wit[b, :]
                wn[a] = wn[b]
            _refresh_witness(a, head, nxt, pat_ptr, pat_cases, wit, wn, lmin, ptr, codes)
            valid[a] = comp[a, N] >= k and wn[a] >= lmin
            cst[a] = cost(comp[a], tab)
            roots -= 1
    out = np.empty(P, dtype=np.int64)
    for p in range(P):
        out[p] = _find(parent, p)
    return out, wn


@njit(cache=True)
def _scan(
    rows: NDArray[np.float64],
    idx: NDArray[np.int64],
    k: int,
    lmin: int,
    ptr: NDArray[np.int64],
    codes: NDArray[np.int64],
    tab: Tables,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """For every prefix length c of ``idx``: its cost S and its greedy witness size (capped at l)."""
    m = idx.size
    costs = np.zeros(m + 1)
    ok = np.zeros(m + 1, dtype=np.int64)
    acc = rows[idx[0]].copy()
    tmp = np.empty(rows.shape[1])
    wit = np.empty(max(lmin, 1), dtype=np.int64)
    wn = 0
    for c in range(1, m + 1):
        if c > 1:
            merge_rows(acc, rows[idx[c - 1]], tmp, tab)
            acc[:] = tmp
        if wn < lmin:
            wn = _try_add(wit, wn, idx[c - 1], ptr, codes)
        costs[c] = cost(acc, tab)
        ok[c] = wn
    return costs, ok


@njit(cache=True)
def decompose(
    order: NDArray[np.int64],
    starts: NDArray[np.int64],
    proof: NDArray[np.int64],
    rows: NDArray[np.float64],
    k: int,
    lmin: int,
    ptr: NDArray[np.int64],
    codes: NDArray[np.int64],
    tab: Tables,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Split clusters at the cut of least total cost while both parts stay valid and the cost drops.

    ``order`` lists the cases cluster by cluster, each cluster's cases in QID sort order; cluster c is
    ``order[starts[c]:starts[c + 1]]``. Clusters of at most max(2k − 1, 3k − 5) cases are kept (the size
    bound of Aggarwal et al.'s decomposition); larger ones are cut into two contiguous parts when
    S(left) + S(right) < S(whole), recursively.

    ``proof[c]`` is the size of a known set of pairwise completely different cases of cluster c (its
    witness from the aggregation); a part made by a cut gets the greedy witness of its prefix or suffix.

    Returns:
        (cluster label of each case, indexed by case and dense in order of creation; the proof of each
        label, a lower bound on its Diverse).
    """
    labels = np.full(rows.shape[0], -1, dtype=np.int64)
    bound = max(2 * k - 1, 3 * k - 5)
    cap = 2 * rows.shape[0] + starts.size + 2
    stack_lo = np.empty(cap, dtype=np.int64)
    stack_hi = np.empty(cap, dtype=np.int64)
    stack_pf = np.empty(cap, dtype=np.int64)
    out_pf = np.zeros(rows.shape[0], dtype=np.int64)
    top = starts.size - 1
    stack_lo[:top] = starts[:-1]
    stack_hi[:top] = starts[1:]
    stack_pf[:top] = proof
    g = 0
    while top > 0:
        top -= 1
        lo, hi, pf = stack_lo[top], stack_hi[top], stack_pf[top]
        idx = order[lo:hi]
        cut = -1
        if hi - lo > bound:
            pre, pre_ok = _scan(rows, idx, k, lmin, ptr, codes, tab)
            suf, suf_ok = _scan(rows, idx[::-1].copy(), k, lmin, ptr, codes, tab)
            m = hi - lo
            best = pre[m] - 1e-9 * max(1.0, pre[m])
            for c in range(k, m - k + 1):
                if pre_ok[c] >= lmin and suf_ok[m - c] >= lmin and pre[c] + suf[m - c] < best:
                    best, cut = pre[c] + suf[m - c], c
        if cut > 0:
            stack_lo[top], stack_hi[top], stack_pf[top] = lo, lo + cut, pre_ok[cut]
            stack_lo[top + 1], stack_hi[top + 1], stack_pf[top + 1] = lo + cut, hi, suf_ok[hi - lo - cut]
            top += 2
        else:
            for i in idx:
                labels[i] = g
            out_pf[g] = pf
            g += 1
    return labels, out_pf[:g]


@njit(cache=True)
def diverse_by_group(
    order: NDArray[np.int64], starts: NDArray[np.int64], ptr: NDArray[np.int64], codes: NDArray[np.int64]
) -> NDArray[np.int64]:
    """Greedy Diverse of each group ``order[starts[g]:starts[g + 1]]``, uncapped (a lower bound per group)."""
    G = starts.size - 1
    out = np.zeros(G, dtype=np.int64)
    for g in range(G):
        idx = order[starts[g] : starts[g + 1]]
        out[g] = greedy_diverse(idx, ptr, codes, idx.size)
    return out


@njit(cache=True)
def group_costs(
    rows: NDArray[np.float64], labels: NDArray[np.int64], G: int, tab: Tables
) -> NDArray[np.float64]:
    """S of each group 0..G-1 given the case rows and each case's group label."""
    acc = np.zeros((G, rows.shape[1]))
    seen = np.zeros(G, dtype=np.bool_)
    tmp = np.empty(rows.shape[1])
    for i in range(rows.shape[0]):
        g = labels[i]
        if seen[g]:
            merge_rows(acc[g], rows[i], tmp, tab)
            acc[g, :] = tmp
        else:
            acc[g, :] = rows[i]
            seen[g] = True
    out = np.zeros(G)
    for g in range(G):
        if seen[g]:
            out[g] = cost(acc[g], tab)
    return out
