"""The kernels of rule 6's raise check as arrays (:mod:`faers_anon.series.raised_arrays`, whose docstring
describes the layout): one pass over the ledger's cases summing P per exact history, one over the kept
histories adding the sums of the histories that contain each (issue 14 item 7).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from faers_anon._numba_cache import njit

__all__ = ["history_sums", "over"]

_I64 = NDArray[np.int64]
_F64 = NDArray[np.float64]


@njit(cache=True)
def history_sums(
    hist: _I64, own_start: _I64, own: _I64, drug_start: _I64, drug: _I64,
    cur_at: _I64, cown_start: _I64, cown: _I64, cdrug_start: _I64, cdrug: _I64, feed_start: _I64, feed: _I64,
    e_start: _I64, e_out: _I64, e_before: _F64, e_now: _F64, n_out: int, eps: float,
) -> tuple[_I64, _I64, _F64, _F64, NDArray[np.bool_], _I64, _I64, _F64]:  # fmt: skip
    """Per exact history (the cases by position, ``hist`` sorted): (history, wanted value, Σ now, Σ before,
    some member raised by E), and the raised (position, wanted value, mid) rows (module docstring)."""
    before, mid, now = np.zeros(n_out), np.zeros(n_out), np.zeros(n_out)
    seen = np.zeros(n_out, np.bool_)
    touched = np.empty(n_out, np.int64)
    acc_now, acc_before = np.zeros(n_out), np.zeros(n_out)
    acc_up, acc_seen = np.zeros(n_out, np.bool_), np.zeros(n_out, np.bool_)
    acc_touched = np.empty(n_out, np.int64)
    size = 1024
    h_of, out = np.empty(size, np.int64), np.empty(size, np.int64)
    s_now, s_before, s_up = np.empty(size), np.empty(size), np.empty(size, np.bool_)
    up_size = 1024
    up_at, up_out, up_mid = np.empty(up_size, np.int64), np.empty(up_size, np.int64), np.empty(up_size)
    n = 0
    n_up = 0
    m_acc = 0
    n_values = len(feed_start) - 1
    n_drugs = len(e_start) - 1
    n_cases = len(hist)
    for p in range(n_cases + 1):
        if p == n_cases or (p > 0 and hist[p] != hist[p - 1]):  # the last history's sums
            if n + m_acc > size:
                size = max(2 * size, n + m_acc)
                h_of, out = _grow_i(h_of, n, size), _grow_i(out, n, size)
                s_now, s_before, s_up = (
                    _grow_f(s_now, n, size),
                    _grow_f(s_before, n, size),
                    _grow_b(s_up, n, size),
                )
            for t in range(m_acc):
                o = acc_touched[t]
                h_of[n], out[n], s_now[n], s_before[n], s_up[n] = (
                    hist[p - 1],
                    o,
                    acc_now[o],
                    acc_before[o],
                    acc_up[o],
                )
                n += 1
                acc_now[o], acc_before[o], acc_up[o], acc_seen[o] = 0.0, 0.0, False, False
            m_acc = 0
        if p == n_cases:
            break
        m = 0
        c = cur_at[p]
        for side in range(2):  # the ledger's lists, then the published case's current ones
            if side == 1 and c < 0:
                break
            o_start, o_ids, d_start, d_ids, at = own_start, own, drug_start, drug, p
            if side == 1:
                o_start, o_ids, d_start, d_ids, at = cown_start, cown, cdrug_start, cdrug, c
            for a in range(o_start[at], o_start[at + 1]):
                v = o_ids[a]
                if v >= n_values:
                    continue
                for f in range(feed_start[v], feed_start[v + 1]):
                    o = feed[f]
                    if not seen[o]:
                        seen[o] = True
                        touched[m] = o
                        m += 1
                    if side == 0:
                        before[o] = 1.0
                    mid[o] = 1.0
                    now[o] = 1.0
            for a in range(d_start[at], d_start[at + 1]):
                d = d_ids[a]
                if d >= n_drugs:
                    continue
                for e in range(e_start[d], e_start[d + 1]):
                    o, w, w_now = e_out[e], e_before[e], e_now[e]
                    if not seen[o]:
                        seen[o] = True
                        touched[m] = o
                        m += 1
                    if side == 0 and w > before[o]:
                        before[o] = w
                    if w > mid[o]:
                        mid[o] = w
                    if w_now > now[o]:
                        now[o] = w_now
        if n_up + m > up_size:
            up_size = max(2 * up_size, n_up + m)
            up_at, up_out, up_mid = _grow_i(up_at, n_up, up_size), _grow_i(up_out, n_up, up_size), _grow_f(
                up_mid, n_up, up_size)  # fmt: skip
        for t in range(m):
            o = touched[t]
            if not acc_seen[o]:
                acc_seen[o] = True
                acc_touched[m_acc] = o
                m_acc += 1
            acc_now[o] += now[o]
            acc_before[o] += before[o]
            if now[o] > mid[o] + eps:
                acc_up[o] = True
                up_at[n_up], up_out[n_up], up_mid[n_up] = p, o, mid[o]
                n_up += 1
            before[o], mid[o], now[o], seen[o] = 0.0, 0.0, 0.0, False
    return h_of[:n], out[:n], s_now[:n], s_before[:n], s_up[:n], up_at[:n_up], up_out[:n_up], up_mid[:n_up]


@njit(cache=True)
def over(
    kept: _I64, within_start: _I64, within: _I64, h_start: _I64, out: _I64, s_now: _F64, s_before: _F64,
    s_up: NDArray[np.bool_], sizes: _I64, theta: _F64, n_out: int, eps: float,
) -> tuple[_I64, _I64]:  # fmt: skip
    """(h, wanted value) of the ``kept`` histories over θ through a raise: the sums of the histories
    H ⊇ h added (module docstring)."""
    acc_now, acc_before = np.zeros(n_out), np.zeros(n_out)
    acc_up, seen = np.zeros(n_out, np.bool_), np.zeros(n_out, np.bool_)
    touched = np.empty(n_out, np.int64)
    size = 64
    fail_h, fail_o = np.empty(size, np.int64), np.empty(size, np.int64)
    n = 0
    for h in kept:
        members = 0
        m = 0
        for a in range(within_start[h], within_start[h + 1]):
            outer = within[a]
            members += sizes[outer]
            for b in range(h_start[outer], h_start[outer + 1]):
                o = out[b]
                if not seen[o]:
                    seen[o] = True
                    touched[m] = o
                    m += 1
                acc_now[o] += s_now[b]
                acc_before[o] += s_before[b]
                if s_up[b]:
                    acc_up[o] = True
        for t in range(m):
            o = touched[t]
            over = acc_now[o] / members > theta[o] + eps and acc_now[o] > acc_before[o] + eps
            if acc_up[o] and over:
                if n == size:
                    size *= 2
                    fail_h, fail_o = _grow_i(fail_h, n, size), _grow_i(fail_o, n, size)
                fail_h[n], fail_o[n] = h, o
                n += 1
            acc_now[o], acc_before[o], acc_up[o], seen[o] = 0.0, 0.0, False, False
    return fail_h[:n], fail_o[:n]


@njit(cache=True)
def _grow_i(a: _I64, n: int, size: int) -> _I64:
    grown = np.empty(size, np.int64)
    grown[:n] = a[:n]
    return grown


@njit(cache=True)
def _grow_f(a: _F64, n: int, size: int) -> _F64:
    grown = np.empty(size, np.float64)
    grown[:n] = a[:n]
    return grown


@njit(cache=True)
def _grow_b(a: NDArray[np.bool_], n: int, size: int) -> NDArray[np.bool_]:
    grown = np.empty(size, np.bool_)
    grown[:n] = a[:n]
    return grown
