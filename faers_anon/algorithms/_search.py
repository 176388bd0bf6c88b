"""Stage-1 candidate search of the clustering kernel: the pooled case that best extends a growing group.

Candidates come pattern by pattern in nondecreasing order of a lower bound on ΔIL(g, r)
(:mod:`faers_anon.algorithms._streams`); every candidate considered gets its exact PR and
ΔIL' = ΔIL·PR. The search stops when (1) the next bound ≥ the best ΔIL' so far — exact, since PR ≥ 1
gives ΔIL' ≥ ΔIL — or (2) ``m_best`` cases have been evaluated and one has finite ΔIL' (a popped
pattern whose exact ΔIL is already ≥ the best ΔIL' counts as one evaluation: with field QIDs the class
bounds are loose, and before this rule a search popped ``scan_limit`` such patterns: 35 of 36 CPU-s
of stage 1 at 50k cases), or (3)
``scan_limit`` cases have been evaluated, or ``scan_limit`` patterns and blocked runs visited. Only
(2) and (3) can miss the global argmin, and only in favour of a candidate whose ΔIL is at least that of
every considered one (a farther case with a smaller privacy risk).

Signature skip. A pattern's cases sit in slots sorted by descending signature (:class:`~faers_anon.
algorithms._pool.Cases`), and :func:`~faers_anon.algorithms._group.blocked_bits` gives the signature
bits that make PR(g, r) = ∞. The scan jumps over every run of slots whose signatures hold a blocked bit
with one binary search (:func:`prev_free`): those cases have ΔIL' = ∞ and can never be the answer, so
skipping them changes nothing the search computes; it only stops them from using up the budget. The
cost of a search is O(classes·C + log(classes)·patterns popped + (jumps + evaluations)·log N), bounded
by ``scan_limit`` whatever N.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from faers_anon._numba_cache import njit
from faers_anon.algorithms._group import REQ_K, REQ_RISK, Group, add_case, blocked_bits, ratio_risk
from faers_anon.algorithms._pool import Cases, Pool, Tables, find_next, lower_bound
from faers_anon.algorithms._streams import Streams, open_streams, pattern_dil, pop_pattern

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]


@njit(cache=True, inline="always")  # type: ignore[misc]
def add_pooled(g: Group, pool: Pool, tab: Tables, cases: Cases, case: int) -> None:
    """Add a case to the group using its pattern's QID."""
    p = pool.case_pattern[case]
    c = pool.pat_class[p]
    add_case(
        g,
        tab,
        cases,
        case,
        pool.cls_cat[c],
        pool.cls_wmiss[c],
        pool.pat_lo[p],
        pool.pat_hi[p],
        pool.pat_fcode,
        p,
    )


@njit(cache=True)  # type: ignore[misc]
def prev_free(x: int, blocked: int) -> int:
    """The greatest signature y ≤ x with no bit of ``blocked``.

    With h the highest blocked bit of x, every z in (y, x] shares x's bits above h and has bit h or a
    lower blocked bit set; y keeps x's bits above h, clears bit h and sets every lower free bit.
    """
    c = x & blocked
    if c == 0:
        return x
    h = 0
    while c > 1:
        c >>= 1
        h += 1
    low = (np.int64(1) << h) - 1
    return int((x & ~(low | (np.int64(1) << h))) | (low & ~blocked))


@njit(cache=True)  # type: ignore[misc]
def search(
    pool: Pool, tab: Tables, cases: Cases, req: I64, g: Group, st: Streams, m_best: int, scan_limit: int
) -> int:
    """Stage 1: the pooled case with least ΔIL'(g, r) among those considered; −1 if none is finite.

    A popped pattern's cases are visited in slot order (most pressing values first), jumping over runs
    of blocked signatures. At most ``scan_limit`` cases are evaluated and ``scan_limit`` patterns and
    jumps visited.
    """
    blocked = blocked_bits(g, cases, req)
    slots, slot_key, slot_nxt = pool.slots, pool.slot_key, pool.slot_nxt
    pat_start, pat_size, pat_common = pool.pat_start, pool.pat_size, pool.pat_common
    sigma, val_ptr, val_id, val_p, theta = g.sigma, cases.val_ptr, cases.val_id, cases.val_p, cases.theta
    with_risk = req[REQ_RISK] != 0
    eta_size = max(req[REQ_K], g.size[0] + 1)
    size = open_streams(st, pool, tab, g)
    best = np.inf
    best_case = -1
    evals = 0
    visits = 0
    while visits < scan_limit:
        p, c, wd, size = pop_pattern(st, size, best)
        if p < 0:
            break
        visits += 1
        held = (pat_common[p] & blocked) != 0
        if held and best == np.inf:  # every case blocked, and no ΔIL is ≥ ∞: nothing to compute
            continue
        dil = pattern_dil(st, c, p, wd)
        if dil >= best:  # its exact ΔIL already rules the pattern out: an evaluation, not a candidate
            evals += 1
            if evals >= scan_limit or evals >= m_best:
                return best_case
            continue
        if held:
            continue
        pos = pat_start[p]
        end = pos + pat_size[p]
        while dil < best:
            q = find_next(slot_nxt, pos)
            if q >= end:
                break
            x = -slot_key[q]
            if (x & blocked) != 0:
                visits += 1
                pos = lower_bound(slot_key, q, end, -prev_free(x, blocked))
                continue
            if evals >= scan_limit or (evals >= m_best and best < np.inf):
                return best_case
            case = slots[q]
            pr = ratio_risk(sigma, eta_size, val_ptr, val_id, val_p, theta, case) if with_risk else 1.0
            evals += 1
            if pr < np.inf and dil * pr < best:
                best = dil * pr
                best_case = case
            pos = q + 1
    return best_case
