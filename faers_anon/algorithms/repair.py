"""Repair: merge the groups that fail the model until every group satisfies it (SPEC §5, §8: DR = 0).

The paper's stage 2 puts each leftover into the group with least ΔIL' *that stays valid*; it does
not say what happens when no group can take a leftover validly. Our engine then places it where the
excess is least (``Partition.forced``), which leaves invalid groups, and a release with an invalid
group fails verification and is not published. This step closes that gap, after stage 2:

    while some group g is invalid:
        rank every other group h by ΔIL(g, h) = IL(g ∪ h) − IL(g) − IL(h)   (SPEC §6 IL, cases as |g|)
        among the M nearest, merge g into the first h with g ∪ h valid;
        if none is valid, merge it into the one that leaves the least excess
            (Σ_s max(0, σ_s − θ_s·|g ∪ h|) plus the shortfall below k), ties by ΔIL.

Each merge removes one group, so the loop ends; when every θ_s ≥ P(s) and N ≥ k the single group of
all cases is valid (conf = P(s)), so the loop ends with every group valid. Merging is the least
destructive fix: it never moves a case out of a valid group, keeps all reports, and costs only the
generalization the merge needs. A merged group's QID is the LCA of the two groups' nodes (age, sex)
and the union of their weight intervals, with SPEC §5's missing rule (all missing stays missing; a
mix is released at the root, written as null weight, and counts full loss).

Departure from the paper, documented: the paper has no repair step; without it, tight θ* (e.g.
θ = 0.2 with every value sensitive) leaves dangerous groups (DR > 0) that MS(k,θ*)-bounding forbids.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon.models.base import CONF_TOLERANCE, Requirements
from hierarchies import Hierarchy

__all__ = ["repair_partition"]

_NEAREST = 64  # M: merge partners checked for validity per invalid group, nearest (least ΔIL) first


def _codes(tree: Hierarchy | None, names: pl.Series) -> NDArray[np.int64]:
    if tree is None:
        return np.zeros(names.len(), np.int64)
    return np.asarray(tree.encode(names.cast(pl.Utf8).to_list()), np.int64)


def _loss(tree: Hierarchy | None, codes: NDArray[np.int64]) -> NDArray[np.float64]:
    if tree is None or tree.height == 0:
        return np.zeros(codes.shape[0])
    return np.asarray(tree.node_height[codes] / tree.height, np.float64)


class _Groups:
    """Per-group running totals as numpy arrays; σ_s per group as dicts (sparse)."""

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
        self.alive = np.ones(self.ids.shape[0], np.bool_)
        self.req = req
        position = {int(g): i for i, g in enumerate(self.ids)}
        thetas = dict(req.thetas) if req.value_caps else {}
        self.theta = thetas
        self.sigma: list[dict[str, float]] = [{} for _ in self.ids]
        if thetas:
            sums = (
                probabilities.lazy()
                .filter(pl.col("value").is_in(list(thetas)))
                .join(per_case.lazy().select("caseid", "group_id"), on="caseid")
                .group_by("group_id", "value")
                .agg(pl.col("p").sum())
                .collect()
            )
            for group_id, value, total in sums.iter_rows():
                self.sigma[position[int(group_id)]][value] = float(total)

    def loss(
        self,
        age: NDArray[np.int64],
        sex: NDArray[np.int64],
        known: NDArray[np.int64],
        size: NDArray[np.int64],
        lo: NDArray[np.float64],
        hi: NDArray[np.float64],
    ) -> NDArray[np.float64]:
        """Per-case loss L of groups (IL = |g|·L): tree heights plus the weight term with SPEC §5's rule."""
        age_tree, sex_tree = self.trees
        width = np.where(self.span > 0, (hi - lo) / (self.span or 1.0), 0.0)
        weight = np.where(known == size, np.nan_to_num(width), np.where(known == 0, 0.0, 1.0))
        return _loss(age_tree, age) + _loss(sex_tree, sex) + weight

    def merged(self, g: int, hs: NDArray[np.int64]) -> tuple[NDArray[np.int64], ...]:
        age_tree, sex_tree = self.trees
        n = hs.shape[0]
        age = age_tree.lca_pairs(np.full(n, self.age[g]), self.age[hs]) if age_tree else np.zeros(n, np.int64)
        sex = sex_tree.lca_pairs(np.full(n, self.sex[g]), self.sex[hs]) if sex_tree else np.zeros(n, np.int64)
        return np.asarray(age, np.int64), np.asarray(sex, np.int64)

    def size(self, i: int, unit: str) -> int:
        return int(self.rows[i] if unit == "rows" else self.cases[i])

    def excess(self, sigma: dict[str, float], cases: int, rows: int) -> float:
        """How far a group with these totals is from valid (0 when valid)."""
        req = self.req
        size = rows if req.size_unit == "rows" else cases
        cap = rows if req.cap_unit == "rows" else cases
        total = float(max(0, req.min_size - size))
        for value, s in sigma.items():
            total += max(0.0, s - self.theta[value] * cap - CONF_TOLERANCE)
        return total

    def valid(self, i: int) -> bool:
        return self.excess(self.sigma[i], int(self.cases[i]), int(self.rows[i])) == 0.0


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
    """Merge invalid groups into their nearest groups until every group is valid (module docstring).

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
    invalid = [i for i in range(state.ids.shape[0]) if not state.valid(i)]
    merges = 0
    while invalid:
        g = invalid.pop(0)
        if not state.alive[g] or state.valid(g):
            continue
        others = np.flatnonzero(state.alive)
        others = others[others != g]
        if others.shape[0] == 0:
            break
        age_m, sex_m = state.merged(g, others)
        size_m = state.cases[g] + state.cases[others]
        known_m = state.known[g] + state.known[others]
        lo_m = np.fmin(state.lo[g], state.lo[others])
        hi_m = np.fmax(state.hi[g], state.hi[others])
        loss_m = state.loss(age_m, sex_m, known_m, size_m, lo_m, hi_m)
        il_g = state.cases[g] * state.loss(
            state.age[[g]], state.sex[[g]], state.known[[g]], state.cases[[g]], state.lo[[g]], state.hi[[g]]
        )
        il_h = state.cases[others] * state.loss(
            state.age[others],
            state.sex[others],
            state.known[others],
            state.cases[others],
            state.lo[others],
            state.hi[others],
        )
        delta = size_m * loss_m - il_g - il_h
        order = np.lexsort((others, delta))[:_NEAREST]
        best, best_key = -1, (np.inf, np.inf)
        for j in order:
            h = int(others[j])
            sigma = dict(state.sigma[h])
            for value, s in state.sigma[g].items():
                sigma[value] = sigma.get(value, 0.0) + s
            excess = state.excess(sigma, int(size_m[j]), int(state.rows[g] + state.rows[h]))
            key = (excess, float(delta[j]))
            if key < best_key:
                best, best_key = int(j), key
            if excess == 0.0:
                break
        h = int(others[best])
        for value, s in state.sigma[g].items():
            state.sigma[h][value] = state.sigma[h].get(value, 0.0) + s
        state.age[h], state.sex[h] = age_m[best], sex_m[best]
        state.cases[h] += state.cases[g]
        state.rows[h] += state.rows[g]
        state.known[h] += state.known[g]
        state.lo[h], state.hi[h] = lo_m[best], hi_m[best]
        state.alive[g] = False
        state.ids[g] = state.ids[h]
        merges += 1
        if not state.valid(h):
            invalid.append(h)
    return (
        _rebuild(frame, state),
        merges,
        sum(1 for i in np.flatnonzero(state.alive) if not state.valid(int(i))),
    )


def _rebuild(frame: pl.DataFrame, state: _Groups) -> pl.DataFrame:
    """Relabel groups densely (old id order) and write each surviving group's QIDs onto its cases."""
    original = frame.get_column("group_id").unique().sort().to_numpy()
    target = np.arange(state.ids.shape[0])
    # follow merge chains: a dead group points (through ids) at the group it merged into
    parent = {int(original[i]): int(state.ids[i]) for i in range(target.shape[0])}
    position = {int(g): i for i, g in enumerate(original)}

    def root(g: int) -> int:
        while not state.alive[position[g]]:
            g = parent[g]
        return g

    survivors = [int(original[i]) for i in np.flatnonzero(state.alive)]
    dense = {g: k for k, g in enumerate(survivors)}
    mapping = pl.DataFrame(
        {"group_id": original.astype(np.int64), "new": [dense[root(int(g))] for g in original]},
        schema={"group_id": pl.Int64, "new": pl.Int64},
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
