"""Rule 4's earlier-intersection check on numbered cases (issue 14 item 7): the arrays behind
:func:`faers_anon.series.earlier.check_histories`.

Source: docs/series.md §4 (rule 4) and §6 ("The earlier check as arrays"); the check's definition is
:mod:`faers_anon.series.earlier`'s. The ledger's histories are numbered once per ``past`` frame (its
:class:`.earlier._Histories`), and beside them, made once (:class:`Numbered`): each ledger case's
history number, the cases of each exact history (CSR), the containment of the histories (h → every
H ⊇ h, CSR, as :mod:`.raised_arrays` makes it) and the size of each exact history (|I(h)|: their sum
over H ⊇ h). A check then:

* numbers the published cases (their histories and their ledger rows) and the kept histories;
* finds the published cases reaching a kept history (an H ⊇ h holding one) by the containment;
* reads P before and P now of those cases (P is not computed here): P before from :class:`_Before`,
  which asks ``earlier`` (the step's memo) once per ledger case and step and keeps the answer as
  arrays (value code, p) by ledger row, so a later check of the planner's rounds or the recheck reads
  the same holders and members without the memo's filter and the value text's cast; P now as (row,
  value number) keys of the ``now`` frame (joined to the reaching cases first, then cast);
* finds the kept histories reached by a case with a raised P, their members I(h) (the cases of every
  H ⊇ h) and the P before of the members not published;
* buckets the entries (case's exact history, value, P before, P now, raised) by exact history (one
  counting-sort kernel, :func:`_bucket`: the order of a stable sort, holders first), then rule 6's
  kernel (:func:`.raised_kernels.over`: the same sums over H ⊇ h and the same test) adds them over
  H ⊇ h for each raised h and notes the h with a raised value s over θ_s with Σ now > Σ before (ε as
  before).

No (history, member) frame is built, joined or grouped (the polars check's ``_reached``,
``_intersections`` and ``_over``). Floats: each P is the frame's (1 or a weight), the sums are added per
exact history, then over H ⊇ h, in another order than polars' group-by: last bits only, far below the ε
(1e-12) of the comparisons with θ_s and with Σ before. A published case whose history or pseudonym the
ledger does not hold (not met in the step: the plan joins its history from ``past``) gets None: the
caller then runs the polars check.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon._numba_cache import njit, sized
from faers_anon.series.linked import expand, search
from faers_anon.series.raised_kernels import csr, over

__all__ = ["Numbered", "check_numbered"]

_EPS = 1e-12
_LISTS = ("indications", "reactions", "drug_keys")
_I64 = NDArray[np.int64]
_F64 = NDArray[np.float64]
#: P(s | c) of a members frame (as :data:`.earlier.Probabilities`).
Probabilities = Callable[[pl.DataFrame], pl.DataFrame]


class Numbered:
    """The ledger's cases and histories as arrays (module docstring), made once per
    :class:`.earlier._Histories`."""

    def __init__(self, wide: pl.DataFrame, cases: pl.DataFrame, contained: pl.DataFrame) -> None:
        """``wide``: the numbered histories (``history``, ``_h``); ``cases``: ``pseudonym``, ``_h`` of the
        ledger's cases; ``contained``: ``inner``, ``outer`` of every pair of histories h ⊆ H."""
        self.numbers = wide.select("history", pl.col("_h").cast(pl.Int64))
        n = self.numbers.height
        self.case_h = cases.get_column("_h").to_numpy().astype(np.int64)
        self.pseudonyms = cases.get_column("pseudonym")
        rows = np.arange(self.case_h.size, dtype=np.int64)
        self.cases_start, self.cases = csr(self.case_h, rows, n)  # H → its cases' rows
        inner, outer = (contained.get_column(c).to_numpy().astype(np.int64) for c in ("inner", "outer"))
        self.within_start, self.within = csr(inner, outer, n)  # h → the histories H ⊇ h
        self.sizes = np.bincount(self.case_h, minlength=n).astype(np.int64)
        ids = self.pseudonyms.to_numpy().astype(np.int64) if self.pseudonyms.dtype.is_integer() else None
        order = np.argsort(ids, kind="stable") if ids is not None else np.zeros(0, np.int64)
        self.sorted_ids = ids[order] if ids is not None else order  # pseudonym → row by np.searchsorted
        self.sorted_rows = order
        self.before: weakref.WeakKeyDictionary[Probabilities, _Before] = weakref.WeakKeyDictionary()

    def earlier(self, earlier: Probabilities) -> _Before:
        """The P before of :class:`_Before` through ``earlier``, made on first use and kept while ``earlier``
        lives (not kept for a callable no weak reference can hold)."""
        try:
            if earlier not in self.before:
                self.before[earlier] = _Before(self.case_h.size)
            return self.before[earlier]
        except TypeError:
            return _Before(self.case_h.size)


def _ledger_only(cases: pl.DataFrame) -> pl.DataFrame:
    """Members with no current values, keyed by pseudonym (as the polars check asks P before)."""
    empty = pl.lit([], pl.List(pl.Utf8))
    return cases.select(pl.col("pseudonym").alias("caseid"), "pseudonym", *[empty.alias(n) for n in _LISTS])


def _distinct(ids: _I64, n: int) -> _I64:
    """The distinct ``ids`` (0 … n − 1), sorted, by marks (no sort)."""
    marks = np.zeros(n, np.bool_)
    marks[ids] = True
    return np.flatnonzero(marks).astype(np.int64)


def _numbers(histories: pl.Series, numbers: pl.DataFrame) -> _I64 | None:
    """The numbers of ``histories`` (a join: faster than an Enum cast of the text); None when one is
    unknown."""
    found = histories.to_frame("history").join(numbers, on="history", how="left", maintain_order="left")
    column = found.get_column("_h")
    return None if column.null_count() else column.to_numpy().astype(np.int64)


def _keyed(frame: pl.DataFrame, ids: pl.DataFrame, values: pl.Enum, n_values: int) -> tuple[_I64, _F64]:
    """(place × V + value number, p) of a P frame (``caseid``, ``value``, ``p``): ``ids`` maps caseid to
    ``_place`` (other ids left out, before the cast: P now holds every published case), ``values`` numbers
    the V protected values (others left out)."""
    value = pl.col("value").cast(values, strict=False).to_physical().cast(pl.Int64)
    keyed = (
        frame.lazy().select("caseid", "value", "p").join(ids.lazy(), on="caseid")
        .select((pl.col("_place") * n_values + value).alias("_k"), pl.col("p").cast(pl.Float64))
        .drop_nulls("_k").collect()
    )  # fmt: skip
    return keyed.get_column("_k").to_numpy().astype(np.int64), keyed.get_column("p").to_numpy()


class _Before:
    """P before of ledger cases as arrays (row → its (value code, p) entries in the order ``earlier``
    gave them), each case asked of ``earlier`` once per :class:`Numbered`: P(s | c) before is a function
    of the case's ledger row (:class:`.placement.Memo`'s premise), and the planner's rounds and the
    recheck's calls ask the same holders and members again (their memo filtered every row it holds, and
    the value text was cast, every call)."""

    def __init__(self, n_cases: int) -> None:
        self.start, self.size = np.full(n_cases, -1, np.int64), np.zeros(n_cases, np.int64)  # -1: not asked
        self.names: list[str] = []  # value code → text
        self.value, self.p = np.zeros(0, np.int32), np.zeros(0, np.float64)  # the entries, case by case

    def _codes(self, values: pl.Series) -> _I64:
        """The codes of ``values`` (new texts numbered after the known ones, in the order they first
        appear; −1 for a null). The texts cast once: the first call numbers its distinct texts first, a
        later one casts again only the texts not known (before, every value twice when any was new:
        the same codes)."""
        if not self.names:  # the first call: its distinct texts numbered, then cast once
            self.names += values.drop_nulls().unique(maintain_order=True).to_list()
        codes = values.cast(pl.Enum(self.names), strict=False).to_physical()
        found = codes.cast(pl.Int64).fill_null(-1).to_numpy().copy()
        missing = codes.is_null() & values.is_not_null()
        if missing.any():
            more = values.filter(missing)
            self.names += more.unique(maintain_order=True).to_list()
            codes = more.cast(pl.Enum(self.names)).to_physical()
            found[np.flatnonzero(missing.to_numpy())] = codes.to_numpy()
        return found

    def _ask(self, a: Numbered, rows: _I64, earlier: Probabilities) -> None:
        """Ask ``earlier`` for the ledger ``rows`` (distinct, not asked yet) and keep their entries."""
        asked = pl.DataFrame({"pseudonym": a.pseudonyms.gather(rows).cast(pl.Int64)})
        frame = earlier(_ledger_only(asked))
        caseid = frame.get_column("caseid").cast(pl.Int64).to_numpy()
        value, p = self._codes(frame.get_column("value")), frame.get_column("p").cast(pl.Float64).to_numpy()
        heads = np.flatnonzero(np.diff(caseid, prepend=caseid[:1] - 1))  # runs of one case
        lengths = np.diff(heads, append=caseid.size)
        at = np.minimum(search(a.sorted_ids, caseid[heads]), a.sorted_ids.size - 1)
        head_row = a.sorted_rows[at]
        valid = (a.sorted_ids[at] == caseid[heads]) & np.isin(head_row, rows)  # the cases asked only
        self.start[rows], self.size[rows] = 0, 0
        if np.bincount(head_row[valid], minlength=1).max() <= 1:  # a case's entries together (the memo's)
            keep = np.repeat(valid, lengths)
            kept = lengths[valid]
            self.start[head_row[valid]] = self.value.size + np.cumsum(kept) - kept
            self.size[head_row[valid]] = kept
            value, p = value[keep], p[keep]
        else:  # brought together, in the order given
            row = np.repeat(np.where(valid, head_row, -1), lengths)
            order = np.argsort(row, kind="stable")
            order = order[row[order] >= 0]
            counts = np.bincount(row[order], minlength=self.start.size)
            self.start[rows] = self.value.size + np.cumsum(counts)[rows] - counts[rows]
            self.size[rows] = counts[rows]
            value, p = value[order], p[order]
        self.value = np.concatenate([self.value, value.astype(np.int32)])
        self.p = np.concatenate([self.p, p])

    def __call__(
        self, a: Numbered, rows: _I64, earlier: Probabilities, thetas: dict[str, float]
    ) -> tuple[_I64, _I64, _F64]:
        """(index in ``rows``, value number, p) of the P before entries of the ledger ``rows`` (distinct)
        for the values of ``thetas`` (numbered in their order)."""
        missing = rows[self.start[rows] < 0]
        if missing.size:
            self._ask(a, missing, earlier)
        codes = self._codes(pl.Series(list(thetas), dtype=pl.Utf8))
        lut = np.full(len(self.names) + 1, -1, np.int64)  # value code → number (−1: not protected, null)
        lut[codes] = np.arange(codes.size)
        with sized(rows.size):
            return _gathered(rows, self.start, self.size, self.value, self.p, lut)


def check_numbered(
    numbered: Numbered, published: pl.DataFrame, thetas: dict[str, float], now: pl.DataFrame | None,
    kept: pl.DataFrame, earlier: Probabilities, probabilities: Probabilities,
) -> tuple[frozenset[str], pl.DataFrame] | None:  # fmt: skip
    """:func:`.earlier.check_histories` on numbered cases (module docstring); None when a published
    case's history or pseudonym is not the ledger's. ``now``: P now of the published cases (None: of
    the reaching ones by ``probabilities``)."""
    a, n_values = numbered, len(thetas)
    empty: tuple[frozenset[str], pl.DataFrame] = frozenset(), pl.DataFrame(schema={"history": pl.Utf8})
    pseudonyms = published.get_column("pseudonym")
    if not (pseudonyms.dtype.is_integer() and a.sorted_ids.size) or pseudonyms.null_count():
        return None
    ids = pseudonyms.to_numpy().astype(np.int64)
    at = np.minimum(search(a.sorted_ids, ids), a.sorted_ids.size - 1)
    pub_row = a.sorted_rows[at]
    if (a.sorted_ids[at] != ids).any() or np.bincount(pub_row).max(initial=0) > 1:
        return None  # a case the ledger lacks, or one published twice
    pub_h = a.case_h[pub_row]
    history = published.get_column("history")
    if not a.numbers.get_column("history").gather(pub_h).equals(history, check_names=False):
        return None  # a published case's history is not its ledger history
    kept_h = _numbers(kept.get_column("history").unique(), a.numbers)
    if kept_h is None:
        return None
    n = a.sizes.size
    has_pub = np.bincount(pub_h, minlength=n) > 0
    pair_h, pair_H = expand(a.within_start, a.within, kept_h, kept_h)
    hit = has_pub[pair_H]
    pair_h, pair_H = pair_h[hit], pair_H[hit]
    if not pair_h.size:
        return empty
    reached = np.zeros(n, np.bool_)
    reached[pair_H] = True
    reaching = np.flatnonzero(reached[pub_h])  # published rows
    rows = pub_row[reaching]
    cached = a.earlier(earlier)
    place_b, value_b, pb = cached(a, rows, earlier, thetas)
    kb = place_b * n_values + value_b
    if now is None:
        now = probabilities(published[reaching])
    by_caseid = pl.DataFrame({"caseid": published.get_column("caseid").gather(reaching),
                              "_place": np.arange(rows.size, dtype=np.int64)})  # fmt: skip
    kn, pn = _keyed(now, by_caseid, pl.Enum(list(thetas)), n_values)
    with sized(kb.size + kn.size):
        place, value, p_before, p_now, raised = _combined(rows.size, n_values, kb, pb, kn, pn, _EPS)
    up = np.zeros(n, np.bool_)
    up[a.case_h[rows[place[raised]]]] = True
    raised_h = _distinct(pair_h[up[pair_H]], n)
    if not raised_h.size:
        return empty
    _, member_H = expand(a.within_start, a.within, raised_h, raised_h)
    holding = _distinct(member_H, n)
    _, member = expand(a.cases_start, a.cases, holding, holding)
    is_holder = np.zeros(a.case_h.size, np.bool_)
    is_holder[rows] = True
    others = member[~is_holder[member]]
    at_o, value_o, po = cached(a, others, earlier, thetas)
    theta = np.array(list(thetas.values()), np.float64)
    with sized(place.size + at_o.size):
        h_start, value, p_now, p_before, raised = _bucket(
            n, a.case_h, rows[place], value, p_now, p_before, raised, others[at_o], value_o, po
        )
        failing_h, _ = over(raised_h, a.within_start, a.within, h_start, value, p_now, p_before, raised,
                            a.sizes, theta, n_values, _EPS)  # fmt: skip
    failing_h = np.unique(failing_h)  # a history once, however many values fail
    if not failing_h.size:
        return empty
    failed = np.zeros(n, np.bool_)
    failed[failing_h] = True
    units_H = np.zeros(n, np.bool_)
    units_H[pair_H[failed[pair_h]]] = True
    units = published.get_column("unit").filter(pl.Series(units_H[pub_h]))
    failing = a.numbers.get_column("history").gather(failing_h).to_frame()
    return frozenset(units.unique().to_list()), failing


@njit(cache=True)
def _combined(n_rows, n_values, key_b, p_b, key_n, p_n, eps):  # type: ignore[no-untyped-def]
    """The holders' (place, value, P before, P now, raised) from the P before (``key_b``: place × V +
    value, ``p_b``) and the P now (``key_n``, ``p_n``): P before 0 where it has no row, P now the
    before where now has none, raised when now > before + ε (the polars check's full join)."""
    start_b = np.zeros(n_rows + 1, np.int64)
    start_n = np.zeros(n_rows + 1, np.int64)
    for i in range(key_b.size):
        start_b[key_b[i] // n_values + 1] += 1
    for i in range(key_n.size):
        start_n[key_n[i] // n_values + 1] += 1
    for r in range(n_rows):
        start_b[r + 1] += start_b[r]
        start_n[r + 1] += start_n[r]
    order_b = np.empty(key_b.size, np.int64)
    order_n = np.empty(key_n.size, np.int64)
    fill = start_b[:-1].copy()
    for i in range(key_b.size):
        r = key_b[i] // n_values
        order_b[fill[r]] = i
        fill[r] += 1
    fill = start_n[:-1].copy()
    for i in range(key_n.size):
        r = key_n[i] // n_values
        order_n[fill[r]] = i
        fill[r] += 1
    size = key_b.size + key_n.size
    place = np.empty(size, np.int64)
    value = np.empty(size, np.int64)
    before = np.empty(size, np.float64)
    now = np.empty(size, np.float64)
    raised = np.empty(size, np.bool_)
    b = np.zeros(n_values)
    has_b = np.zeros(n_values, np.bool_)
    has_n = np.zeros(n_values, np.bool_)
    n = np.zeros(n_values)
    out = 0
    for r in range(n_rows):
        for k in range(start_b[r], start_b[r + 1]):
            e = order_b[k]
            v = key_b[e] % n_values
            b[v] = p_b[e]
            has_b[v] = True
        for k in range(start_n[r], start_n[r + 1]):
            e = order_n[k]
            v = key_n[e] % n_values
            n[v] = p_n[e]
            has_n[v] = True
        for k in range(start_b[r], start_b[r + 1]):
            v = key_b[order_b[k]] % n_values
            if has_b[v]:  # once per (case, value)
                place[out], value[out], before[out] = r, v, b[v]
                now[out] = n[v] if has_n[v] else b[v]
                raised[out] = now[out] > before[out] + eps
                out += 1
                has_b[v] = False
                has_n[v] = False
        for k in range(start_n[r], start_n[r + 1]):
            v = key_n[order_n[k]] % n_values
            if has_n[v]:
                place[out], value[out], before[out], now[out] = r, v, 0.0, n[v]
                raised[out] = n[v] > eps
                out += 1
                has_n[v] = False
    return place[:out], value[:out], before[:out], now[:out], raised[:out]


@njit(cache=True)
def _bucket(n, case_h, row_a, value_a, now_a, before_a, raised_a, row_b, value_b, p_b):  # type: ignore[no-untyped-def]
    """The entries of the holders (``row_a``: ledger row, value, P now, P before, raised) and of the other
    members (``row_b``, value, P before = now, not raised) bucketed by exact history, in order (a
    counting sort: the order of a stable sort of both, holders first): (start per history, value, P now,
    P before, raised)."""
    start = np.zeros(n + 1, np.int64)
    for i in range(row_a.size):
        start[case_h[row_a[i]] + 1] += 1
    for i in range(row_b.size):
        start[case_h[row_b[i]] + 1] += 1
    for h in range(n):
        start[h + 1] += start[h]
    size = row_a.size + row_b.size
    value = np.empty(size, np.int64)
    now = np.empty(size, np.float64)
    before = np.empty(size, np.float64)
    raised = np.empty(size, np.bool_)
    fill = start[:-1].copy()
    for i in range(row_a.size):
        h = case_h[row_a[i]]
        j = fill[h]
        fill[h] += 1
        value[j], now[j], before[j], raised[j] = value_a[i], now_a[i], before_a[i], raised_a[i]
    for i in range(row_b.size):
        h = case_h[row_b[i]]
        j = fill[h]
        fill[h] += 1
        value[j], now[j], before[j], raised[j] = value_b[i], p_b[i], p_b[i], False
    return start, value, now, before, raised


@njit(cache=True)
def _gathered(rows, start, size, pool_value, pool_p, lut):  # type: ignore[no-untyped-def]
    """(index in ``rows``, value number, p) of the entries of ``rows`` (``start``, ``size`` into the
    pools) whose value ``lut`` numbers (≥ 0), in order."""
    total = 0
    for i in range(rows.size):
        total += size[rows[i]]
    at = np.empty(total, np.int64)
    value = np.empty(total, np.int64)
    p = np.empty(total, np.float64)
    m = 0
    for i in range(rows.size):
        r = rows[i]
        for k in range(start[r], start[r] + size[r]):
            v = lut[pool_value[k]]
            if v >= 0:
                at[m], value[m], p[m] = i, v, pool_p[k]
                m += 1
    return at[:m], value[:m], p[:m]
