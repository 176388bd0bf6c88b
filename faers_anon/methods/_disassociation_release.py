"""The released form of a disassociated dataset, its writer and reader, and one-dataset reconstruction.

The tables are documented in ``faers_anon.methods.disassociation`` (module docstring). Positions of
subrecords inside a chunk (``record_in_chunk``) are a uniformly random permutation of 0..n−1 drawn per
chunk, so that no position links subrecords of different chunks (Section 3.2: "the order of the
subrecords that fall into a chunk is randomized").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon.errors import ConfigError, InputError
from faers_anon.methods._disassociation_horpart import ItemSets
from faers_anon.methods._disassociation_verpart import SharedChunk

__all__ = [
    "TABLES",
    "Disassociated",
    "assemble",
    "group_positions",
    "read_released",
    "reconstruct",
    "write_released",
]

TABLES: dict[str, dict[str, pl.DataType]] = {
    "clusters": {"cluster_id": pl.Int64(), "size": pl.Int64()},
    "members": {"cluster_id": pl.Int64(), "caseid": pl.Int64()},
    "record_chunks": {
        "cluster_id": pl.Int64(),
        "chunk_id": pl.Int64(),
        "record_in_chunk": pl.Int64(),
        "item": pl.String(),
    },
    "item_chunk": {"cluster_id": pl.Int64(), "item": pl.String()},
    "shared_chunks": {"shared_id": pl.Int64(), "record_in_chunk": pl.Int64(), "item": pl.String()},
    "shared_clusters": {"shared_id": pl.Int64(), "cluster_id": pl.Int64()},
}
"""Table name → column → dtype of the released form, in column order."""


@dataclass(frozen=True, slots=True)
class Disassociated:
    """A disassociated dataset D^A: clusters, record chunks, item chunks and shared chunks.

    Attributes:
        k: The k of k^m-anonymity the release was made for.
        m: The m of k^m-anonymity.
        clusters: ``cluster_id``, ``size`` (records of the cluster).
        members: ``cluster_id``, ``caseid``: the records (cases) of each cluster, unlinked to chunks.
        record_chunks: ``cluster_id``, ``chunk_id``, ``record_in_chunk``, ``item``: one row per item of
            a subrecord; subrecord positions run over 0..size−1 and a missing position is an empty
            subrecord.
        item_chunk: ``cluster_id``, ``item``: the item chunk C^T of each cluster, a set.
        shared_chunks: ``shared_id``, ``record_in_chunk``, ``item``: subrecords of shared chunks,
            positions over 0..(Σ size of the span)−1.
        shared_clusters: ``shared_id``, ``cluster_id``: the span (joint cluster) of each shared chunk.
    """

    k: int
    m: int
    clusters: pl.DataFrame
    members: pl.DataFrame
    record_chunks: pl.DataFrame
    item_chunk: pl.DataFrame
    shared_chunks: pl.DataFrame
    shared_clusters: pl.DataFrame

    def tables(self) -> dict[str, pl.DataFrame]:
        """Table name → frame, in :data:`TABLES` order."""
        return {name: getattr(self, name) for name in TABLES}

    def describe(self) -> dict[str, Any]:
        """k, m and the row count of each table (JSON-serializable)."""
        return {"k": self.k, "m": self.m, **{f"{n}_rows": f.height for n, f in self.tables().items()}}


def group_positions(sizes: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.int64]:
    """For consecutive groups of the given sizes, a uniformly random permutation of 0..size−1 each.

    Returns:
        Shape (Σ sizes,): entry ``starts[g] + j`` is the position given to member j of group g.
    """
    total = int(sizes.sum())
    group = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    order = np.lexsort((rng.random(total), group))
    starts = np.cumsum(sizes) - sizes
    position = np.empty(total, dtype=np.int64)
    position[order] = np.arange(total, dtype=np.int64) - np.repeat(starts, sizes)
    return position


def _bits(mask: int) -> list[int]:
    """Positions of the set bits of ``mask``, ascending."""
    text = bin(mask)[:1:-1]
    return [j for j, b in enumerate(text) if b == "1"]


def assemble(
    *,
    k: int,
    m: int,
    caseids: pl.Series,
    names: pl.Series,
    sets: ItemSets,
    clusters: list[NDArray[np.int64]],
    assigned: list[tuple[int, int, int]],
    item_chunks: list[dict[int, int]],
    shared: list[SharedChunk],
    rng: np.random.Generator,
) -> Disassociated:
    """Assemble the released tables (module docstring of ``disassociation``) from the algorithm's output.

    Args:
        k: k of the release.
        m: m of the release.
        caseids: caseid of record i, ascending.
        names: Item string of each item code.
        sets: The records' item codes.
        clusters: Record indices of each cluster (HORPART order, ascending within).
        assigned: (cluster, item code, chunk id) of every item placed in a record chunk.
        item_chunks: Per cluster, the item codes left in its item chunk (keys; masks unused).
        shared: The shared chunks from refining.
        rng: Draws the subrecord positions: record chunks first (cluster, then chunk order), then shared.
    """
    sizes = np.array([r.size for r in clusters], dtype=np.int64)
    n = sets.n_records
    cluster_of = np.empty(n, dtype=np.int64)
    local = np.empty(n, dtype=np.int64)
    for c, records in enumerate(clusters):
        cluster_of[records] = c
        local[records] = np.arange(records.size)
    chunk_count = np.zeros(len(clusters), dtype=np.int64)
    for c, _, i in assigned:
        chunk_count[c] = max(chunk_count[c], i + 1)
    chunk_base = np.cumsum(chunk_count) - chunk_count
    group_sizes = np.repeat(sizes, chunk_count)
    position = group_positions(group_sizes, rng)
    group_start = np.cumsum(group_sizes) - group_sizes
    owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(sets.ptr))
    incidence = pl.DataFrame({"cluster_id": cluster_of[owner], "local": local[owner], "code": sets.codes})
    chunk_of = pl.DataFrame(
        assigned, schema={"cluster_id": pl.Int64, "code": pl.Int64, "chunk_id": pl.Int64}, orient="row"
    )
    rows = incidence.join(chunk_of, on=["cluster_id", "code"])
    g = chunk_base[rows["cluster_id"].to_numpy()] + rows["chunk_id"].to_numpy()
    record_chunks = rows.select(
        "cluster_id",
        "chunk_id",
        record_in_chunk=pl.Series(position[group_start[g] + rows["local"].to_numpy()], dtype=pl.Int64),
        item=names.gather(rows["code"]),
    )
    span_sizes = np.array([int(sizes[list(s.span)].sum()) for s in shared], dtype=np.int64)
    shared_position = group_positions(span_sizes, rng)
    span_start = np.cumsum(span_sizes) - span_sizes
    sid, pos, code = [], [], []
    for s, chunk in enumerate(shared):
        for t, mask in sorted(chunk.masks.items()):
            bits = _bits(mask)
            sid.extend([s] * len(bits))
            pos.extend(shared_position[span_start[s] + np.array(bits, dtype=np.int64)].tolist())
            code.extend([t] * len(bits))
    ct = [(c, t) for c, chunk in enumerate(item_chunks) for t in chunk]
    tables = {
        "clusters": pl.DataFrame({"cluster_id": np.arange(len(clusters)), "size": sizes}),
        "members": pl.DataFrame({"cluster_id": cluster_of, "caseid": caseids}),
        "record_chunks": record_chunks,
        "item_chunk": pl.DataFrame(
            {"cluster_id": [c for c, _ in ct], "item": names.gather([t for _, t in ct])}
        ),
        "shared_chunks": pl.DataFrame({"shared_id": sid, "record_in_chunk": pos, "item": names.gather(code)}),
        "shared_clusters": pl.DataFrame(
            [(s, c) for s, chunk in enumerate(shared) for c in chunk.span],
            schema={"shared_id": pl.Int64, "cluster_id": pl.Int64},
            orient="row",
        ),
    }
    order = {
        "clusters": ["cluster_id"],
        "members": ["cluster_id", "caseid"],
        "record_chunks": ["cluster_id", "chunk_id", "record_in_chunk", "item"],
        "item_chunk": ["cluster_id", "item"],
        "shared_chunks": ["shared_id", "record_in_chunk", "item"],
        "shared_clusters": ["shared_id", "cluster_id"],
    }
    typed = {
        name: tables[name].select([pl.col(c).cast(t) for c, t in schema.items()]).sort(order[name])
        for name, schema in TABLES.items()
    }
    return Disassociated(k=k, m=m, **typed)


def write_released(
    released: Disassociated, folder: Path, /, *, fmt: Literal["parquet", "csv"] = "parquet"
) -> list[Path]:
    """Write the tables (``<name>.parquet`` or ``<name>.csv``) and ``disassociation.json`` (k, m, counts).

    Returns:
        The written paths, tables first in :data:`TABLES` order.
    """
    if fmt not in ("parquet", "csv"):
        raise ConfigError(f"fmt must be 'parquet' or 'csv'; got {fmt!r}")
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, frame in released.tables().items():
        path = folder / f"{name}.{fmt}"
        if fmt == "parquet":
            frame.write_parquet(path)
        else:
            frame.write_csv(path)
        paths.append(path)
    meta = folder / "disassociation.json"
    meta.write_text(json.dumps(released.describe(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return [*paths, meta]


def read_released(folder: Path, /) -> Disassociated:
    """Read what :func:`write_released` wrote (Parquet or CSV, detected per table)."""
    meta = folder / "disassociation.json"
    if not meta.is_file():
        raise InputError("no disassociation.json (expected a folder written by write_released)", path=folder)
    params = json.loads(meta.read_text(encoding="utf-8"))
    frames = {}
    for name, schema in TABLES.items():
        parquet, csv = folder / f"{name}.parquet", folder / f"{name}.csv"
        if parquet.is_file():
            frame = pl.read_parquet(parquet)
        elif csv.is_file():
            frame = pl.read_csv(csv, schema=schema)
        else:
            raise InputError(f"missing table {name} (expected {name}.parquet or {name}.csv)", path=folder)
        missing = [c for c in schema if c not in frame.columns]
        if missing:
            raise InputError(f"table {name} lacks columns {missing}", path=folder)
        frames[name] = frame.select([pl.col(c).cast(t) for c, t in schema.items()])
    return Disassociated(k=int(params["k"]), m=int(params["m"]), **frames)


def _placed(
    chunks: pl.DataFrame, keys: list[str], members: pl.DataFrame, rng: np.random.Generator
) -> pl.DataFrame:
    """Map each chunk's subrecord positions onto its members: (keys..., record_in_chunk, caseid).

    ``members`` holds (keys..., caseid) sorted, one row per record of the chunk's cluster or span.
    """
    sizes = members.group_by(keys, maintain_order=True).len()
    position = group_positions(sizes["len"].to_numpy().astype(np.int64), rng)
    return members.with_columns(record_in_chunk=pl.Series(position, dtype=pl.Int64)).join(
        chunks, on=[*keys, "record_in_chunk"], how="inner"
    )


def reconstruct(
    released: Disassociated, /, *, rng: np.random.Generator, item_support: Literal["one", "uniform"] = "one"
) -> pl.DataFrame:
    """One possible original dataset D' ∈ I(D^A) (Section 3.2, Fig. 5).

    Within each cluster every record chunk's subrecords go to the cluster's records through an
    independent uniformly random permutation; every shared chunk's subrecords go to the records of its
    span the same way (Section 3.2: any combination of subrecords of the chunks is a possible record).
    Each item of an item chunk goes to s distinct records of its cluster drawn uniformly. The release
    says nothing of s beyond 1 ≤ s ≤ |P| (the paper's attacker) and, for an analyst who knows VERPART,
    s ≤ k − 1 (exactly the items of support below k enter the item chunk). ``item_support`` picks s:

    * ``"one"`` (default): s = 1, the smallest world consistent with the release. In sparse data the
      item chunk mostly holds items a single record of the cluster has, so this keeps item counts
      closest; it is a modelling choice made without looking at the original data.
    * ``"uniform"``: s uniform on 1..min(k − 1, |P|).

    Returns:
        ``caseid`` (Int64), ``item`` (String): distinct pairs sorted by caseid, item. Cases whose
        reconstructed record is empty have no row.
    """
    if item_support not in ("one", "uniform"):
        raise ConfigError(f"item_support must be 'one' or 'uniform'; got {item_support!r}")
    members = released.members.sort("cluster_id", "caseid")
    chunk_keys = (
        released.record_chunks.select("cluster_id", "chunk_id").unique().sort("cluster_id", "chunk_id")
    )
    record_rows = _placed(
        released.record_chunks,
        ["cluster_id", "chunk_id"],
        chunk_keys.join(members, on="cluster_id").sort("cluster_id", "chunk_id", "caseid"),
        rng,
    )
    span_members = (
        released.shared_clusters.join(members, on="cluster_id")
        .select("shared_id", "caseid")
        .sort("shared_id", "caseid")
    )
    shared_rows = _placed(released.shared_chunks, ["shared_id"], span_members, rng)
    item_rows = _item_chunk_rows(released, members, rng, uniform=item_support == "uniform")
    parts = [frame.select("caseid", "item") for frame in (record_rows, shared_rows, item_rows)]
    return pl.concat(parts).unique().sort("caseid", "item")


def _item_chunk_rows(
    released: Disassociated, members: pl.DataFrame, rng: np.random.Generator, *, uniform: bool
) -> pl.DataFrame:
    """Item chunk items placed on s random records each (see :func:`reconstruct`)."""
    items = released.item_chunk.sort("cluster_id", "item").join(released.clusters, on="cluster_id")
    top = np.minimum(items["size"].to_numpy(), released.k - 1).astype(np.int64)
    draws = rng.integers(1, top + 1) if uniform and top.size else np.ones(top.size, dtype=np.int64)
    items = items.with_columns(s=pl.Series(draws, dtype=pl.Int64), slot=pl.int_range(pl.len()))
    pairs = items.join(members, on="cluster_id").sort("slot", "caseid")
    sizes = pairs.group_by("slot", maintain_order=True).len()["len"].to_numpy().astype(np.int64)
    position = group_positions(sizes, rng)
    return pairs.with_columns(rank=pl.Series(position, dtype=pl.Int64)).filter(pl.col("rank") < pl.col("s"))
