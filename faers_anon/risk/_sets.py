"""Item sets as integers: every case's whole item list numbered, equal ids exactly for equal sets.

The whole-list knowledge (``drugs: all``, SPEC §11) compares item *sets*. Each case's distinct items
(sorted) are summarized by a 64-bit set hash h(S) = Σ_{i ∈ S} r_i mod 2^64 (r_i a fixed random word
per item; no per-case sort or list is needed) mixed with |S|; cases with the same summary get the
same id. The ids are then **verified**: every case's sorted items are compared position by position
with those of one case of its id (numpy gathers over the rows); a collision (two different
sets with one summary) makes the function fall back to numbering the item lists themselves (a
group-by on the list), so the ids are exact either way.
"""

from __future__ import annotations

import numpy as np
import polars as pl

__all__ = ["set_ids", "set_members", "sorted_rows"]

_MIX = np.uint64(0x9E3779B97F4A7C15)  # the golden-ratio word: spreads |S| over the hash's bits


def sorted_rows(items: pl.DataFrame, key: str) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (``key``, ``item``) rows sorted by case then item, as numpy arrays.

    Frames already in that order (the item lists are sorted once when read, :mod:`._reidentify`)
    are only checked (one vectorized comparison), not sorted again.
    """
    case, item = items.get_column(key).to_numpy(), items.get_column("item").to_numpy()
    later, same = case[1:] > case[:-1], case[1:] == case[:-1]
    if not bool(np.all(later | (same & (item[1:] >= item[:-1])))):
        rows = items.select(key, "item").sort(key, "item")
        case, item = rows.get_column(key).to_numpy(), rows.get_column("item").to_numpy()
    if len(case) > 1:  # repeated rows count once
        keep = np.concatenate([[True], (case[1:] != case[:-1]) | (item[1:] != item[:-1])])
        case, item = case[keep], item[keep]
    return case, item


def _rows(items: pl.LazyFrame, key: str) -> tuple[np.ndarray, np.ndarray]:
    case, item = sorted_rows(items.select(key, "item").collect(), key)
    return case, item.astype(np.int64)


def _summaries(case: np.ndarray, item: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per case (in order): its first row and its summary h(S) + |S| · mix."""
    starts = np.flatnonzero(np.concatenate([[len(case) > 0], case[1:] != case[:-1]]))
    sizes = np.diff(np.append(starts, len(case)))
    hashes = np.add.reduceat(words[item], starts) if len(starts) else np.zeros(0, np.uint64)
    return starts, hashes + sizes.astype(np.uint64) * _MIX


def _exact(item: np.ndarray, starts: np.ndarray, ids: np.ndarray, first: np.ndarray) -> bool:
    """Whether every case's items equal those of the case ``first`` names for its id (by position)."""
    sizes = np.diff(np.append(starts, len(item)))
    reference = first[ids]  # the case each case is compared with
    if not np.array_equal(sizes[reference], sizes):
        return False
    of_row = np.repeat(np.arange(len(starts)), sizes)
    position = np.arange(len(item)) - starts[of_row]
    return bool(np.array_equal(item[starts[reference[of_row]] + position], item))


def _by_lists(items: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Fallback: ids from a group-by on the item lists themselves (exact, slower)."""
    sizes = np.diff(np.append(starts, len(items)))
    rows = pl.DataFrame({"c": np.repeat(np.arange(len(starts)), sizes), "item": items})
    lists = rows.group_by("c", maintain_order=True).agg("item")
    numbered = lists.join(lists.select("item").unique().with_row_index("sid"), on="item")
    return numbered.sort("c").get_column("sid").cast(pl.Int64).to_numpy()


def set_ids(t_items: pl.LazyFrame, p_items: pl.LazyFrame | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Every case's item set as one integer ``sid`` over both sides (module docstring).

    Args:
        t_items: ``caseid``, ``item`` of the targets; p_items: ``p``, ``item`` of the population
            (None: the targets are the population).

    Returns:
        ``caseid``, ``sid`` of the targets and ``p``, ``sid`` of the population; cases without items
        are absent.
    """
    sides = [_rows(t_items, "caseid")] + ([] if p_items is None else [_rows(p_items, "p")])
    width = max((int(item.max(initial=0)) for _, item in sides), default=0) + 1
    words = np.random.default_rng(20_181).integers(0, 2**63, width, dtype=np.uint64) * np.uint64(2) + 1
    parts = [_summaries(case, item, words) for case, item in sides]
    offsets = np.cumsum([0] + [len(item) for _, item in sides])
    starts = np.concatenate([s + o for (s, _), o in zip(parts, offsets[:-1], strict=True)])
    items = np.concatenate([item for _, item in sides])
    # ids: each summary's rank among the distinct summaries (numpy.unique's inverse, by polars' dense
    # rank: no argsort); first: one case of each id, the one the others are compared with
    ids = pl.Series(np.concatenate([h for _, h in parts])).rank("dense").cast(pl.Int64).to_numpy() - 1
    first = np.zeros(int(ids.max(initial=-1)) + 1, np.int64)
    first[ids] = np.arange(len(ids))
    if not _exact(items, starts, ids, first):
        ids = _by_lists(items, starts)
    cases = [case[s] for (case, _), (s, _) in zip(sides, parts, strict=True)]
    t_sets = pl.DataFrame([pl.Series("caseid", cases[0]), pl.Series("sid", ids[: len(cases[0])], pl.Int64)])
    if p_items is None:
        return t_sets, t_sets.rename({"caseid": "p"})
    p_sets = pl.DataFrame([pl.Series("p", cases[1]), pl.Series("sid", ids[len(cases[0]) :], pl.Int64)])
    return t_sets, p_sets


def set_members(t_items: pl.LazyFrame, t_sets: pl.DataFrame) -> pl.DataFrame:
    """``sid``, ``item``: the items of every distinct target set (those of one case holding it)."""
    holders = t_sets.unique("sid", keep="first").lazy()
    return t_items.join(holders, on="caseid").select("sid", "item").unique().collect()
