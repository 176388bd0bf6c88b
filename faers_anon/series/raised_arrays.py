"""Rule 6's raise check as arrays: P of every ledger case three ways in one pass, summed per history
(issue 14 item 7).

Source: docs/series.md §4 (rule 6) and §6 ("The raise check as arrays"); the check's definition is
:mod:`faers_anon.series.raised`'s. For a ledger case e and a wanted value s (a changed value or a class
holding one, bounded by θ*), SPEC §5's P(s | e) is read three ways (p = 1 for an own indication or
reaction, else the largest weight of e's drugs; a class's p the largest of its members'):

* ``before``: the ledger's values through E*_{t−1};
* ``mid``: the ledger's and, for a published case, its current values, through E*_{t−1};
* ``now``: the same values through E*_t.

e is *raised by E* for s when now > mid (+ ε). A kept history h fails for s when a member of I(h) (the
ledger cases whose history H contains h) is raised by E for s, Σ now / |I(h)| > θ_s and Σ now > Σ before.

Layout (:class:`Ledger`, built once per series step; :meth:`Ledger.lifted` per check): the ledger's cases
are numbered by *position*, sorted by their exact history (numbered as :mod:`faers_anon.series.earlier`
numbers them), their own values (canonical value keys; each verbatim term read once) and drug keys
numbered and held as CSR arrays in that order; the published cases' current lists likewise, per check,
rows in position order too (sixteenth session: read in published order, each was a cache miss);
E*_{t−1} and E*_t as one CSR drug → (wanted value, largest weight of each: a read value counts for
itself and for each wanted class holding it, so a class's p is its members' largest). One kernel pass
over the cases (:func:`.raised_kernels.history_sums`) keeps a case's three P per wanted value in dense
arrays, adds now and before to its exact history's sums and notes the raised (case, value, mid) rows;
a published case whose current lists hold its ledger lists' numbers in their order
(:func:`.raised_lists.same_lists`; 158,018 of the 270,289 published at the 400k quarter 4) is read through
its ledger lists alone: P through the same lists twice is P through them once (a max), so no P, sum or
result changes (tests/faers_anon/series/test_raised_same_lists.py); with the rows in position order the
kernel's CPU fell 22–27% at the 400k quarter 4 (docs/series.md §6, sixteenth session).
A second (:func:`.raised_kernels.over`) adds the sums of the histories H ⊇ h for every kept h (the
containment relation of the ledger's histories, made once) and keeps the (h, s) over θ. No (case,
value) frame is grouped or joined (the eleventh session's polars reader: 24 CPU-s at the 400k quarter
4's first check; docs/series.md §6).

Pass after pass (thirteenth session): the ledger, its lists and E*_{t−1} are the step's, and a value's
results depend only on its own inputs (the values counting for it, its E rows, θ_s) and on the
published cases (their current lists, the kept histories): the kernels add each value's sums apart.
So with the same published cases as the last pass (compared column by column) a value whose inputs
are the last pass's keeps its failing histories and raised members (:class:`.raised_kernels.Memo`),
bit for bit, and the kernels run over the other values only, reading only the cases that hold one of
their values or drugs (:class:`.raised_kernels.Holders`, made once): a case reaching none of them adds
nothing to their sums.

After a re-plan (fifteenth session) the published set differs from the last pass's by the cases of the
units withheld since (19 of 270,289 at the 400k quarter 4): a value whose inputs did not change is checked
again only where that can change its results (:meth:`Ledger._moved`). Let M be the exact histories holding
a case whose current lists differ (published in one set only, or other lists: :func:`.raised_lists.changed`)
or kept in one set only. A kept h's sums and kept state read only the histories H ⊇ h, so a kept h none
of whose H lies in M keeps its verdict; the kernels run over the cases of every H ⊇ h for the h inside a
moved history (h ⊆ H ∈ M, M among them), and give those h's verdicts and those cases' raised rows; a raised
member outside them is raised as before, and is near a failing h (in some H ⊇ h) now exactly when it was
(an h inside M has all its H among the cases read). The same sums in the same order, so the same bits as a
full check (tests/faers_anon/series/test_raised_moved.py compares the arrays).

Floats: each P is a weight or 1 (a max, exact); the sums are added per exact history, then over the
histories containing h, where the frames added the members in polars' order: the sums may differ in
the last bits, far below the ε (1e-12) of the comparisons with θ_s and with Σ before (the 100k and
400k quarter 4's checks gave the polars check's pairs at every pass).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon._numba_cache import sized
from faers_anon.series.earlier import _histories, _matched
from faers_anon.series.raised_kernels import (
    Holders,
    Memo,
    by_out,
    csr,
    history_sums,
    only,
    over,
    permuted,
)
from faers_anon.series.raised_lists import Lists, Numbers, by_key, changed, ranges, same, same_lists

__all__ = ["Ledger"]

_I64 = NDArray[np.int64]
_F64 = NDArray[np.float64]
_EPS = 1e-12
_OWN = ("indications", "reactions")
_COMPARED = ["pseudonym", "history", *_OWN, "drug_keys"]
_Table = tuple[_I64, _I64, _F64, _F64]  # E as CSR drug → (wanted value, E*_{t−1}'s weight, E*_t's)
_Found = tuple[_I64, _I64, _F64]  # a value's failing histories, raised members' positions and P before


@dataclass(frozen=True, slots=True)
class Lifted:
    """What a check found: the members raised by E of the failing (history, value) pairs, with their P
    through E*_{t−1} (``lifted``: ``pseudonym``, ``value``, ``p_mid``), and the failing pairs
    (``failing``: ``history``, ``value``)."""

    lifted: pl.DataFrame
    failing: pl.DataFrame


class Ledger:
    """A ledger's cases, histories and value lists as arrays, for every raise check of one series step
    (module docstring). The cases are numbered by their *position*: sorted by exact history, so that
    a kernel pass reads the lists in memory order and meets each history's cases one after another.

    Args:
        state: the ledger's state (``caseid`` = pseudonym, value lists); past: ``pseudonym``, ``history``
            of every ledger case; sensitive: the run's sensitive attributes (``config.sensitive``).
    """

    def __init__(self, state: pl.DataFrame, past: pl.DataFrame, sensitive: tuple[str, ...]) -> None:
        self.numbers = Numbers(sensitive)  # values, drugs and terms numbered for the step
        index = _histories(past)
        self.histories = index.wide.select("history", pl.col("_h").cast(pl.Int64))
        n_hist = self.histories.height
        numbered = index.cases.select("pseudonym", pl.col("_h").cast(pl.Int64))
        rows = state.select(pl.col("caseid").alias("pseudonym")).join(numbered, on="pseudonym", how="left",
                                                                      maintain_order="left")  # fmt: skip
        hist = rows.get_column("_h").fill_null(-1).to_numpy().astype(np.int64)
        with sized(hist.size):
            order = by_key(hist, n_hist)  # position → state row
        self.ids = rows.get_column("pseudonym").gather(order)
        self.position = self.ids.to_frame("pseudonym").with_row_index("_p")
        self.hist = hist[order]
        self.sizes = np.bincount(numbered.get_column("_h").to_numpy(), minlength=n_hist).astype(np.int64)
        contained = _matched(index.wide, index.wide, "_h").select(pl.col("inner", "outer").cast(pl.Int64))
        inner, outer = (contained.get_column(c).to_numpy().astype(np.int64) for c in ("inner", "outer"))
        self.within_start, self.within = csr(inner, outer, n_hist)  # h → the histories H ⊇ h
        self.pos_start = np.zeros(n_hist + 1, np.int64)  # h → its positions
        np.cumsum(np.bincount(self.hist, minlength=n_hist), out=self.pos_start[1:])
        self._published: _Published | None = None  # the last pass's
        self._memo: dict[str, Memo] = {}  # wanted value → its inputs and results at the last pass
        self.lists = self.numbers.state_lists(state, order)
        with sized(self.hist.size):
            self.holders = self.lists.holders(*self.numbers.sizes())

    def kept(self, published: pl.DataFrame, at: _I64) -> _I64:
        """The kept histories' numbers (:func:`.earlier.kept_histories`: fewer of their cases published
        than the ledger holds; every history when ``published`` has no ``history``). ``at``: the
        positions of the published rows (a published case's history is its ledger history: the plan
        joins it from ``past``)."""
        if "history" not in published.columns:
            return np.arange(self.sizes.size, dtype=np.int64)
        out = np.bincount(self.hist[at], minlength=self.sizes.size)
        return np.flatnonzero(self.sizes > out).astype(np.int64)

    def _current(self, published: pl.DataFrame) -> tuple[_Published, _I64 | None]:
        """(the published cases as arrays (:class:`_Published`), the exact histories whose published cases'
        lists or kept state differ from the last pass's: None for the same set, every history at the first
        pass), made again only for another frame."""
        last = self._published
        if last is not None and (last.frame is published or same(last.frame, published, _COMPARED)):
            return last, None  # the frame itself again (the recheck keeps its members) or its rows
        cur_at = np.full(self.ids.len(), -1, np.int64)
        lists = Lists(*(np.zeros(k, np.int64) for k in (1, 0, 1, 0)))
        rows = np.zeros(0, np.int64)
        at_p, at_c = np.zeros(0, np.int64), np.zeros(0, np.int64)
        if "pseudonym" in published.columns and published.height:
            ids = published.select("pseudonym").with_row_index("_c")
            where = ids.join(self.position, on="pseudonym", maintain_order="left")
            at_c, rows = (where.get_column(c).to_numpy().astype(np.int64) for c in ("_c", "_p"))
            at_p, current = rows, published
            if ids.get_column("pseudonym").n_unique() < ids.height:  # a case's first row only
                current = published.unique("pseudonym", keep="first", maintain_order=True)
                at = current.select("pseudonym").with_row_index("_c").join(self.position, on="pseudonym")
                at_p, at_c = (at.get_column(c).to_numpy().astype(np.int64) for c in ("_p", "_c"))
            cur_at[at_p] = at_c
            lists = self.numbers.lists(current)
            by_position = cur_at[cur_at >= 0]  # the rows in position order: the kernel reads them in order
            lists = Lists(*permuted(lists.own_start, lists.own, by_position),
                          *permuted(lists.drug_start, lists.drug, by_position))  # fmt: skip
            at_p = np.flatnonzero(cur_at >= 0)
            at_c = np.arange(at_p.size, dtype=np.int64)
            cur_at[at_p] = at_c
        with sized(self.hist.size):
            found = lists.holders(*self.numbers.sizes())
        position = np.full(lists.own_start.size - 1, -1, np.int64)
        position[at_c] = at_p
        read = cur_at.copy()  # position → row of lists the kernel reads (−1: the ledger's lists alone)
        read[same_lists(position, self.lists, lists)] = -1
        self._published = _Published(published, cur_at, lists, self.kept(published, rows),
                                     replace(found, position=position), position, read)  # fmt: skip
        if last is None:
            return self._published, np.arange(self.sizes.size, dtype=np.int64)
        was, now = np.zeros(self.sizes.size, np.bool_), np.zeros(self.sizes.size, np.bool_)
        was[last.kept], now[self._published.kept] = True, True
        moved = was != now  # kept in one set only, or holding a case whose lists moved
        moved[self.hist[changed((last.cur_at, cur_at), last.position, (last.lists, lists))]] = True
        return self._published, np.flatnonzero(moved).astype(np.int64)

    def lifted(
        self, published: pl.DataFrame, tables: tuple[pl.DataFrame, pl.DataFrame], reads: list[str],
        wanted: list[str], members: pl.DataFrame, thetas: dict[str, float],
    ) -> Lifted:  # fmt: skip
        """The check of one pass (module docstring): the values whose inputs are those of an earlier
        pass keep its results (:class:`Memo`), checked again on another published set only where it
        differs (:meth:`_moved`); the others go through the kernels.

        Args:
            published: the ledger cases the release publishes (``pseudonym``, ``history`` and current
                value lists). tables: E*_{t−1}, E*_t as P reads them (:func:`.renew.as_read`). reads: the
                values read (wanted values and their classes' members). wanted: the values checked
                (values and ``class:`` names, each in ``thetas``). members: the class file's (``value``,
                ``class``). thetas: θ*.
        """
        current, moved = self._current(published)
        n_out = len(wanted)
        self.numbers.values.ids(pl.concat([t.get_column("value") for t in tables]))  # before the feeds
        feeds = self.numbers.feeds(reads, wanted, members)
        table = self.numbers.table(tables, feeds, n_out)
        theta = np.array([thetas[v] for v in wanted], np.float64)
        feed, drugs, before, now = by_out(feeds, table, n_out)
        memo = [self._memo.get(v) for v in wanted]
        kept = [
            m is not None and m.same(feed[o], drugs[o], before[o], now[o], float(theta[o]))
            for o, m in enumerate(memo)
        ]
        dirty = np.array([o for o, k in enumerate(kept) if not k], np.int64)
        args = (current, feeds, table, theta)
        found = self._run(dirty, *args) if dirty.size else []
        for o, (fail_h, up_at, up_mid) in zip(dirty.tolist(), found, strict=True):
            memo[o] = Memo(feed[o], drugs[o], before[o], now[o], float(theta[o]), fail_h, up_at, up_mid)
        if moved is not None:  # another published set: the kept values checked again where it moved
            stale = [o for o, k in enumerate(kept) if k]
            old = [m for m, k in zip(memo, kept, strict=True) if k and m is not None]
            found = self._moved(np.array(stale, np.int64), moved, old, *args)
            for o, m, (fail_h, up_at, up_mid) in zip(stale, old, found, strict=True):
                memo[o] = replace(m, fail_h=fail_h, up_at=up_at, up_mid=up_mid)
            self._memo = {}  # the values not wanted now would be stale
        done = [m for m in memo if m is not None]  # every value's, now
        self._memo.update(zip(wanted, done, strict=True))
        fail_h = np.concatenate([np.zeros(0, np.int64), *(m.fail_h for m in done)])
        up_at = np.concatenate([np.zeros(0, np.int64), *(m.up_at for m in done)])
        up_mid = np.concatenate([np.zeros(0), *(m.up_mid for m in done)])
        outs = np.arange(n_out)
        fail_o = np.repeat(outs, [m.fail_h.size for m in done])
        up_out = np.repeat(outs, [m.up_at.size for m in done])
        names = pl.Series(wanted, dtype=pl.Utf8)
        lifted = pl.DataFrame(
            {"pseudonym": self.ids.gather(up_at), "value": names.gather(up_out), "p_mid": up_mid}
        ).unique()
        failing = pl.DataFrame({
            "history": self.histories.get_column("history").gather(fail_h), "value": names.gather(fail_o),
        })  # fmt: skip
        return Lifted(lifted, failing)

    def _run(
        self, dirty: _I64, current: _Published, feeds: tuple[_I64, _I64], table: _Table, theta: _F64
    ) -> list[_Found]:
        """For each wanted value of ``dirty`` (numbers), the kept histories failing for it and the raised
        members of those (position, P through E*_{t−1}): the kernels run over those values only, on the
        cases holding one of their values or drugs."""
        remap = np.full(theta.size, -1, np.int64)
        remap[dirty] = np.arange(dirty.size, dtype=np.int64)
        values = np.flatnonzero(np.diff(only(feeds[0], feeds[1], remap)[0]))
        drugs = np.flatnonzero(np.diff(only(table[0], table[1], remap)[0]))
        mark = np.zeros(self.hist.size, np.bool_)
        for found in (self.holders, current.holders):
            mark[found.cases(values, drugs)] = True
        sums = self._sums(dirty, np.flatnonzero(mark), current.kept, current, feeds, table, theta)
        up_at, up_out, up_mid = self._near(*sums, dirty.size)
        return _split(sums[0], sums[1], up_at, up_out, up_mid, dirty.size)

    def _moved(
        self, stale: _I64, moved: _I64, old: list[Memo], current: _Published, feeds: tuple[_I64, _I64],
        table: _Table, theta: _F64,
    ) -> list[_Found]:  # fmt: skip
        """For each wanted value of ``stale`` (numbers; ``old``: its results on the last published set,
        the same inputs), its results on this one: only the kept histories h inside a ``moved`` history
        can change (their I(h) holds a case whose lists moved, or h became kept), so the kernels run over
        the cases of the histories containing those h, and the other failing h and raised members stay."""
        n_out, n_hist = stale.size, self.sizes.size
        if not n_out:
            return []
        if not moved.size:
            return [(m.fail_h, m.up_at, m.up_mid) for m in old]
        hit = np.zeros(n_hist, np.bool_)
        hit[moved] = True
        pairs = np.repeat(np.arange(n_hist, dtype=np.int64), np.diff(self.within_start))
        inner = np.unique(pairs[hit[self.within]])  # the histories h ⊆ a moved one (moved among them)
        outer = np.unique(self.within[ranges(self.within_start, inner)])  # every H ⊇ such an h
        cases = ranges(self.pos_start, outer)
        sums = self._sums(stale, cases, np.intersect1d(inner, current.kept), current, feeds, table, theta)
        near, inside = np.zeros(n_hist, np.bool_), np.zeros(n_hist, np.bool_)
        near[outer], inside[inner] = True, True
        outs = np.arange(n_out, dtype=np.int64)
        kept_h = [m.fail_h[~inside[m.fail_h]] for m in old]  # failing h outside: their I(h) did not move
        fail_h = np.concatenate([*kept_h, sums[0]])
        fail_o = np.concatenate([np.repeat(outs, [h.size for h in kept_h]), sums[1]])
        far = [~near[self.hist[m.up_at]] for m in old]  # raised members outside: the same
        up = self._near(fail_h, fail_o, *sums[2:], n_out)
        up_at = np.concatenate([*(m.up_at[f] for m, f in zip(old, far, strict=True)), up[0]])
        up_out = np.concatenate([np.repeat(outs, [int(f.sum()) for f in far]), up[1]])
        up_mid = np.concatenate([*(m.up_mid[f] for m, f in zip(old, far, strict=True)), up[2]])
        order, up_order = np.lexsort((fail_h, fail_o)), np.lexsort((up_at, up_out))
        return _split(
            fail_h[order], fail_o[order], up_at[up_order], up_out[up_order], up_mid[up_order], n_out
        )

    def _sums(
        self, values: _I64, cases: _I64, kept: _I64, current: _Published, feeds: tuple[_I64, _I64],
        table: _Table, theta: _F64,
    ) -> tuple[_I64, _I64, _I64, _I64, _F64]:  # fmt: skip
        """The kernels for the wanted values ``values`` (numbers, renumbered 0 … in their order) over the
        positions ``cases`` (ascending; every case of a history whose sums are read, or every case
        reaching one of the values): the ``kept`` histories failing (h, value) in kept order, and every
        raised (position, value, P through E*_{t−1}) row of ``cases`` in position order."""
        n_out = values.size
        remap = np.full(theta.size, -1, np.int64)
        remap[values] = np.arange(n_out, dtype=np.int64)
        feed = only(feeds[0], feeds[1], remap)
        drug_start, e_out = only(table[0], table[1], remap)
        keep = remap[table[1]] >= 0
        own, mine = self.lists, current.lists
        with sized(self.hist.size):
            h_of, out, s_now, s_before, s_up, up_at, up_out, up_mid = history_sums(
                cases, self.hist, own.own_start, own.own, own.drug_start, own.drug,
                current.read, mine.own_start, mine.own, mine.drug_start, mine.drug, *feed,
                drug_start, e_out, table[2][keep], table[3][keep], n_out, _EPS,
            )  # fmt: skip
            n_hist = self.sizes.size
            h_start = np.zeros(n_hist + 1, np.int64)
            np.cumsum(np.bincount(h_of, minlength=n_hist), out=h_start[1:])
            fail_h, fail_o = over(
                kept, self.within_start, self.within, h_start, out, s_now, s_before, s_up, self.sizes,
                theta[values], n_out, _EPS,
            )  # fmt: skip
        return fail_h, fail_o, up_at, up_out, up_mid

    def _near(
        self, fail_h: _I64, fail_o: _I64, up_at: _I64, up_out: _I64, up_mid: _F64, n_out: int
    ) -> tuple[_I64, _I64, _F64]:
        """The raised rows of the failing (h, value) pairs' members: a history H ⊇ h, the same value."""
        counts = self.within_start[fail_h + 1] - self.within_start[fail_h]
        outer = self.within[ranges(self.within_start, fail_h)]
        keys = np.unique(outer * n_out + np.repeat(fail_o, counts))
        near = np.zeros(self.sizes.size, np.bool_)
        near[outer] = True
        close = near[self.hist[up_at]]
        up_at, up_out, up_mid = up_at[close], up_out[close], up_mid[close]
        hit = np.isin(self.hist[up_at] * n_out + up_out, keys)
        return up_at[hit], up_out[hit], up_mid[hit]


@dataclass(frozen=True, slots=True)
class _Published:
    """A pass's published cases as arrays: the frame, ``cur_at`` (position → row of ``lists``, −1: not
    published), their current lists, the kept histories, the rows holding each value and drug, and each
    row's position."""

    frame: pl.DataFrame
    cur_at: _I64
    lists: Lists
    kept: _I64
    holders: Holders
    position: _I64  # row of lists → position (−1: not in the ledger)
    read: _I64  # cur_at, −1 where the current lists are the ledger's (they add nothing to a P)


def _split(fail_h: _I64, fail_o: _I64, up_at: _I64, up_out: _I64, up_mid: _F64, n_out: int) -> list[_Found]:
    """Per wanted value 0 … ``n_out`` − 1: its failing histories and raised rows (each in its order)."""
    order, up_order = np.argsort(fail_o, kind="stable"), np.argsort(up_out, kind="stable")
    cut = np.searchsorted(fail_o[order], np.arange(n_out + 1))
    up_cut = np.searchsorted(up_out[up_order], np.arange(n_out + 1))
    fail_h, up_at, up_mid = fail_h[order], up_at[up_order], up_mid[up_order]
    return [
        (fail_h[cut[o] : cut[o + 1]], up_at[up_cut[o] : up_cut[o + 1]], up_mid[up_cut[o] : up_cut[o + 1]])
        for o in range(n_out)
    ]
