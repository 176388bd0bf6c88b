"""Repair: merge the groups that fail the model until every group satisfies it (SPEC §5, §8: DR = 0).

The paper's stage 2 puts each leftover into the group with least ΔIL' *that stays valid*; it does
not say what happens when no group can take a leftover validly. Our engine then places it where the
excess is least (``Partition.forced``), which leaves invalid groups, and a release with an invalid
group fails verification and is not published. This step closes that gap, after stage 2:

    while some group g is invalid (taken in group order; a still-invalid merge goes to the back):
        among every other group h, merge g into the one with g ∪ h valid and least
            ΔIL(g, h) = IL(g ∪ h) − IL(g) − IL(h)   (SPEC §6 IL, cases as |g|);
        if none is valid, into the one that leaves the least excess
            (Σ_s max(0, σ_s − θ_s·|g ∪ h|) plus the shortfall below k), ties by ΔIL.

Each merge removes one group, so the loop ends; when every θ_s ≥ P(s) and N ≥ k the single group of
all cases is valid (conf = P(s)), so the loop ends with every group valid. Merging is the least
destructive fix: it never moves a case out of a valid group, keeps all reports, and costs only the
generalization the merge needs. A merged group's QID is the LCA of the two groups' nodes (age, sex)
and the union of their weight intervals, with SPEC §5's missing rule (all missing stays missing; a
mix is released at the root, written as null weight, and counts full loss).

Decision: every group is a candidate partner, not the M = 64 nearest by ΔIL as before. In tight
settings the near partners are as saturated as g (θ_s close to the share of several values), so the
M nearest rarely held a valid partner; g then merged where the excess was least, the merged group
was still invalid and kept absorbing neighbours, and the cascade ended in one group at the root.
Measured on the synthetic 100k-case quarter (--on-infeasible raise-theta): k = 10, θ = 0.1 went from
66 groups, NIL 0.93, 41 s in all to 4,920 groups (largest 2,010 cases), NIL 0.56, 17 s; k = 3,
θ = 0.1 from 86 groups, NIL 0.74, repair 33.6 s of 45 s to 5,676 groups, NIL 0.54, repair 1.4 s.
The loop runs in numba (:mod:`._merge`): a full scan costs O(G·(C + |W_g|)) per merge, W_g the few
values g exceeds, against the old M partners' Python dict merges. The trade-off: a valid partner
may be far in QID space (its ΔIL is large), where the old nearest-first rule took a near invalid one
and paid later; at 20k cases k = 10, θ = 0.1 NIL is 0.70 either way, at 100k the cascade dominated.

Departure from the paper, documented: the paper has no repair step; without it, tight θ* (e.g.
θ = 0.2 with every value sensitive) leaves dangerous groups (DR > 0) that MS(k,θ*)-bounding forbids.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon.algorithms._merge import Merging, merge_invalid
from faers_anon.models.base import CONF_TOLERANCE, Requirements
from hierarchies import Hierarchy

__all__ = ["FAST_SUM_BOUND", "over_candidates", "repair_partition"]


def _codes(tree: Hierarchy | None, names: pl.Series) -> NDArray[np.int64]:
    if tree is None:
        return np.zeros(names.len(), np.int64)
    return np.asarray(tree.encode(names.cast(pl.Utf8).to_list()), np.int64)


class _Groups:
    """Per-group totals as numpy arrays, σ_s over the over values W (:mod:`._merge`) as a dense matrix."""

    def __init__(
        self,
        frame: pl.DataFrame,
        cases: pl.DataFrame,
        probabilities: pl.DataFrame,
        *,
        req: Requirements,
        age: Hierarchy | None,
        sex: Hierarchy | None,
        weight: bool,
        weight_domain: tuple[float, float] | None,
    ) -> None:
        rows = (
            cases.select("caseid", pl.col("n_reports").cast(pl.Int64).fill_null(1).alias("rows"))
            if "n_reports" in cases.columns
            else cases.select("caseid", pl.lit(1, pl.Int64).alias("rows"))
        )
        known = cases.select(
            "caseid",
            (pl.col("wt_min").is_not_null() | pl.col("wt_max").is_not_null()).alias("known")
            if weight
            else pl.lit(False).alias("known"),
            pl.coalesce("wt_min", "wt_max").cast(pl.Float64).alias("lo")
            if weight
            else pl.lit(None, pl.Float64).alias("lo"),
            pl.coalesce("wt_max", "wt_min").cast(pl.Float64).alias("hi")
            if weight
            else pl.lit(None, pl.Float64).alias("hi"),
        )
        per_case = (
            frame.select("caseid", "group_id", "age_group", "sex")
            .join(rows, on="caseid")
            .join(known, on="caseid")
        )
        groups = (
            per_case.group_by("group_id")
            .agg(
                pl.len().alias("cases"),
                pl.col("rows").sum(),
                pl.col("age_group").first(),
                pl.col("sex").first(),
                pl.col("known").sum().alias("known"),
                pl.col("lo").min(),
                pl.col("hi").max(),
            )
            .sort("group_id")
        )
        self.ids = groups["group_id"].to_numpy().astype(np.int64)
        self.cases = groups["cases"].to_numpy().astype(np.int64)
        self.rows = groups["rows"].to_numpy().astype(np.int64)
        self.known = groups["known"].to_numpy().astype(np.int64)
        self.lo = groups["lo"].fill_null(np.nan).to_numpy().astype(np.float64)
        self.hi = groups["hi"].fill_null(np.nan).to_numpy().astype(np.float64)
        self.age = _codes(age, groups["age_group"])
        self.sex = _codes(sex, groups["sex"])
        self.trees = (age, sex)
        if weight_domain is not None:
            span = weight_domain[1] - weight_domain[0]
        else:
            lo_all, hi_all = known["lo"].min(), known["hi"].max()
            span = float(hi_all) - float(lo_all) if lo_all is not None and hi_all is not None else 0.0  # type: ignore[arg-type]
        self.span = span if span > 0 else 0.0
        self.into = np.full(self.ids.shape[0], -1, np.int64)
        self.req = req
        self.sig, self.theta = self._over_values(probabilities, per_case, groups)

    def _over_values(
        self, probabilities: pl.DataFrame, per_case: pl.DataFrame, groups: pl.DataFrame
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """σ_s per group (rows in group order) over W, the values some group exceeds, and their θ_s.

        σ is summed in (group, value, caseid) order so that the totals, and the repair, are the same
        on every run; only for the values :func:`over_candidates` may find over (a superset of W).
        """
        req = self.req
        g = self.ids.shape[0]
        if not req.value_caps or not req.thetas:
            return np.zeros((g, 0)), np.zeros(0)
        thetas = pl.DataFrame(
            {"value": list(req.thetas), "theta": list(req.thetas.values())},
            schema={"value": pl.Utf8, "theta": pl.Float64},
        ).with_row_index("vid")
        cap = "rows" if req.cap_unit == "rows" else "cases"
        vid = pl.col("value").replace_strict(
            thetas.get_column("value"), thetas.get_column("vid"), default=None, return_dtype=pl.Int64
        )
        fast = (
            probabilities.lazy()
            .select(pl.col("caseid"), vid.alias("vid"), pl.col("p").cast(pl.Float64))
            .filter(pl.col("vid").is_not_null())
            .join(per_case.lazy().select("caseid", pl.col("group_id").cast(pl.Int64)), on="caseid")
            .collect()
        )
        group = fast.get_column("group_id").to_numpy()
        vids = fast.get_column("vid").to_numpy()
        limit = (
            thetas.get_column("theta").to_numpy()[vids]
            * groups.get_column(cap).to_numpy()[np.searchsorted(self.ids, group)]
            + CONF_TOLERANCE
        )
        ids = over_candidates(group, vids, fast.get_column("p").to_numpy(), limit)
        candidates = thetas.get_column("value").gather(ids)
        sums = (  # the exact σ of the candidates' pairs, as every run sums them
            probabilities.lazy()
            .filter(pl.col("value").is_in(candidates.to_list()))
            .join(thetas.lazy(), on="value")
            .join(per_case.lazy().select("caseid", "group_id"), on="caseid")
            .sort("group_id", "value", "caseid")
            .group_by("group_id", "value", maintain_order=True)
            .agg(pl.col("p").sum().alias("sigma"), pl.col("theta").first())
            .join(groups.lazy().select("group_id", pl.col(cap).alias("cap")), on="group_id")
            .collect()
        )
        over = (
            sums.filter(pl.col("sigma") > pl.col("theta") * pl.col("cap") + CONF_TOLERANCE)
            .get_column("value")
            .unique()
            .sort()
            .to_list()
        )
        column = {v: j for j, v in enumerate(over)}
        sig = np.zeros((g, len(over)))
        if over:
            position = np.searchsorted(self.ids, sums.get_column("group_id").to_numpy())
            col = (
                sums.get_column("value").replace_strict(column, default=-1, return_dtype=pl.Int64).to_numpy()
            )
            keep = col >= 0
            sig[position[keep], col[keep]] = sums.get_column("sigma").to_numpy()[keep]
        return sig, np.array([req.thetas[v] for v in over], np.float64)

    def merge(self) -> tuple[int, int]:
        """Run :func:`._merge.merge_invalid` on the state; returns (merges, groups still invalid)."""
        age_tree, sex_tree = self.trees
        req = self.req
        merges, still = merge_invalid(
            Merging(self.cases, self.rows, self.known, self.lo, self.hi, self.age, self.sex, self.sig),
            self.theta,
            *_tables(age_tree),
            *_tables(sex_tree),
            1.0 / self.span if self.span > 0 else 0.0,
            req.min_size,
            req.size_unit == "rows",
            req.cap_unit == "rows",
            self.into,
        )
        return int(merges), int(still)

    @property
    def alive(self) -> NDArray[np.bool_]:
        return np.asarray(self.into < 0)


FAST_SUM_BOUND = 4.0 * float(np.finfo(np.float64).eps)
"""Per term and per unit of Σ |p|: two orders of summing m terms differ by less than
2 (m − 1) ε Σ |p| (recursive summation; Higham 2002, §4.2), so 4 m ε Σ |p| bounds the difference."""


def over_candidates(group: NDArray[np.int64], value: NDArray[np.int64], p: NDArray[np.float64],
                    limit: NDArray[np.float64]) -> NDArray[np.int64]:  # fmt: skip
    """The value ids some group may exceed, sorted: per row its group, value id (both ≥ 0), p and the
    pair's bound θ · cap + CONF_TOLERANCE; σ of a (group, value) pair is summed in any order (numpy,
    by a sort on the pair), and a pair is kept when σ > bound − FAST_SUM_BOUND · m · σ (m its rows):
    every pair over the bound in the exact (group, value, caseid) order is kept.
    """
    if value.shape[0] == 0:
        return np.zeros(0, np.int64)
    key = group * (int(value.max()) + 1) + value
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    sigma = np.add.reduceat(p[order], starts)
    terms = np.diff(np.r_[starts, key.shape[0]])
    near = sigma > limit[order][starts] - FAST_SUM_BOUND * terms * sigma
    return np.unique(value[order][starts][near])


def _tables(tree: Hierarchy | None) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """LCA table and normalized node heights of a tree (a one-node stand-in when the QID is unused)."""
    if tree is None:
        return np.zeros((1, 1), np.int64), np.zeros(1)
    heights = tree.node_height / tree.height if tree.height > 0 else np.zeros(len(tree.names))
    return np.ascontiguousarray(tree.lca_table, np.int64), np.asarray(heights, np.float64)


def repair_partition(
    frame: pl.DataFrame,
    cases: pl.DataFrame,
    probabilities: pl.DataFrame,
    /,
    *,
    requirements: Requirements,
    age: Hierarchy | None,
    sex: Hierarchy | None,
    weight: bool,
    weight_domain: tuple[float, float] | None = None,
) -> tuple[pl.DataFrame, int, int]:
    """Merge invalid groups into their best partners until every group is valid (module docstring).

    Args:
        frame: the partition frame (docs/architecture.md) with group ids and generalized QIDs.
        cases: the cases frame (``caseid``, ``wt_min``, ``wt_max``, optionally ``n_reports``).
        probabilities: P(s | c) as (caseid, value, p).
        requirements: the model's requirements (min size and unit, value caps θ_s).
        age, sex, weight, weight_domain: the QIDs as the engine used them.

    Returns:
        (frame with dense group ids and the merged groups' QIDs, merges made, groups still invalid).
    """
    state = _Groups(
        frame,
        cases,
        probabilities,
        req=requirements,
        age=age,
        sex=sex,
        weight=weight,
        weight_domain=weight_domain,
    )
    merges, still = state.merge()
    return _rebuild(frame, state), merges, still


def _rebuild(frame: pl.DataFrame, state: _Groups) -> pl.DataFrame:
    """Relabel groups densely (old id order) and write each surviving group's QIDs onto its cases."""
    root = np.arange(state.ids.shape[0])
    while True:  # follow merge chains: a merged group points (through ``into``) at the group it joined
        up = state.into[root]
        if not bool(np.any(up >= 0)):
            break
        root = np.where(up >= 0, up, root)
    dense = np.cumsum(state.alive) - 1
    mapping = pl.DataFrame(
        {"group_id": state.ids, "new": dense[root]}, schema={"group_id": pl.Int64, "new": pl.Int64}
    )
    age_tree, sex_tree = state.trees
    alive = np.flatnonzero(state.alive)
    age_codes, sex_codes = state.age[alive], state.sex[alive]
    n = alive.shape[0]
    known = (state.known[alive] == state.cases[alive]) & (state.known[alive] > 0)
    qids = pl.DataFrame(
        {
            "new": np.arange(n, dtype=np.int64),
            "age_group": age_tree.names[age_codes].astype(str).tolist() if age_tree else [None] * n,
            "age_min": age_tree.lo[age_codes] if age_tree else np.full(n, np.nan),
            "age_max": np.where(np.isinf(age_tree.hi[age_codes]), np.nan, age_tree.hi[age_codes])
            if age_tree
            else np.full(n, np.nan),
            "sex": [None if c == sex_tree.missing else str(sex_tree.names[c]) for c in sex_codes]
            if sex_tree
            else [None] * n,
            "wt_min": np.where(known, state.lo[alive], np.nan),
            "wt_max": np.where(known, state.hi[alive], np.nan),
        },
        schema_overrides={"age_group": pl.Utf8, "sex": pl.Utf8},
    ).with_columns(pl.col(pl.Float64).fill_nan(None))
    return (
        frame.select("caseid", "group_id")
        .join(mapping, on="group_id", how="left")
        .drop("group_id")
        .join(qids, on="new", how="left")
        .rename({"new": "group_id"})
        .select(frame.columns)
        .cast(frame.schema)
    )
