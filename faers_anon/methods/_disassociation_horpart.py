"""HORPART: horizontal partitioning of set-valued records into clusters (Loukides et al. 2014, Fig. 8).

Records are held as sorted integer item codes in CSR form (:class:`ItemSets`); a part of the dataset
is an array of record indices. One call of HORPART on a part D:

1. if |D| < ``max_cluster_size``, D is a cluster (line 2 of Fig. 8, as the Section 5 example applies
   it: parts of 5 records become clusters for maxClusterSize = 6);
2. otherwise it picks a splitting item a among the items of D not in ``ignore`` (lines 3–10):

   * the most frequent item of the utility constraint u chosen by the previous call (line 4);
   * when u has no such item left, the most frequent item that lies in some constraint, and u becomes
     that item's constraint (line 6);
   * when no item of D lies in a constraint, the most frequent item, and u is cleared (line 9);

3. D1 = the records of D holding a, D2 = the others; HORPART recurses on D1 with ignore ∪ {a} and u,
   and on D2 with the parent's ignore and no constraint (the Section 5 example: "an empty ignore set
   and no utility constraint are given as input to HORPART, when it is applied to D2").

Support s(a) is the number of records of D holding a. Ties go to the smallest item code (codes follow
the items' string order), so the partition is deterministic.

Departures, with reasons:

* A part none of whose items is left outside ``ignore`` (all its records are identical) becomes a
  cluster whatever its size: no item can split it, and the paper's pseudocode is silent on it.
* Clusters smaller than k are merged (:func:`merge_small`). HORPART alone can cut off parts of a few
  records, but Guarantee 1 needs |P| ≥ k in every cluster: an item of the item chunk of a cluster of
  fewer than k records can appear in fewer than k records of every reconstruction. The paper notes
  that "any other algorithm for creating groups of at least k records could be used instead".
* The recursion is an explicit stack visiting D1 before D2, which gives the recursion's cluster order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["ItemSets", "horpart", "merge_small"]


@dataclass(frozen=True, slots=True)
class ItemSets:
    """Records as sets of item codes, CSR layout.

    Attributes:
        ptr: Row pointers, shape (N + 1,); record i holds ``codes[ptr[i]:ptr[i + 1]]``.
        codes: Item codes 0..n_items-1, sorted and distinct within a record.
        n_items: Size of the item domain T.
        constraint: Utility constraint id of each item code, shape (n_items,); −1 for none.
    """

    ptr: NDArray[np.int64]
    codes: NDArray[np.int64]
    n_items: int
    constraint: NDArray[np.int64]

    @property
    def n_records(self) -> int:
        """Number of records N."""
        return int(self.ptr.size - 1)

    def gather(self, records: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The (record, item) incidences of ``records``.

        Returns:
            ``owner`` (position of the row's record in ``records``) and ``items``, both of shape
            (Σ |r|,), grouped by record in the order of ``records``.
        """
        lengths = self.ptr[records + 1] - self.ptr[records]
        total = int(lengths.sum())
        owner = np.repeat(np.arange(records.size, dtype=np.int64), lengths)
        first = np.cumsum(lengths) - lengths
        index = np.repeat(self.ptr[records] - first, lengths) + np.arange(total, dtype=np.int64)
        return owner, self.codes[index]


def _pick(support: NDArray[np.int64], constraint: NDArray[np.int64], u: int) -> tuple[int, int]:
    """Splitting item a and the constraint passed on to D1 (lines 3–10 of Fig. 8); (−1, −1) if none."""
    if u >= 0:
        inside = np.where(constraint == u, support, 0)
        if inside.any():
            return int(np.argmax(inside)), u
    constrained = np.where(constraint >= 0, support, 0)
    if constrained.any():
        a = int(np.argmax(constrained))
        return a, int(constraint[a])
    if support.any():
        return int(np.argmax(support)), -1
    return -1, -1


def horpart(sets: ItemSets, /, *, max_cluster_size: int, k: int) -> list[NDArray[np.int64]]:
    """Split the records into clusters with HORPART, then merge clusters of fewer than k records.

    Args:
        sets: The dataset D.
        max_cluster_size: maxClusterSize; a part of fewer records is a cluster (≥ 1).
        k: Smallest cluster size after :func:`merge_small`.

    Returns:
        Clusters as arrays of record indices (ascending within a cluster), in the recursion's order
        (D1 before D2). Every record is in exactly one cluster; no cluster is empty.
    """
    if sets.n_records == 0:
        return []
    stack: list[tuple[NDArray[np.int64], frozenset[int], int]] = [
        (np.arange(sets.n_records, dtype=np.int64), frozenset(), -1)
    ]
    clusters: list[NDArray[np.int64]] = []
    while stack:
        records, ignore, u = stack.pop()
        if records.size < max_cluster_size:
            clusters.append(records)
            continue
        owner, items = sets.gather(records)
        support = np.bincount(items, minlength=sets.n_items)
        if ignore:
            support[np.fromiter(ignore, dtype=np.int64)] = 0
        a, u_next = _pick(support, sets.constraint, u)
        if a < 0:
            clusters.append(records)
            continue
        has = np.zeros(records.size, dtype=np.bool_)
        has[owner[items == a]] = True
        if not has.all():
            stack.append((records[~has], ignore, -1))
        stack.append((records[has], ignore | {a}, u_next))
    return merge_small(clusters, k=k)


def merge_small(clusters: list[NDArray[np.int64]], /, *, k: int) -> list[NDArray[np.int64]]:
    """Merge clusters of fewer than k records with their neighbours in HORPART's order.

    Consecutive small clusters are pooled; a pool reaching k records becomes a cluster. A pool still
    short of k when a cluster of at least k records follows joins that cluster; a pool left at the end
    joins the last cluster. Neighbours in the recursion's order come from the same branch of splits,
    so they share the branch's splitting items. When every record together is fewer than k, the one
    pooled cluster is returned (k^m-anonymity cannot hold; callers reject that input).

    Returns:
        Clusters of at least k records each (except the one-cluster case above), sorted records.
    """
    out: list[NDArray[np.int64]] = []
    pool: list[NDArray[np.int64]] = []
    pooled = 0
    for cluster in clusters:
        if cluster.size >= k:
            out.append(np.sort(np.concatenate([*pool, cluster])))
            pool, pooled = [], 0
            continue
        pool.append(cluster)
        pooled += cluster.size
        if pooled >= k:
            out.append(np.sort(np.concatenate(pool)))
            pool, pooled = [], 0
    if pool:
        if out:
            out[-1] = np.sort(np.concatenate([out[-1], *pool]))
        else:
            out.append(np.sort(np.concatenate(pool)))
    return out
