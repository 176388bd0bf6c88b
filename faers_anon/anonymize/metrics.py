"""Utility and privacy metrics of a partition (SPEC §8; Lin, Yang & Wang 2016, eq. 1, 9, 10).

Plain functions over frames: the partition frame (docs/architecture.md), the cases frame (raw QIDs)
and P(s | c). They recompute everything from the frames, independently of the clustering kernel.

:func:`measure` is the one place a run's figures are computed, for a model, a method
(:func:`faers_anon.anonymize.pipeline.run`) and every row of ``faers-anon evaluate``:

* NIL, per QID too, on the algorithm's own groups and units (reports for a report-unit model): IL
  depends on a group's raw values (all weights missing lost nothing, a mix of missing and known lost
  everything, though both publish an empty weight), so it is measured on the groups the algorithm
  made; with field QIDs (the column policy's other DEMO qids) NIL is the mean over every QID.
* The group-size distribution and the share in groups of exactly k, on the same groups.
* DR, the dangerous groups, the number of groups and the smallest group on the *released QID
  tuples* (:func:`faers_anon.anonymize.partition.released_groups`): groups that end up with the same
  generalized QIDs are one group to an attacker. A group's members for DR are the distinct cases
  with a unit in it (:func:`faers_anon.anonymize.partition.case_members`), each with the P(s | c) of
  its whole super-record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from faers_anon.algorithms.types import QIDS, QidHierarchies
from faers_anon.anonymize.partition import case_members, released_groups, unit_view
from faers_anon.models.base import CONF_TOLERANCE

__all__ = [
    "Measures",
    "dangerous_groups",
    "dangerous_ratio",
    "group_confidence",
    "group_sizes",
    "information_loss",
    "measure",
    "nil",
    "nil_by_qid",
    "share_exactly_k",
    "with_field_nil",
]


def _node_heights(names: list[str], heights: list[int], height: int) -> pl.DataFrame:
    norm = [h / height if height > 0 else 0.0 for h in heights]
    return pl.DataFrame({"node": names, "h": norm}, schema={"node": pl.Utf8, "h": pl.Float64})


def information_loss(
    partition: pl.DataFrame, cases: pl.DataFrame, /, *, hierarchies: QidHierarchies
) -> pl.DataFrame:
    """IL(g) per group and its part per QID.

    IL(g) = |g| · (Σ_i (max N_i,g − min N_i,g) / (max N_i − min N_i) + Σ_j h(C_j, g) / h(C_j))
    Source: Lin, Yang & Wang 2016, Definition 4 (eq. 1); SPEC §6. |g| counts distinct cases.
    Categorical parts read the released node (``age_group``; ``sex`` with null = `missing`, a leaf).
    Weight (hierarchy-free) is recomputed from the raw [wt_min, wt_max] of the group's cases: all
    known → range / domain range; all missing → 0 (nothing generalized); a mix → 1 (full loss, SPEC §5).
    The domain range is ``hierarchies.weight_domain`` or the data's; an empty range gives 0.

    Returns:
        (group_id, cases, il_age, il_sex, il_weight, il), il in [0, |g| · |QID|]; the parts of QIDs not
        in ``hierarchies`` are 0.
    """
    frame = partition.select("caseid", "group_id", "age_group", "sex").join(
        cases.select("caseid", "wt_min", "wt_max"), on="caseid", how="left"
    )
    frame = frame.with_columns(
        pl.coalesce("wt_min", "wt_max").alias("_lo"), pl.coalesce("wt_max", "wt_min").alias("_hi")
    )
    zero = pl.lit(0.0)
    age = zero
    if hierarchies.age is not None:
        t = hierarchies.age
        lookup = _node_heights(t.names.astype(str).tolist(), t.node_height.tolist(), t.height)
        frame = frame.join(lookup.rename({"node": "age_group", "h": "_h_age"}), on="age_group", how="left")
        age = pl.col("_h_age").first().fill_null(0.0)
    sex = zero
    if hierarchies.sex is not None:
        t = hierarchies.sex
        lookup = _node_heights(t.names.astype(str).tolist(), t.node_height.tolist(), t.height)
        frame = frame.with_columns(pl.col("sex").fill_null(t.name(t.missing)).alias("_sex")).join(
            lookup.rename({"node": "_sex", "h": "_h_sex"}), on="_sex", how="left"
        )
        sex = pl.col("_h_sex").first().fill_null(0.0)
    weight = zero
    if hierarchies.weight:
        if hierarchies.weight_domain is not None:
            span = float(hierarchies.weight_domain[1]) - float(hierarchies.weight_domain[0])
        else:
            bounds = frame.select(pl.col("_hi").max().fill_null(0.0) - pl.col("_lo").min().fill_null(0.0))
            span = float(bounds.item())
        known = pl.col("_lo").is_not_null()
        width = (pl.col("_hi").max() - pl.col("_lo").min()) / span if span > 0 else zero
        weight = pl.when(known.all()).then(width).when(known.any()).then(pl.lit(1.0)).otherwise(zero)
    per = frame.group_by("group_id").agg(
        pl.col("caseid").n_unique().alias("cases"), age.alias("a"), sex.alias("s"), weight.alias("w")
    )
    return (
        per.select(
            "group_id",
            "cases",
            (pl.col("cases") * pl.col("a")).alias("il_age"),
            (pl.col("cases") * pl.col("s")).alias("il_sex"),
            (pl.col("cases") * pl.col("w")).alias("il_weight"),
        )
        .with_columns((pl.col("il_age") + pl.col("il_sex") + pl.col("il_weight")).alias("il"))
        .sort("group_id")
    )


def nil(losses: pl.DataFrame, /, *, qids: int) -> float:
    """NIL(D*) = Σ_g IL(g) / (N · |QID|), N = number of cases (SPEC §8).

    The paper's eq. 9 divides by the number of groups while claiming a [0, 1] range; dividing by the
    cases makes the claim true. Returns a value in [0, 1]: 0 = no loss, 1 = everything at the root;
    0.0 for an empty partition (nothing was generalized).
    """
    n = int(losses.get_column("cases").sum()) if losses.height else 0
    if n == 0 or qids <= 0:
        return 0.0
    return float(losses.get_column("il").sum()) / (n * qids)


def nil_by_qid(losses: pl.DataFrame, /) -> dict[str, float]:
    """Σ_g IL_j(g) / N per QID j (each in [0, 1]); 0.0 for every QID of an empty partition."""
    n = int(losses.get_column("cases").sum()) if losses.height else 0
    return {q: (float(losses.get_column(f"il_{q}").sum()) / n if n else 0.0) for q in QIDS}


def group_confidence(partition: pl.DataFrame, probabilities: pl.DataFrame, /) -> pl.DataFrame:
    """conf(q → s, E) = Σ_{c∈q} P(s | c) / |q| per group and value (Definition 1; SPEC §5).

    Returns:
        (group_id, value, conf), one row per pair some case of the group reaches; conf in (0, 1].
    """
    sizes = partition.group_by("group_id").agg(pl.col("caseid").n_unique().alias("_n"))
    return (
        partition.select("caseid", "group_id")
        .join(probabilities.select("caseid", "value", "p"), on="caseid", how="inner")
        .group_by("group_id", "value")
        .agg(pl.col("p").sum().alias("_sigma"))
        .join(sizes, on="group_id")
        .select("group_id", "value", (pl.col("_sigma") / pl.col("_n")).alias("conf"))
        .sort("group_id", "value")
    )


def dangerous_groups(
    partition: pl.DataFrame, probabilities: pl.DataFrame, thresholds: pl.DataFrame, /
) -> int:
    """The number of dangerous groups: conf(q → s, E) > θ_s + 1e-9 for some s (SPEC §8, eq. 10).

    ``thresholds`` is (value, theta); unlisted values have θ = 1 and are never dangerous (a value listed
    twice takes its smaller θ). Groups are the frame's ``group_id`` (the released QID tuples:
    :func:`faers_anon.anonymize.partition.released_groups`). conf as :func:`group_confidence`, summed on
    integers: the listed values numbered (an Enum of their texts), each (group, value) packed into one
    key group_id · |values| + code.
    """
    listed = thresholds.group_by("value").agg(pl.col("theta").min()).drop_nulls("value").sort("value")
    width = listed.height
    code = pl.Enum(listed.get_column("value"))
    coded = probabilities.select(
        "caseid", pl.col("value").cast(code, strict=False).to_physical().alias("_v"), "p"
    ).drop_nulls("_v")
    rows = partition.select("caseid", "group_id").join(coded, on="caseid")
    if width == 0 or rows.height == 0:
        return 0
    key = pl.col("group_id").cast(pl.UInt64) * width + pl.col("_v").cast(pl.UInt64)
    sums = rows.group_by(key.alias("_key")).agg(pl.col("p").sum().alias("_sigma"))
    sizes = partition.group_by("group_id").agg(pl.col("caseid").n_unique().alias("_n"))
    conf = sums.select(
        (pl.col("_key") // width).cast(partition.schema["group_id"]).alias("group_id"),
        (pl.col("_key") % width).alias("_v"),
        "_sigma",
    ).join(sizes, on="group_id")
    theta = listed.get_column("theta").to_numpy()[conf.get_column("_v").to_numpy().astype(np.int64)]
    over = conf.get_column("_sigma").to_numpy() / conf.get_column("_n").to_numpy() > theta + CONF_TOLERANCE
    return conf.filter(pl.Series(over)).get_column("group_id").n_unique()


def dangerous_ratio(
    partition: pl.DataFrame, probabilities: pl.DataFrame, thresholds: pl.DataFrame, /
) -> float:
    """DR = dangerous groups / groups (:func:`dangerous_groups`; SPEC §8, eq. 10).

    Returns a value in [0, 1]; 0.0 for an empty partition (no group, so none is dangerous).
    """
    groups = partition.get_column("group_id").n_unique()
    if groups == 0:
        return 0.0
    return dangerous_groups(partition, probabilities, thresholds) / groups


def group_sizes(partition: pl.DataFrame, /) -> pl.DataFrame:
    """Group-size distribution: (size = distinct cases, groups, cases), sorted by size."""
    return (
        partition.group_by("group_id")
        .agg(pl.col("caseid").n_unique().alias("size"))
        .group_by("size")
        .agg(pl.len().cast(pl.Int64).alias("groups"))
        .with_columns((pl.col("size").cast(pl.Int64) * pl.col("groups")).alias("cases"))
        .sort("size")
    )


def share_exactly_k(partition: pl.DataFrame, /, *, k: int) -> float:
    """Share of cases that sit in groups of exactly k distinct cases, in [0, 1]; 0.0 when empty."""
    sizes = group_sizes(partition)
    total = int(sizes.get_column("cases").sum()) if sizes.height else 0
    if total == 0:
        return 0.0
    return int(sizes.filter(pl.col("size") == k).get_column("cases").sum()) / total


@dataclass(frozen=True, kw_only=True, slots=True)
class Measures:
    """The figures of one partition (module docstring: which groups each is measured on).

    Attributes:
        nil: NIL in [0, 1] over every QID (field QIDs included); nil_by_qid: per QID, each in [0, 1].
        dr: DR in [0, 1]; dangerous_groups: released groups with some conf(q → s, E) > θ_s.
        groups: released QID groups; k_achieved: units in the smallest of them (0 when empty);
        n_units: the algorithm's units (cases, or reports for a report-unit model).
        group_sizes: (size, groups, cases) of the algorithm's groups; share_k: share of cases in
            groups of exactly k of them.
    """

    nil: float
    nil_by_qid: dict[str, float]
    dr: float
    dangerous_groups: int
    groups: int
    k_achieved: int
    n_units: int
    group_sizes: pl.DataFrame
    share_k: float


def measure(
    frame: pl.DataFrame,
    raw_units: pl.DataFrame,
    probabilities: pl.DataFrame,
    thresholds: pl.DataFrame,
    /,
    *,
    hierarchies: QidHierarchies,
    k: int,
    field_nil: Mapping[str, float] | None = None,
) -> Measures:
    """Every figure of a partition frame (module docstring); the one metrics path of a run.

    Args:
        frame: the partition frame as the algorithm made it (one row per case, or per report with
            ``primaryid``), before the field QIDs are generalized.
        raw_units: the algorithm's units with their raw QIDs, keyed by unit id in ``caseid``.
        probabilities: P(s | c) of the cases (caseid, value, p).
        thresholds: θ* as (value, theta).
        hierarchies: the QIDs NIL is measured on (age, sex, weight; fields are in ``field_nil``).
        k: the k of ``share_k``.
        field_nil: NIL per field QID (:func:`faers_anon.io.qid_fields.generalize_fields`); NIL is then
            (NIL · |QID| + Σ field NIL) / (|QID| + fields), the mean over every QID.
    """
    units = unit_view(frame)
    losses = information_loss(units, raw_units, hierarchies=hierarchies)
    names = tuple(q for q in QIDS if q in hierarchies.names)
    released = released_groups(frame)
    sizes = unit_view(released).group_by("group_id").len().get_column("len")
    groups = int(sizes.len())
    dangerous = dangerous_groups(case_members(released), probabilities, thresholds)
    measured = Measures(
        nil=nil(losses, qids=len(names)),
        nil_by_qid={q: v for q, v in nil_by_qid(losses).items() if q in names},
        dr=dangerous / groups if groups else 0.0,
        dangerous_groups=dangerous,
        groups=groups,
        k_achieved=int(sizes.min()) if groups else 0,  # type: ignore[arg-type]
        n_units=units.height,
        group_sizes=group_sizes(units),
        share_k=share_exactly_k(units, k=k),
    )
    return with_field_nil(measured, field_nil or {})


def with_field_nil(measured: Measures, field_nil: Mapping[str, float], /) -> Measures:
    """``measured`` (of the QIDs in its ``nil_by_qid``, n of them) with the NIL of the field QIDs:
    NIL = (NIL · n + Σ field NIL) / (n + fields), and each field's NIL listed (:func:`measure`)."""
    fields = dict(field_nil)
    if not fields:
        return measured
    n = len(measured.nil_by_qid)
    overall = (measured.nil * n + sum(fields.values())) / (n + len(fields))
    return replace(measured, nil=overall, nil_by_qid=measured.nil_by_qid | fields)
