"""Equivalence-class sizes under attacker knowledge (SPEC §11), for every case at once.

A knowledge set is K (case-view fields) and optionally m items of one item list. The class of a
target t is the set of population cases p that agree with t on every field of K and whose item set
contains the m items the attacker knows; over the m-subsets S of t's items the class of t is the
smallest: size(t) = min_S |{p : K(p) = K(t), S ⊆ I(p)}| (k^m-anonymity's reading, Terrovitis et al.
2008). A target with fewer than m items is known by all its items (S = I(t)); a target with no item
is known by K alone. ``m = "all"``: S = I(t), the whole list.

The population is given as *membership*: ``kt`` (the target's K-tuple id) → ``p`` (a population
case that agrees with it on K). For prosecutor risk the population is the release itself, one
member row per case; for journalist risk it is the raw quarter, where a raw case agrees with every
released tuple that covers its values (:mod:`faers_anon.risk._population`).

Computation: group-bys over (kt, item) and (kt, item_a, item_b) counts; "all" counts supersets by
taking, per distinct (kt, I(t)), the population cases holding its two rarest items as candidates
(a join on the pair's code when the population's pairs are at hand) and keeping those that hold
every further item (binary searches in one sorted (case, item) array, :func:`_holding_all`); the
sets are numbered by :mod:`._sets`. The release's own 1- and 2-item classes: :mod:`._units`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from faers_anon.risk._sets import set_ids, set_members, sorted_rows
from faers_anon.risk._unique import unique_inverse

__all__ = ["class_sizes", "item_pairs", "set_ids"]  # set_ids: from ._sets

Items = int | str | None
Pairs = tuple[pl.DataFrame, int]  # ``p``, ``pair`` = a · width + b (a < b) of the population, and width
MakePairs = Callable[[], Pairs]  # made only when a candidate list is built (within the budget)
CANDIDATE_BUDGET = 20_000_000  # rows of (set, candidate) before "all" falls back to equal lists


def _k_sizes(targets: pl.LazyFrame, members: pl.LazyFrame) -> pl.LazyFrame:
    counts = members.group_by("kt").agg(pl.len().alias("size"))
    return targets.join(counts, on="kt", how="left").select("caseid", pl.col("size").fill_null(0))


def _single(
    targets: pl.LazyFrame, members: pl.LazyFrame, t_items: pl.LazyFrame, p_items: pl.LazyFrame, *, same: bool
) -> pl.LazyFrame:
    """min over the target's items i of |{p in members(kt) : i ∈ I(p)}| (cases with items only).

    ``same`` (the population is the targets): the count of (kt, i) is a window over the targets'
    own (kt, item) rows, one join instead of three.
    """
    if same:
        held = targets.join(t_items, on="caseid").with_columns(pl.len().over("kt", "item").alias("n"))
        return held.group_by("caseid").agg(pl.col("n").min().alias("size"))
    counts = members.join(p_items, on="p").group_by("kt", "item").agg(pl.len().alias("n"))
    return (
        targets.join(t_items, on="caseid")
        .join(counts, on=["kt", "item"], how="left")
        .group_by("caseid")
        .agg(pl.col("n").fill_null(0).min().alias("size"))
    )


def item_pairs(items: pl.DataFrame, key: str) -> pl.DataFrame:
    """``key``, ``item``, ``item_b``: every pair item < item_b of one case's (distinct) items.

    The rows are sorted by (case, item) once and each row is paired with the rows after it in its
    case by index arithmetic (numpy: row r of a case ending at e pairs with r + 1 … e − 1), instead
    of a self-join on the case filtered to item < item_b (the same pairs, without the n² join rows).
    """
    case, item = sorted_rows(items, key)  # repeated (case, item) rows pair like one
    n = len(case)
    firsts = np.flatnonzero(np.concatenate([[n > 0], case[1:] != case[:-1]]))
    ends = np.append(firsts[1:], n)[: len(firsts)]
    after = np.repeat(ends, ends - firsts) - np.arange(n) - 1  # rows after each row in its case
    left = np.repeat(np.arange(n), after)
    offsets = np.cumsum(after) - after
    right = left + 1 + (np.arange(len(left)) - np.repeat(offsets, after))
    return pl.DataFrame(
        [pl.Series(key, case[left], items.schema[key]), pl.Series("item", item[left], items.schema["item"]),
         pl.Series("item_b", item[right], items.schema["item"])]
    )  # fmt: skip


def _pairs(items: pl.LazyFrame, key: str) -> pl.LazyFrame:
    """Every pair a < b of one case's items, as one UInt64 ``pair`` = a · 2^32 + b (one group-by key)."""
    pair = (pl.col("item").cast(pl.UInt64) * (1 << 32) + pl.col("item_b").cast(pl.UInt64)).alias("pair")
    return item_pairs(items.collect(), key).lazy().select(key, pair)


def _double(
    targets: pl.LazyFrame, members: pl.LazyFrame, t_items: pl.LazyFrame, p_items: pl.LazyFrame, *, same: bool
) -> pl.LazyFrame:
    """min over the target's item pairs of the population cases holding both (cases with ≥ 2 items).

    ``same``: the population is the targets themselves (prosecutor risk): the pairs are built once
    and counted by a window over (kt, pair), without the items only one case of the tuple holds.
    """
    if same:
        # An item only one case of its tuple holds makes that case's class 1 (a pair with it is held by
        # that case alone) and is in nobody else's pairs: such items are left out of the pairs, and
        # their holders get size 1. The remaining pairs are counted as before.
        held = targets.join(t_items, on="caseid").with_columns(pl.len().over("kt", "item").alias("df"))
        lone = (
            held.filter(pl.col("df") == 1)
            .select("caseid")
            .unique()
            .with_columns(pl.lit(1, pl.UInt32).alias("n"))
        )
        kept = held.filter(pl.col("df") > 1).select("caseid", "item")
        own = targets.join(_pairs(kept, "caseid"), on="caseid")
        counted = pl.concat(
            [own.with_columns(pl.len().over("kt", "pair").alias("n")).select("caseid", "n"), lone],
            how="vertical_relaxed",
        )
        return counted.group_by("caseid").agg(pl.col("n").min().alias("size"))
    own = targets.join(_pairs(t_items, "caseid"), on="caseid")
    counts = members.join(_pairs(p_items, "p"), on="p").group_by("kt", "pair").agg(pl.len().alias("n"))
    counted = own.join(counts, on=["kt", "pair"], how="left")
    return counted.group_by("caseid").agg(pl.col("n").fill_null(0).min().alias("size"))


def _same(
    targets: pl.LazyFrame, members: pl.LazyFrame, t_sets: pl.LazyFrame, p_sets: pl.LazyFrame
) -> pl.LazyFrame:
    """|{p in members(kt) : I(p) = I(t)}|: a lower bound of the superset class (upper bound of risk)."""
    counts = members.join(p_sets, on="p").group_by("kt", "sid").agg(pl.len().alias("size"))
    own = targets.join(t_sets.select("caseid", "sid"), on="caseid")
    return own.join(counts, on=["kt", "sid"], how="left").select("caseid", pl.col("size").fill_null(0))


def _set_items(members: pl.DataFrame, frequency: pl.DataFrame) -> pl.DataFrame:
    """``sid``, ``item``, ``df`` (population holders; null: none) of every distinct target set."""
    return members.join(frequency, on="item", how="left")


def _ranked(distinct: pl.DataFrame, set_items: pl.DataFrame) -> pl.DataFrame:
    """Per distinct (kt, set) ``qs``: ``kt``, ``order`` (its items, rarest first: df, then item, an
    item the population never holds first) and ``rarest`` (that item's df; 0 when never held)."""
    items = (
        set_items.sort("df", "item", nulls_last=False)
        .group_by("sid", maintain_order=True)
        .agg(pl.col("item").alias("order"), pl.col("df").first().fill_null(0).alias("rarest"))
    )
    return distinct.join(items, on="sid").select("qs", "kt", "order", "rarest")


def _rarest_total(sets: pl.DataFrame, t_items: pl.DataFrame, p_items: pl.DataFrame) -> int:
    """Σ over distinct (kt, set) of several items of df(rarest item), df its population holders.

    A pair's holders are at most its rarer item's, so the sum bounds the first candidate list of
    :func:`_whole`; checked before any list is ordered (an item never held counts 0). Computed per
    target case from its sorted item rows (numpy), the sets' ids standing for their items.
    """
    case, item = sorted_rows(t_items, "caseid")
    held = p_items.get_column("item").to_numpy()
    width = max(int(item.max(initial=0)), int(held.max(initial=0))) + 1
    starts = np.flatnonzero(np.concatenate([[len(case) > 0], case[1:] != case[:-1]]))
    df = np.bincount(held, minlength=width)[item]
    rarest = np.minimum.reduceat(df, starts) if len(starts) else np.zeros(0, np.int64)
    per_case = pl.DataFrame(
        [
            pl.Series("caseid", case[starts], sets.schema["caseid"]),
            pl.Series("rarest", rarest),
            pl.Series("n", np.diff(np.append(starts, len(case)))),
        ]
    )
    chosen = sets.join(per_case.filter(pl.col("n") > 1), on="caseid").unique(["kt", "sid"])
    return int(chosen.get_column("rarest").sum())


def _holding_all(candidates: pl.DataFrame, multi: pl.DataFrame, p_items: pl.DataFrame) -> pl.DataFrame:
    """``qs``, ``size``: per set of several items, the candidates holding every item of its ``order``.

    The candidates (``qs``, ``p``) hold the set's first two items. Item by item in ``order`` (positions
    2, 3, …), the candidates whose set is that long and who lack the item are dropped: a lookup of
    the packed (case index · width + item) in the population's sorted (case, item) array (built
    once, numpy binary search), so the candidate list only shrinks and no hash table is rebuilt.
    """
    qs = multi.get_column("qs").to_numpy().astype(np.int64)
    lengths = multi.get_column("order").list.len().to_numpy().astype(np.int64)
    flat = multi.get_column("order").explode().to_numpy().astype(np.int64)
    starts = np.zeros(int(qs.max(initial=-1)) + 1, np.int64)  # qs → its first item in ``flat``
    longest = np.zeros(len(starts), np.int64)  # qs → its number of items (0: not a multi set)
    starts[qs], longest[qs] = np.cumsum(lengths) - lengths, lengths
    case, item = sorted_rows(p_items, "p")
    firsts = np.flatnonzero(np.concatenate([[len(case) > 0], case[1:] != case[:-1]]))
    people = case[firsts]  # case → index, so that keys stay small
    width = int(item.max(initial=0)) + 1
    index = np.repeat(np.arange(len(firsts)), np.diff(np.append(firsts, len(case))))
    held = index * width + item.astype(np.int64)  # sorted, as the rows are
    cq = candidates.get_column("qs").to_numpy().astype(np.int64)
    cp = np.searchsorted(people, candidates.get_column("p").to_numpy()) * width
    for position in range(2, int(lengths.max(initial=0))):
        live = np.flatnonzero(longest[cq] > position)
        if len(live) == 0:
            break
        needle = cp[live] + flat[starts[cq[live]] + position]
        at = np.minimum(np.searchsorted(held, needle), len(held) - 1)
        keep = np.ones(len(cq), bool)
        keep[live[held[at] != needle]] = False
        cq, cp = cq[keep], cp[keep]
    return pl.DataFrame(
        [
            pl.Series("qs", qs, multi.schema["qs"]),
            pl.Series("size", np.bincount(cq, minlength=len(starts))[qs], pl.UInt32),
        ]
    )


def _whole(
    targets: pl.LazyFrame,
    members: pl.LazyFrame,
    t_sets: pl.DataFrame,
    t_items: pl.LazyFrame,
    p_items: pl.LazyFrame,
    pairs: MakePairs | None = None,
) -> pl.LazyFrame | None:
    """|{p in members(kt) : I(t) ⊆ I(p)}| per target with items.

    One item: the holders of it. Several: the candidates are the holders of the target's two rarest
    items (a pair's posting list is far shorter than an item's): with ``pairs`` (the population's
    item pairs, already made) a join on the pair's code, else the holders of the rarest item that
    also hold the second; then, item by item in order of rarity, the candidates not holding the
    next item are dropped (:func:`_holding_all`), so the candidate list only shrinks.

    Returns:
        None when the first candidate list would exceed :data:`CANDIDATE_BUDGET` rows (item lists
        drawn from a small vocabulary, where every pair is common); the caller then counts the
        cases with the same list (:func:`_same`), a lower bound of the class. The budget is checked
        before any candidate list is built.
    """
    sets = targets.join(t_sets.lazy().select("caseid", "sid"), on="caseid").collect()
    if _rarest_total(sets, t_items.collect(), p_items.collect()) > CANDIDATE_BUDGET:
        return None
    distinct = sets.select("kt", "sid").unique().with_row_index("qs")  # (K-tuple, item set)
    frequency = p_items.group_by("item").agg(pl.len().alias("df")).collect()
    set_items = _set_items(set_members(t_items, t_sets), frequency)
    ranked = _ranked(distinct, set_items)
    multi = ranked.filter(pl.col("order").list.len() > 1)
    single = (
        ranked.lazy()
        .filter(pl.col("order").list.len() == 1)
        .select("qs", "kt", pl.col("order").list.first().alias("item"))
        .join(
            members.join(p_items, on="p").group_by("kt", "item").agg(pl.len().alias("size")),
            on=["kt", "item"],
        )
        .select("qs", "size")
    )
    first_two = pl.col("order").list.head(2)
    seeds = multi.lazy().select("qs", "kt", first_two.list.min().alias("a"), first_two.list.max().alias("b"))
    if pairs is None:
        holders = seeds.join(p_items.rename({"item": "a"}), on="a").join(
            p_items.rename({"item": "b"}), on=["p", "b"], how="semi"
        )
    else:
        codes, width = pairs()
        code = pl.col("a").cast(pl.UInt64) * width + pl.col("b").cast(pl.UInt64)
        holders = seeds.select("qs", "kt", code.alias("pair")).join(
            codes.lazy().select("p", "pair"), on="pair"
        )
    candidates = holders.join(members, on=["kt", "p"], how="semi").select("qs", "p").collect()
    several = _holding_all(candidates, multi, p_items.collect()).lazy()
    return (
        sets.lazy()
        .join(distinct.lazy(), on=["kt", "sid"])
        .join(pl.concat([single, several]), on="qs", how="left")
        .select("caseid", pl.col("size").fill_null(0))
    )


def class_sizes(
    targets: pl.DataFrame,
    members: pl.DataFrame | None = None,
    *,
    items: Items = None,
    target_items: pl.DataFrame | None = None,
    population_items: pl.DataFrame | None = None,
    sets: tuple[pl.DataFrame, pl.DataFrame] | None = None,
    pairs: MakePairs | None = None,
) -> tuple[pl.DataFrame, bool]:
    """The class size of every target (module docstring).

    Args:
        targets: ``caseid``, ``kt`` (the id of the target's values on K).
        members: ``kt``, ``p``: population case p agrees with tuple kt on K; None: the population
            is the targets themselves (prosecutor risk; ``population_items`` = ``target_items``).
        items: None (K only), m ≥ 1 (m-subsets; 1 and 2 are computed), or ``"all"``.
        target_items: ``caseid``, ``item`` of the targets; population_items: ``p``, ``item``.
        sets: for ``"all"``, :func:`set_ids` of these targets and population when already made.
        pairs: for ``"all"``, makes the population's item pairs (``p``, ``pair``, width), called only
            when a candidate list is built.

    Returns:
        ``caseid``, ``size`` (Int64 ≥ 0; 0 only when a journalist population lacks the target), and
        whether the sizes are exact (False: "all" counted equal lists, a lower bound).
    """
    same = members is None
    if members is None:
        members = targets.select("kt", pl.col("caseid").alias("p"))
        population_items = None if target_items is None else target_items.rename({"caseid": "p"})
    t, pop = targets.lazy().select("caseid", "kt"), members.lazy().select("kt", "p")
    base = _k_sizes(t, pop)
    if items is None or target_items is None or population_items is None:
        return base.collect(), True
    t_items, p_items = target_items.lazy(), population_items.lazy().select("p", "item")
    whole = None
    if items == "all":
        t_sets, p_sets = sets or set_ids(t_items, None if same else p_items)
        whole = _whole(t, pop, t_sets, t_items, p_items, pairs)
        steps = [whole if whole is not None else _same(t, pop, t_sets.lazy(), p_sets.lazy())]
    elif items == 1:
        steps = [_single(t, pop, t_items, p_items, same=same)]
    elif items == 2:
        # a target with one item is known by that item; one with none by K alone
        steps = [_double(t, pop, t_items, p_items, same=same), _single(t, pop, t_items, p_items, same=same)]
    else:
        raise ValueError(f"items must be None, 1, 2 or 'all'; got {items!r}")
    frames = [base.rename({"size": "size_k"})] + [
        s.rename({"size": f"size_{i}"}) for i, s in enumerate(steps)
    ]
    joined = frames[0]
    for frame in frames[1:]:
        joined = joined.join(frame, on="caseid", how="left")
    order = [f"size_{i}" for i in range(len(steps))] + ["size_k"]
    exact = not (items == "all" and whole is None)
    return joined.select("caseid", pl.coalesce(order).cast(pl.Int64).alias("size")).collect(), exact


def equal_lists(
    targets: tuple[np.ndarray, tuple[np.ndarray, np.ndarray], np.ndarray, np.ndarray],
    members: tuple[np.ndarray, np.ndarray],
    held: np.ndarray,
) -> np.ndarray | None:
    """ "all" sizes when the candidates exceed :data:`CANDIDATE_BUDGET` (:func:`class_sizes`' lower
    bound, :func:`_same`), in numpy; None within the budget (then :func:`class_sizes` counts exactly).

    Args:
        targets: each target's kt, item lists (:func:`._own.item_lists`), set id (−1: no items) and
            class on K alone.
        members: each population member's kt and set id (−1: no items).
        held: the population's item rows (items), for the holders of each item.

    Returns:
        Per target: the members of its kt with its very set (its K class when it has no items).
    """
    kt, (start, items), sid, base = targets
    n = np.diff(start)
    has = n > 0
    df = np.bincount(held, minlength=int(items.max(initial=0)) + 1)[items] if len(items) else items
    rarest = np.zeros(len(n), np.int64)
    if len(items):
        rarest[has] = np.minimum.reduceat(df, start[:-1][has])
    width = int(max(sid.max(initial=0), members[1].max(initial=0))) + 2
    key = kt.astype(np.int64) * width + sid + 1  # ≥ 0; + 1 below: 0 stands for "not a multi set"
    multi = has & (n > 1)
    _, which, _ = unique_inverse(np.where(multi, key + 1, 0).astype(np.uint64))
    one = np.zeros(int(which.max(initial=-1)) + 1, np.int64)  # a case of each distinct key
    one[which] = np.arange(len(which))
    several = one[multi[one]]  # equal keys have equal sets, hence equal rarest items
    if int(rarest[several].sum()) <= CANDIDATE_BUDGET:
        return None
    # the members of each target's key: the keys of both sides numbered together by one value sort
    held_by = members[0].astype(np.int64)[members[1] >= 0] * width + members[1][members[1] >= 0] + 1
    _, which, _ = unique_inverse(np.concatenate([key, held_by]).astype(np.uint64))
    counts = np.bincount(which[len(key) :], minlength=int(which.max(initial=-1)) + 1)
    same = counts[which[: len(key)]] if len(counts) else np.zeros(len(key), np.int64)
    return np.where(has, same, base).astype(np.int64)
