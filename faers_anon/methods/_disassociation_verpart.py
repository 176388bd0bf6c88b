"""VERPART and refining with shared chunks (Loukides et al. 2014, Section 4, Figs. 9–10; Section 5).

A cluster (or joint cluster) is given as one record bitmask per item: bit j of ``mask[t]`` is set when
the cluster's j-th record holds item t, so the support of an itemset S is the popcount of the AND of
its masks. Python integers are the bitsets (any cluster size, ``int.bit_count`` popcounts).

k^m-anonymity of a chunk (Definition 1 applied to one chunk, as VERPART tests it): every itemset of
at most m items that appears in some subrecord of the chunk appears in at least k subrecords.

VERPART (Fig. 9) on a cluster P with domain T^P:

* lines 2–4: items with s(t) < k go to the item chunk domain T^T;
* line 5: the rest is ordered by constraint groups — the items of one utility constraint form a group
  sorted by decreasing s(t); groups are sorted by decreasing s of their first item; an item in no
  constraint is a group of its own; ties go to the smaller item code;
* lines 6–14: for each record chunk T_i, scan the remaining items in that order and add t to T_cur when
  the chunk over T_cur ∪ {t} stays k^m-anonymous (the first item always enters: s(t) ≥ k);
* lines 15–17: remove from T_cur each item t whose constraint u differs from the constraint of T_cur's
  first item when *not* all remaining items of u entered T_cur. The extraction prints "all codes in u
  have also been assigned"; the Section 5 example (692.71 leaves C1 because 695.10 of the same
  constraint did not enter) and the explanation after Fig. 9 need "not all", so that is the rule here.
  "Remaining" means not placed in an earlier chunk T_1..T_{i−1}.
* lines 18–23: T_i = T_cur; repeat until no item remains; the record chunks are the projections of
  P's records on T_1..T_v and the item chunk is the set T^T.

The test of line 13 only checks the itemsets holding t (the others were checked when they entered),
depth first; an itemset of support 0 prunes its supersets, one of support in [1, k) fails the test.

Refining (Section 4, "Refining"; Section 5; Fig. 10). Clusters are visited in HORPART's order and a
joint cluster J grows from the first one. For the next cluster P, the refining items T_s are the items
of P's item chunk that also lie in the item chunk of some cluster of J and whose total support over
those item chunks is at least k (the paper: 2 + 2 = 4 > k = 3; a one-item chunk of support ≥ k is
k^m-anonymous, so ≥ k is the condition). When T_s is not empty, VERPART runs on the projection of the
records of J ∪ P on T_s (each record contributes the T_s items of its own cluster's item chunk), its
record chunks become *shared chunks* spanning the clusters of J ∪ P, T_s leaves those item chunks and
P joins J. Otherwise J is closed and P starts a new joint cluster.

An item placed in a record chunk of a cluster of J ∪ P, or in an earlier shared chunk spanning one,
is not a refining item (the reconstruction must not give a record the same item twice).

Departure: a joint cluster holds at most ``max_joint`` clusters (the paper sets no bound). A shared
subrecord can belong to any record of its span, so an unbounded span spreads an item's co-occurrences
over the whole dataset; the bound keeps shared chunks local (``DisassociationConfig.max_joint``).
The paper's "large joint clusters can be built by combining smaller joint clusters" is read as this
one pass in HORPART's order, each joint cluster growing by one neighbour at a time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["SharedChunk", "chunk_is_km", "cluster_masks", "masks_of", "refine", "verpart"]


def masks_of(owner: NDArray[np.int64], items: NDArray[np.int64]) -> dict[int, int]:
    """Record bitmask of each item from (record position, item) incidences (any number of records)."""
    masks: dict[int, int] = {}
    for j, t in zip(owner.tolist(), items.tolist(), strict=True):
        masks[t] = masks.get(t, 0) | (1 << j)
    return masks


def cluster_masks(
    cluster: NDArray[np.int64], local: NDArray[np.int64], items: NDArray[np.int64], n_clusters: int
) -> list[dict[int, int]]:
    """Per cluster, item → bitmask over the cluster's records, from all (record, item) incidences.

    Args:
        cluster: Cluster of each incidence's record.
        local: Position of that record within its cluster.
        items: Item code of each incidence.
        n_clusters: Number of clusters.

    Incidences of clusters of at most 64 records are OR-reduced as uint64 in one vectorized pass
    (sort by cluster and item, ``np.bitwise_or.reduceat``); larger clusters use :func:`masks_of`.
    """
    out: list[dict[int, int]] = [{} for _ in range(n_clusters)]
    wide = np.zeros(n_clusters, dtype=np.bool_)
    wide[cluster[local >= 64]] = True
    narrow = ~wide[cluster]
    c, j, t = cluster[narrow], local[narrow], items[narrow]
    order = np.lexsort((t, c))
    c, j, t = c[order], j[order], t[order]
    if c.size:
        start = np.flatnonzero(np.r_[True, (c[1:] != c[:-1]) | (t[1:] != t[:-1])])
        bits = np.bitwise_or.reduceat(np.left_shift(np.uint64(1), j.astype(np.uint64)), start)
        for ci, ti, mask in zip(c[start].tolist(), t[start].tolist(), bits.tolist(), strict=True):
            out[ci][ti] = mask
    for ci in np.flatnonzero(wide).tolist():
        rows = cluster == ci
        out[ci] = masks_of(local[rows], items[rows])
    return out


def _extends(mask: int, chunk: Sequence[int], start: int, size: int, k: int, m: int) -> bool:
    """Whether every itemset S ∪ {chunk[i] for i ≥ start} of ≤ m items has support 0 or ≥ k.

    ``mask`` is the record mask of S, |S| = ``size``, and supp(S) ≥ k.
    """
    if size >= m:
        return True
    for i in range(start, len(chunk)):
        both = mask & chunk[i]
        count = both.bit_count()
        if count == 0:
            continue
        if count < k or not _extends(both, chunk, i + 1, size + 1, k, m):
            return False
    return True


def chunk_is_km(masks: Sequence[int], *, k: int, m: int) -> bool:
    """k^m-anonymity of a chunk given the record masks of its items (see the module docstring)."""
    for i, mask in enumerate(masks):
        count = mask.bit_count()
        if 0 < count < k or (count and not _extends(mask, masks[:i], 0, 1, k, m)):
            return False
    return True


def _ordered(items: list[int], support: Mapping[int, int], constraint: NDArray[np.int64]) -> list[int]:
    """Line 5 of VERPART: constraint groups by decreasing support, then by their first item's support."""
    groups: dict[int, list[int]] = {}
    singles: list[list[int]] = []
    for t in items:
        u = int(constraint[t])
        if u < 0:
            singles.append([t])
        else:
            groups.setdefault(u, []).append(t)
    ranked = [sorted(g, key=lambda t: (-support[t], t)) for g in groups.values()] + singles
    ranked.sort(key=lambda g: (-support[g[0]], g[0]))
    return [t for g in ranked for t in g]


def verpart(
    masks: Mapping[int, int], /, *, k: int, m: int, constraint: NDArray[np.int64]
) -> tuple[list[list[int]], list[int]]:
    """VERPART (Fig. 9) on one cluster.

    Args:
        masks: Item code → record bitmask over the cluster's records (items with support ≥ 1).
        k: Minimum support of an itemset that appears in a chunk.
        m: Maximum size of the itemsets an attacker knows.
        constraint: Utility constraint id per item code (−1: none).

    Returns:
        The record chunk domains T_1..T_v (item codes, in the order they entered) and the item chunk
        domain T^T (ascending). Together they partition the items of ``masks``; every record chunk is
        k^m-anonymous.
    """
    support = {t: mask.bit_count() for t, mask in masks.items()}
    item_chunk = sorted(t for t, s in support.items() if s < k)
    remain = _ordered([t for t, s in support.items() if s >= k], support, constraint)
    chunks: list[list[int]] = []
    while remain:
        cur: list[int] = []
        cur_masks: list[int] = []
        for t in remain:
            if _extends(masks[t], cur_masks, 0, 1, k, m):
                cur.append(t)
                cur_masks.append(masks[t])
        first = int(constraint[cur[0]])
        left = Counter(int(constraint[t]) for t in remain)
        took = Counter(int(constraint[t]) for t in cur)
        cur = [t for t in cur if (u := int(constraint[t])) < 0 or u == first or took[u] == left[u]]
        chunks.append(cur)
        placed = set(cur)
        remain = [t for t in remain if t not in placed]
    return chunks, item_chunk


@dataclass(frozen=True, slots=True)
class SharedChunk:
    """A record chunk shared by the clusters of a joint cluster.

    Attributes:
        span: Cluster ids of the joint cluster, in order; the chunk has Σ |P| subrecords.
        masks: Item code → bitmask over the span's records (cluster ``span[0]``'s records first, each
            cluster's records in their order).
    """

    span: tuple[int, ...]
    masks: dict[int, int]


def refine(
    item_chunks: list[dict[int, int]],
    placed: list[set[int]],
    sizes: Sequence[int],
    /,
    *,
    k: int,
    m: int,
    constraint: NDArray[np.int64],
    max_joint: int,
) -> list[SharedChunk]:
    """Refining (module docstring): build shared chunks and shrink the item chunks in place.

    An item already placed in a cluster of J ∪ P — in one of its record chunks, or in an earlier
    shared chunk whose span holds the cluster — is no refining item there: a shared subrecord may go
    to any record of its span, and a record must not receive the same item from two chunks.

    Args:
        item_chunks: Per cluster, item code → record bitmask of its item chunk items; the items moved
            into shared chunks are deleted from these dicts.
        placed: Per cluster, the items of its record chunks; the items of each new shared chunk are
            added for every cluster of its span.
        sizes: Records per cluster.
        k: As in :func:`verpart`.
        m: As in :func:`verpart`.
        constraint: As in :func:`verpart`.
        max_joint: Most clusters in one joint cluster (≥ 2; smaller means no refining).

    Returns:
        The shared chunks, in order of creation; each is k^m-anonymous over its span.
    """
    shared: list[SharedChunk] = []
    if not item_chunks or max_joint < 2:
        return shared
    joint = [0]
    offset = [0]
    pool: dict[int, list[int]] = {t: [0] for t in item_chunks[0]}  # item → clusters of J holding it
    blocked: set[int] = set(placed[0])  # items placed in some cluster of J
    for p in range(1, len(item_chunks)):
        refining = []
        if len(joint) < max_joint:
            for t, mask in item_chunks[p].items():
                holders = pool.get(t, ())
                if not holders or t in blocked or t in placed[p]:
                    continue
                if mask.bit_count() + sum(item_chunks[c][t].bit_count() for c in holders) >= k:
                    refining.append(t)
        if not refining:
            joint, offset, pool, blocked = [p], [0], {t: [p] for t in item_chunks[p]}, set(placed[p])
            continue
        base = offset[-1] + sizes[joint[-1]]
        joint.append(p)
        offset.append(base)
        where = dict(zip(joint, offset, strict=True))
        masks: dict[int, int] = {}
        for t in sorted(refining):
            mask = 0
            for c in (*pool.pop(t), p):
                mask |= item_chunks[c].pop(t) << where[c]
            masks[t] = mask
        chunks, rest = verpart(masks, k=k, m=m, constraint=constraint)
        assert not rest, "refining items have support >= k"
        shared.extend(SharedChunk(tuple(joint), {t: masks[t] for t in chunk}) for chunk in chunks)
        for c in joint:
            placed[c].update(masks)
        blocked |= placed[p]
        for t in item_chunks[p]:
            pool.setdefault(t, []).append(p)
    return shared
