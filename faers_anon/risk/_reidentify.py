"""Re-identification records of risk.json: one per attacker knowledge set (SPEC §11).

For each knowledge set K (case-view fields, optionally m items of one list): the class size of every
released case (:mod:`._classes`: prosecutor, the release itself is the population) and, with the raw
data, its journalist class size (:mod:`._population`: the raw cases the released values cover).

Shared work, done once for all sets: every field encoded to integer codes on both sides
(:mod:`._codes`), the items encoded once per list and sorted by (case, item), each list's item
pairs and set ids made once (for prosecutor and journalist risk alike), the raw population's ranges
built once, the 1-item sizes of a K computed once for its 1- and 2-item sets. A set's prosecutor
classes are then one ``UInt64`` key (its fields' codes folded) and a count per key.

Journalist risk for items: m = 1 and 2 by the same range counts with the item (or the item pair)
as one more equality key; ``"all"`` (the whole list) for an attacker who knows no field, as the
superset count of :func:`._classes.class_sizes` over the raw cases. It is null (not measured) when
the release publishes an item the raw list never holds (items generalized or recoded), and for
``"all"`` together with fields (a superset count within ranges is not a range count; the defaults
never ask for it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import polars as pl

from faers_anon.risk._classes import class_sizes, equal_lists, item_pairs, set_ids
from faers_anon.risk._clock import Clock
from faers_anon.risk._codes import Codes, encode_fields, key_expr
from faers_anon.risk._covered import covered_minima, unit_sizes
from faers_anon.risk._own import item_lists, own_minima
from faers_anon.risk._population import Population
from faers_anon.risk._units import unit_minima
from faers_anon.risk._view import QIDS, CaseData, encode_items

__all__ = ["KnowledgeSet", "default_knowledge", "reidentify"]


@dataclass(frozen=True, kw_only=True, slots=True)
class KnowledgeSet:
    """K: released case-view fields, plus ``count`` items (1, 2 or "all") of list ``items``."""

    knows: tuple[str, ...]
    items: str | None = None  # "drugs" or "reactions"
    count: int | str | None = None

    def describe(self) -> dict[str, Any] | None:
        return None if self.items is None else {self.items: self.count}

    def label(self) -> str:
        items = "" if self.items is None else f" + {self.items}:{self.count}"
        return f"{'+'.join(self.knows[6:]) or ('QIDs' if self.knows else '-')}{items}"


def default_knowledge(fields: tuple[str, ...]) -> list[KnowledgeSet]:
    """The QIDs alone, plus each other field, plus all; QIDs + 1, 2 drugs/reactions; whole lists alone."""
    qids = tuple(q for q in QIDS if q in fields)
    others = [f for f in fields if f not in qids]
    sets = [KnowledgeSet(knows=qids)]
    sets += [KnowledgeSet(knows=(*qids, f)) for f in others]
    sets.append(KnowledgeSet(knows=(*qids, *others)))
    sets += [KnowledgeSet(knows=qids, items=kind, count=m) for kind in ("drugs", "reactions") for m in (1, 2)]
    sets += [KnowledgeSet(knows=(), items=kind, count="all") for kind in ("drugs", "reactions")]
    return sets


def _shares(sizes: pl.Series, k: int) -> dict[str, float]:
    """unique, below_k, max and mean of 1 / size over the cases (0 for no case)."""
    n = sizes.len()
    if n == 0:
        return {"unique": 0.0, "below_k": 0.0, "max": 0.0, "mean": 0.0}
    risk = 1.0 / sizes.cast(pl.Float64).clip(lower_bound=1.0)
    return {
        "unique": float((sizes <= 1).sum()) / n,
        "below_k": float((sizes < k).sum()) / n,
        "max": float(risk.max()),  # type: ignore[arg-type]
        "mean": float(risk.mean()),  # type: ignore[arg-type]
    }


def _record(ks: KnowledgeSet, sizes: pl.Series, k: int, journalist: pl.Series | None) -> dict[str, Any]:
    own = _shares(sizes, k)
    record: dict[str, Any] = {
        "knows": list(ks.knows),
        "items": ks.describe(),
        "cases": sizes.len(),
        "unique": own["unique"],
        "below_k": own["below_k"],
        "prosecutor_max": own["max"],
        "prosecutor_mean": own["mean"],
    }
    if journalist is not None:
        raw = _shares(journalist, k)
        record["journalist_max"], record["journalist_mean"] = raw["max"], raw["mean"]
    return record


def _pairs(items: pl.DataFrame, width: int) -> pl.DataFrame:
    """``caseid``, ``item`` = a · width + b for every pair a < b of a case's items (UInt64)."""
    pairs = item_pairs(items, "caseid")
    return pairs.select("caseid", (pl.col("item").cast(pl.UInt64) * width + pl.col("item_b")).alias("item"))


def _in_order(items: pl.DataFrame) -> pl.DataFrame:
    """``items`` sorted by (caseid, item): checked (one vectorized comparison), sorted only if not."""
    case, item = items.get_column("caseid").to_numpy(), items.get_column("item").to_numpy()
    later, same = case[1:] > case[:-1], case[1:] == case[:-1]
    return items if bool(np.all(later | (same & (item[1:] >= item[:-1])))) else items.sort("caseid", "item")


class _Lists:
    """One item list (drugs or reactions) encoded once, on the release and on the raw data."""

    def __init__(self, released: pl.DataFrame, raw: pl.DataFrame | None) -> None:
        frames = encode_items(released) if raw is None else encode_items(released, raw)
        # in (case, item) order (terms come sorted by case and text, and item codes follow the text):
        # pairs, set ids and superset checks then only check the order
        self.released = _in_order(frames[0])
        self.raw = _in_order(frames[1]) if raw is not None else None
        self.width = int(self.released.get_column("item").max() or 0) + 1  # type: ignore[arg-type]
        if self.raw is not None:
            self.width = max(self.width, int(self.raw.get_column("item").max() or 0) + 1)  # type: ignore[arg-type]
        # the raw list must hold every released item for a raw case to be matched item for item: every
        # released item code among the raw codes (the codes are shared; a null term never matches)
        self.comparable = False
        if self.raw is not None and released.get_column("term").null_count() == 0:
            held = np.zeros(self.width, bool)
            held[self.raw.get_column("item").to_numpy()] = True
            self.comparable = bool(held[self.released.get_column("item").to_numpy()].all())
        self._pairs: dict[str, pl.DataFrame] = {}
        self._sets: dict[str, tuple[pl.DataFrame, pl.DataFrame]] = {}
        self.singles: dict[tuple[str, ...], pl.DataFrame] = {}  # journalist sizes on K + 1 item, by K
        self.own_singles: dict[tuple[str, ...], np.ndarray] = {}  # prosecutor sizes on K + 1 item, by K
        self._csr: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def csr(self, side: str, case_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:func:`._own.item_lists` of the ``released`` or ``raw`` list over ``case_ids`` (sorted; the
        same ids for a side on every call), made once."""
        if side not in self._csr:
            rows = self.released if side == "released" else cast(pl.DataFrame, self.raw)
            self._csr[side] = item_lists(
                case_ids, rows.get_column("caseid").to_numpy(), rows.get_column("item").to_numpy()
            )
        return self._csr[side]

    def sets(self, population: str) -> tuple[pl.DataFrame, pl.DataFrame]:
        """:func:`._classes.set_ids` of the released lists against themselves or against the raw lists.

        Both are numbered once over the release and the raw data, so the prosecutor's and the
        journalist's "all" share one numbering.
        """
        if "sets" not in self._sets:
            raw = None if self.raw is None else self.raw.lazy().rename({"caseid": "p"})
            self._sets["sets"] = set_ids(self.released.lazy(), raw)
        t_sets, p_sets = self._sets["sets"]
        if population == "raw":
            return t_sets, p_sets
        return t_sets, t_sets.select(pl.col("caseid").alias("p"), "sid")

    def released_pairs(self) -> pl.DataFrame:
        if "released" not in self._pairs:
            self._pairs["released"] = _pairs(self.released, self.width)
        return self._pairs["released"]

    def raw_pairs(self) -> pl.DataFrame:
        if "raw" not in self._pairs and self.raw is not None:
            self._pairs["raw"] = _pairs(self.raw, self.width)
        return self._pairs["raw"]


def _journalist_items(pop: Population, ks: KnowledgeSet, lists: _Lists) -> pl.Series | None:
    """Journalist sizes for K + m items (module docstring); None when not measured."""
    if lists.raw is None or not lists.comparable:
        return None
    if ks.count == "all":
        if ks.knows:
            return None
        case_ids, raw_ids = pop.view.get_column("caseid").to_numpy(), pop.raw.get_column("caseid").to_numpy()
        t_sets, p_sets = lists.sets("raw")
        zeros = np.zeros(len(case_ids), np.int64)
        target = (zeros, lists.csr("released", case_ids), _sid(t_sets, case_ids), zeros + len(raw_ids))
        member = (np.zeros(len(raw_ids), np.int64), _sid(p_sets.rename({"p": "caseid"}), raw_ids))
        same = equal_lists(target, member, lists.raw.get_column("item").to_numpy())
        if same is not None:  # over the candidate budget: equal lists
            return pl.Series("size", same, pl.Int64)
        targets = pop.view.select("caseid", pl.lit(0, pl.UInt32).alias("kt"))
        members = pop.raw.select(pl.lit(0, pl.UInt32).alias("kt"), pl.col("caseid").alias("p"))

        def pairs() -> tuple[pl.DataFrame, int]:
            made = lists.raw_pairs().select(pl.col("caseid").alias("p"), pl.col("item").alias("pair"))
            return made, lists.width

        sizes, _ = class_sizes(targets, members, items="all", target_items=lists.released,
                               population_items=lists.raw.rename({"caseid": "p"}),
                               sets=lists.sets("raw"), pairs=pairs)  # fmt: skip
        return sizes.sort("caseid").get_column("size")
    built = pop.queries(ks.knows)
    if built is None:
        return None
    cases, tuples, exact = built
    wanted = tuples.select("_qt")
    base = wanted.with_columns(pl.Series("size", pop.count(tuples, wanted, pop.raw_rows(exact), exact)))
    if ks.knows not in lists.singles:  # K + 1 item: also the floor of K + 2 items, counted once
        found = _covered(pop, built, lists, None)
        if found is None:  # pragma: no cover - codes too large for one word: polars
            found = unit_sizes(pop, built, lists.released, lists.raw, lists.width)
        lists.singles[ks.knows] = found
    single = lists.singles[ks.knows]
    steps = [single, cases.join(base, on="_qt").select("caseid", "size")]
    if ks.count == 2:
        # a case with an item at most one raw case holds has a class of at most 1 on any pair with it:
        # its figures are those of size 1, so its pairs are not counted (sizes 0 and 1 read alike)
        settled = single.filter(pl.col("size") <= 1).select("caseid")
        doubles = _covered(pop, built, lists, settled)
        if doubles is None:  # pragma: no cover - codes too large for one word: polars
            t_pairs = lists.released_pairs().join(settled, on="caseid", how="anti")
            doubles = unit_sizes(pop, built, t_pairs, lists.raw_pairs(), lists.width**2)
        steps.insert(0, pl.concat([doubles, single.join(settled, on="caseid")]))
    joined = cases.select("caseid")
    for i, frame in enumerate(steps):
        joined = joined.join(frame.rename({"size": f"size_{i}"}), on="caseid", how="left")
    return joined.sort("caseid").select(pl.coalesce([f"size_{i}" for i in range(len(steps))])).to_series()


def _covered(
    pop: Population, built: tuple[pl.DataFrame, pl.DataFrame, list[str]], lists: _Lists,
    settled: pl.DataFrame | None,
) -> pl.DataFrame | None:  # fmt: skip
    """``caseid``, ``size``: min over the case's items (``settled`` None) or over the pairs of the cases
    not ``settled`` of the raw cases covering it (:func:`._covered.covered_minima`, once per ``*``
    pattern of :meth:`Population.ranges`); cases without a unit are absent; None: codes too large."""
    cases, tuples, exact = built
    case_ids, qt = cases.get_column("caseid").to_numpy(), cases.get_column("_qt").to_numpy()
    row_of = np.zeros(int(qt.max(initial=0)) + 1, np.int64)
    row_of[tuples.get_column("_qt").to_numpy()] = np.arange(tuples.height)
    rows = row_of[qt]  # each case's tuple row
    if settled is not None:
        rows = np.where(np.isin(case_ids, settled.get_column("caseid").to_numpy()), -1, rows)
    released = lists.csr("released", case_ids)
    raw = lists.csr("raw", pop.raw.get_column("caseid").to_numpy())
    sizes = np.full(len(case_ids), -1, np.int64)
    for ranges in pop.ranges(tuples, exact):
        asked = np.where((rows >= 0) & ranges.asked[np.maximum(rows, 0)], rows, -1)
        bounds = (ranges.start, ranges.lo, ranges.hi)
        found = covered_minima((released, asked), (raw, ranges.values), bounds, lists.width,
                               pairs=settled is not None)  # fmt: skip
        if found is None:
            return None
        sizes = np.where(found >= 0, found, sizes)
    held = sizes >= 0
    return pl.DataFrame([pl.Series("caseid", case_ids[held]), pl.Series("size", sizes[held], pl.Int64)])


def _journalist(pop: Population, ks: KnowledgeSet, lists: dict[str, _Lists]) -> pl.Series | None:
    """Journalist sizes of every case in ``caseid`` order; None when not measured."""
    if ks.items is not None:
        return _journalist_items(pop, ks, lists[ks.items])
    sizes = pop.sizes(ks.knows)
    return None if sizes is None else sizes.sort("caseid").get_column("size")


def _prosecutor(codes: Codes, ks: KnowledgeSet, lists: dict[str, _Lists]) -> tuple[pl.Series, bool]:
    """Class sizes (release as population) of every case, in ``caseid`` order, and whether exact.

    K + 1 or 2 items: :func:`._own.own_minima` over the items, then over the pairs (one sort of
    packed words each); a case without a pair is known by its item, one without items by K.
    The 1-item minima of a K are computed once for both sets.
    """
    key = key_expr(ks.knows, codes.widths)
    sizes = codes.view.select(pl.len().over(key).cast(pl.Int64)).to_series()
    if ks.items is None:
        return sizes, True
    targets = codes.view.select("caseid", key.rank("dense").cast(pl.UInt32).alias("kt"))
    own = lists[ks.items]
    if ks.count == "all":
        ids, kts = targets.get_column("caseid").to_numpy(), targets.get_column("kt").to_numpy()
        sid = _sid(own.sets("release")[0], ids)
        target = (kts, own.csr("released", ids), sid, sizes.to_numpy())
        same = equal_lists(target, (kts, sid), own.released.get_column("item").to_numpy())
        if same is not None:  # over the candidate budget: equal lists, a lower bound
            return pl.Series("size", same, pl.Int64), False

        def pairs() -> tuple[pl.DataFrame, int]:
            made = own.released_pairs().select(pl.col("caseid").alias("p"), pl.col("item").alias("pair"))
            return made, own.width

        wholes, exact = class_sizes(
            targets, items="all", target_items=own.released, sets=own.sets("release"), pairs=pairs
        )
        return wholes.sort("caseid").get_column("size"), exact
    case_ids, kt = targets.get_column("caseid").to_numpy(), targets.get_column("kt").to_numpy()
    if ks.knows not in own.own_singles:
        own.own_singles[ks.knows] = _own_units(own, kt, case_ids, pairs=False)
    single = own.own_singles[ks.knows]
    result = np.where(single > 0, single, sizes.to_numpy())
    if ks.count == 2:
        double = _own_units(own, kt, case_ids, pairs=True)
        result = np.where(double > 0, double, result)
    return pl.Series("size", result, pl.Int64), True


def _own_units(own: _Lists, kt: np.ndarray, case_ids: np.ndarray, *, pairs: bool) -> np.ndarray:
    """:func:`._own.own_minima` over the released items or pairs; when the codes are too large for one
    word, :func:`._units.unit_minima` over a table of them (hashing)."""
    found = own_minima(kt, own.csr("released", case_ids), own.width, pairs=pairs)
    if found is not None:
        return found
    rows = own.released_pairs() if pairs else own.released  # pragma: no cover - huge codes
    units = rows.get_column("caseid").to_numpy(), rows.get_column("item").to_numpy()  # pragma: no cover
    return unit_minima(kt, case_ids, *units, own.width**2 if pairs else own.width)  # pragma: no cover


def _sid(sets: pl.DataFrame, case_ids: np.ndarray) -> np.ndarray:
    """Each case's set id from ``sets`` (``caseid``, ``sid``; sorted by caseid), −1 without items."""
    ids, sid = sets.get_column("caseid").to_numpy(), sets.get_column("sid").to_numpy()
    if len(ids) == 0:
        return np.full(len(case_ids), -1, np.int64)
    at = np.minimum(np.searchsorted(ids, case_ids), len(ids) - 1)
    return np.where(ids[at] == case_ids, sid[at], -1).astype(np.int64)


def _upper_bounds(codes: Codes, ks: KnowledgeSet, lists: dict[str, _Lists]) -> pl.Series:
    """An upper bound of each "all" class: the cases agreeing on K that hold the target's rarest item
    (its class on K + 1 item, :func:`._own.own_minima`; a case without items: its class on K)."""
    key = key_expr(ks.knows, codes.widths)
    frame = codes.view.select(pl.len().over(key).cast(pl.Int64).alias("size"), key.rank("dense").alias("kt"))
    ids = codes.view.get_column("caseid").to_numpy()
    single = _own_units(lists[str(ks.items)], frame.get_column("kt").to_numpy(), ids, pairs=False)
    return pl.Series("size", np.where(single > 0, single, frame.get_column("size").to_numpy()), pl.Int64)


def reidentify(
    data: CaseData, raw: CaseData | None, sets: list[KnowledgeSet], k: int, clock: Clock | None = None
) -> list[dict[str, Any]]:
    """One record per knowledge set (module docstring); ``clock`` gets a lap per set."""
    clock = clock or Clock()
    view = data.view.sort("caseid")
    codes = encode_fields(view, None if raw is None else raw.view, data.fields)
    pop = Population(view, raw.view, codes) if raw is not None else None
    lists = {
        "drugs": _Lists(data.drugs, None if raw is None else raw.drugs),
        "reactions": _Lists(data.reactions, None if raw is None else raw.reactions),
    }
    clock.lap("encode")
    records = []
    for ks in sets:
        sizes, exact = _prosecutor(codes, ks, lists)
        journalist = None if pop is None else _journalist(pop, ks, lists)
        record = {**_record(ks, sizes, k, journalist), "exact": exact}
        if not exact:
            low = _shares(_upper_bounds(codes, ks, lists), k)
            record["bounds"] = {"unique": low["unique"], "below_k": low["below_k"],
                                "prosecutor_max": low["max"], "prosecutor_mean": low["mean"]}  # fmt: skip
        if pop is not None and journalist is None:
            record["journalist_max"] = record["journalist_mean"] = None
        records.append(record)
        clock.lap(ks.label())
    return records
