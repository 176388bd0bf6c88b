"""P(s | c) with its value classes and OUTC codes as one array pass over numbered cases (issue 14 item 7).

Source: SPEC §5, §11; :func:`knowledge.case_value_probabilities` and
:func:`faers_anon.anonymize.value_classes.with_classes_and_outcomes`, whose frame this gives row for row:
p(c, s) = 1 for an own value s of c (an indication or reaction, filler terms left out) and for an
OUTC code of c, else the largest weight w(d, s) > 0 over c's drug keys d (E as read: keys made
canonical); a class's p is the largest p of its member values in c. Every p is a weight or 1, never a
sum, so the arrays give the same floats as the frames.

Layout (as :mod:`faers_anon.risk._sums`): the output strings (values, ``class:`` and ``outc:``
pseudo-values) are numbered in their sorted order (*ranks*), so rows sorted by (case number, rank)
are the frame's (caseid, value) order. The kernel counting-sorts the (case, own rank) and (case,
drug) pairs by case, keeps each case's largest p per rank in a dense array (reset after the case),
then adds the classes of the values it reached, and writes the case's ranks sorted (an insertion
sort in place up to 64 ranks, a case's few: 400k chunks 0.07 → 0.035 CPU-s a call): one pass, no
(caseid, value) sort or group-by of millions of rows. E is numbered once per E frame (:func:`read`:
the planner and the recheck ask for P of many member sets with one E), its drug keys made canonical once
per process (:func:`_drug_keys`: the step reads six E at the 400k quarter 4, mostly the same keys, and
the regexes of :func:`knowledge.drug_names.name_key_expr` were ~3/4 of each read).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon._numba_cache import njit, sized
from knowledge.drug_names import name_key_expr
from knowledge.table import validate_table
from knowledge.values import value_key_expr

__all__ = ["Group", "Lists", "ReadE", "case_rows", "expand", "lists", "matches", "numbered", "read"]
__all__ += ["search", "terms"]


@dataclass(frozen=True, slots=True)
class ReadE:
    """E numbered: ``drugs`` (``drug_key`` → ``_d``), ``values`` (its distinct values, by ``_ev``),
    and E's rows by drug as CSR: drug d's rows are ``start[d]:start[d + 1]`` of ``value``, ``weight``."""

    drugs: pl.DataFrame
    values: pl.Series
    start: NDArray[np.int64]
    value: NDArray[np.int64]
    weight: NDArray[np.float64]


_READ: dict[int, tuple[weakref.ref[pl.DataFrame], ReadE]] = {}


def read(table: pl.DataFrame) -> ReadE:
    """E as P reads it (keys canonical, :func:`knowledge.table.validate_table` first), numbered; kept
    while ``table`` lives."""
    for key in [key for key, (ref, _) in _READ.items() if ref() is None]:
        del _READ[key]
    found = _READ.get(id(table))
    if found is not None and found[0]() is table:
        return found[1]
    checked = validate_table(table)
    rows = checked.select(
        _drug_keys(checked.get_column("drug_key")), value_key_expr(pl.col("disease")).alias("value"), "weight"
    ).drop_nulls()
    drugs = rows.select("drug_key").unique().sort("drug_key").with_row_index("_d")
    values = rows.get_column("value").unique().sort()
    numbered = (
        rows.join(drugs, on="drug_key")
        .join(values.to_frame().with_row_index("_ev"), on="value")
        .sort("_d", maintain_order=True)
    )
    d = numbered.get_column("_d").to_numpy().astype(np.int64)
    start = np.zeros(drugs.height + 1, np.int64)
    np.cumsum(np.bincount(d, minlength=drugs.height), out=start[1:])
    result = ReadE(
        drugs.with_columns(pl.col("_d").cast(pl.Int64)),
        values,
        start,
        numbered.get_column("_ev").to_numpy().astype(np.int64),
        numbered.get_column("weight").to_numpy().astype(np.float64),
    )
    _READ[id(table)] = (weakref.ref(table), result)
    return result


#: Each drug key E held, made canonical (:func:`knowledge.drug_names.name_key_expr`, whose rules run
#: row by row), kept across E frames: the step reads E after E, mostly the same keys (six E at the 400k
#: quarter 4, each ~6k keys through the regexes: ~40 ms).
_NAME_KEYS: dict[str, str | None] = {}
#: Past this many keys :data:`_NAME_KEYS` starts again (a long-lived process reading many E).
_NAME_KEYS_MAX = 1_000_000


def _drug_keys(keys: pl.Series) -> pl.Series:
    """``name_key_expr`` of ``keys`` (Utf8), each distinct key made once per process (:data:`_NAME_KEYS`)."""
    distinct = keys.drop_nulls().unique().to_list()
    new = [key for key in distinct if key not in _NAME_KEYS]
    if len(_NAME_KEYS) + len(new) > _NAME_KEYS_MAX:
        _NAME_KEYS.clear()
        new = distinct
    if new:
        made = pl.Series("k", new, pl.Utf8).to_frame().select(name_key_expr(pl.col("k"))).to_series()
        _NAME_KEYS.update(zip(new, made.to_list(), strict=True))
    canonical = pl.Series([_NAME_KEYS[key] for key in distinct], dtype=pl.Utf8)
    return keys.replace(pl.Series(distinct, dtype=pl.Utf8), canonical).alias("drug_key")


@dataclass(frozen=True, slots=True)
class Lists:
    """A frame's list columns numbered: ``keys`` (the key column → ``_row``, the frame's row), and per
    group of columns the CSR ``start``, ``ids`` of each row's terms (repeats kept, null terms left
    out) and ``values``: each distinct term made a value by the group's function (null: no value)."""

    keys: pl.DataFrame
    groups: dict[str, tuple[NDArray[np.int64], NDArray[np.int32], pl.Series]]


#: A group of list columns and what makes their terms values (an expression on ``t``).
Group = tuple[tuple[str, ...], pl.Expr]


def terms(
    frame: pl.DataFrame, groups: dict[str, Group]
) -> dict[str, tuple[NDArray[np.int64], NDArray[np.int64], pl.Series]]:
    """Per group, ``row`` and ``id`` of every term of ``frame``'s list columns (null terms left out; in
    no set order) and the ``values`` of the ids (:class:`Lists`, without its CSR: a caller reading every
    row needs no sort by row). The terms are numbered by one cast to a categorical with categories of
    its own (each string hashed once; a ``unique`` and a join of the strings before: 375k members'
    lists 0.53–0.69 → 0.32–0.43 CPU-s); not the global categories, which live as long as the process."""
    found: dict[str, tuple[NDArray[np.int64], NDArray[np.int64], pl.Series]] = {}
    for name, (columns, value) in groups.items():
        long = pl.concat(
            frame.select(pl.col(c).cast(pl.List(pl.Utf8)).alias("t")).with_row_index("_row") for c in columns
        ).explode("t").drop_nulls("t")  # fmt: skip
        codes = long.get_column("t").cast(pl.Categorical(pl.Categories.random()))  # this call's own
        distinct = codes.unique()
        at = distinct.to_physical().to_numpy().astype(np.int64)
        table = np.zeros(int(at.max()) + 1 if at.size else 1, np.int64)  # a term's code → its id
        table[at] = np.arange(at.size, dtype=np.int64)
        found[name] = (
            long.get_column("_row").to_numpy().astype(np.int64),
            table[codes.to_physical().to_numpy().astype(np.int64)],
            distinct.cast(pl.Utf8).to_frame("t").select(value.alias("value"))["value"],
        )
    return found


def numbered(frame: pl.DataFrame, key: str, groups: dict[str, Group]) -> Lists:
    """``frame``'s list columns numbered by group (:class:`Lists`)."""
    found: dict[str, tuple[NDArray[np.int64], NDArray[np.int32], pl.Series]] = {}
    for name, (row, ids, values) in terms(frame, groups).items():
        start = np.zeros(frame.height + 1, np.int64)
        np.cumsum(np.bincount(row, minlength=frame.height), out=start[1:])
        found[name] = start, ids.astype(np.int32)[np.argsort(row, kind="stable")], values
    return Lists(frame.select(key).with_row_index("_row"), found)


_INDEX: dict[int, tuple[weakref.ref[pl.DataFrame], NDArray[np.int64], NDArray[np.int64], bool]] = {}


def matches(keys: pl.DataFrame, key: str, wanted: pl.Series) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(i, row) for every row of ``keys`` (``key`` → ``_row``, :class:`Lists`) whose key is ``wanted[i]``
    (integers; nulls match nothing), by binary search in the keys sorted once while ``keys`` lives
    (the ledger's 1M pseudonyms: a hash join of them for every call before). Keys all distinct (the
    ledger's state): one search and a comparison, not a search of each side."""
    for gone in [gone for gone, (ref, _, _, _) in _INDEX.items() if ref() is None]:
        del _INDEX[gone]
    known = _INDEX.get(id(keys))
    if known is None or known[0]() is not keys:
        at = keys.select(pl.col(key).cast(pl.Int64), "_row").drop_nulls(key)
        order = np.argsort(at.get_column(key).to_numpy(), kind="stable")
        ordered = at.get_column(key).to_numpy().astype(np.int64)[order]
        distinct = bool((ordered[1:] != ordered[:-1]).all())
        rows = at.get_column("_row").to_numpy().astype(np.int64)[order]
        known = (weakref.ref(keys), ordered, rows, distinct)
        _INDEX[id(keys)] = known
    _, sorted_keys, rows, distinct = known
    present = ~wanted.is_null().to_numpy()
    values = wanted.cast(pl.Int64).fill_null(0).to_numpy()
    sort = np.argsort(values, kind="stable") if values.size >= _SORTED else None
    lo = search(sorted_keys, values, "left", sort)
    if distinct:  # a value is at lo or nowhere
        found = present & (lo < sorted_keys.size)
        found[found] = sorted_keys[lo[found]] == values[found]
        hit = np.flatnonzero(found)
        return hit.astype(np.int64), rows[lo[hit]]
    hi = search(sorted_keys, values, "right", sort)
    counts = np.where(present, hi - lo, 0)
    first = np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    return np.repeat(np.arange(len(values), dtype=np.int64), counts), rows[first]


#: From this many values :func:`search` sorts them first.
_SORTED = 4096


def search(
    sorted_keys: NDArray[np.int64], values: NDArray[np.int64], side: str = "left",
    order: NDArray[np.int64] | None = None,
) -> NDArray[np.int64]:  # fmt: skip
    """``np.searchsorted(sorted_keys, values, side)``, the values searched in sorted order (``order``: their
    argsort, when known): random pseudonyms searched in a long array miss the cache at every step (270k
    of them in the 400k ledger's 1.36M: 0.15–0.20 → 0.035–0.05 CPU-s, the same positions)."""
    if order is None:
        if values.size < _SORTED:
            return np.searchsorted(sorted_keys, values, side).astype(np.int64)  # type: ignore[call-overload]
        order = np.argsort(values, kind="stable")
    found = np.empty(values.size, np.int64)
    found[order] = np.searchsorted(sorted_keys, values[order], side)  # type: ignore[call-overload]
    return found


_LISTS: dict[tuple[int, str, str], tuple[weakref.ref[pl.DataFrame], Lists]] = {}


def lists(frame: pl.DataFrame, key: str, groups: dict[str, Group]) -> Lists:
    """:func:`numbered`, each group kept while ``frame`` lives (the ledger's state: every P of a step
    reads it, with and without its OUTC codes)."""
    for gone in [gone for gone, (ref, _) in _LISTS.items() if ref() is None]:
        del _LISTS[gone]
    found: dict[str, tuple[NDArray[np.int64], NDArray[np.int32], pl.Series]] = {}
    keys = None
    for name, group in groups.items():
        which = id(frame), key, repr((name, group[0], str(group[1])))
        known = _LISTS.get(which)
        if known is None or known[0]() is not frame:
            known = weakref.ref(frame), numbered(frame, key, {name: group})
            _LISTS[which] = known
        found[name], keys = known[1].groups[name], known[1].keys
    return Lists(frame.select(key).with_row_index("_row") if keys is None else keys, found)


def expand(
    start: NDArray[np.int64],
    ids: NDArray[np.int32] | NDArray[np.int64],
    rows: NDArray[np.int64],
    cases: NDArray[np.int64],
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(case, id) for every term of each row ``rows[i]`` (CSR ``start``, ``ids``), case ``cases[i]``."""
    counts = start[rows + 1] - start[rows]
    first = np.repeat(start[rows] - (np.cumsum(counts) - counts), counts)
    return np.repeat(cases, counts), ids[first + np.arange(len(first))].astype(np.int64)


@njit(cache=True)
def _rows(
    n_cases: int,
    own_case: NDArray[np.int64],
    own_rank: NDArray[np.int64],
    drug_case: NDArray[np.int64],
    drug_id: NDArray[np.int64],
    e_start: NDArray[np.int64],
    e_rank: NDArray[np.int64],
    e_weight: NDArray[np.float64],
    class_start: NDArray[np.int64],
    class_rank: NDArray[np.int64],
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """(case, rank, p) rows, p > 0, sorted by case then rank (module docstring)."""
    n_out = len(class_start) - 1
    own_start = np.zeros(n_cases + 1, np.int64)
    for i in range(len(own_case)):
        own_start[own_case[i] + 1] += 1
    drug_start = np.zeros(n_cases + 1, np.int64)
    for i in range(len(drug_case)):
        drug_start[drug_case[i] + 1] += 1
    for c in range(n_cases):
        own_start[c + 1] += own_start[c]
        drug_start[c + 1] += drug_start[c]
    own_sorted = np.empty(len(own_case), np.int64)
    fill = own_start[:n_cases].copy()
    for i in range(len(own_case)):
        own_sorted[fill[own_case[i]]] = own_rank[i]
        fill[own_case[i]] += 1
    drug_sorted = np.empty(len(drug_case), np.int64)
    fill = drug_start[:n_cases].copy()
    for i in range(len(drug_case)):
        drug_sorted[fill[drug_case[i]]] = drug_id[i]
        fill[drug_case[i]] += 1
    best = np.zeros(n_out)
    touched = np.empty(n_out, np.int64)
    size = max(16, len(own_case) + len(drug_case))
    cases, ranks, ps = np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size)
    n = 0
    for c in range(n_cases):
        m = 0
        for at in range(own_start[c], own_start[c + 1]):
            r = own_sorted[at]
            if best[r] == 0.0:
                touched[m] = r
                m += 1
            best[r] = 1.0
        for at in range(drug_start[c], drug_start[c + 1]):
            d = drug_sorted[at]
            for e in range(e_start[d], e_start[d + 1]):
                w = e_weight[e]
                if w > 0.0:
                    r = e_rank[e]
                    if best[r] == 0.0:
                        touched[m] = r
                        m += 1
                    if w > best[r]:
                        best[r] = w
        reached = m
        for t in range(reached):
            v = touched[t]
            for j in range(class_start[v], class_start[v + 1]):
                r = class_rank[j]
                if best[r] == 0.0:
                    touched[m] = r
                    m += 1
                if best[v] > best[r]:
                    best[r] = best[v]
        if n + m > size:
            size = max(2 * size, n + m)
            grown_c, grown_r, grown_p = np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size)
            grown_c[:n], grown_r[:n], grown_p[:n] = cases[:n], ranks[:n], ps[:n]
            cases, ranks, ps = grown_c, grown_r, grown_p
        if m > 64:
            touched[:m] = np.sort(touched[:m])
        for t in range(1, m if m <= 64 else 0):  # insertion sort in place: most cases reach a few ranks
            r = touched[t]
            j = t - 1
            while j >= 0 and touched[j] > r:
                touched[j + 1] = touched[j]
                j -= 1
            touched[j + 1] = r
        for t in range(m):
            r = touched[t]
            cases[n], ranks[n], ps[n] = c, r, best[r]
            best[r] = 0.0
            n += 1
    return cases[:n], ranks[:n], ps[:n]


def case_rows(
    n_cases: int,
    own: tuple[NDArray[np.int64], NDArray[np.int64]],
    drugs: tuple[NDArray[np.int64], NDArray[np.int64]],
    e: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]],
    classes: tuple[NDArray[np.int64], NDArray[np.int64]],
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """(case, rank, p) of the module docstring, sorted by case then rank.

    Args:
        n_cases: cases are numbered 0 … n_cases − 1.
        own: (case, rank) pairs of p = 1 (own values and OUTC codes; repeats allowed).
        drugs: (case, drug) pairs (drug numbers of ``e``'s CSR; repeats allowed).
        e: E's CSR by drug: ``start`` (one more than the drugs), ``rank``, ``weight``.
        classes: a CSR over every rank: value rank v counts for the class ranks
            ``class_rank[class_start[v]:class_start[v + 1]]`` (none for a class or OUTC rank).
    """
    with sized(n_cases):
        return _rows(n_cases, *own, *drugs, *e, *classes)  # type: ignore[no-any-return]
