"""Rule 6's raise check: cases' value lists as numbered CSR arrays, and the cases whose lists differ between
two published sets (issue 14 item 7).

Source: docs/series.md §4 (rule 6) and §6 ("The raise check as arrays", "The raise check after a re-plan");
:mod:`faers_anon.series.raised_arrays` holds the ledger's and the published cases' lists this way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon._numba_cache import njit, sized
from faers_anon.anonymize.value_classes import CLASS_PREFIX
from faers_anon.series import linked
from faers_anon.series.exposed import term_groups
from faers_anon.series.raised_kernels import Holders, by_key, csr, differ, holders, merged
from knowledge.values import value_key_expr

__all__ = [
    "Lists", "Numbering", "Numbers", "by_key", "changed", "exploded", "placed", "ranges", "same",
    "same_lists",
]  # fmt: skip

_I64 = NDArray[np.int64]
_F64 = NDArray[np.float64]
_OWN = ("indications", "reactions")
_LONG = 50_000  # a series this long is numbered through a categorical (Numbering.ids)


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


def exploded(frame: pl.DataFrame, column: str) -> tuple[_I64, pl.Series]:
    """(row, element) of a list column, nulls and empty lists left out."""
    flat = frame.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("_r"), column).explode(column)
    flat = flat.drop_nulls(column)
    return flat.get_column("_r").to_numpy().astype(np.int64), flat.get_column(column)


@dataclass(frozen=True, slots=True)
class Lists:
    """Cases' own values (value numbers) and drugs (drug numbers) as CSR by case row."""

    own_start: _I64
    own: _I64
    drug_start: _I64
    drug: _I64

    def holders(self, n_values: int, n_drugs: int) -> Holders:
        """The rows holding each value and each drug (numbered below ``n_values``, ``n_drugs``)."""
        return holders(self.own_start, self.own, self.drug_start, self.drug, n_values, n_drugs)


class Numbers:
    """The values (canonical value keys), drugs (drug keys) and verbatim terms one series step numbers, for
    the ledger's lists, the published cases' and E's (one numbering for every pass).

    Args:
        sensitive: the run's sensitive attributes (``config.sensitive``).
    """

    def __init__(self, sensitive: tuple[str, ...]) -> None:
        self.sensitive = sensitive
        self.values, self.drugs, self.terms = Numbering(), Numbering(), Numbering()
        self.term_value = np.zeros(0, np.int64)  # term number → value number (−1: a blank term)

    def sizes(self) -> tuple[int, int]:
        """How many values and drugs are numbered."""
        return len(self.values), len(self.drugs)

    def lists(self, frame: pl.DataFrame) -> Lists:
        """The :class:`Lists` of ``frame``'s rows (its sensitive value lists and drug keys)."""
        n = frame.height
        parts = [(np.zeros(n + 1, np.int64), np.zeros(0, np.int64))]
        for name in [c for c in _OWN if c in self.sensitive]:
            at, terms = exploded(frame, name)
            parts.append(csr(at, self._values_of(terms), n))
        own_start, own = merged(parts, n)
        drug_start, drug = np.zeros(n + 1, np.int64), np.zeros(0, np.int64)
        if "diseases" in self.sensitive:
            at, drugs = exploded(frame, "drug_keys")
            drug_start, drug = csr(at, self.drugs.ids(drugs), n)
        return Lists(own_start, own, drug_start, drug)

    def state_lists(self, state: pl.DataFrame, order: _I64) -> Lists:
        """:meth:`lists` of the state's rows ``order[0]``, ``order[1]``, … (the positions) from its terms as
        P numbered them for the step (:func:`.linked.lists` with :func:`.exposed.term_groups`: the same
        rows, each row's terms in order), only its distinct terms made values here (the state's 5.4M terms
        and 4.9M drug keys were numbered twice), each row's values placed at its position in one kernel
        (:func:`placed`)."""
        n = order.size
        found = linked.lists(state, "caseid", term_groups(self.sensitive)).groups
        where = np.full(state.height, -1, np.int64)  # state row → position
        where[order] = np.arange(n, dtype=np.int64)
        parts = []
        for name, numbers in (("own", self._term_values), ("drugs", self.drugs.ids)):
            if name not in found:
                parts.append((np.zeros(n + 1, np.int64), np.zeros(0, np.int64)))
                continue
            start, ids, distinct = found[name]
            with sized(n):
                parts.append(placed(start, ids, numbers(distinct), where, n))
        return Lists(*parts[0], *parts[1])

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

    def feeds(self, reads: list[str], wanted: list[str], members: pl.DataFrame) -> tuple[_I64, _I64]:
        """CSR value number → the wanted values it counts for: itself, and each wanted class holding it
        (the read values only)."""
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

    def table(
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


def ranges(start: _I64, keys: _I64) -> _I64:
    """The concatenated ranges ``start[k]`` … ``start[k + 1]`` − 1 of ``keys``, in their order."""
    size = start[keys + 1] - start[keys]
    total = int(size.sum())
    return np.repeat(start[keys] - np.cumsum(size) + size, size) + np.arange(total, dtype=np.int64)


def changed(at: tuple[_I64, _I64], position: _I64, lists: tuple[Lists, Lists]) -> _I64:
    """The positions whose current lists differ between two published sets (``at``: position → row of
    each set's ``lists``, −1 for not published; ``position``: the first set's row → position): published
    in one set only, or holding other value or drug numbers (in another order counts as other: a
    position found here is only checked again)."""
    found = (at[0] < 0) != (at[1] < 0)
    one, other = lists
    with sized(at[0].size):
        differ(position, at[1], one.own_start, one.own, other.own_start, other.own, found)
        differ(position, at[1], one.drug_start, one.drug, other.drug_start, other.drug, found)
    return np.flatnonzero(found).astype(np.int64)


def same(one: pl.DataFrame, other: pl.DataFrame, columns: list[str]) -> bool:
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


def same_lists(position: _I64, ledger: Lists, current: Lists) -> _I64:
    """The positions whose ``current`` lists (row → position: ``position``, −1 for none) hold the same value
    and drug numbers in the same order as their ``ledger`` lists (rows = positions)."""
    found = np.zeros(ledger.own_start.size - 1, np.bool_)
    found[position[position >= 0]] = True
    differs = np.zeros(found.size, np.bool_)
    identity = np.arange(found.size, dtype=np.int64)
    with sized(found.size):
        differ(position, identity, current.own_start, current.own, ledger.own_start, ledger.own, differs)
        differ(position, identity, current.drug_start, current.drug, ledger.drug_start, ledger.drug, differs)
    return np.flatnonzero(found & ~differs).astype(np.int64)


@njit(cache=True)
def placed(
    start: _I64, ids: NDArray[np.int32] | _I64, number: _I64, where: _I64, n: int
) -> tuple[_I64, _I64]:
    """The CSR of ``n`` rows whose row ``where[r]`` holds the numbers ``number[id]`` ≥ 0 of CSR row r's ids,
    in order (rows with ``where`` −1 left out): :func:`.raised_kernels.csr` by row, then
    :func:`.raised_kernels.permuted` into the new order, as one pass that reads the rows in memory order
    and writes each at its place (0.17–0.42 → 0.13–0.16 CPU-s per list at the 400k quarter 4's state)."""
    found = np.zeros(n + 1, np.int64)
    for r in range(start.size - 1):
        if where[r] < 0:
            continue
        count = 0
        for a in range(start[r], start[r + 1]):
            if number[ids[a]] >= 0:
                count += 1
        found[where[r] + 1] = count
    for i in range(n):
        found[i + 1] += found[i]
    values = np.empty(found[n], np.int64)
    for r in range(start.size - 1):
        if where[r] < 0:
            continue
        k = found[where[r]]
        for a in range(start[r], start[r + 1]):
            v = number[ids[a]]
            if v >= 0:
                values[k] = v
                k += 1
    return found, values
