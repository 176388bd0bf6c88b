"""The kernels of rule 6's raise check as arrays (:mod:`faers_anon.series.raised_arrays`, whose docstring
describes the layout): one pass over the ledger's cases summing P per exact history, one over the kept
histories adding the sums of the histories that contain each (issue 14 item 7); with the CSR helpers
and what one pass leaves the next (:class:`Memo`, :class:`Holders`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from faers_anon._numba_cache import njit

__all__ = [
    "Holders", "Memo", "by_key", "by_out", "csr", "differ", "history_sums", "holders", "inverted", "merged",
    "only", "over", "permuted",
]  # fmt: skip

_I64 = NDArray[np.int64]
_F64 = NDArray[np.float64]
_B = NDArray[np.bool_]


@njit(cache=True)
def history_sums(
    cases: _I64, hist: _I64, own_start: _I64, own: _I64, drug_start: _I64, drug: _I64,
    cur_at: _I64, cown_start: _I64, cown: _I64, cdrug_start: _I64, cdrug: _I64, feed_start: _I64, feed: _I64,
    e_start: _I64, e_out: _I64, e_before: _F64, e_now: _F64, n_out: int, eps: float,
) -> tuple[_I64, _I64, _F64, _F64, NDArray[np.bool_], _I64, _I64, _F64]:  # fmt: skip
    """Per exact history (the cases by position, ``hist`` sorted): (history, wanted value, Σ now, Σ before,
    some member raised by E), and the raised (position, wanted value, mid) rows (module docstring). Only
    the positions ``cases`` (ascending) are read: a case none of whose lists reaches a wanted value adds
    nothing to any sum, so leaving it out changes no sum."""
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
    n_cases = len(cases)
    for i in range(n_cases + 1):
        if i == n_cases or (i > 0 and hist[cases[i]] != hist[cases[i - 1]]):  # the last history's sums
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
                    hist[cases[i - 1]],
                    o,
                    acc_now[o],
                    acc_before[o],
                    acc_up[o],
                )
                n += 1
                acc_now[o], acc_before[o], acc_up[o], acc_seen[o] = 0.0, 0.0, False, False
            m_acc = 0
        if i == n_cases:
            break
        p = cases[i]
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
def differ(
    position: _I64,
    other: _I64,
    a_start: _I64,
    a_ids: _I64,
    b_start: _I64,
    b_ids: _I64,
    found: NDArray[np.bool_],
) -> None:
    """Mark in ``found`` the positions whose rows hold other ids, in order, in CSR lists a and b (another
    length or another id): ``position`` is a's row → position (−1: none), ``other`` b's position → row (−1:
    none; a position of a not in b is marked). a's rows are read in order (in the published order, which
    b's rows mostly follow: the arrays are read nearly in memory order)."""
    for r in range(len(position)):
        p = position[r]
        if p < 0 or found[p]:
            continue
        q = other[p]
        if q < 0 or a_start[r + 1] - a_start[r] != b_start[q + 1] - b_start[q]:
            found[p] = True
            continue
        for k in range(a_start[r + 1] - a_start[r]):
            if a_ids[a_start[r] + k] != b_ids[b_start[q] + k]:
                found[p] = True
                break


@njit(cache=True)
def inverted(start: _I64, ids: _I64, n_keys: int) -> tuple[_I64, _I64]:
    """The CSR key → rows of a CSR row → keys (keys 0 … ``n_keys`` − 1; larger ones left out): each key's
    rows ascending, a row once per time it holds the key (a counting sort)."""
    found = np.zeros(n_keys + 1, np.int64)
    for k in ids:
        if k < n_keys:
            found[k + 1] += 1
    for k in range(n_keys):
        found[k + 1] += found[k]
    rows = np.empty(found[n_keys], np.int64)
    fill = found[:n_keys].copy()
    for r in range(len(start) - 1):
        for a in range(start[r], start[r + 1]):
            k = ids[a]
            if k < n_keys:
                rows[fill[k]] = r
                fill[k] += 1
    return found, rows


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


def csr(rows: _I64, ids: _I64, n: int) -> tuple[_I64, _I64]:
    """(start, ids) of (row, id) pairs, rows 0 … n − 1; pairs with id −1 dropped, order within a row kept."""
    keep = ids >= 0
    rows, ids = rows[keep], ids[keep]
    if rows.size and (rows[1:] < rows[:-1]).any():
        order = np.argsort(rows, kind="stable")
        rows, ids = rows[order], ids[order]
    start = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=start[1:])
    return start, ids


@njit(cache=True)
def by_key(keys: _I64, n_keys: int) -> _I64:
    """The rows whose key is ≥ 0 (keys below ``n_keys``) by key, each key's rows ascending: a counting sort,
    ``np.argsort(keys[rows], kind="stable")`` of those rows (the raise check's positions by history,
    :mod:`.units`' P rows by class)."""
    start = np.zeros(n_keys + 1, np.int64)
    for k in keys:
        if k >= 0:
            start[k + 1] += 1
    for k in range(n_keys):
        start[k + 1] += start[k]
    order = np.empty(start[n_keys], np.int64)
    for r in range(keys.size):
        k = keys[r]
        if k >= 0:
            order[start[k]] = r
            start[k] += 1
    return order


def merged(parts: list[tuple[_I64, _I64]], n: int) -> tuple[_I64, _I64]:
    """The CSR of several CSRs over the same rows, each row's ids one part after the other."""
    count = sum(np.diff(start) for start, _ in parts)
    start = np.zeros(n + 1, np.int64)
    np.cumsum(count, out=start[1:])
    ids = np.empty(int(start[-1]), np.int64)
    offset = start[:-1].copy()
    for part_start, part in parts:
        size = np.diff(part_start)
        rows = np.repeat(np.arange(n, dtype=np.int64), size)
        ids[offset[rows] + np.arange(part.size, dtype=np.int64) - part_start[rows]] = part
        offset += size
    return start, ids


def permuted(start: _I64, ids: _I64, order: _I64) -> tuple[_I64, _I64]:
    """The CSR of rows ``order[0]``, ``order[1]``, … of a CSR."""
    size = (start[1:] - start[:-1])[order]
    new = np.zeros(order.size + 1, np.int64)
    np.cumsum(size, out=new[1:])
    at = np.repeat(start[:-1][order] - new[:-1], size) + np.arange(int(new[-1]), dtype=np.int64)
    return new, ids[at]


@dataclass(frozen=True, slots=True)
class Memo:
    """One wanted value's inputs at a pass (the value numbers counting for it; its E rows: drug numbers,
    E*_{t−1}'s and E*_t's largest weights; θ) and its results (the kept histories failing for it, their
    raised members' positions and P through E*_{t−1}). The ledger, its lists and E*_{t−1} are the
    step's; with the same published cases (:meth:`.raised_arrays.Ledger._current`) a value with the
    same inputs has the same results, bit for bit (the kernels add a value's sums apart from the other
    values')."""

    feed: _I64
    drugs: _I64
    before: _F64
    now: _F64
    theta: float
    fail_h: _I64
    up_at: _I64
    up_mid: _F64

    def same(self, feed: _I64, drugs: _I64, before: _F64, now: _F64, theta: float) -> bool:
        """Whether a pass's inputs of the value are these."""
        return bool(
            self.theta == theta and np.array_equal(self.feed, feed) and np.array_equal(self.drugs, drugs)
            and np.array_equal(self.before, before) and np.array_equal(self.now, now)
        )  # fmt: skip


def by_out(
    feeds: tuple[_I64, _I64], table: tuple[_I64, _I64, _F64, _F64], n_out: int
) -> tuple[list[_I64], list[_I64], list[_F64], list[_F64]]:
    """Per wanted value: the value numbers counting for it, its E rows' drugs and two weights (by drug)."""
    feed_start, feed = feeds
    value = np.repeat(np.arange(feed_start.size - 1, dtype=np.int64), np.diff(feed_start))
    order = np.argsort(feed, kind="stable")
    cut = np.searchsorted(feed[order], np.arange(n_out + 1))
    values = value[order]
    drug_start, e_out, e_before, e_now = table
    drug = np.repeat(np.arange(drug_start.size - 1, dtype=np.int64), np.diff(drug_start))
    e_order = np.argsort(e_out, kind="stable")
    e_cut = np.searchsorted(e_out[e_order], np.arange(n_out + 1))
    drug, e_before, e_now = drug[e_order], e_before[e_order], e_now[e_order]
    return (
        [values[cut[o] : cut[o + 1]] for o in range(n_out)],
        *([a[e_cut[o] : e_cut[o + 1]] for o in range(n_out)] for a in (drug, e_before, e_now)),
    )  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Holders:
    """The rows of CSR lists (:class:`.raised_arrays._Lists`) holding each value and each drug (CSR by
    number), and each row's position (None: the rows are the positions)."""

    value_start: _I64
    value_rows: _I64
    drug_start: _I64
    drug_rows: _I64
    position: _I64 | None = None

    def cases(self, values: _I64, drugs: _I64) -> _I64:
        """The positions of the rows holding one of ``values`` or ``drugs`` (repeats allowed)."""
        parts = [np.zeros(0, np.int64)]
        for start, rows, keys in ((self.value_start, self.value_rows, values),
                                  (self.drug_start, self.drug_rows, drugs)):  # fmt: skip
            keys = keys[keys < start.size - 1]
            parts += [rows[start[k] : start[k + 1]] for k in keys.tolist()]
        found = np.concatenate(parts)
        if self.position is None:
            return found
        found = self.position[found]
        return found[found >= 0]


def holders(own_start: _I64, own: _I64, drug_start: _I64, drug: _I64, n_values: int, n_drugs: int) -> Holders:
    """The :class:`Holders` of CSR lists row → values, row → drugs (numbered below ``n_values``,
    ``n_drugs``)."""
    return Holders(*inverted(own_start, own, n_values), *inverted(drug_start, drug, n_drugs))


def only(start: _I64, ids: _I64, remap: _I64) -> tuple[_I64, _I64]:
    """A CSR row → wanted value with only the values ``remap`` numbers (≥ 0), numbered by it."""
    new = remap[ids]
    keep = new >= 0
    row = np.repeat(np.arange(start.size - 1, dtype=np.int64), np.diff(start))[keep]
    found = np.zeros(start.size, np.int64)
    np.cumsum(np.bincount(row, minlength=start.size - 1), out=found[1:])
    return found, new[keep]
