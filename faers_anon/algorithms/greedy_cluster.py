"""Greedy clustering of case super-records into QID-groups (Lin, Yang & Wang 2016, Algorithms 1–2; SPEC §6).

:func:`greedy_cluster` turns the cases frame (cases.parquet contract) and P(s | c) into the partition
frame of docs/architecture.md. The numba kernel (:mod:`._kernel`) runs both stages; this module
encodes frames into arrays and decodes the groups' generalized QIDs:

* age: hierarchy-based. A case's node is ``tree.cover(age_min, age_max)`` of its super-record on a
  numeric tree (the MeSH tree), or its ``age_group`` node name on a categorical tree (the paper's
  Figure 1 tree of Example 2); missing age is the `missing` leaf. The group is released at the LCA.
* sex: hierarchy-based on the sex tree (F, M → ``*``; `missing`); null in the frame when the group is
  all missing.
* weight: hierarchy-free. The group is released as [min wt_min, max wt_max] when every case is known;
  all missing → released null with 0 loss; a mix → released null (SPEC §5 releases the root, which for
  a hierarchy-free attribute is "any weight", written as null) and counted as full loss (1) in IL.

Design of the candidate search and its trade-off: :mod:`faers_anon.algorithms._search`. Cases are
compressed into QID patterns and classes; candidates are visited nearest-first in QID space and each
considered one gets the paper's exact ΔIL' = ΔIL·PR. The search stops exactly when no unvisited
candidate can beat the best (its ΔIL bound already exceeds the best ΔIL'), or after ``candidates`` = M
exact evaluations once one is feasible, or after ``scan_limit`` evaluations. The trade-off: the cut can
only miss a farther candidate (larger ΔIL) whose smaller privacy risk would have won; in exchange a
search costs O(classes + M·|S_r|) instead of O(N), so a quarter costs O(N) searches of bounded cost.
Stage 2 searches groups through their members' QID neighbours with the same exact stop. A group that
cannot be completed (no feasible candidate within ``scan_limit``) is dissolved and its cases become
leftovers. Deterministic: cases are ordered by caseid and the only random draw is the first seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon.algorithms import _kernel as kernel
from faers_anon.algorithms._encode import build_cases, build_pool, build_tables
from faers_anon.algorithms._group import loss_per_case, new_group, risk
from faers_anon.algorithms._pool import Cases, Pool, Tables
from faers_anon.algorithms._search import Scratch, Store, add_pooled
from faers_anon.algorithms.repair import repair_partition
from faers_anon.errors import ConfigError, InputError
from faers_anon.models.base import GroupModel, Requirements
from hierarchies import Hierarchy, mesh_age_tree, sex_tree

__all__ = ["Partition", "QidHierarchies", "greedy_cluster", "score_candidates"]

PARTITION_SCHEMA = {
    "caseid": pl.Int64,
    "group_id": pl.Int64,
    "age_group": pl.Utf8,
    "age_min": pl.Float64,
    "age_max": pl.Float64,
    "sex": pl.Utf8,
    "wt_min": pl.Float64,
    "wt_max": pl.Float64,
}


@dataclass(frozen=True, kw_only=True, slots=True)
class QidHierarchies:
    """The QIDs and their hierarchies. ``None`` / ``False`` leaves an attribute out of the QID.

    Attributes:
        age: the age tree (numeric: cases' [age_min, age_max] are covered; categorical: the cases frame
            needs an ``age_group`` column of node names).
        sex: the sex tree (cases' ``sex`` names a node: F, M, ``*``, or null for missing).
        weight: whether weight (hierarchy-free, wt_min/wt_max) is a QID.
        weight_domain: (min, max) normalizing the weight term; default the data's own range.
    """

    age: Hierarchy | None
    sex: Hierarchy | None
    weight: bool = True
    weight_domain: tuple[float, float] | None = None

    @classmethod
    def default(cls) -> QidHierarchies:
        """MeSH age tree, sex tree, weight (SPEC §5)."""
        return cls(age=mesh_age_tree(), sex=sex_tree(), weight=True)

    @property
    def trees(self) -> tuple[Hierarchy, ...]:
        """The categorical QIDs' trees, age first."""
        return tuple(t for t in (self.age, self.sex) if t is not None)

    @property
    def count(self) -> int:
        """|QID|."""
        return len(self.trees) + int(self.weight)


@dataclass(frozen=True, kw_only=True, slots=True)
class Partition:
    """The engine's output: the partition frame and what happened on the way.

    Attributes:
        frame: one row per caseid (docs/architecture.md, "The partition frame").
        groups: number of groups G.
        leftovers: cases placed by stage 2.
        forced: leftovers no group could take validly (placed where the excess was least).
        failed_groups: stage-1 groups dissolved because no feasible candidate was found.
        invalid_groups: groups that fail the model after the repair (0 unless the data as a whole
            cannot satisfy it: fewer than k cases, or some θ_s below its share).
        first_seed: caseid of the random first seed.
        merged_groups: merges made by :mod:`faers_anon.algorithms.repair` to make invalid groups valid.
    """

    frame: pl.DataFrame
    groups: int
    leftovers: int
    forced: int
    failed_groups: int
    invalid_groups: int
    first_seed: int
    merged_groups: int = 0


@dataclass(frozen=True, slots=True)
class _Encoded:
    caseid: NDArray[np.int64]
    pool: Pool
    tab: Tables
    cases: Cases
    req: NDArray[np.int64]
    n_values: int


def _require(frame: pl.DataFrame, columns: list[str]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(
            f"missing columns {missing} (expected the cases.parquet contract)", path="cases.parquet"
        )


def _float(frame: pl.DataFrame, column: str) -> NDArray[np.float64]:
    return frame.get_column(column).cast(pl.Float64).fill_null(np.nan).to_numpy()


def _encode(
    cases: pl.DataFrame, probabilities: pl.DataFrame, req: Requirements, h: QidHierarchies
) -> _Encoded:
    _require(cases, ["caseid"])
    frame = cases.sort("caseid")
    n = frame.height
    caseid = frame.get_column("caseid").cast(pl.Int64).to_numpy()
    if n != np.unique(caseid).shape[0]:
        raise InputError("caseid: duplicate caseids (expected one row per case)", path="cases.parquet")
    columns: list[NDArray[np.int64]] = []
    if h.age is not None:
        if h.age.is_numeric:
            _require(frame, ["age_min", "age_max"])
            columns.append(h.age.cover(_float(frame, "age_min"), _float(frame, "age_max")))
        else:
            _require(frame, ["age_group"])
            columns.append(h.age.encode(frame.get_column("age_group").cast(pl.Utf8).to_list()))
    if h.sex is not None:
        _require(frame, ["sex"])
        columns.append(h.sex.encode(frame.get_column("sex").cast(pl.Utf8).to_list()))
    cat = np.stack(columns, axis=1) if columns else np.zeros((n, 0), np.int64)
    if h.weight:
        _require(frame, ["wt_min", "wt_max"])
        lo, hi = _float(frame, "wt_min"), _float(frame, "wt_max")
        hi = np.where(np.isnan(hi), lo, hi)
        lo = np.where(np.isnan(lo), hi, lo)
        wmiss = np.isnan(lo)
    else:
        lo = hi = np.full(n, np.nan)
        wmiss = np.ones(n, np.bool_)
    rows = (
        frame.get_column("n_reports").cast(pl.Int64).fill_null(1).to_numpy()
        if "n_reports" in frame.columns
        else np.ones(n, np.int64)
    )
    values = pl.DataFrame(
        {"value": list(req.thetas.keys()), "theta": list(req.thetas.values())},
        schema={"value": pl.Utf8, "theta": pl.Float64},
    ).with_row_index("vid")
    index = pl.DataFrame({"caseid": caseid, "idx": np.arange(n, dtype=np.int64)})
    links = (
        probabilities.lazy()
        .select(pl.col("caseid").cast(pl.Int64), pl.col("value").cast(pl.Utf8), pl.col("p").cast(pl.Float64))
        .join(values.lazy().select("value", "vid"), on="value", how="inner")
        .join(index.lazy(), on="caseid", how="inner")
        .sort("idx", "vid")
        .collect()
    )
    idx = links.get_column("idx").to_numpy()
    val_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(idx, minlength=n), out=val_ptr[1:])
    kernel_cases = build_cases(
        rows,
        val_ptr,
        links.get_column("vid").cast(pl.Int32).to_numpy(),
        links.get_column("p").to_numpy(),
        values.get_column("theta").to_numpy(),
    )
    req_arr = np.array(
        [
            req.min_size,
            req.size_unit == "rows",
            req.value_caps,
            req.cap_unit == "rows",
            req.risk == "eta",
            req.min_size,
        ],
        np.int64,
    )
    return _Encoded(
        caseid=caseid,
        pool=build_pool(cat, wmiss, lo, hi, rows),
        tab=build_tables(h.trees, lo, hi, wmiss, h.weight_domain),
        cases=kernel_cases,
        req=req_arr,
        n_values=max(values.height, 1),
    )


def _decode(enc: _Encoded, store: Store, n_groups: int, h: QidHierarchies) -> pl.DataFrame:
    """The partition frame: per group generalized QIDs, joined to cases by group_of."""
    cat = store.cat[:n_groups]
    w = store.w[:n_groups]
    col = 0
    groups: dict[str, object] = {"group_id": np.arange(n_groups, dtype=np.int64)}
    null = np.full(n_groups, np.nan)
    if h.age is not None:
        codes = cat[:, col]
        col += 1
        groups["age_group"] = h.age.names[codes].astype(str).tolist()
        groups["age_min"] = h.age.lo[codes]
        hi = h.age.hi[codes]
        groups["age_max"] = np.where(np.isinf(hi), np.nan, hi)
    else:
        groups["age_group"] = [None] * n_groups
        groups["age_min"] = groups["age_max"] = null
    if h.sex is not None:
        codes = cat[:, col]
        names = h.sex.names[codes].astype(object)
        names[codes == h.sex.missing] = None
        groups["sex"] = names.tolist()
    else:
        groups["sex"] = [None] * n_groups
    known = (w[:, 0] > 0) & (w[:, 1] == 0) if h.weight else np.zeros(n_groups, np.bool_)
    groups["wt_min"] = np.where(known, w[:, 2], np.nan)
    groups["wt_max"] = np.where(known, w[:, 3], np.nan)
    per_group = pl.DataFrame(groups).with_columns(pl.col(pl.Float64).fill_nan(None))
    per_case = pl.DataFrame({"caseid": enc.caseid, "group_id": store.group_of.copy()})
    return per_case.join(per_group, on="group_id", how="left").select(
        [pl.col(c).cast(t) for c, t in PARTITION_SCHEMA.items()]
    )


def _run(
    enc: _Encoded, first: int, candidates: int, scan_limit: int
) -> tuple[Store, int, int, int, int, int]:
    """Both stages and the final check; returns (store, groups, leftovers, forced, failed, invalid)."""
    n = enc.caseid.shape[0]
    n_cls = enc.pool.cls_start.shape[0]
    n_cat = enc.tab.lca.shape[0]
    sc = Scratch(
        np.empty(n_cls),
        np.empty(n_cls, np.int64),
        np.empty(n_cls),
        np.empty(n_cls, np.bool_),
        np.empty(n_cls, np.int64),
        np.empty(n_cls, np.int64),
    )
    store = Store(
        np.full(n, -1, np.int64),
        np.empty(n, np.int64),
        np.empty(n, np.int64),
        np.empty(n, np.int64),
        np.full(n, -1, np.int64),
        np.full(n, -1, np.int64),
        np.empty((n, n_cat), np.int64),
        np.empty((n, 4)),
        np.empty((n, 2), np.int64),
        np.empty(n),
        np.zeros((n, enc.cases.freq_val.shape[0])),
    )
    full = Pool._make(a.copy() for a in enc.pool)  # stage 2 streams over every case; stage 1 empties its pool
    g = new_group(n_cat, enc.n_values)
    single = new_group(n_cat, enc.n_values)
    leftovers = np.empty(n, np.int64)
    args = (enc.tab, enc.cases, enc.req, g)
    n_groups, n_left, filled, failed = kernel.stage1(
        enc.pool, *args, sc, store, first, candidates, scan_limit, leftovers
    )
    n_groups, forced = kernel.stage2(
        full, *args, single, sc, store, n_groups, filled, leftovers, n_left, candidates, scan_limit
    )
    invalid = kernel.count_invalid(full, *args, store, n_groups)
    return store, int(n_groups), int(n_left), int(forced), int(failed), int(invalid)


def greedy_cluster(
    cases: pl.DataFrame,
    /,
    *,
    probabilities: pl.DataFrame,
    model: GroupModel,
    hierarchies: QidHierarchies,
    rng: np.random.Generator,
    candidates: int = 64,
    scan_limit: int = 4096,
) -> Partition:
    """Partition the cases into QID-groups that satisfy ``model`` (stage 1 + stage 2 of Lin et al. 2016).

    Args:
        cases: one row per caseid: ``caseid``, ``age_min``/``age_max`` (or ``age_group``), ``sex``,
            ``wt_min``/``wt_max``, optionally ``n_reports`` (rows per case, default 1).
        probabilities: P(s | c) as (caseid, value, p); values the model does not protect are ignored.
        model: the privacy model; the engine reads only ``model.requirements()``.
        hierarchies: the QIDs and their trees.
        rng: the run's generator; draws the first seed.
        candidates: M, exact ΔIL' evaluations per search once a feasible candidate is known (≥ 1).
        scan_limit: evaluations per search at most, feasible or not (≥ M).

    Returns:
        The :class:`Partition`; every case is in exactly one group.

    Raises:
        ConfigError: candidates < 1 or scan_limit < candidates.
        InputError: a missing column or duplicate caseids.
    """
    if candidates < 1 or scan_limit < candidates:
        raise ConfigError(
            f"candidates must be >= 1 and scan_limit >= candidates; got {candidates}, {scan_limit}"
        )
    enc = _encode(cases, probabilities, model.requirements(), hierarchies)
    n = enc.caseid.shape[0]
    if n == 0:
        return Partition(
            frame=pl.DataFrame(schema=PARTITION_SCHEMA),
            groups=0,
            leftovers=0,
            forced=0,
            failed_groups=0,
            invalid_groups=0,
            first_seed=-1,
        )
    first = int(rng.integers(n))
    store, n_groups, n_left, forced, failed, invalid = _run(enc, first, candidates, scan_limit)
    frame = _decode(enc, store, n_groups, hierarchies)
    merged = 0
    if invalid:
        frame, merged, invalid = repair_partition(
            frame,
            cases,
            probabilities,
            requirements=model.requirements(),
            age=hierarchies.age,
            sex=hierarchies.sex,
            weight=hierarchies.weight,
            weight_domain=hierarchies.weight_domain,
        )
        n_groups -= merged
    return Partition(
        frame=frame,
        merged_groups=merged,
        groups=n_groups,
        leftovers=n_left,
        forced=forced,
        failed_groups=failed,
        invalid_groups=invalid,
        first_seed=int(enc.caseid[first]),
    )


def score_candidates(
    cases: pl.DataFrame,
    /,
    *,
    group: list[int],
    candidates: list[int],
    probabilities: pl.DataFrame,
    model: GroupModel,
    hierarchies: QidHierarchies,
) -> pl.DataFrame:
    """ΔIL, PR and ΔIL' of adding each candidate case to a group, computed by the kernel's own functions.

    For inspection and for the paper's Example 2 test. IL(g) and IL(g ∪ {r}) are reported too.

    Returns:
        (caseid, il_group, il_with, delta_il, pr, delta_il_prime), one row per candidate, in order.
    """
    enc = _encode(cases, probabilities, model.requirements(), hierarchies)
    pos = {int(c): i for i, c in enumerate(enc.caseid)}
    g = new_group(enc.tab.lca.shape[0], enc.n_values)
    for c in group:
        add_pooled(g, enc.pool, enc.tab, enc.cases, pos[c])
    il_group = g.size[0] * loss_per_case(enc.tab, g.cat, g.w)
    rows: list[tuple[int, float, float, float, float, float]] = []
    for c in candidates:
        dil = float(kernel.delta_il(g, enc.pool, enc.tab, pos[c]))
        pr = float(risk(g, enc.cases, enc.req, pos[c]))
        prime = float("inf") if pr == float("inf") else dil * pr
        rows.append((c, il_group, il_group + dil, dil, pr, prime))
    return pl.DataFrame(
        rows, schema=["caseid", "il_group", "il_with", "delta_il", "pr", "delta_il_prime"], orient="row"
    )
