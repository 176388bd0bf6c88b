"""The number of versions a case has in a release, made common to its group (issue 18 item 1).

The release keeps a case's reports as DEMO rows under one case pseudonym (SPEC §4), so the number of
DEMO rows of a case, its *version count* c ≥ 1, is a released field: an attacker who knows that a
target was reported three times finds it among the cases with three rows. Decision (the lead's): keep
every report row wherever the count can be made common to the group, by making the count
group-constant, decided before the engine:

1. **A mandatory stratum.** Each case's version count in the release is a stratum of its own
   (:func:`version_strata`): the engine never puts cases with different counts in one group. It is
   applied before and above the optional seriousness and sex strata
   (:mod:`faers_anon.anonymize.strata`, which skip a split that is unsafe); it is never skipped.
2. **Top-coding** (:func:`top_coded`). Count c's stratum *stands* when it has ≥ k cases and every
   protected value s has Σ_{c' ∈ stratum} P(s | c') / |stratum| ≤ θ_s (the test of
   :func:`faers_anon.anonymize.strata._over_theta`). From the highest count down, a stratum that does
   not stand is carried into the next lower count: its cases keep only their latest c'' versions,
   c'' the next lower count whose stratum, with every carried case added, stands (the sums are
   additive: n = Σ n_c, S_s = Σ S_{c,s} over the counts carried). The lowest count (1 when any case
   has one report) takes whatever is carried and is never tested: its cases are never touched.
3. **Frozen groups** of a ledgered series (:attr:`AnonymizeConfig.frozen`, placed before the engine by
   :mod:`faers_anon.series.step`) keep their members; each member keeps its latest m versions,
   m = min_{c ∈ bundle} versions(c) (:func:`frozen_kept`).
4. **Left out** (:func:`left_out_reports`): a case keeping c'' < c versions loses its c − c'' oldest
   reports (FDA's version order, as :mod:`faers_anon.io.annotate` ``is_latest``: caseversion, then
   fda_dt, then primaryid, missing lowest), with every child row (DRUG, REAC, INDI, OUTC, THER, RPSR)
   of those reports (the writer leaves them out: :mod:`faers_anon.release.writer_draft`). The latest
   version is never left out, so the signals (one row per case at its latest version) do not change.
   Counted in the manifest (``counts.superseded_left_out``) and report.json, so every input report is
   accounted for: read = out + quarantined + deleted + left out.

The engine's P(s | c) and QID ranges stay those of all the case's versions (SPEC §4's super-record): the
released generalization covers the kept versions, and dropping reports only lowers P(s | c), so the
bound computed with every version holds for the rows released.

Scope: the default model path (case-unit models: the greedy engine, Mondrian) and the ledgered path.
Report-unit models (k-anonymity, (α,k)-anonymity) group reports, not cases: a case's rows may lie in
several groups and k counts rows, so there is no case group whose count could be made constant; they
keep every report. Methods (``--method``: the comparison systems of SPEC §7) partition the cases on
their own, without strata: a method's release publishes each case's latest report only
(:func:`latest_only`: every count top-coded to 1, decided before the method runs), so the count is 1 for
every case (kl-anonymity's groups are case groups the verifier checks at k).

Realistic data: counts 1 / 2 / 3 = 379,585 / 15,938 / 4,077 cases at 400k, 2,556 / 353 / 89 on the
demo: every stratum stands and nothing is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

if TYPE_CHECKING:
    from faers_anon.anonymize.config import AnonymizeConfig

__all__ = [
    "VersionPlan",
    "frozen_kept",
    "latest_only",
    "left_out_reports",
    "plan_versions",
    "run_plan",
    "splits_versions",
    "top_coded",
    "version_counts",
    "version_strata",
]

_ORDER = ("caseversion", "fda_dt", "primaryid")
"""FDA's version order (highest latest), nulls lowest: :func:`faers_anon.io.annotate._with_is_latest`."""
_NO_REPORTS = pl.DataFrame(schema={"primaryid": pl.Int64, "caseid": pl.Int64})


@dataclass(frozen=True, slots=True)
class VersionPlan:
    """What :func:`plan_versions` decided before the engine.

    Attributes:
        kept: (caseid, versions, kept): each case's version count in the input and the count it keeps.
        left_out: the raw (primaryid, caseid) of the reports left out of the release.
    """

    kept: pl.DataFrame
    left_out: pl.DataFrame

    def counts(self) -> dict[str, int]:
        """``{"reports": …, "cases": …}`` left out (cases: those with at least one report left out)."""
        return {"reports": self.left_out.height, "cases": self.left_out.get_column("caseid").n_unique()}


NO_PLAN = VersionPlan(pl.DataFrame(schema={"caseid": pl.Int64, "versions": pl.Int64, "kept": pl.Int64}),
                      _NO_REPORTS)  # fmt: skip
"""Nothing left out (report-unit models, methods, a run without DEMO rows)."""


def latest_only(demo: pl.DataFrame) -> VersionPlan:
    """Every case keeps its latest version only (a method's release, module docstring): c'' = 1."""
    kept = version_counts(demo).with_columns(pl.lit(1, pl.Int64).alias("kept"))
    return VersionPlan(kept, left_out_reports(demo, kept))


def version_counts(demo: pl.DataFrame) -> pl.DataFrame:
    """(caseid, versions): the number of DEMO rows of each case (its reports in the release)."""
    return demo.group_by("caseid").agg(pl.len().cast(pl.Int64).alias("versions")).sort("caseid")


def top_coded(
    counts: pl.DataFrame, probabilities: pl.DataFrame, thetas: Mapping[str, float], *, k: int
) -> pl.DataFrame:
    """(caseid, versions, kept): ``counts`` with the count each case keeps (module docstring, item 2).

    With n_c the cases of count c and S_{c,s} = Σ_{case of count c} P(s | case), from the highest
    count down a carry (n, S) += (n_c, S_{c,·}); the counts carried go to c when n ≥ k and
    S_s / n ≤ θ_s for every protected s, else on; the lowest count takes what is left. Only the counts
    above the lowest are summed (a join of P(s | c) with their cases, grouped by count and value), and
    the loop runs once per distinct count, on a (counts × values) matrix.
    """
    levels = sorted(set(counts.get_column("versions").to_list()), reverse=True)
    if len(levels) < 2:
        return counts.with_columns(pl.col("versions").alias("kept"))
    upper = counts.filter(pl.col("versions") > levels[-1])
    bounds = pl.DataFrame({"value": list(thetas), "theta": list(thetas.values())},
                          schema={"value": pl.String, "theta": pl.Float64})  # fmt: skip
    sums = (
        probabilities.join(upper, on="caseid")
        .join(bounds, on="value")
        .group_by("versions", "value")
        .agg(pl.col("p").sum())
    )
    values = sums.get_column("value").unique().sort()
    column = {v: i for i, v in enumerate(values.to_list())}
    row = {c: i for i, c in enumerate(levels[:-1])}
    matrix = np.zeros((len(row), len(column)))
    if sums.height:
        rows = sums.get_column("versions").replace_strict(row, return_dtype=pl.Int64).to_numpy()
        cols = sums.get_column("value").replace_strict(column, return_dtype=pl.Int64).to_numpy()
        matrix[rows, cols] = sums.get_column("p").to_numpy()
    theta = np.array([thetas[v] for v in column], dtype=np.float64)
    sizes = dict(upper.group_by("versions").len().iter_rows())
    target: dict[int, int] = {}
    pending: list[int] = []
    n, total = 0, np.zeros(len(column))
    for level in levels[:-1]:
        n, total = n + sizes[level], total + matrix[row[level]]
        pending.append(level)
        if n >= k and not (total / n > theta).any():
            target |= dict.fromkeys(pending, level)
            pending, n, total = [], 0, np.zeros(len(column))
    target |= dict.fromkeys([*pending, levels[-1]], levels[-1])
    kept = pl.col("versions").replace_strict(target, return_dtype=pl.Int64)
    return counts.with_columns(kept.alias("kept"))


def frozen_kept(counts: pl.DataFrame, bundles: pl.DataFrame) -> pl.DataFrame:
    """(caseid, versions, kept) of the frozen cases: every member of a bundle (``bundles``: caseid,
    bundle) keeps m = min over the bundle of its members' version counts (module docstring, item 3)."""
    return (
        bundles.select("caseid", "bundle")
        .join(counts, on="caseid")
        .with_columns(pl.col("versions").min().over("bundle").alias("kept"))
        .select("caseid", "versions", "kept")
    )


def left_out_reports(demo: pl.DataFrame, kept: pl.DataFrame) -> pl.DataFrame:
    """The raw (primaryid, caseid) of the reports a case does not keep: those past its ``kept`` latest
    versions in FDA's version order (:data:`_ORDER`, descending, missing lowest; ``is_latest`` first)."""
    cut = kept.filter(pl.col("kept") < pl.col("versions")).select("caseid", "kept")
    if cut.is_empty():
        return _NO_REPORTS
    keys = [c for c in ("is_latest", *_ORDER) if c in demo.columns]
    rows = demo.select("primaryid", "caseid", *(c for c in keys if c != "primaryid")).join(cut, on="caseid")
    ranked = rows.sort(["caseid", *keys], descending=[False, *([True] * len(keys))], nulls_last=True)
    rank = pl.int_range(pl.len()).over("caseid")
    return (
        ranked.filter(rank >= pl.col("kept"))
        .select(pl.col("primaryid").cast(pl.Int64), pl.col("caseid").cast(pl.Int64))
        .sort("primaryid")
    )


def plan_versions(
    demo: pl.DataFrame,
    probabilities: pl.DataFrame,
    thetas: Mapping[str, float],
    *,
    k: int,
    frozen: pl.DataFrame | None = None,
) -> VersionPlan:
    """Each case's kept version count and the reports left out (module docstring, items 2–4).

    Args:
        demo: the DEMO rows (reports.parquet: ``primaryid``, ``caseid``, the version order's columns).
        probabilities: P(s | c) (caseid, value, p) of the run.
        thetas: θ_s of the protected values.
        frozen: the frozen bundles (caseid, bundle) of a ledgered release, placed around the engine.
    """
    counts = version_counts(demo)
    if frozen is None or frozen.is_empty():
        kept = top_coded(counts, probabilities, thetas, k=k)
    else:
        fresh = counts.join(frozen.select("caseid"), on="caseid", how="anti")
        kept = pl.concat([top_coded(fresh, probabilities, thetas, k=k), frozen_kept(counts, frozen)])
    return VersionPlan(kept, left_out_reports(demo, kept))


def splits_versions(config: AnonymizeConfig, demo: pl.DataFrame | None) -> bool:
    """Whether a run splits by version count: a model fed cases, with the DEMO rows (module docstring,
    scope), some case of which has several reports (with one report each there is one count: the
    engine may take the whole cases frame)."""
    from faers_anon.anonymize.units import model_unit  # units imports the models' registry

    if demo is None or config.method is not None or model_unit(config.model) != "cases":
        return False
    return not demo.get_column("caseid").is_unique().all()


def run_plan(
    config: AnonymizeConfig,
    demo: pl.DataFrame | None,
    probabilities: pl.DataFrame,
    thetas: Mapping[str, float],
) -> VersionPlan:
    """:func:`plan_versions` of a run (its k, its frozen bundles: ``config.frozen``), or :data:`NO_PLAN`
    when the run does not split by version count (:func:`splits_versions`)."""
    if demo is None or not splits_versions(config, demo):
        return NO_PLAN
    frozen = None if config.frozen is None else pl.read_parquet(config.frozen, columns=["caseid", "bundle"])
    return plan_versions(demo, probabilities, thetas, k=config.k, frozen=frozen)


def version_strata(cases: pl.DataFrame, plan: VersionPlan) -> list[pl.DataFrame]:
    """``cases`` split by the version count each keeps, lowest count first (module docstring, item 1);
    a case the plan does not know (none in a release) joins the lowest count."""
    kept = cases.join(plan.kept.select("caseid", "kept"), on="caseid", how="left", maintain_order="left")
    low = plan.kept.get_column("kept").min() if plan.kept.height else 1
    kept = kept.with_columns(pl.col("kept").fill_null(low))
    levels = sorted(set(kept.get_column("kept").to_list()))
    return [kept.filter(pl.col("kept") == level).drop("kept") for level in levels]
