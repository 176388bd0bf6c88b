"""The k^m check of a released dataset and ARE on count queries (Loukides et al. 2014, Sections 3.1, 3.3).

k^m check (our privacy figure for disassociation). A released D^A passes when

* every record chunk and every shared chunk is k^m-anonymous: each itemset of 1..m items that occurs in
  some subrecord of the chunk occurs in at least k of its subrecords, and
* every cluster has at least k records (so that each item chunk item may lie in k records of a
  reconstruction: Guarantee 1 for itemsets touching an item chunk).

The check reads only the released tables, never the original data.

ARE (Definition 2). For a workload W of COUNT queries q_1..q_n, each asking how many records hold
all items of an itemset,

    ARE(W) = avg_i |C_A(q_i) − C_O(q_i)| / C_O(q_i)

where C_O counts on the original dataset D and C_A on the anonymized dataset D', a dataset
reconstructed from D^A (Section 3.3: the query runs "FROM D' (or D)"). The printed formula lost its
minus sign and fraction bar; this is the standard form of refs [36, 35, 54]. A query with C_O = 0 has
no relative error and is left out; a workload built from D (:func:`pair_workload`) has none. ARE ≥ 0,
0 when every count is exact; an empty workload gives 0 (no query is answered wrongly).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from faers_anon.errors import ConfigError
from faers_anon.methods._disassociation_release import Disassociated

__all__ = ["KmReport", "average_relative_error", "check_km", "count_queries", "pair_workload"]


@dataclass(frozen=True, slots=True)
class KmReport:
    """Outcome of :func:`check_km`.

    Attributes:
        k: The k checked.
        m: The m checked.
        chunks: Record and shared chunks checked.
        combinations: Distinct (chunk, itemset) pairs of 1..m items found in the chunks.
        violations: Those with support in [1, k).
        min_support: Smallest support of any such pair (None when the chunks hold no item).
        clusters_below_k: Clusters of fewer than k records.
        violating: The violating pairs: ``kind`` ("record"/"shared"), ``chunk`` (``cluster_id:chunk_id``
            or ``shared_id``), ``items`` (list), ``support``.
    """

    k: int
    m: int
    chunks: int
    combinations: int
    violations: int
    min_support: int | None
    clusters_below_k: int
    violating: pl.DataFrame

    @property
    def ok(self) -> bool:
        """True when no chunk violates k^m-anonymity and no cluster is smaller than k."""
        return self.violations == 0 and self.clusters_below_k == 0

    def figures(self) -> dict[str, Any]:
        """The scalar figures (JSON-serializable), keys prefixed ``km_``."""
        return {
            "km_ok": self.ok,
            "km_k": self.k,
            "km_m": self.m,
            "km_chunks": self.chunks,
            "km_combinations": self.combinations,
            "km_violations": self.violations,
            "km_min_support": self.min_support,
            "km_clusters_below_k": self.clusters_below_k,
        }


def _subrecords(released: Disassociated) -> pl.DataFrame:
    """All chunk subrecord items: ``kind``, ``chunk`` (label), ``rec``, ``item``; distinct rows."""
    record = released.record_chunks.select(
        kind=pl.lit("record"),
        chunk=pl.format("{}:{}", "cluster_id", "chunk_id"),
        rec=pl.col("record_in_chunk"),
        item=pl.col("item"),
    )
    shared = released.shared_chunks.select(
        kind=pl.lit("shared"),
        chunk=pl.col("shared_id").cast(pl.String),
        rec=pl.col("record_in_chunk"),
        item=pl.col("item"),
    )
    return pl.concat([record, shared]).unique()


def check_km(released: Disassociated, /, *, k: int | None = None, m: int | None = None) -> KmReport:
    """Verify the k^m guarantee of a released dataset (module docstring).

    Args:
        released: The released tables.
        k: k to check (default ``released.k``), ≥ 1.
        m: m to check (default ``released.m``), ≥ 1.
    """
    k = released.k if k is None else k
    m = released.m if m is None else m
    if k < 1 or m < 1:
        raise ConfigError(f"k and m must be >= 1; got k={k!r}, m={m!r}")
    sub = _subrecords(released)
    keys = ["kind", "chunk", "rec"]
    level = sub.rename({"item": "i1"})
    counts = []
    for size in range(1, m + 1):
        if size > 1:
            last = f"i{size - 1}"
            level = (
                level.join(sub, on=keys).filter(pl.col("item") > pl.col(last)).rename({"item": f"i{size}"})
            )
        names = [f"i{j}" for j in range(1, size + 1)]
        counts.append(
            level.group_by(["kind", "chunk", *names])
            .agg(support=pl.len())
            .select("kind", "chunk", pl.concat_list(names).alias("items"), "support")
        )
        if level.height == 0:
            break
    combos = pl.concat(counts).sort("kind", "chunk", "items")
    violating = combos.filter(pl.col("support") < k)
    below = int(released.clusters.filter(pl.col("size") < k).height)
    return KmReport(
        k=k,
        m=m,
        chunks=int(sub.select(pl.struct("kind", "chunk").n_unique()).item()) if sub.height else 0,
        combinations=combos.height,
        violations=violating.height,
        min_support=int(combos["support"].min()) if combos.height else None,  # type: ignore[arg-type]
        clusters_below_k=below,
        violating=violating,
    )


def pair_workload(
    records: pl.DataFrame,
    /,
    *,
    first: str = "D",
    second: str = "R",
    min_support: int = 1,
    limit: int | None = None,
) -> pl.DataFrame:
    """Workload W1 of Section 6.1 for pairs: frequent (first, second) itemsets of the original data.

    A pair joins an item with prefix ``first:`` (a drug) and one with ``second:`` (a reaction) held by
    the same record; the workload holds the pairs of support ≥ ``min_support``, most frequent first
    (ties by items), at most ``limit`` of them.

    Args:
        records: ``caseid``, ``item`` of the original dataset D.

    Returns:
        ``query_id`` (0..n−1), ``item``: two rows per query.
    """
    if min_support < 1:
        raise ConfigError(f"min_support must be >= 1; got {min_support!r}")
    pairs = records.filter(pl.col("item").str.starts_with(f"{first}:")).join(
        records.filter(pl.col("item").str.starts_with(f"{second}:")), on="caseid", suffix="_2"
    )
    top = (
        pairs.group_by("item", "item_2")
        .agg(support=pl.len())
        .filter(pl.col("support") >= min_support)
        .sort(["support", "item", "item_2"], descending=[True, False, False])
    )
    if limit is not None:
        top = top.head(limit)
    top = top.with_columns(query_id=pl.int_range(pl.len(), dtype=pl.Int64))
    return pl.concat(
        [top.select("query_id", "item"), top.select("query_id", pl.col("item_2").alias("item"))]
    ).sort("query_id", "item")


def count_queries(records: pl.DataFrame, workload: pl.DataFrame, /, *, batch: int = 512) -> pl.DataFrame:
    """C(q): records (distinct ``caseid``) holding every item of each query's itemset.

    Each workload item gets a bitset over the records; a query's count is the popcount of the AND of
    its items' bitsets (numpy, ``batch`` queries at a time).

    Returns:
        ``query_id``, ``count`` (Int64, 0 when no record holds the itemset), one row per query.
    """
    queries = workload.select("query_id", "item").unique().sort("query_id", "item")
    items = queries["item"].unique().sort()
    cases = records["caseid"].unique().sort()
    n = len(cases)
    width = (n + 7) // 8
    bits = np.zeros((len(items) + 1, width), dtype=np.uint8)
    bits[len(items)] = np.packbits(np.ones(n, dtype=np.bool_))  # the padding row: every record
    hits = (
        records.select("caseid", "item")
        .unique()
        .join(pl.DataFrame({"item": items, "row": pl.int_range(len(items), eager=True)}), on="item")
        .join(pl.DataFrame({"caseid": cases, "col": pl.int_range(n, eager=True)}), on="caseid")
    )
    row, col = hits["row"].to_numpy(), hits["col"].to_numpy()
    np.bitwise_or.at(bits, (row, col >> 3), (128 >> (col & 7)).astype(np.uint8))
    index = (
        queries.join(pl.DataFrame({"item": items, "row": pl.int_range(len(items), eager=True)}), on="item")
        .sort("query_id", "row")
        .with_columns(
            q=pl.col("query_id").rank("dense").cast(pl.Int64) - 1,
            j=pl.int_range(pl.len(), dtype=pl.Int64).over("query_id"),
        )
    )
    ids = index.select("query_id").unique(maintain_order=True)["query_id"]
    size = int(index["j"].max() or 0) + 1  # type: ignore[arg-type]
    matrix = np.full((len(ids), size), len(items), dtype=np.int64)
    matrix[index["q"].to_numpy(), index["j"].to_numpy()] = index["row"].to_numpy()
    counts = np.zeros(len(ids), dtype=np.int64)
    for lo in range(0, len(ids), batch):
        block = matrix[lo : lo + batch]
        acc = bits[block[:, 0]].copy()
        for j in range(1, size):
            acc &= bits[block[:, j]]
        counts[lo : lo + batch] = np.bitwise_count(acc).sum(axis=1, dtype=np.int64)
    return pl.DataFrame({"query_id": ids, "count": pl.Series(counts, dtype=pl.Int64)})


def average_relative_error(
    original: pl.DataFrame, anonymized: pl.DataFrame, workload: pl.DataFrame, /
) -> float:
    """ARE(W) of Definition 2 (module docstring) between two ``caseid``, ``item`` datasets."""
    both = (
        count_queries(original, workload)
        .join(count_queries(anonymized, workload), on="query_id", suffix="_a")
        .filter(pl.col("count") > 0)
    )
    if both.height == 0:
        return 0.0
    error = ((pl.col("count_a") - pl.col("count")).abs() / pl.col("count")).mean()
    return float(both.select(error).item())
