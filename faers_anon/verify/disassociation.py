"""The verifier's rules for a disassociation release (manifest ``parameters.method`` = ``disassociation``).

Independent of the producer: this module reads the ``disassociated/`` tables itself and re-implements
the k^m check (Terrovitis et al. 2008; Loukides et al. 2014, Sections 3.1–3.2), importing nothing of
:mod:`faers_anon.methods` (its release form: :mod:`faers_anon.methods._disassociation_publish`). Rules:

* ``km``: in every record chunk (``record_chunks``: cluster_id, chunk_id, record_in_chunk, item) and
  every shared chunk (``shared_chunks``: shared_id, record_in_chunk, item), each itemset of 1..m
  items that occurs in some subrecord occurs in at least k subrecords of that chunk; and every
  cluster (``clusters``: cluster_id, size) holds at least k records. k from ``parameters.k`` or the
  verifier's ``k`` override; m from ``parameters.m``, else ``method_parameters.m``, else 2.
* ``disassociated``: ``disassociated/`` exists and holds the six tables; DRUG and REAC are not
  published row by row beside it (``parquet/drug.parquet``, ``parquet/reac.parquet``, ``ascii/DRUG*``,
  ``ascii/REAC*``); ``members`` lists every DEMO caseid exactly once and no other; each cluster's
  ``size`` equals its members.

DR (for information only) reads DRUG and REAC of such a release as each case's *possible* items:
every item of its cluster's record chunks and item chunk and of the shared chunks spanning its
cluster (``D:<drug_key>``, ``R:<pt>``). That is the attacker's upper bound, the same on every run (no
reconstruction draw), so DR here can exceed the DR of the report's one reconstruction.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.errors import InputError

__all__ = ["DISASSOCIATED", "KM_LABEL", "km_m", "km_support", "km_violations", "with_possible_items"]

DISASSOCIATED = "disassociated"
KM_LABEL = "k^m-anonymity (k={k}, m={m}) of the drug and reaction lists; QIDs released as points"
_TABLES: Mapping[str, tuple[str, ...]] = {
    "clusters": ("cluster_id", "size"),
    "members": ("cluster_id", "caseid"),
    "record_chunks": ("cluster_id", "chunk_id", "record_in_chunk", "item"),
    "item_chunk": ("cluster_id", "item"),
    "shared_chunks": ("shared_id", "record_in_chunk", "item"),
    "shared_clusters": ("shared_id", "cluster_id"),
}
_ITEMS = {"drug": ("D:", "drug_key"), "reac": ("R:", "pt")}
_SHOWN = 50  # violating itemsets listed one per row; the rest summed up in one row

TableReader = Callable[..., pl.LazyFrame]  # (release, table, columns, optional=()) -> the columns


def _rows(details: Sequence[str], rule: str) -> pl.DataFrame:
    return pl.DataFrame(
        {"group": [None] * len(details), "rule": [rule] * len(details), "detail": list(details)},
        schema={"group": pl.Int64, "rule": pl.String, "detail": pl.String},
    )


def km_m(params: Mapping[str, Any]) -> int:
    """m of the release: ``parameters.m``, else ``method_parameters.m``, else 2."""
    value = params.get("m", (params.get("method_parameters") or {}).get("m", 2))
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"parameters.m: got {value!r} (expected an integer >= 1)", path="manifest.json")
    return value


def _read(folder: Path) -> dict[str, pl.DataFrame]:
    tables = {}
    for name, columns in _TABLES.items():
        path = folder / f"{name}.parquet"
        if not path.is_file():
            raise InputError(f"missing table {name}.parquet", path=folder)
        try:
            frame = pl.read_parquet(path)
        except (OSError, pl.exceptions.PolarsError) as exc:
            raise InputError(f"unreadable parquet ({str(exc).splitlines()[0]})", path=path) from exc
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise InputError(f"table {name} lacks columns {missing}", path=path)
        tables[name] = frame.select(columns)
    return tables


def km_support(tables: Mapping[str, pl.DataFrame], m: int) -> pl.DataFrame:
    """(chunk, items, support): support of every itemset of 1..m items found in some chunk subrecord.

    A chunk is ``r<cluster>:<chunk>`` or ``s<shared_id>``; a subrecord is one ``record_in_chunk`` of it.
    Itemsets grow level by level: a subrecord's (j+1)-sets extend its j-sets by a larger item.
    """
    sub = pl.concat(
        [
            tables["record_chunks"].select(
                pl.format("r{}:{}", "cluster_id", "chunk_id").alias("chunk"), "record_in_chunk", "item"
            ),
            tables["shared_chunks"].select(
                pl.format("s{}", "shared_id").alias("chunk"), "record_in_chunk", "item"
            ),
        ]
    ).unique()
    level = sub.select("chunk", "record_in_chunk", pl.concat_list("item").alias("items"), "item")
    found = []
    for _ in range(m):
        if level.height == 0:
            break
        found.append(level.group_by("chunk", "items").agg(pl.len().alias("support")))
        level = (
            level.join(sub, on=["chunk", "record_in_chunk"], suffix="_next")
            .filter(pl.col("item_next") > pl.col("item"))
            .select("chunk", "record_in_chunk", pl.col("items").list.concat("item_next"), "item_next")
            .rename({"item_next": "item"})
        )
    schema: dict[str, pl.DataType] = {
        "chunk": pl.String(),
        "items": pl.List(pl.String),
        "support": pl.UInt32(),
    }
    return pl.concat(found).sort("chunk", "items") if found else pl.DataFrame(schema=schema)


def _published(release: Path, table: str) -> list[str]:
    pattern = re.compile(rf"^{table}\d\dq[1-4]\.txt$", re.IGNORECASE)
    ascii_dir = release / "ascii"
    texts = sorted(p.name for p in ascii_dir.glob("*") if pattern.match(p.name)) if ascii_dir.is_dir() else []
    parquet = release / "parquet" / f"{table}.parquet"
    return [*(["parquet/" + parquet.name] if parquet.is_file() else []), *("ascii/" + t for t in texts)]


def km_violations(release: Path, members: pl.DataFrame, *, k: int, m: int) -> pl.DataFrame:
    """Rules ``km`` and ``disassociated`` (module docstring) as (group, rule, detail), group null."""
    folder = release / DISASSOCIATED
    if not folder.is_dir():
        return _rows([f"no {DISASSOCIATED}/ folder"], "disassociated")
    shown = [
        f"{rel}: {table} published row by row beside {DISASSOCIATED}/"
        for table in _ITEMS
        for rel in _published(release, table)
    ]
    tables = _read(folder)
    listed = tables["members"].select(pl.col("caseid").cast(pl.String))
    demo = members.select("caseid").unique()
    twice = listed.height - listed.unique().height
    if twice:
        shown.append(f"members lists {twice} caseid(s) more than once")
    missing = demo.join(listed, on="caseid", how="anti").height
    extra = listed.unique().join(demo, on="caseid", how="anti").height
    if missing or extra:
        shown.append(f"members: {missing} DEMO case(s) in no cluster, {extra} caseid(s) not in DEMO")
    counted = tables["members"].group_by("cluster_id").agg(pl.len().alias("n"))
    wrong = (
        tables["clusters"]
        .join(counted, on="cluster_id", how="left")
        .filter(pl.col("n").fill_null(0) != pl.col("size"))
    )
    if wrong.height:
        shown.append(f"{wrong.height} cluster(s) whose size differs from their members")
    bad = km_support(tables, m).filter(pl.col("support") < k)
    details = [
        f"chunk {chunk}: itemset {list(items)} in {n} subrecord(s), fewer than k = {k}"
        for chunk, items, n in bad.head(_SHOWN).iter_rows()
    ]
    if bad.height > _SHOWN:
        details.append(f"… and {bad.height - _SHOWN} more itemsets below k = {k}")
    small = tables["clusters"].filter(pl.col("size") < k).height
    if small:
        details.append(f"{small} cluster(s) of fewer than k = {k} records")
    return pl.concat([_rows(shown, "disassociated"), _rows(details, "km")])


@functools.lru_cache(maxsize=4)
def _possible(folder: str, stamp: tuple[tuple[str, int, int], ...]) -> pl.DataFrame:
    """(caseid, item): every item a case may hold (module docstring), cached by the files' stamps."""
    del stamp  # part of the cache key only
    tables = _read(Path(folder))
    members = tables["members"].select("cluster_id", pl.col("caseid").cast(pl.String))
    shared = tables["shared_clusters"].join(tables["shared_chunks"], on="shared_id")
    spans = shared.select("cluster_id", "item")
    items = pl.concat([tables["record_chunks"].select("cluster_id", "item"), tables["item_chunk"], spans])
    return members.join(items.unique(), on="cluster_id").select("caseid", "item").unique()


def with_possible_items(read: TableReader) -> TableReader:
    """``read``, except DRUG and REAC of a release with ``disassociated/``: each case's possible items."""

    @functools.wraps(read)
    def table(release: Path, name: str, columns: Sequence[str], optional: Sequence[str] = ()) -> pl.LazyFrame:
        folder = release / DISASSOCIATED
        if name not in _ITEMS or not folder.is_dir():
            return read(release, name, columns, optional)  # optional columns: only outside that form
        prefix, column = _ITEMS[name]
        for wanted in columns:
            if wanted not in ("caseid", column):
                raise InputError(f"{name}: column not in the disassociated form", path=folder, field=wanted)
        stamp = tuple(
            (p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.iterdir()) if p.is_file()
        )
        pairs = _possible(str(folder.resolve()), stamp).filter(pl.col("item").str.starts_with(prefix))
        frame = pairs.lazy().select("caseid", pl.col("item").str.strip_prefix(prefix).alias(column))
        return frame.select(columns)

    return table
