"""(k,l)-anonymity for multiple sensitive attributes (``seeds/k_l_anonymity_multiple_sensitive.txt``).

The model (Definition 5): a table satisfies (k,l)-anonymity when every QID-group ("K Cluster") holds at
least k records and its sensitive tuples ("L Cluster") hold at least l *completely different* tuples:
"two SI attributes tuples are different if and only if on any SI attribute, their corresponding values
are different" (Section 2), and Diverse(L Cluster) counts such tuples. The symbol l is lost in the
extraction (it prints "-diversity", "( k , ) -anonymity"); the two necessary conditions k >= l and
Diverse(all tuples) >= l are kept as stated.

FAERS reading (decisions):

* The sensitive attributes are list columns of ``cases.parquet`` (default indications and reactions;
  ``drug_keys`` may be added), so a case's value on an attribute is a set. Two cases are completely
  different when they share no sensitive value at all: the set-valued form of "different on every
  attribute". Values are compared by the project's canonical key (upper-cased, whitespace collapsed) in
  one namespace across attributes (docs/architecture.md: an attacker learns "headache" whichever table
  it came from), which is stricter than the paper's attribute-by-attribute test. An empty list discloses
  nothing and shares nothing.
* Diverse(g) is the size of the largest set of pairwise completely different cases of g, a maximum
  clique problem; we use greedy sets (cases scanned in some order, each kept when completely different
  from those kept), lower bounds. A cluster is accepted only with such a witness of l cases, so the
  guarantee is never overstated; ``l_achieved`` is the least, over released groups, of the larger of the
  construction's witnesses and a fewest-values-first greedy set (order matters for greedy sets).
* QIDs: age on the MeSH tree (a case's value is the smallest node covering its [age_min, age_max]), sex on
  the sex tree, weight hierarchy-free ([min, max] in kg). Released as the partition frame
  (docs/architecture.md): group LCA nodes, weight [min, max]; mixed missing/known → root.

Generalization cost (Section 4, formula 11; the formula itself is lost, its ingredients are described):
"the generalization range R(v_i, v_j) means the probability to ascertain v_i according to v_j" is 1/R
(R(F, *) = 2, R(day, month) = 30), "the ratio of the height [H(v_i, v_j), the distance between the two
values in the hierarchy] to the whole height" H_i, and "factor c_j^i balances the influence of height and
range". Reconstructed, for a cluster of sz tuples generalized to A_i* on each QID attribute A_i:

    S = Σ_{j=1}^{sz} Σ_{i=1}^{m} c_i · (H(A_i^j, A_i*) / H_i) · R(A_i^j, A_i*)

the product form being the one that reproduces both worked comparisons of the text (13053 → 130** costs
more than 13053 → 1305* and more than F → *). Trees: H = depth(v) − depth(v*), H_i = tree height,
R = value leaves under v* / value leaves under v (``missing`` counts as one leaf). Weight, which has no
tree: H / H_i = (width(v*) − width(v)) / (domain width), R = (width(v*) + u) / (width(v) + u), the number
of u = 1 kg steps covered. The paper's factor per tuple and attribute (c_j^i, all 1 by default) becomes
one factor per attribute (``factors``): nothing in the data tells tuples apart.

Approximation algorithm (Section 4: "establish a graph with n nodes; get all K Clusters with at least l
totally different values on all SI attributes and the whole S on the graph as small as possible", "the
components are accomplished by the aggregation iteration process from 2 to k while guaranteeing the L
Clusters are l-diverse", "similar to [2]", Aggarwal et al.'s O(k)-approximation forest). Rendering:

1. Cases with identical QIDs are joined first (edges of cost 0).
2. Aggregation rounds: every invalid cluster (< k cases or greedy Diverse < l) joins the cluster with
   the least cost increase ΔS = S(C ∪ D) − S(C) − S(D), all clusters of a round at once (the forest's
   "each small component adds its cheapest edge"). Candidates are the clusters of the QID patterns
   nearest in three sort orders (``window`` each side, doubled until one is found) instead of all n
   nodes: the paper's O(kn²) graph is out of reach at 400,000 cases.
3. Decomposition (Aggarwal et al.): a cluster of more than max(2k − 1, 3k − 5) cases is cut in two valid
   contiguous parts (in QID order) at the cut of least total S, while that lowers S.

Deterministic: ``rng`` is accepted for the common interface and not used.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon.algorithms.types import QidHierarchies
from faers_anon.errors import ConfigError
from faers_anon.methods import _kl_kernels as kern
from faers_anon.methods.base import (
    RELEASE_SCHEMA,
    MethodResult,
    check_cases,
    dense_groups,
    sex_codes,
)
from hierarchies import Hierarchy

__all__ = ["KLConfig", "kl_anonymity", "sensitive_codes"]

_SENSITIVE = ("indications", "reactions", "drug_keys")


@dataclass(frozen=True, kw_only=True, slots=True)
class KLConfig:
    """(k,l)-anonymity parameters.

    Args:
        k: Least cases per QID-group, >= 2.
        l: Least completely different cases per group, 1 <= l <= k (the paper's condition k >= l).
        sensitive: Sensitive list columns, distinct, among indications, reactions, drug_keys.
        factors: c_i for (age, sex, weight) in the cost S, each >= 0.
        window: Candidate patterns on each side in each sort order, >= 1.
    """

    k: int = 5
    l: int = 2  # noqa: E741 - the paper's symbol
    sensitive: tuple[str, ...] = ("indications", "reactions")
    factors: tuple[float, float, float] = (1.0, 1.0, 1.0)
    window: int = 8

    def __post_init__(self) -> None:
        for name, low in (("k", 2), ("l", 1), ("window", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ConfigError(f"{name} must be an integer >= {low}; got {v!r}")
        if self.l > self.k:
            raise ConfigError(
                f"l must be <= k={self.k} (a group of k cases holds at most k different ones); got {self.l}"
            )
        if (
            not self.sensitive
            or len(set(self.sensitive)) != len(self.sensitive)
            or not set(self.sensitive) <= set(_SENSITIVE)
        ):
            raise ConfigError(f"sensitive must be distinct names among {_SENSITIVE}; got {self.sensitive!r}")
        if len(self.factors) != 3 or not all(isinstance(c, int | float) and c >= 0 for c in self.factors):
            raise ConfigError(
                f"factors must be three numbers >= 0 for (age, sex, weight); got {self.factors!r}"
            )

    def describe(self) -> dict[str, Any]:
        """Parameters as JSON-serializable data."""
        return {
            "k": self.k,
            "l": self.l,
            "sensitive": list(self.sensitive),
            "factors": list(self.factors),
            "window": self.window,
        }


def sensitive_codes(
    cases: pl.DataFrame, columns: tuple[str, ...]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """CSR of each case's sensitive values: (ptr, codes), codes sorted and unique within a case.

    Values are canonical keys (strip, collapse whitespace, upper case) in one namespace across columns.
    """
    n = cases.height
    parts = [
        cases.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("row"), pl.col(c).alias("value")).explode(
            "value"
        )
        for c in columns
    ]
    long = (
        pl.concat(parts)
        .drop_nulls("value")
        .with_columns(pl.col("value").str.strip_chars().str.replace_all(r"\s+", " ").str.to_uppercase())
        .filter(pl.col("value") != "")
        .with_columns((pl.col("value").rank("dense") - 1).cast(pl.Int64).alias("code"))
        .unique(["row", "code"])
        .sort(["row", "code"])
    )
    counts = np.bincount(long["row"].to_numpy(), minlength=n)
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return ptr, long["code"].to_numpy().astype(np.int64)


def _value_leaves(tree: Hierarchy) -> NDArray[np.float64]:
    """Leaves under each node, `missing` excluded (a leaf itself, `missing` included, counts 1)."""
    out = np.zeros(len(tree), dtype=np.float64)
    for leaf in tree.leaves.tolist():
        if leaf == tree.missing:
            continue
        node = leaf
        while node >= 0:
            out[node] += 1
            node = int(tree.parent[node])
    out[tree.missing] = 1.0
    return np.maximum(out, 1.0)


def _case_rows(
    age: NDArray[np.int64],
    sex: NDArray[np.int64],
    wlo: NDArray[np.float64],
    whi: NDArray[np.float64],
    vl: tuple[NDArray[np.float64], NDArray[np.float64]],
    dp: tuple[NDArray[np.float64], NDArray[np.float64]],
    unit: float,
) -> NDArray[np.float64]:
    """One aggregate row per case (``_kl_kernels.AGG_COLUMNS``)."""
    miss = np.isnan(wlo)
    w = np.where(miss, 0.0, whi - wlo)
    return np.column_stack(
        [
            np.ones(age.size),
            age,
            1 / vl[0][age],
            dp[0][age] / vl[0][age],
            sex,
            1 / vl[1][sex],
            dp[1][sex] / vl[1][sex],
            wlo,
            whi,
            miss.astype(np.float64),
            1 / (w + unit),
            w / (w + unit),
        ]
    )


def kl_anonymity(
    cases: pl.DataFrame, /, *, config: KLConfig, rng: np.random.Generator, trees: QidHierarchies | None = None
) -> MethodResult:
    """The approximation algorithm for (k,l)-anonymity on a cases frame (module docstring).

    Returns:
        The partition frame; privacy: ``k_achieved`` (least group size), ``l_achieved`` (least lower
        bound on Diverse), ``groups``, ``generalization_cost`` (Σ S over the released groups) and
        ``generalization_cost_per_case``.

    Raises:
        ConfigError: fewer than k cases, or fewer than l completely different cases in the whole data
            (the paper's necessary condition: no grouping can then be (k,l)-anonymous).
    """
    del rng
    start = time.perf_counter()
    check_cases(cases, "kl-anonymity", lists=config.sensitive)
    tr = trees or QidHierarchies.default()
    n, k, l = cases.height, config.k, config.l  # noqa: E741
    ptr, codes = sensitive_codes(cases, config.sensitive)
    every = np.arange(n, dtype=np.int64)
    diverse_all = kern.greedy_diverse(every, ptr, codes, l)
    if n < k or diverse_all < l:
        raise ConfigError(
            f"kl-anonymity: {n} cases with {diverse_all} completely different ones found "
            f"(need at least k={k} cases and l={l} completely different ones)"
        )
    num = cases.select(pl.col(c).cast(pl.Float64) for c in ("age_min", "age_max", "wt_min", "wt_max"))
    a_lo, a_hi, wlo, whi = (num[c].to_numpy().astype(np.float64) for c in num.columns)
    age = tr.age_tree.cover(a_lo, a_hi)
    sex = sex_codes(cases, tr.sex_tree)
    vl = (_value_leaves(tr.age_tree), _value_leaves(tr.sex_tree))
    dp = (tr.age_tree.depth.astype(np.float64), tr.sex_tree.depth.astype(np.float64))
    known_w = ~np.isnan(wlo)
    wdom = float(whi[known_w].max() - wlo[known_w].min()) if known_w.any() else 0.0
    par = np.array([tr.age_tree.height, tr.sex_tree.height, wdom, *config.factors, 1.0], dtype=np.float64)
    tables: kern.Tables = (tr.age_tree.lca_table, tr.sex_tree.lca_table, vl[0], dp[0], vl[1], dp[1], par)
    rows = _case_rows(age, sex, wlo, whi, vl, dp, 1.0)

    age_lo = np.nan_to_num(tr.age_tree.lo[age], nan=-1.0)
    age_hi = np.nan_to_num(tr.age_tree.hi[age], nan=-1.0, posinf=1e9)
    w_lo, w_hi = np.nan_to_num(wlo, nan=-1.0), np.nan_to_num(whi, nan=-1.0)
    pattern = dense_groups(sex, age_lo, age_hi, w_lo, w_hi)
    by_pattern = np.argsort(pattern, kind="stable")
    P = int(pattern.max()) + 1
    pat_ptr = np.concatenate([[0], np.cumsum(np.bincount(pattern, minlength=P))]).astype(np.int64)
    first = by_pattern[pat_ptr[:-1]]
    comp = rows[first].copy()
    for c in (kern.N, kern.A1A, kern.A2A, kern.A1S, kern.A2S, kern.NMISS, kern.B1, kern.B2):
        comp[:, c] = np.add.reduceat(rows[by_pattern, c], pat_ptr[:-1])
    keys = (sex[first], age_lo[first], age_hi[first], w_lo[first], w_hi[first])
    orders = np.stack(
        [
            np.lexsort((keys[4], keys[3], keys[2], keys[1], keys[0])),
            np.lexsort((keys[0], keys[4], keys[3], keys[2], keys[1])),
            np.lexsort((keys[2], keys[1], keys[0], keys[4], keys[3])),
        ]
    ).astype(np.int64)
    positions = np.empty_like(orders)
    for o in range(orders.shape[0]):
        positions[o, orders[o]] = np.arange(P)
    root, witness = kern.aggregate(
        comp,
        pat_ptr,
        by_pattern.astype(np.int64),
        orders,
        positions,
        config.window,
        k,
        l,
        ptr,
        codes,
        tables,
    )

    case_root = root[pattern]
    roots = np.unique(root)
    if int(witness[roots].min()) < l:
        raise ConfigError(
            f"kl-anonymity: the greedy search found fewer than l={l} completely different cases in the "
            "whole data (lower l, or add sensitive values)"
        )
    order = np.lexsort((every, positions[0][pattern], case_root)).astype(np.int64)
    starts = np.concatenate([[0], np.flatnonzero(np.diff(case_root[order])) + 1, [n]]).astype(np.int64)
    labels, proof = kern.decompose(order, starts, witness[roots], rows, k, l, ptr, codes, tables)
    return _release(cases, labels, proof, age, sex, wlo, whi, rows, (ptr, codes), tables, tr, config, start)


def _release(
    cases: pl.DataFrame,
    labels: NDArray[np.int64],
    proof: NDArray[np.int64],
    age: NDArray[np.int64],
    sex: NDArray[np.int64],
    wlo: NDArray[np.float64],
    whi: NDArray[np.float64],
    rows: NDArray[np.float64],
    sensitive: tuple[NDArray[np.int64], NDArray[np.int64]],
    tables: kern.Tables,
    tr: QidHierarchies,
    config: KLConfig,
    start: float,
) -> MethodResult:
    """Generalize each cluster, merge clusters with identical generalizations, measure k, l and S.

    A released group's Diverse is at least the larger of its clusters' proofs (witnesses found while
    building them) and the greedy set over its cases taken fewest sensitive values first (the usual
    low-degree-first order for independent sets); ``l_achieved`` is the least such bound.
    """
    ptr, codes = sensitive
    G = int(labels.max()) + 1
    g_age = tr.age_tree.lca_by_group(age, labels)
    g_sex = tr.sex_tree.lca_by_group(sex, labels)
    miss = np.bincount(labels, weights=np.isnan(wlo).astype(np.float64), minlength=G)
    g_wmin = np.full(G, np.inf)
    g_wmax = np.full(G, -np.inf)
    known = ~np.isnan(wlo)
    np.minimum.at(g_wmin, labels[known], wlo[known])
    np.maximum.at(g_wmax, labels[known], whi[known])
    any_missing = miss > 0
    g_wmin[any_missing] = np.nan
    g_wmax[any_missing] = np.nan
    group = dense_groups(g_age[labels], g_sex[labels], g_wmin[labels], g_wmax[labels])
    R = int(group.max()) + 1
    order = np.lexsort((np.diff(ptr), group)).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(np.bincount(group, minlength=R))]).astype(np.int64)
    diverse = kern.diverse_by_group(order, starts, ptr, codes)
    cluster_group = np.zeros(G, dtype=np.int64)
    cluster_group[labels] = group
    np.maximum.at(diverse, cluster_group, proof)
    costs = kern.group_costs(rows, group, R, tables)
    node = g_age[labels]
    age_known = node != tr.age_tree.missing
    hi = tr.age_tree.hi[node]
    sex_names = tr.sex_tree.decode(g_sex[labels]).astype(object)
    sex_names[g_sex[labels] == tr.sex_tree.missing] = None
    release = pl.DataFrame(
        {
            "caseid": cases["caseid"].cast(pl.Int64),
            "group_id": pl.Series(group, dtype=pl.Int64),
            "age_group": pl.Series(tr.age_tree.decode(node).tolist(), dtype=pl.String),
            "age_min": pl.Series(np.where(age_known, tr.age_tree.lo[node], np.nan)).fill_nan(None),
            "age_max": pl.Series(np.where(age_known & np.isfinite(hi), hi, np.nan)).fill_nan(None),
            "sex": pl.Series(sex_names.tolist(), dtype=pl.String),
            "wt_min": pl.Series(g_wmin[labels]).fill_nan(None),
            "wt_max": pl.Series(g_wmax[labels]).fill_nan(None),
        }
    ).select([pl.col(c).cast(t) for c, t in RELEASE_SCHEMA.items()])
    sizes = np.diff(starts)
    privacy = {
        "k_achieved": int(sizes.min()),
        "l_achieved": int(diverse.min()),
        "groups": R,
        "generalization_cost": float(costs.sum()),
        "generalization_cost_per_case": float(costs.sum() / cases.height),
    }
    return MethodResult("kl-anonymity", release, privacy, config.describe(), time.perf_counter() - start)
