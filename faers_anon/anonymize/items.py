"""Drug and reaction sets under k^m-anonymity inside each released QID-group (SPEC §11; issue 18).

**Items.** A case's items are the canonical values (:func:`knowledge.values.value_key_expr`: upper
case, whitespace collapsed) of its *released* drug columns among ``drug_key``, ``drugname`` and
``prod_ai`` (an attacker may match a drug on any of them) and of its released reaction PTs, the union
over the case's reports (its super-record, SPEC §4). A drug and a reaction of one spelling are two
items (tags ``D``/``R``); both lists form one set, so an attacker may know drugs, reactions or both.

**Guarantee** (k^m-anonymity, Terrovitis et al. 2008; seed ``disassociation_loukides2014.txt``,
Definition 1, applied to each group as the paper applies it to a cluster): for every case t of group
g and every set S of at most m of t's released items, |{p ∈ g : S ⊆ I'(p)}| ≥ k, I' being the
released items. An attacker who knows t's released QIDs (its group, or a union of groups when they
know fewer fields) and any m of its items finds at least k cases. m ∈ {0, 1, 2}: 0 is off; 2 is the
bound the verifier and ``faers-anon risk`` measure (SPEC §11's "1 and 2 items").

**Strategies** (both only remove items; neither adds, moves or generalizes one):

* ``suppress`` (local suppression): repeat (1) suppress every (case, item) whose item fewer than k
  cases of the group hold; (2) for m = 2, for every pair {a, b} of a case's items that fewer than k
  cases of the group hold together, suppress from that case the member of lower group support (ties:
  the later code); until a round removes nothing. Each round only removes, so the loop ends; when it
  ends (1) and (2) hold for every remaining item and pair, which is the guarantee.
* ``disassociate``: VERPART (seed Fig. 9; :func:`faers_anon.methods._disassociation_verpart.verpart`)
  on each group as one cluster. Its first record chunk T_1 is k^m-anonymous and stays linked to the
  cases; items of the other record chunks and of the item chunk are suppressed from the case-linked
  tables (the FAERS layout has no place for unlinked chunks; :mod:`faers_anon.methods.disassociation`
  publishes them in its own layout). For m = 1 T_1 holds exactly the items of support ≥ k, so both
  strategies release the same items; they differ from m = 2 on.

**Applying it.** Every released cell whose canonical value is a suppressed item of its case becomes
null; rows are kept (rows in = rows out per table), and :class:`ItemsProtected` counts the suppressed
cells per table and column, the (case, item) pairs before and after and the cases touched, which the
writer records in ``manifest.json`` (``counts.items``) and the report repeats.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from faers_anon.errors import ConfigError
from faers_anon.methods._disassociation_verpart import cluster_masks, verpart
from knowledge.values import value_key_expr

__all__ = [
    "ITEM_COLUMNS",
    "ITEM_STRATEGIES",
    "MAX_ITEMS_M",
    "ItemProtection",
    "ItemsProtected",
    "case_items",
    "protect_items",
    "suppressed_items",
]

ITEM_STRATEGIES: tuple[str, ...] = ("suppress", "disassociate")
MAX_ITEMS_M = 2
ITEM_COLUMNS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "drug": (("drug_key", "D"), ("drugname", "D"), ("prod_ai", "D")),
    "reac": (("pt", "R"),),
}
"""Table → (column, item tag) of the released columns whose values are items (SPEC §11)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ItemProtection:
    """k^m-anonymity of the item sets within each group (module docstring).

    Attributes:
        k: minimum cases holding each known itemset (the release's k, ≥ 2).
        m: items the attacker knows, 1 or 2 (0 is "off": no :class:`ItemProtection` at all).
        strategy: one of :data:`ITEM_STRATEGIES`.
    """

    k: int
    m: int
    strategy: str = "suppress"

    def __post_init__(self) -> None:
        if isinstance(self.m, bool) or not isinstance(self.m, int) or not 1 <= self.m <= MAX_ITEMS_M:
            raise ConfigError(f"items-m must be 0, 1 or {MAX_ITEMS_M}; got {self.m!r}")
        if self.strategy not in ITEM_STRATEGIES:
            raise ConfigError(
                f"items strategy: unknown {self.strategy!r} (expected one of {', '.join(ITEM_STRATEGIES)})"
            )
        if self.k < 2:
            raise ConfigError(f"k must be an integer >= 2; got {self.k!r}")


@dataclass(frozen=True, kw_only=True, slots=True)
class ItemsProtected:
    """The tables with suppressed cells nulled, and what was suppressed (for manifest and report)."""

    tables: dict[str, pl.DataFrame]
    counts: dict[str, Any] = field(default_factory=dict)


def case_items(tables: Mapping[str, pl.DataFrame], groups: pl.DataFrame) -> pl.DataFrame:
    """(caseid, group_id, item) for every distinct item of every grouped case (module docstring).

    Args:
        tables: ``drug``/``reac`` frames with ``caseid`` and the released item columns they have.
        groups: ``caseid``, ``group_id`` (one row per case).

    Returns:
        ``caseid``, ``group_id``, ``item`` (tagged canonical text such as ``D:WARFARIN``), distinct.
    """
    parts = [
        frame.select(pl.col("caseid"), pl.format(f"{tag}:{{}}", value_key_expr(pl.col(column))).alias("item"))
        for table, frame in tables.items()
        for column, tag in ITEM_COLUMNS.get(table, ())
        if column in frame.columns
    ]
    schema = pl.Schema({"caseid": groups.schema["caseid"], "group_id": pl.Int64(), "item": pl.String()})
    if not parts:
        return pl.DataFrame(schema=schema)
    pairs = pl.concat(parts).drop_nulls().unique()
    return pairs.join(groups.select("caseid", "group_id"), on="caseid").select(schema.names())


def _encoded(items: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(caseid, group_id, code UInt32) and the code table (code, item)."""
    codes = items.select("item").unique().sort("item").with_row_index("code")
    return items.join(codes, on="item").select("caseid", "group_id", "code"), codes


def _rare_singles(held: pl.DataFrame, k: int) -> pl.DataFrame:
    """(caseid, code) whose code fewer than k cases of the group hold."""
    support = pl.len().over("group_id", "code")
    return held.filter(support < k).select("caseid", "code")


def _rare_pairs(held: pl.DataFrame, k: int) -> pl.DataFrame:
    """(caseid, code) losers of the case's pairs that fewer than k cases of the group hold together.

    The loser of {a, b} is the member of lower group support, the later code on a tie.
    """
    ranked = held.with_columns(pl.len().over("group_id", "code").alias("support"))
    pairs = ranked.join(ranked.select("caseid", "code", "support"), on="caseid", suffix="_b").filter(
        pl.col("code") < pl.col("code_b")
    )
    rare = pairs.filter(pl.len().over("group_id", "code", "code_b") < k)
    loser = pl.when(pl.col("support") < pl.col("support_b")).then("code").otherwise("code_b")
    return rare.select("caseid", loser.alias("code")).unique()


def _suppress(held: pl.DataFrame, k: int, m: int) -> pl.DataFrame:
    """Local suppression (module docstring): the (caseid, group_id, code) that remain."""
    while True:
        removed = _rare_singles(held, k)
        if removed.height == 0 and m >= 2:
            removed = _rare_pairs(held, k)
        if removed.height == 0:
            return held
        held = held.join(removed, on=["caseid", "code"], how="anti")


def _disassociate(held: pl.DataFrame, k: int, m: int) -> pl.DataFrame:
    """VERPART per group (module docstring): the (caseid, group_id, code) of each group's chunk T_1."""
    if held.height == 0:
        return held
    members = held.select("group_id", "caseid").unique().sort("group_id", "caseid")
    members = members.with_columns(
        pl.int_range(pl.len()).over("group_id").cast(pl.Int64).alias("local"),
        pl.col("group_id").rank("dense").cast(pl.Int64).sub(1).alias("cluster"),
    )
    rows = held.join(members, on=["group_id", "caseid"])
    n_clusters = members.get_column("cluster").n_unique()  # dense 0..n-1
    masks = cluster_masks(
        rows.get_column("cluster").to_numpy(),
        rows.get_column("local").to_numpy(),
        rows.get_column("code").cast(pl.Int64).to_numpy(),
        n_clusters,
    )
    none = np.full(int(held.get_column("code").max() or 0) + 1, -1, dtype=np.int64)  # type: ignore[arg-type]
    kept_cluster: list[int] = []
    kept_code: list[int] = []
    for cluster, cluster_mask in enumerate(masks):  # one VERPART per group (the seed's unit)
        chunks, _ = verpart(cluster_mask, k=k, m=m, constraint=none)
        first = chunks[0] if chunks else []
        kept_cluster += [cluster] * len(first)
        kept_code += first
    kept = pl.DataFrame(
        {"cluster": kept_cluster, "code": kept_code}, schema={"cluster": pl.Int64, "code": pl.UInt32}
    )
    return rows.join(kept, on=["cluster", "code"], how="semi").select(held.columns)


def suppressed_items(items: pl.DataFrame, protection: ItemProtection) -> pl.DataFrame:
    """The (caseid, item) pairs to suppress so that the rest is k^m-anonymous within each group.

    Args:
        items: ``caseid``, ``group_id``, ``item`` (:func:`case_items`).
        protection: k, m and the strategy.

    Returns:
        ``caseid``, ``item``: the suppressed pairs (empty when nothing must go).
    """
    held, codes = _encoded(items)
    run = _suppress if protection.strategy == "suppress" else _disassociate
    kept = run(held, protection.k, protection.m)
    gone = held.join(kept, on=["caseid", "code"], how="anti")
    return gone.join(codes, on="code").select("caseid", "item")


def _null_cells(
    frame: pl.DataFrame, table: str, gone: pl.DataFrame, cases: pl.Series
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Null each released item cell of ``frame`` whose (case, item) is in ``gone``; nulls per column."""
    if gone.height == 0:
        return frame, {}
    marked = frame.with_columns(cases.alias("__case"))
    counts: dict[str, int] = {}
    flags = gone.select(pl.col("caseid").alias("__case"), "item", pl.lit(True).alias("__gone"))
    for column, tag in ITEM_COLUMNS.get(table, ()):
        if column not in frame.columns:
            continue
        key = pl.format(f"{tag}:{{}}", value_key_expr(pl.col(column))).alias("item")
        joined = marked.with_columns(key).join(
            flags, on=["__case", "item"], how="left", maintain_order="left"
        )
        hit = joined.get_column("__gone").fill_null(False)
        counts[column] = int(hit.sum())
        marked = marked.with_columns(pl.when(hit).then(None).otherwise(pl.col(column)).alias(column))
    return marked.drop("__case"), counts


def protect_items(
    tables: Mapping[str, pl.DataFrame],
    groups: pl.DataFrame,
    /,
    *,
    protection: ItemProtection,
    cases: Mapping[str, pl.Series] | None = None,
) -> ItemsProtected:
    """Make the drug and reaction sets k^m-anonymous within each group (module docstring).

    Args:
        tables: the released ``drug`` and ``reac`` frames (other tables are returned unchanged).
        groups: ``caseid``, ``group_id`` (the partition, ids as in ``tables``).
        protection: k, m and the strategy.
        cases: per table, the caseid of each row when the frame itself has no ``caseid`` column
            (a policy that does not publish it); None: the frames' own ``caseid``.

    Returns:
        The tables with suppressed cells nulled, and the counts (module docstring).
    """
    case_of: dict[str, pl.Series] = {}
    for table, frame in tables.items():
        given = (cases or {}).get(table)
        if given is None and "caseid" in frame.columns:
            given = frame.get_column("caseid")
        if table in ITEM_COLUMNS and given is not None:
            case_of[table] = given
    linked = {t: tables[t].with_columns(case.alias("caseid")) for t, case in case_of.items()}
    items = case_items(linked, groups)
    gone = suppressed_items(items, protection)
    out = dict(tables)
    cells: dict[str, dict[str, int]] = {}
    for table in linked:
        out[table], cells[table] = _null_cells(tables[table], table, gone, case_of[table])
    counts = {
        "m": protection.m,
        "k": protection.k,
        "strategy": protection.strategy,
        "case_items": items.height,
        "case_items_suppressed": gone.height,
        "cases_with_suppression": gone.get_column("caseid").n_unique(),
        "distinct_items": items.get_column("item").n_unique(),
        "distinct_items_gone": gone.get_column("item").n_unique() - _still_held(items, gone),
        "cells_suppressed": cells,
    }
    return ItemsProtected(tables=out, counts=counts)


def _still_held(items: pl.DataFrame, gone: pl.DataFrame) -> int:
    """Distinct suppressed items that some case still holds (so they are not gone from the release)."""
    kept = items.join(gone, on=["caseid", "item"], how="anti").select("item").unique()
    return gone.select("item").unique().join(kept, on="item", how="semi").height
