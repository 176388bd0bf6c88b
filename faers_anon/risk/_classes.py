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
taking, per distinct (kt, I(t)), the population cases holding its rarest item as candidates and
keeping those that hold every item (joins, no row loops).
"""

from __future__ import annotations

import polars as pl

__all__ = ["class_sizes"]

Items = int | str | None


def _k_sizes(targets: pl.LazyFrame, members: pl.LazyFrame) -> pl.LazyFrame:
    counts = members.group_by("kt").agg(pl.len().alias("size"))
    return targets.join(counts, on="kt", how="left").select("caseid", pl.col("size").fill_null(0))


def _single(
    targets: pl.LazyFrame, members: pl.LazyFrame, t_items: pl.LazyFrame, p_items: pl.LazyFrame
) -> pl.LazyFrame:
    """min over the target's items i of |{p in members(kt) : i ∈ I(p)}| (cases with items only)."""
    counts = members.join(p_items, on="p").group_by("kt", "item").agg(pl.len().alias("n"))
    return (
        targets.join(t_items, on="caseid")
        .join(counts, on=["kt", "item"], how="left")
        .group_by("caseid")
        .agg(pl.col("n").fill_null(0).min().alias("size"))
    )


def _pairs(items: pl.LazyFrame, key: str) -> pl.LazyFrame:
    """Every pair (a < b) of one case's items."""
    return (
        items.join(items, on=key, suffix="_b")
        .filter(pl.col("item") < pl.col("item_b"))
        .select(key, pl.col("item").alias("a"), pl.col("item_b").alias("b"))
    )


def _double(
    targets: pl.LazyFrame, members: pl.LazyFrame, t_items: pl.LazyFrame, p_items: pl.LazyFrame
) -> pl.LazyFrame:
    """min over the target's item pairs of the population cases holding both (cases with ≥ 2 items)."""
    counts = members.join(_pairs(p_items, "p"), on="p").group_by("kt", "a", "b").agg(pl.len().alias("n"))
    return (
        targets.join(_pairs(t_items, "caseid"), on="caseid")
        .join(counts, on=["kt", "a", "b"], how="left")
        .group_by("caseid")
        .agg(pl.col("n").fill_null(0).min().alias("size"))
    )


def _whole(
    targets: pl.LazyFrame, members: pl.LazyFrame, t_items: pl.LazyFrame, p_items: pl.LazyFrame
) -> pl.LazyFrame:
    """|{p in members(kt) : I(t) ⊆ I(p)}| per target with items, via the rarest item's holders."""
    sets = (
        targets.join(t_items, on="caseid")
        .group_by("caseid", "kt")
        .agg(pl.col("item").sort())
        .with_columns(pl.col("item").cast(pl.List(pl.String)).list.join(",").alias("sig"))
    )
    distinct = sets.unique(["kt", "sig"]).select("kt", "sig", "item").with_row_index("sid")
    exploded = distinct.select("sid", "kt", "item").explode("item")
    frequency = p_items.group_by("item").agg(pl.len().alias("df"))
    rarest = (
        exploded.join(frequency, on="item", how="left")
        .sort("df", "item", nulls_last=False)
        .group_by("sid")
        .agg(pl.col("kt").first(), pl.col("item").first().alias("rare"), pl.len().alias("need"))
    )
    candidates = (
        rarest.join(p_items.rename({"item": "rare"}), on="rare")
        .join(members, on=["kt", "p"], how="semi")
        .select("sid", "p", "need")
    )
    held = (
        candidates.join(exploded.select("sid", "item"), on="sid")
        .join(p_items, on=["p", "item"], how="semi")
        .group_by("sid", "p", "need")
        .agg(pl.len().alias("hits"))
        .filter(pl.col("hits") == pl.col("need"))
        .group_by("sid")
        .agg(pl.len().alias("size"))
    )
    return (
        sets.join(distinct.select("kt", "sig", "sid"), on=["kt", "sig"])
        .join(held, on="sid", how="left")
        .select("caseid", pl.col("size").fill_null(0))
    )


def class_sizes(
    targets: pl.DataFrame,
    members: pl.DataFrame,
    *,
    items: Items = None,
    target_items: pl.DataFrame | None = None,
    population_items: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The class size of every target (module docstring).

    Args:
        targets: ``caseid``, ``kt`` (the id of the target's values on K).
        members: ``kt``, ``p``: population case p agrees with tuple kt on K.
        items: None (K only), m ≥ 1 (m-subsets; 1 and 2 are computed), or ``"all"``.
        target_items: ``caseid``, ``item`` of the targets; population_items: ``p``, ``item``.

    Returns:
        ``caseid``, ``size`` (UInt32/Int64 ≥ 0; 0 only when a journalist population lacks the target).
    """
    t, pop = targets.lazy().select("caseid", "kt"), members.lazy().select("kt", "p")
    base = _k_sizes(t, pop)
    if items is None or target_items is None or population_items is None:
        return base.collect()
    t_items, p_items = target_items.lazy(), population_items.lazy().select("p", "item")
    if items == "all":
        steps = [_whole(t, pop, t_items, p_items)]
    elif items == 1:
        steps = [_single(t, pop, t_items, p_items)]
    elif items == 2:
        # a target with one item is known by that item; one with none by K alone
        steps = [_double(t, pop, t_items, p_items), _single(t, pop, t_items, p_items)]
    else:
        raise ValueError(f"items must be None, 1, 2 or 'all'; got {items!r}")
    frames = [base.rename({"size": "size_k"})] + [
        s.rename({"size": f"size_{i}"}) for i, s in enumerate(steps)
    ]
    joined = frames[0]
    for frame in frames[1:]:
        joined = joined.join(frame, on="caseid", how="left")
    order = [f"size_{i}" for i in range(len(steps))] + ["size_k"]
    return joined.select("caseid", pl.coalesce(order).cast(pl.Int64).alias("size")).collect()
