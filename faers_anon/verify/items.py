"""Verifier rule ``items_km``: the drug and reaction sets are k^m-anonymous in every QID-group (issue 18).

Read from the release's files alone, with code of its own (imports nothing of the anonymizer):

* m is the manifest's ``parameters.items_m`` (absent or 0: the release states no item bound and the
  rule is not checked); k is the release's k.
* A case's items are the canonical values upper(strip(collapse whitespace(v))) of its released
  ``drug_key``, ``drugname`` and ``prod_ai`` cells (tag ``D``) and ``pt`` cells (tag ``R``), the union
  over all its released reports (SPEC §11).
* k^m within a group g (Terrovitis et al. 2008; seed ``disassociation_loukides2014.txt`` Definition 1):
  for every case c of g and every set S of at most m of c's items, the cases of g holding S number
  at least k. The checks are the single items (every m ≥ 1) and, for m = 2, the item pairs a case
  holds; a set's holders are counted among the group's cases.

One violation row per group that fails, naming its rarest failing itemset and how many fail.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

__all__ = ["ITEM_COLUMNS", "item_violations", "release_item_rules", "release_items"]

TableReader = Callable[[str, Sequence[str]], pl.LazyFrame]
ITEM_COLUMNS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "drug": (("drug_key", "D"), ("drugname", "D"), ("prod_ai", "D")),
    "reac": (("pt", "R"),),
}
_EMPTY = pl.Schema({"group": pl.Int64(), "rule": pl.String(), "detail": pl.String()})


def _key(expr: pl.Expr) -> pl.Expr:
    key = expr.str.replace_all(r"\s+", " ").str.strip_chars().str.to_uppercase()
    return pl.when(key.str.len_chars() > 0).then(key)


def _columns(release: Path, table: str) -> list[str]:
    """The columns a release table has (its parquet schema, else its first ascii file's header)."""
    parquet = release / "parquet" / f"{table}.parquet"
    if parquet.is_file():
        return pl.scan_parquet(parquet).collect_schema().names()
    pattern = re.compile(rf"^{table}\d\dq[1-4]\.txt$", re.IGNORECASE)
    texts = sorted(p for p in (release / "ascii").glob("*") if pattern.match(p.name)) if (
        release / "ascii"
    ).is_dir() else []  # fmt: skip
    if not texts:
        return []
    return pl.scan_csv(texts[0], separator="$", quote_char=None, infer_schema=False).collect_schema().names()


def release_items(release: Path, read: TableReader) -> pl.DataFrame:
    """(caseid, item) of a release: every distinct released item of every case (module docstring)."""
    parts = []
    for table, columns in ITEM_COLUMNS.items():
        present = _columns(release, table)
        for column, tag in columns:
            if column in present and "caseid" in present:
                parts.append(read(table, ["caseid", column]).select(
                    pl.col("caseid").cast(pl.String),
                    pl.format(f"{tag}:{{}}", _key(pl.col(column))).alias("item"),
                ))  # fmt: skip
    if not parts:
        return pl.DataFrame(schema={"caseid": pl.String, "item": pl.String})
    return pl.concat(parts).drop_nulls().unique().collect()


def item_violations(items: pl.DataFrame, members: pl.DataFrame, *, k: int, m: int) -> pl.DataFrame:
    """Rule ``items_km`` (module docstring) on (caseid, item) and the groups' (caseid, group).

    Returns:
        ``group``, ``rule``, ``detail``: one row per failing group (empty when m < 1).
    """
    if m < 1 or items.height == 0:
        return pl.DataFrame(schema=_EMPTY)
    held = items.join(members.select(pl.col("caseid").cast(pl.String), "group").unique(), on="caseid")
    sets = held.select("caseid", "group", pl.col("item").alias("itemset"))
    if m >= 2:
        pairs = held.join(held.select("caseid", pl.col("item").alias("other")), on="caseid").filter(
            pl.col("item") < pl.col("other")
        )
        itemset = pl.format("{} + {}", "item", "other").alias("itemset")
        sets = pl.concat([sets, pairs.select("caseid", "group", itemset)])
    support = sets.group_by("group", "itemset").agg(pl.len().alias("holders"))
    failing = support.filter(pl.col("holders") < k).sort("group", "holders", "itemset")
    return (
        failing.group_by("group", maintain_order=True)
        .agg(pl.col("itemset").first(), pl.col("holders").first(), pl.len().alias("n"))
        .select(
            "group",
            pl.lit("items_km").alias("rule"),
            pl.format(
                "{} case(s) of the group hold {} ({} itemset(s) of at most {} items below k = {})",
                "holders",
                "itemset",
                "n",
                pl.lit(m),
                pl.lit(k),
            ).alias("detail"),
        )
        .cast(_EMPTY)
    )


def release_item_rules(
    release: Path, read: TableReader, members: pl.DataFrame, *, k: int, params: Mapping[str, Any]
) -> list[pl.DataFrame]:
    """The verifier's hook: rule ``items_km`` when the manifest states ``parameters.items_m`` ≥ 1."""
    m = params.get("items_m") or 0
    if not isinstance(m, int) or m < 1:
        return []
    return [item_violations(release_items(release, read), members, k=k, m=m)]
