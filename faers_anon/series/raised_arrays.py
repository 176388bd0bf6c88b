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
numbered and held as CSR arrays in that order; the published cases' current lists likewise, per check;
E*_{t−1} and E*_t as one CSR drug → (wanted value, largest weight of each: a read value counts for
itself and for each wanted class holding it, so a class's p is its members' largest). One kernel pass
over the cases (:func:`.raised_kernels.history_sums`) keeps a case's three P per wanted value in dense
arrays, adds now and before to its exact history's sums and notes the raised (case, value, mid) rows;
a second (:func:`.raised_kernels.over`) adds the sums of the histories H ⊇ h for every kept h (the
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
nothing to their sums. Another published set checks every value again.

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
from faers_anon.series.exposed import term_groups
from faers_anon.series.linked import lists
from faers_anon.series.raised_kernels import (
    Holders,
    Memo,
    by_out,
    csr,
    history_sums,
    holders,
    merged,
    only,
    over,
    permuted,
)
from knowledge.values import value_key_expr

__all__ = ["Ledger", "Numbering"]

_I64 = NDArray[np.int64]
_F64 = NDArray[np.float64]
_EPS = 1e-12
_OWN = ("indications", "reactions")
_LONG = 50_000  # a series this long is numbered through a categorical (Numbering.ids)
_COMPARED = ["pseudonym", "history", *_OWN, "drug_keys"]


class Numbering:
    """Keys (text) numbered 0, 1, … in the order first seen (the unseen keys of one call in no particular
    order); unseen keys are numbered after."""

    def __init__(self) -> None:
        self.keys = pl.Series("key", [], pl.Utf8)

    def __len__(self) -> int:
        return self.keys.len()

    def ids(self, keys: pl.Series) -> _I64:
        """The numbers of ``keys`` (−1 for a null), numbering the unseen ones. A long series is read as a
        categorical: its distinct keys are numbered, then each key through its code (a string's code is
        the same throughout one cast), which costs a fifth of hashing the strings twice."""
        if keys.len() < _LONG:
            return self._ids(keys)
        cat = keys.cast(pl.Categorical)
        codes = cat.to_physical()
        distinct = cat.drop_nulls().unique()
        at = distinct.to_physical().to_numpy().astype(np.int64)
        code = codes.fill_null(0).to_numpy().astype(np.int64)
        if at.size and int(at.max()) > 4 * code.size:  # codes far apart: the keys hashed instead
            return self._ids(keys)
        table = np.full(int(at.max()) + 1 if at.size else 1, -1, np.int64)
        table[at] = self._ids(distinct.cast(pl.Utf8))
        found = table[code]
        found[codes.is_null().to_numpy()] = -1
        return found

    def _ids(self, keys: pl.Series) -> _I64:
        """:meth:`ids` by an enum of the known keys."""
        known = self.keys.len() > 0
        codes = keys.cast(pl.Enum(self.keys), strict=False) if known else None
        new = keys.filter(codes.is_null() & keys.is_not_null()) if codes is not None else keys.drop_nulls()
        new = new.unique()
        if new.len():
            self.keys = pl.concat([self.keys, new.rename("key")])
            codes = keys.cast(pl.Enum(self.keys))
        if codes is None:
            return np.full(keys.len(), -1, np.int64)
        return codes.to_physical().cast(pl.Int64).fill_null(-1).to_numpy().astype(np.int64)


def _exploded(frame: pl.DataFrame, column: str) -> tuple[_I64, pl.Series]:
    """(row, element) of a list column, nulls and empty lists left out."""
    flat = frame.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("_r"), column).explode(column)
    flat = flat.drop_nulls(column)
    return flat.get_column("_r").to_numpy().astype(np.int64), flat.get_column(column)


@dataclass(frozen=True, slots=True)
class _Lists:
    """Cases' own values (value numbers) and drugs (drug numbers) as CSR by case row."""

    own_start: _I64
    own: _I64
    drug_start: _I64
    drug: _I64

    def holders(self, n_values: int, n_drugs: int) -> Holders:
        """The rows holding each value and each drug (numbered below ``n_values``, ``n_drugs``)."""
        return holders(self.own_start, self.own, self.drug_start, self.drug, n_values, n_drugs)


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
        self.sensitive = sensitive
        self.values, self.drugs, self.terms = Numbering(), Numbering(), Numbering()
        self.term_value = np.zeros(0, np.int64)  # term number → value number (−1: a blank term)
        index = _histories(past)
        self.histories = index.wide.select("history", pl.col("_h").cast(pl.Int64))
        n_hist = self.histories.height
        numbered = index.cases.select("pseudonym", pl.col("_h").cast(pl.Int64))
        rows = state.select(pl.col("caseid").alias("pseudonym")).join(numbered, on="pseudonym", how="left",
                                                                      maintain_order="left")  # fmt: skip
        hist = rows.get_column("_h").fill_null(-1).to_numpy().astype(np.int64)
        known = np.flatnonzero(hist >= 0)
        order = known[np.argsort(hist[known], kind="stable")]  # position → state row
        self.ids = rows.get_column("pseudonym").gather(order)
        self.position = self.ids.to_frame("pseudonym").with_row_index("_p")
        self.hist = hist[order]
        self.sizes = np.bincount(numbered.get_column("_h").to_numpy(), minlength=n_hist).astype(np.int64)
        contained = _matched(index.wide, index.wide, "_h").select(pl.col("inner", "outer").cast(pl.Int64))
        inner, outer = (contained.get_column(c).to_numpy().astype(np.int64) for c in ("inner", "outer"))
        self.within_start, self.within = csr(inner, outer, n_hist)  # h → the histories H ⊇ h
        self._published: tuple[pl.DataFrame, _I64, _Lists, _I64, Holders] | None = None  # the last pass's
        self._memo: dict[str, Memo] = {}  # wanted value → its inputs and results at the last pass
        lists = self._state_lists(state)
        self.lists = _Lists(
            *permuted(lists.own_start, lists.own, order), *permuted(lists.drug_start, lists.drug, order)
        )
        with sized(self.hist.size):
            self.holders = self.lists.holders(len(self.values), len(self.drugs))

    def _lists(self, frame: pl.DataFrame) -> _Lists:
        """The :class:`_Lists` of ``frame``'s rows (its sensitive value lists and drug keys)."""
        n = frame.height
        parts = [(np.zeros(n + 1, np.int64), np.zeros(0, np.int64))]
        for name in [c for c in _OWN if c in self.sensitive]:
            at, terms = _exploded(frame, name)
            parts.append(csr(at, self._values_of(terms), n))
        own_start, own = merged(parts, n)
        drug_start, drug = np.zeros(n + 1, np.int64), np.zeros(0, np.int64)
        if "diseases" in self.sensitive:
            at, drugs = _exploded(frame, "drug_keys")
            drug_start, drug = csr(at, self.drugs.ids(drugs), n)
        return _Lists(own_start, own, drug_start, drug)

    def _state_lists(self, state: pl.DataFrame) -> _Lists:
        """:meth:`_lists` of the state from its terms as P numbered them for the step (:func:`.linked.lists`
        with :func:`.exposed.term_groups`: the same rows, each row's terms in order), only its distinct
        terms made values here (the state's 5.4M terms and 4.9M drug keys were numbered twice)."""
        n = state.height
        found = lists(state, "caseid", term_groups(self.sensitive)).groups
        parts = []
        for name, numbers in (("own", self._term_values), ("drugs", self.drugs.ids)):
            if name not in found:
                parts.append((np.zeros(n + 1, np.int64), np.zeros(0, np.int64)))
                continue
            start, ids, distinct = found[name]
            rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(start))
            parts.append(csr(rows, numbers(distinct)[ids], n))
        return _Lists(*parts[0], *parts[1])

    def _term_values(self, terms: pl.Series) -> _I64:
        """The value numbers of distinct verbatim ``terms`` (their canonical keys, −1 for none)."""
        return self.values.ids(terms.to_frame("t").select(value_key_expr(pl.col("t"))).to_series())

    def _values_of(self, terms: pl.Series) -> _I64:
        """The value numbers of verbatim ``terms`` (their canonical keys, −1 for none); each term's key
        made once."""
        known = len(self.terms)
        ids = self.terms.ids(terms)
        if len(self.terms) > known:
            new = self.terms.keys.slice(known).to_frame("term").select(value_key_expr(pl.col("term")))
            self.term_value = np.concatenate([self.term_value, self.values.ids(new.to_series())])
        found = np.full(ids.size, -1, np.int64)
        found[ids >= 0] = self.term_value[ids[ids >= 0]]
        return found

    def kept(self, published: pl.DataFrame, at: _I64) -> _I64:
        """The kept histories' numbers (:func:`.earlier.kept_histories`: fewer of their cases published
        than the ledger holds; every history when ``published`` has no ``history``). ``at``: the
        positions of the published rows (a published case's history is its ledger history: the plan
        joins it from ``past``)."""
        if "history" not in published.columns:
            return np.arange(self.sizes.size, dtype=np.int64)
        out = np.bincount(self.hist[at], minlength=self.sizes.size)
        return np.flatnonzero(self.sizes > out).astype(np.int64)

    def _feeds(self, reads: list[str], wanted: list[str], members: pl.DataFrame) -> tuple[_I64, _I64]:
        """CSR value number → the wanted values it counts for: itself, and each wanted class holding it
        (the read values only)."""
        from faers_anon.anonymize.value_classes import CLASS_PREFIX

        read = set(reads)
        found: list[tuple[str, int]] = []
        for o, value in enumerate(wanted):
            if value.startswith(CLASS_PREFIX):
                inside = members.filter(pl.col("class") == value.removeprefix(CLASS_PREFIX))
                found += [(v, o) for v in inside.get_column("value").to_list() if v in read]
            elif value in read:
                found.append((value, o))
        values = self.values.ids(pl.Series([v for v, _ in found], dtype=pl.Utf8))
        return csr(values, np.array([o for _, o in found], np.int64), len(self.values))

    def _table(
        self, tables: tuple[pl.DataFrame, pl.DataFrame], feeds: tuple[_I64, _I64], n_out: int
    ) -> tuple[_I64, _I64, _F64, _F64]:
        """E*_{t−1} and E*_t as P reads them (``drug_key``, ``value``, ``weight``) as one CSR drug →
        (wanted value, the largest weight of E*_{t−1}'s rows counting for it, of E*_t's; 0 for none)."""
        start, feed = feeds
        keys, weights = [], []
        for read in tables:
            values = self.values.ids(read.get_column("value"))
            drugs = self.drugs.ids(read.get_column("drug_key"))
            weight = read.get_column("weight").cast(pl.Float64).to_numpy().astype(np.float64)
            ok = (values >= 0) & (values < start.size - 1) & (drugs >= 0)
            values, drugs, weight = values[ok], drugs[ok], weight[ok]
            fan = start[values + 1] - start[values]
            outs = feed[np.repeat(start[values] - np.cumsum(fan) + fan, fan) + np.arange(int(fan.sum()))]
            keys.append(np.repeat(drugs, fan) * n_out + outs)
            weights.append(np.repeat(weight, fan))
        key = np.unique(np.concatenate(keys))  # (drug, wanted value), sorted
        sides = []
        for at, weight in zip(keys, weights, strict=True):
            best = np.zeros(key.size)
            np.maximum.at(best, np.searchsorted(key, at), weight)
            sides.append(best)
        drug_start = np.zeros(len(self.drugs) + 1, np.int64)
        np.cumsum(np.bincount(key // n_out, minlength=len(self.drugs)), out=drug_start[1:])
        return drug_start, key % n_out, sides[0], sides[1]

    def _current(self, published: pl.DataFrame) -> tuple[bool, _I64, _Lists, _I64, Holders]:
        """(the same ``published`` as the last pass's, ``cur_at``: position → row of its current lists
        (−1: not published), those lists, the kept histories), made again only for another frame."""
        last = self._published
        if last is not None and (last[0] is published or _same(last[0], published, _COMPARED)):
            return (True, *last[1:])  # the frame itself again (the recheck keeps its members) or its rows
        cur_at = np.full(self.ids.len(), -1, np.int64)
        lists = _Lists(*(np.zeros(k, np.int64) for k in (1, 0, 1, 0)))
        rows = np.zeros(0, np.int64)
        at_p, at_c = np.zeros(0, np.int64), np.zeros(0, np.int64)
        if "pseudonym" in published.columns and published.height:
            where = published.select("pseudonym").join(self.position, on="pseudonym", maintain_order="left")
            rows = where.get_column("_p").to_numpy().astype(np.int64)
            current = published.unique("pseudonym", keep="first", maintain_order=True)
            at = current.select("pseudonym").with_row_index("_c").join(self.position, on="pseudonym")
            at_p, at_c = (at.get_column(c).to_numpy().astype(np.int64) for c in ("_p", "_c"))
            cur_at[at_p] = at_c
            lists = self._lists(current)
        with sized(self.hist.size):
            found = lists.holders(len(self.values), len(self.drugs))
        position = np.full(lists.own_start.size - 1, -1, np.int64)
        position[at_c] = at_p
        found = replace(found, position=position)
        self._published = (published, cur_at, lists, self.kept(published, rows), found)
        self._memo = {}  # another published set: every value is checked again
        return (False, *self._published[1:])

    def lifted(
        self, published: pl.DataFrame, tables: tuple[pl.DataFrame, pl.DataFrame], reads: list[str],
        wanted: list[str], members: pl.DataFrame, thetas: dict[str, float],
    ) -> Lifted:  # fmt: skip
        """The check of one pass (module docstring): the values whose inputs are those of an earlier
        pass keep its results (:class:`Memo`), the others go through the kernels.

        Args:
            published: the ledger cases the release publishes (``pseudonym``, ``history`` and current
                value lists). tables: E*_{t−1}, E*_t as P reads them (:func:`.renew.as_read`). reads: the
                values read (wanted values and their classes' members). wanted: the values checked
                (values and ``class:`` names, each in ``thetas``). members: the class file's (``value``,
                ``class``). thetas: θ*.
        """
        current = self._current(published)
        n_out = len(wanted)
        self.values.ids(pl.concat([t.get_column("value") for t in tables]))  # numbered before the feeds
        feeds = self._feeds(reads, wanted, members)
        table = self._table(tables, feeds, n_out)
        theta = np.array([thetas[v] for v in wanted], np.float64)
        feed, drugs, before, now = by_out(feeds, table, n_out)
        memo = [self._memo.get(v) for v in wanted]
        dirty = [
            o for o, m in enumerate(memo)
            if m is None or not m.same(feed[o], drugs[o], before[o], now[o], float(theta[o]))
        ]  # fmt: skip
        found = self._run(np.array(dirty, np.int64), current, feeds, table, theta)
        for o, (fail_h, up_at, up_mid) in zip(dirty, found, strict=True):
            kept = Memo(feed[o], drugs[o], before[o], now[o], float(theta[o]), fail_h, up_at, up_mid)
            memo[o] = self._memo[wanted[o]] = kept
        done = [m for m in memo if m is not None]
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
        self, dirty: _I64, current: tuple[bool, _I64, _Lists, _I64, Holders], feeds: tuple[_I64, _I64],
        table: tuple[_I64, _I64, _F64, _F64], theta: _F64,
    ) -> list[tuple[_I64, _I64, _F64]]:  # fmt: skip
        """For each wanted value of ``dirty`` (numbers), the kept histories failing for it and the raised
        members of those (position, P through E*_{t−1}): the kernels run over those values only."""
        if not dirty.size:
            return []
        _, cur_at, lists, kept, holders = current
        n_out = dirty.size
        remap = np.full(theta.size, -1, np.int64)
        remap[dirty] = np.arange(n_out, dtype=np.int64)
        feeds = only(feeds[0], feeds[1], remap)
        drug_start, e_out = only(table[0], table[1], remap)
        keep = remap[table[1]] >= 0
        e_before, e_now = table[2][keep], table[3][keep]
        own, mine = self.lists, lists
        values = np.flatnonzero(np.diff(feeds[0]))
        drugs = np.flatnonzero(np.diff(drug_start))
        mark = np.zeros(self.hist.size, np.bool_)
        for found in (self.holders, holders):
            mark[found.cases(values, drugs)] = True
        with sized(self.hist.size):
            sums = history_sums(
                np.flatnonzero(mark), self.hist, own.own_start, own.own, own.drug_start, own.drug,
                cur_at, mine.own_start, mine.own, mine.drug_start, mine.drug, *feeds,
                drug_start, e_out, e_before, e_now, n_out, _EPS,
            )  # fmt: skip
            h_of, out, s_now, s_before, s_up, up_at, up_out, up_mid = sums
            n_hist = self.sizes.size
            h_start = np.zeros(n_hist + 1, np.int64)
            np.cumsum(np.bincount(h_of, minlength=n_hist), out=h_start[1:])
            within = (self.within_start, self.within)
            fail_h, fail_o = over(
                kept, *within, h_start, out, s_now, s_before, s_up, self.sizes, theta[dirty], n_out, _EPS
            )
        # the failing pairs' members raised by E: the raised rows of a history H ⊇ h, value s
        counts = self.within_start[fail_h + 1] - self.within_start[fail_h]
        outer = np.concatenate([self.within[self.within_start[h] : self.within_start[h + 1]] for h in fail_h]
                               or [np.zeros(0, np.int64)])  # fmt: skip
        keys = np.unique(outer * n_out + np.repeat(fail_o, counts))
        near = np.zeros(self.sizes.size, np.bool_)
        near[outer] = True
        up_at, up_out, up_mid = (a[near[self.hist[up_at]]] for a in (up_at, up_out, up_mid))
        hit = np.isin(self.hist[up_at] * n_out + up_out, keys)
        up_at, up_out, up_mid = up_at[hit], up_out[hit], up_mid[hit]
        order, up_order = np.argsort(fail_o, kind="stable"), np.argsort(up_out, kind="stable")
        cut = np.searchsorted(fail_o[order], np.arange(n_out + 1))
        up_cut = np.searchsorted(up_out[up_order], np.arange(n_out + 1))
        fail_h, up_at, up_mid = fail_h[order], up_at[up_order], up_mid[up_order]
        return [
            (fail_h[cut[o] : cut[o + 1]], up_at[up_cut[o] : up_cut[o + 1]], up_mid[up_cut[o] : up_cut[o + 1]])
            for o in range(n_out)
        ]


def _same(one: pl.DataFrame, other: pl.DataFrame, columns: list[str]) -> bool:
    """Whether two frames hold the same ``columns`` (those of them either has), row by row: a list column
    compared by its lengths and its elements in order (faster than ``equals`` on lists)."""
    if one.height != other.height or [c for c in columns if c in one.columns] != [
        c for c in columns if c in other.columns
    ]:
        return False
    for name in [c for c in columns if c in one.columns]:
        a, b = one.get_column(name), other.get_column(name)
        if a.dtype != b.dtype:
            return False
        if isinstance(a.dtype, pl.List):
            if not a.list.len().equals(b.list.len()):
                return False
            a, b = a.explode(), b.explode()
        if not a.equals(b):
            return False
    return True
