"""Disassociation for k^m-anonymity of the drug and reaction lists (Loukides, Liagouris, Gkoulalas-Divanis &
Terrovitis 2014, ``seeds/disassociation_loukides2014.txt``; SPEC §7).

Records and items. A record is a case (a row of ``cases.parquet``); its items are the entries of the
list columns named by :class:`ItemAttribute` (default ``drug_keys`` and ``reactions``), each prefixed
with its attribute's tag and a colon (``D:WARFARIN``, ``R:FALL``) so that a drug and a reaction with
the same spelling stay distinct. Both lists are disassociated together, as one set per case: the
paper treats every item as a potential quasi-identifier (Section 3.1), an attacker may know drugs and
reactions alike, and a drug–reaction pair can only survive in a chunk that holds both. Null and empty
entries are not items; a case without items is an empty record.

k^m-anonymity (Definition 1; Guarantee 1): for every set S of at most m items, some dataset D' that
the release could come from holds S in at least k records. DISASSOCIATION (Fig. 6) reaches it in
three steps: HORPART clusters similar records (``_disassociation_horpart``), VERPART splits each
cluster into k^m-anonymous record chunks and an item chunk (``_disassociation_verpart``), refining
moves item chunk items that recur in neighbouring clusters into shared chunks. Defaults are the
paper's: k = 5, m = 2 (Section 6.1), maxClusterSize = 2k (footnote 4); the bound of 32 clusters per
joint cluster is ours (the paper gives none; see ``_disassociation_verpart``). Utility constraints
(disjoint item sets, Section 3.1) are optional; without them HORPART and VERPART order by support.

Released tables (:class:`Disassociated`; :func:`write_released` writes each as Parquet or CSV):

===================  =================================================  ============================
table                columns                                            meaning
===================  =================================================  ============================
``clusters``         ``cluster_id``, ``size``                           clusters P_1..P_c, |P_i|
``members``          ``cluster_id``, ``caseid``                         the records of each cluster
``record_chunks``    ``cluster_id``, ``chunk_id``, ``record_in_chunk``, one row per item of a
                     ``item``                                           subrecord of chunk C_j
``item_chunk``       ``cluster_id``, ``item``                           the set C^T of each cluster
``shared_chunks``    ``shared_id``, ``record_in_chunk``, ``item``       subrecords of shared chunks
``shared_clusters``  ``shared_id``, ``cluster_id``                      each shared chunk's span
===================  =================================================  ============================

``record_in_chunk`` is a random position in 0..n−1 (n = cluster size, or the span's total size for a
shared chunk), drawn independently per chunk; a position without rows is an empty subrecord, so each
chunk has exactly n subrecords as in Fig. 4. ``members`` lists each cluster's caseids (the paper's
Fig. 4 labels each cluster's records r1..r5); FAERS publishes caseids in DEMO anyway, and the
positions carry no link from a caseid to a subrecord.

Reconstruction (:func:`reconstruct`) draws one possible original dataset for analysts; its drug and
reaction sets per case come out with :func:`split_items` as (caseid, drug_key) and (caseid, pt).
:func:`check_km` verifies the guarantee from the released tables alone; :func:`average_relative_error`
is ARE (Definition 2) on a workload such as :func:`pair_workload` (frequent drug–reaction pairs).

Demographics are not disassociated (Section 7.3: the method covers the codes only): the registry entry
:func:`disassociation` returns the partition frame of the raw QIDs as a point release.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import polars as pl

from faers_anon.algorithms.types import QidHierarchies
from faers_anon.errors import ConfigError, InputError
from faers_anon.methods._disassociation_checks import (
    KmReport,
    average_relative_error,
    check_km,
    count_queries,
    pair_workload,
)
from faers_anon.methods._disassociation_horpart import ItemSets, horpart
from faers_anon.methods._disassociation_release import (
    TABLES,
    Disassociated,
    assemble,
    read_released,
    reconstruct,
    write_released,
)
from faers_anon.methods._disassociation_verpart import SharedChunk, cluster_masks, refine, verpart
from faers_anon.methods.base import MethodResult, case_points, check_cases, point_release, sex_codes

__all__ = [
    "DEFAULT_ATTRIBUTES",
    "TABLES",
    "Disassociated",
    "DisassociationConfig",
    "DisassociationResult",
    "ItemAttribute",
    "KmReport",
    "average_relative_error",
    "case_items",
    "check_km",
    "count_queries",
    "disassociate",
    "disassociation",
    "pair_workload",
    "read_released",
    "reconstruct",
    "split_items",
    "write_released",
]


@dataclass(frozen=True, slots=True)
class ItemAttribute:
    """A list column of ``cases.parquet`` whose entries are items.

    Attributes:
        column: The list column (``drug_keys``).
        tag: Prefix of its items, before a colon (``D`` → ``D:WARFARIN``); letters and digits only.
        name: Column name of the value in :func:`split_items` output (``drug_key``).
    """

    column: str
    tag: str
    name: str


DEFAULT_ATTRIBUTES: tuple[ItemAttribute, ...] = (
    ItemAttribute("drug_keys", "D", "drug_key"),
    ItemAttribute("reactions", "R", "pt"),
)
"""Drugs (``D:``) and reactions (``R:``), as the issue asks."""


@dataclass(frozen=True, kw_only=True, slots=True)
class DisassociationConfig:
    """Parameters of DISASSOCIATION.

    Attributes:
        k: Every itemset of ≤ m items appears in ≥ k records of some reconstruction; ≥ 2 (paper: 5).
        m: Items an attacker knows; ≥ 1 (paper: 2).
        max_cluster_size: HORPART's maxClusterSize, ≥ k; None means 2k (footnote 4).
        refine: Build shared chunks (Section 4, "Refining").
        max_joint: Most clusters a joint cluster may combine when refining, ≥ 2 (our bound; the paper
            sets none). Default 32: on a 20,000-case synthetic quarter (k = 5, m = 2) ARE on frequent
            drug–reaction pairs was 0.18 with joints of 2 clusters, 0.15 with 32, and rose again
            without a bound, whose shared chunks spread over thousands of records.
        constraints: Utility constraints: disjoint, non-empty sets of tagged items (``D:X``, ``R:Y``).
        attributes: The item columns, their tags and output names.
        seed: Seed of the run's generator when the harness builds it from the config.
    """

    k: int = 5
    m: int = 2
    max_cluster_size: int | None = None
    refine: bool = True
    max_joint: int = 32
    constraints: tuple[tuple[str, ...], ...] = ()
    attributes: tuple[ItemAttribute, ...] = field(default=DEFAULT_ATTRIBUTES)
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.k, int) or self.k < 2:
            raise ConfigError(f"k must be an integer >= 2; got {self.k!r}")
        if not isinstance(self.m, int) or self.m < 1:
            raise ConfigError(f"m must be an integer >= 1; got {self.m!r}")
        if self.max_cluster_size is not None and self.max_cluster_size < self.k:
            raise ConfigError(f"max_cluster_size must be >= k = {self.k}; got {self.max_cluster_size!r}")
        if self.max_joint < 2:
            raise ConfigError(f"max_joint must be >= 2; got {self.max_joint!r}")
        tags = [a.tag for a in self.attributes]
        if not self.attributes or len(set(tags)) != len(tags) or not all(t.isalnum() for t in tags):
            raise ConfigError(f"attributes need distinct alphanumeric tags; got {tags!r}")
        if len({a.column for a in self.attributes}) != len(self.attributes):
            raise ConfigError("attributes must name distinct columns")
        seen: set[str] = set()
        for u in self.constraints:
            if not u or seen & set(u):
                raise ConfigError(f"constraints must be non-empty and disjoint; got {u!r}")
            seen |= set(u)

    @property
    def cluster_limit(self) -> int:
        """maxClusterSize in effect."""
        return 2 * self.k if self.max_cluster_size is None else self.max_cluster_size

    def describe(self) -> dict[str, Any]:
        """The parameters as JSON-serializable data."""
        out = asdict(self)
        out["max_cluster_size"] = self.cluster_limit
        out["constraints"] = [list(u) for u in self.constraints]
        out["attributes"] = [asdict(a) for a in self.attributes]
        return out


def case_items(
    cases: pl.DataFrame, /, *, attributes: tuple[ItemAttribute, ...] = DEFAULT_ATTRIBUTES
) -> pl.DataFrame:
    """The original dataset D as ``caseid``, ``item`` (tagged), distinct, sorted by caseid, item."""
    for name in ("caseid", *(a.column for a in attributes)):
        if name not in cases.columns:
            raise InputError(
                "cases frame has no such column (expected caseid and the item lists)", field=name
            )
    parts = [
        cases.select("caseid", pl.col(a.column).alias("value"))
        .explode("value")
        .filter(pl.col("value").is_not_null() & (pl.col("value") != ""))
        .select(pl.col("caseid").cast(pl.Int64), (pl.lit(f"{a.tag}:") + pl.col("value")).alias("item"))
        for a in attributes
    ]
    return pl.concat(parts).unique().sort("caseid", "item")


def split_items(
    records: pl.DataFrame, /, *, attributes: tuple[ItemAttribute, ...] = DEFAULT_ATTRIBUTES
) -> dict[str, pl.DataFrame]:
    """Per attribute, its (caseid, value) pairs of a ``caseid``, ``item`` frame, tags removed.

    Returns:
        ``attribute.name`` → frame ``caseid``, ``<name>`` (e.g. ``drug_key`` and ``pt``), sorted.
    """
    out = {}
    for a in attributes:
        prefix = f"{a.tag}:"
        out[a.name] = (
            records.filter(pl.col("item").str.starts_with(prefix))
            .select("caseid", pl.col("item").str.strip_prefix(prefix).alias(a.name))
            .sort("caseid", a.name)
        )
    return out


def _encode(
    items: pl.DataFrame, caseids: pl.Series, constraints: tuple[tuple[str, ...], ...]
) -> tuple[ItemSets, pl.Series]:
    """CSR item sets over ``caseids`` (record i = caseids[i]) and the item strings by code."""
    names = items["item"].unique().sort()
    code = items.join(pl.DataFrame({"item": names, "code": pl.int_range(len(names), eager=True)}), on="item")
    rec = code.join(
        pl.DataFrame({"caseid": caseids, "rec": pl.int_range(len(caseids), eager=True)}), on="caseid"
    )
    rec = rec.sort("rec", "code")
    counts = np.bincount(rec["rec"].to_numpy(), minlength=len(caseids))
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    constraint = np.full(len(names), -1, dtype=np.int64)
    index = {name: i for i, name in enumerate(names.to_list())}
    for u, members in enumerate(constraints):
        for item in members:
            if item in index:
                constraint[index[item]] = u
    sets = ItemSets(ptr, rec["code"].to_numpy().astype(np.int64), len(names), constraint)
    return sets, names


def disassociate(
    cases: pl.DataFrame, /, *, config: DisassociationConfig, rng: np.random.Generator
) -> Disassociated:
    """DISASSOCIATION (Fig. 6): HORPART, VERPART per cluster, refining; the released tables.

    Args:
        cases: ``caseid`` and the list columns of ``config.attributes``; one row per case.
        config: The parameters.
        rng: Draws the subrecord positions of every chunk (nothing else is random).

    Returns:
        The released form (module docstring). Every (case, item) of the input lies in exactly one
        place: a record chunk of its cluster, a shared chunk spanning it, or its cluster's item chunk.

    Raises:
        InputError: a missing column, duplicate caseids, or between 1 and k − 1 cases.
    """
    items = case_items(cases, attributes=config.attributes)
    caseids = cases["caseid"].cast(pl.Int64).sort()
    if caseids.n_unique() != len(caseids):
        raise InputError("duplicate caseids (expected one row per case)", field="caseid")
    if 0 < len(caseids) < config.k:
        raise InputError(f"{len(caseids)} cases, fewer than k = {config.k}: k^m-anonymity is infeasible")
    sets, names = _encode(items, caseids, config.constraints)
    clusters = horpart(sets, max_cluster_size=config.cluster_limit, k=config.k)
    cluster_of = np.zeros(sets.n_records, dtype=np.int64)
    local = np.zeros(sets.n_records, dtype=np.int64)
    for c, records in enumerate(clusters):
        cluster_of[records] = c
        local[records] = np.arange(records.size)
    owner = np.repeat(np.arange(sets.n_records, dtype=np.int64), np.diff(sets.ptr))
    all_masks = cluster_masks(cluster_of[owner], local[owner], sets.codes, len(clusters))
    assigned: list[tuple[int, int, int]] = []
    item_chunks: list[dict[int, int]] = []
    for c, masks in enumerate(all_masks):
        chunks, rest = verpart(masks, k=config.k, m=config.m, constraint=sets.constraint)
        assigned.extend((c, t, i) for i, chunk in enumerate(chunks) for t in chunk)
        item_chunks.append({t: masks[t] for t in rest})
    sizes = [int(r.size) for r in clusters]
    shared: list[SharedChunk] = []
    if config.refine:
        placed: list[set[int]] = [set() for _ in clusters]
        for c, t, _ in assigned:
            placed[c].add(t)
        shared = refine(
            item_chunks,
            placed,
            sizes,
            k=config.k,
            m=config.m,
            constraint=sets.constraint,
            max_joint=config.max_joint,
        )
    return assemble(
        k=config.k,
        m=config.m,
        caseids=caseids,
        names=names,
        sets=sets,
        clusters=clusters,
        assigned=assigned,
        item_chunks=item_chunks,
        shared=shared,
        rng=rng,
    )


@dataclass(frozen=True, slots=True)
class DisassociationResult(MethodResult):
    """A :class:`MethodResult` that also carries the disassociated item lists.

    Attributes:
        released: The released tables of the drug and reaction lists.
    """

    released: Disassociated


def disassociation(
    cases: pl.DataFrame,
    /,
    *,
    config: DisassociationConfig,
    rng: np.random.Generator,
    trees: QidHierarchies | None = None,
) -> DisassociationResult:
    """Registry entry: disassociate the item lists, check k^m, release the QIDs as points.

    ``privacy`` holds the :meth:`KmReport.figures` of :func:`check_km` plus the counts of clusters,
    record chunks, shared chunks and item chunk items; ``release`` is the partition frame of the raw
    QIDs (points, one QID-group per distinct tuple), since the method leaves demographics alone.
    """
    start = time.perf_counter()
    check_cases(cases, "disassociation", lists=tuple(a.column for a in config.attributes))
    trees = QidHierarchies.default() if trees is None else trees
    released = disassociate(cases, config=config, rng=rng)
    report = check_km(released)
    age, wt = case_points(cases)
    caseid = cases["caseid"].cast(pl.Int64).to_numpy()
    release = point_release(caseid, age, sex_codes(cases, trees.sex_tree), wt, trees)
    privacy = {
        **report.figures(),
        "clusters": released.clusters.height,
        "record_chunks": released.record_chunks.select("cluster_id", "chunk_id").n_unique(),
        "shared_chunks": released.shared_clusters["shared_id"].n_unique(),
        "item_chunk_items": released.item_chunk.height,
    }
    return DisassociationResult(
        method="disassociation",
        release=release,
        privacy=privacy,
        parameters=config.describe(),
        seconds=time.perf_counter() - start,
        released=released,
    )
