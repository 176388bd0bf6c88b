"""Top-down (Mondrian-style) partitioning for models checked on whole groups (SPEC §7).

LeFevre, DeWitt & Ramakrishnan 2006 ("Mondrian multidimensional k-anonymity") start from one group
holding every case and cut it recursively while both halves stay valid; Lin, Yang & Wang 2016 used
such a top-down method for multi-sensitive l-diversity. The validity checked here is the model's
:class:`~faers_anon.models.base.Requirements`: at least ``min_size`` cases, and at least ``distinct``
distinct values of each attribute in ``attributes`` (values keyed ``"<attribute>:<value>"``).

A cut, for one group:

1. Each QID's loss in the group is its part of IL(g) / |g| (SPEC §6): h(LCA)/h(T) for age and sex
   (hierarchy-based; a mix of missing and known reaches the root, loss 1), and for weight the
   normalized range, 1 for a mix of missing and known, 0 when all missing. QIDs are tried from the
   largest loss down; a QID with loss 0 is not cut.
2. A QID mixing missing and known values is cut between the two (missing generalizes only to the
   root, so the mix costs full loss). Otherwise age and sex, being hierarchy-based, are cut
   *strictly* between distinct nodes, at the node boundary nearest the median (cases sorted by the
   node's [lo, hi) for age, by code for sex); weight, hierarchy-free, is cut *relaxed* at the median
   rank of the cases' midpoints (ties may fall on both sides, LeFevre et al.'s relaxed partitioning).
3. The cut is allowed when both halves are valid; the first allowed cut is taken, else the group is
   final. Every final group is valid whenever the whole data set is (if not, one invalid group).

Deterministic: cases are ordered by caseid, sorts are stable, and there is no random draw (``rng`` is
accepted for the common signature and not used). The groups' QIDs are generalized as the greedy
engine does (age and sex at the LCA, weight as [min, max] or null), in the partition frame of
docs/architecture.md. Cost: O(n log n) per tree level, about log2(n / min_size) levels.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon.algorithms._frame import partition_frame
from faers_anon.algorithms.types import Partition, QidHierarchies
from faers_anon.anonymize.partition import PARTITION_SCHEMA
from faers_anon.errors import ConfigError, InputError
from faers_anon.models.base import GroupModel, Requirements
from hierarchies import Hierarchy

__all__ = ["mondrian"]

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]


def _float(frame: pl.DataFrame, column: str) -> F64:
    return frame.get_column(column).cast(pl.Float64).fill_null(np.nan).to_numpy()


class _Data:
    """Per-case QID codes and the attributes' values in CSR form (row order = caseid order)."""

    def __init__(
        self, frame: pl.DataFrame, probabilities: pl.DataFrame, req: Requirements, h: QidHierarchies
    ):
        n = frame.height
        self.caseid = frame.get_column("caseid").cast(pl.Int64).to_numpy()
        self.trees: list[Hierarchy] = []
        self.codes: list[I64] = []
        self.order_keys: list[F64] = []
        if h.age is not None:
            if h.age.is_numeric:
                codes = h.age.cover(_float(frame, "age_min"), _float(frame, "age_max"))
            else:
                codes = h.age.encode(frame.get_column("age_group").cast(pl.Utf8).to_list())
            self._add_tree(h.age, codes)
        if h.sex is not None:
            self._add_tree(h.sex, h.sex.encode(frame.get_column("sex").cast(pl.Utf8).to_list()))
        self.weight = h.weight
        lo = _float(frame, "wt_min") if h.weight else np.full(n, np.nan)
        hi = _float(frame, "wt_max") if h.weight else np.full(n, np.nan)
        self.lo = np.where(np.isnan(lo), hi, lo)
        self.hi = np.where(np.isnan(hi), lo, hi)
        self.wmiss = np.isnan(self.lo)
        if h.weight_domain is not None:
            span = float(h.weight_domain[1]) - float(h.weight_domain[0])
        elif bool(np.any(~self.wmiss)):
            span = float(np.max(self.hi[~self.wmiss]) - np.min(self.lo[~self.wmiss]))
        else:
            span = 0.0
        self.inv_span = 1.0 / span if span > 0 else 0.0
        self.mid = (self.lo + self.hi) / 2
        index = pl.DataFrame({"caseid": self.caseid, "idx": np.arange(n, dtype=np.int64)})
        self.values: list[tuple[I64, I64]] = []
        for attribute in req.attributes:
            prefix = f"{attribute}:"
            links = (
                probabilities.lazy()
                .filter(pl.col("value").str.starts_with(prefix))
                .select(
                    pl.col("caseid").cast(pl.Int64), pl.col("value").rank("dense").cast(pl.Int64).alias("v")
                )
                .join(index.lazy(), on="caseid", how="inner")
                .sort("idx", "v")
                .collect()
            )
            ptr = np.zeros(n + 1, np.int64)
            np.cumsum(np.bincount(links.get_column("idx").to_numpy(), minlength=n), out=ptr[1:])
            self.values.append((ptr, links.get_column("v").to_numpy()))

    def _add_tree(self, tree: Hierarchy, codes: I64) -> None:
        self.trees.append(tree)
        self.codes.append(codes)
        lo = np.where(np.isnan(tree.lo), np.inf, tree.lo) if tree.is_numeric else np.arange(len(tree.names))
        self.order_keys.append(np.asarray(lo, np.float64)[codes])

    def tree_loss(self, j: int, idx: I64) -> float:
        tree = self.trees[j]
        if tree.height == 0:
            return 0.0
        node = int(tree.lca_by_group(self.codes[j][idx], np.zeros(idx.shape[0], np.int64))[0])
        return float(tree.node_height[node]) / tree.height

    def weight_loss(self, idx: I64) -> float:
        miss = self.wmiss[idx]
        if bool(miss.all()):
            return 0.0
        if bool(miss.any()):
            return 1.0
        return float(self.hi[idx].max() - self.lo[idx].min()) * self.inv_span


def _valid(data: _Data, idx: I64, req: Requirements) -> bool:
    if idx.shape[0] < req.min_size:
        return False
    for ptr, vals in data.values:
        starts, stops = ptr[idx], ptr[idx + 1]
        lengths = stops - starts
        total = int(lengths.sum())
        if total < req.distinct:
            return False
        offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(total)
        if np.unique(vals[offsets]).shape[0] < req.distinct:
            return False
    return True


def _strict_cut(keys: F64) -> int:
    """Position of the boundary between distinct sorted keys nearest the median; 0 when all equal."""
    change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    if change.shape[0] == 0:
        return 0
    return int(change[np.argmin(np.abs(change - keys.shape[0] / 2))])


def _cuts(data: _Data, idx: I64) -> Iterator[tuple[I64, I64]]:
    """Candidate (left, right) cuts of a group, QIDs by decreasing loss (module docstring), lazily."""
    scored: list[tuple[float, int]] = []
    for j in range(len(data.trees)):
        scored.append((data.tree_loss(j, idx), j))
    if data.weight:
        scored.append((data.weight_loss(idx), len(data.trees)))
    for loss, j in sorted(scored, key=lambda s: (-s[0], s[1])):
        if loss <= 0.0:
            continue
        if j < len(data.trees):
            tree = data.trees[j]
            codes = data.codes[j][idx]
            missing = codes == tree.missing
            if bool(missing.any()) and not bool(missing.all()):
                yield idx[~missing], idx[missing]
                continue
            order = np.lexsort((tree.hi[codes] if tree.is_numeric else codes, data.order_keys[j][idx]))
            keys = data.order_keys[j][idx][order] * (len(tree.names) + 1) + codes[order]
        else:
            miss = data.wmiss[idx]
            if bool(miss.any()):
                yield idx[~miss], idx[miss]
                continue
            order = np.argsort(data.mid[idx], kind="stable")
            keys = np.arange(idx.shape[0], dtype=np.float64)
        at = _strict_cut(keys) if j < len(data.trees) else idx.shape[0] // 2
        if 0 < at < idx.shape[0]:
            ordered = idx[order]
            yield ordered[:at], ordered[at:]


def _generalize(data: _Data, group_of: I64, n_groups: int, h: QidHierarchies) -> pl.DataFrame:
    known = np.bincount(group_of, weights=(~data.wmiss).astype(np.float64), minlength=n_groups)
    size = np.bincount(group_of, minlength=n_groups)
    lo = np.full(n_groups, np.inf)
    hi = np.full(n_groups, -np.inf)
    np.minimum.at(lo, group_of, np.where(data.wmiss, np.inf, data.lo))
    np.maximum.at(hi, group_of, np.where(data.wmiss, -np.inf, data.hi))
    return partition_frame(
        data.caseid,
        group_of,
        h,
        nodes=[tree.lca_by_group(data.codes[j], group_of) for j, tree in enumerate(h.trees)],
        wt_known=(known == size) & data.weight,
        wt_lo=lo,
        wt_hi=hi,
    )


def mondrian(
    cases: pl.DataFrame,
    /,
    *,
    probabilities: pl.DataFrame,
    model: GroupModel,
    hierarchies: QidHierarchies,
    rng: np.random.Generator | None = None,
) -> Partition:
    """Partition the cases top-down so that every group satisfies the model's requirements.

    Args:
        cases: one row per caseid: ``caseid``, ``age_min``/``age_max`` (or ``age_group``), ``sex``,
            ``wt_min``/``wt_max`` (the cases.parquet contract).
        probabilities: (caseid, value, p) with values keyed ``"<attribute>:<value>"`` for the
            requirements' ``attributes`` (other rows are ignored; p is not used, only presence).
        model: the privacy model; only ``model.requirements()`` is read (``algorithm = "mondrian"``).
        hierarchies: the QIDs and their trees.
        rng: not used (the algorithm is deterministic); accepted for the engines' common signature.

    Returns:
        The :class:`~faers_anon.algorithms.greedy_cluster.Partition`; ``leftovers``, ``forced`` and
        ``failed_groups`` are 0, ``first_seed`` is -1, ``invalid_groups`` is 1 when the whole data
        set fails the requirements (it is then one group), else 0.

    Raises:
        ConfigError: the model is not a top-down model.
        InputError: a missing column or duplicate caseids.
    """
    req = model.requirements()
    if req.algorithm != "mondrian":
        raise ConfigError(f"mondrian: model {model.name!r} is built by the {req.algorithm} engine")
    needed = ["caseid", *(["wt_min", "wt_max"] if hierarchies.weight else [])]
    needed += ["sex"] if hierarchies.sex is not None else []
    if hierarchies.age is not None:
        needed += ["age_min", "age_max"] if hierarchies.age.is_numeric else ["age_group"]
    missing = [c for c in needed if c not in cases.columns]
    if missing:
        raise InputError(
            f"missing columns {missing} (expected the cases.parquet contract)", path="cases.parquet"
        )
    frame = cases.sort("caseid")
    if frame.height != frame.get_column("caseid").n_unique():
        raise InputError("caseid: duplicate caseids (expected one row per case)", path="cases.parquet")
    if frame.height == 0:
        return Partition(frame=pl.DataFrame(schema=PARTITION_SCHEMA), groups=0, leftovers=0, forced=0,
                         failed_groups=0, invalid_groups=0, first_seed=-1)  # fmt: skip
    data = _Data(frame, probabilities, req, hierarchies)
    everyone = np.arange(frame.height, dtype=np.int64)
    invalid = int(not _valid(data, everyone, req))
    finals: list[I64] = []
    stack = [everyone]
    while stack:
        idx = stack.pop()
        for left, right in () if invalid else _cuts(data, idx):
            if _valid(data, left, req) and _valid(data, right, req):
                stack.extend((right, left))  # left is cut next: groups are numbered depth-first, left first
                break
        else:
            finals.append(idx)
    group_of = np.empty(frame.height, np.int64)
    for gid, idx in enumerate(finals):
        group_of[idx] = gid
    return Partition(
        frame=_generalize(data, group_of, len(finals), hierarchies),
        groups=len(finals),
        leftovers=0,
        forced=0,
        failed_groups=0,
        invalid_groups=invalid,
        first_seed=-1,
    )
