"""The engine run per stratum: the cases split by their version count, then by seriousness, then by sex
(:mod:`.versions`; docs/outcomes.md "Strata"; docs/engine.md "Strata by sex"), each stratum's engine on
one of two threads, one partition.

The version count (the number of reports a case keeps in the release, top-coded where its stratum could
not stand: :func:`.versions.top_coded`) is a mandatory stratum (issue 18 item 1): it is applied first
and never skipped (:func:`version_strata`), because the count is a released field (DEMO rows per case
pseudonym).

A stratum is a set of cases clustered apart: no group mixes strata. The seriousness split makes every
group's outcome known (``serious``/``non-serious``, never ``*``); the sex split (a stratum of ≥
:data:`SEX_SPLIT_MIN` cases) is Mondrian's cut on the QID ``sex``, made because the engine's cost grows
faster than linearly in the cases and two threads run the parts. Either split is made only where every
part has ≥ k cases and no protected value's share inside a part exceeds its θ (MS(k, θ*) stays
satisfiable in every part).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace

import polars as pl

from faers_anon.algorithms._encode import class_basis
from faers_anon.algorithms.types import Partition
from faers_anon.anonymize.versions import VersionPlan, version_strata
from faers_anon.release.stages import Stages

__all__ = [
    "ENGINE_THREADS",
    "SEX_SPLIT_MIN",
    "Strata",
    "seriousness_strata",
    "split_by_sex",
    "versioned_strata",
    "with_outcome_strata",
]

log = logging.getLogger(__name__)

ENGINE_THREADS = 2
"""Threads running the strata's engines (the machine's two cores; more would only share them)."""
SEX_SPLIT_MIN = 20_000
"""A seriousness stratum is split by sex only from this many cases. Stage 1 of a run costs about 2^28
class visits whatever its size (docs/engine.md "Strata by sex"), and a cut into parts of n_i of N cases
costs Σ (n_i / N)^2 of that; below 20,000 cases a stratum's engine takes seconds and the demo stays
whole. 20,000 rather than 50,000 (docs/engine.md): a 100k quarter's 40k non-serious stratum and a
ledgered release's fresh strata (47k and 31k) are cut too, at the same or lower NIL."""


class Strata(list[pl.DataFrame]):
    """The strata's cases frames, and per stratum the cases of the run it is a part of (``basis``: the
    seriousness stratum a sex part was cut from, else its own size; :func:`~faers_anon.algorithms._encode.
    class_basis`)."""

    def __init__(self, frames: list[pl.DataFrame], basis: list[int]) -> None:
        super().__init__(frames)
        self.basis = basis


def _over_theta(
    labelled: pl.DataFrame, probabilities: pl.DataFrame, thetas: Mapping[str, float]
) -> pl.DataFrame:
    """(stratum, value, p, theta, n) of every protected value whose share inside a stratum exceeds θ_s:
    Σ_{c ∈ stratum} P(s | c) / |stratum| > θ_s (``labelled``: caseid, stratum)."""
    bounds = pl.DataFrame(
        {"value": list(thetas), "theta": list(thetas.values())},
        schema={"value": pl.String, "theta": pl.Float64},
    )
    sizes = labelled.group_by("stratum").agg(pl.len().alias("n"))
    return (
        probabilities.join(bounds, on="value")
        .join(labelled, on="caseid")
        .group_by("stratum", "value")
        .agg(pl.col("p").sum(), pl.col("theta").first())
        .join(sizes, on="stratum")
        .filter(pl.col("p") / pl.col("n") > pl.col("theta"))
    )


def split_by_sex(
    labelled: pl.DataFrame,
    probabilities: pl.DataFrame,
    thetas: Mapping[str, float],
    *,
    k: int,
    min_cases: int = SEX_SPLIT_MIN,
) -> pl.DataFrame:
    """``labelled`` (caseid, sex, stratum ≥ 0) with each stratum split by sex where that is safe.

    A stratum is split into its F, M, … and missing-sex cases (Mondrian's cut on the QID ``sex``; the
    parts in order missing, then the values sorted) only when every part has ≥ k cases and no protected
    value's share inside a part exceeds θ_s, and the stratum has ≥ ``min_cases`` cases; else it stays
    whole. Why (docs/engine.md, "Strata by sex"):
    the greedy engine rarely mixes sexes (NIL of sex 0.01 at 400k), and its cost grows faster than
    linearly in the cases, so the parts cost less than their stratum and fill both threads.
    Returns (caseid, stratum) with the new, dense stratum numbers (a stratum's parts in a row).
    """
    sex = pl.col("sex").rank("dense").fill_null(0).cast(pl.Int64)
    fine = labelled.with_columns((pl.col("stratum") * 1_000 + sex).alias("part"))
    sizes = fine.group_by("part").agg(pl.len().alias("n"), pl.col("stratum").first())
    over = _over_theta(fine.select("caseid", pl.col("part").alias("stratum")), probabilities, thetas)
    small = labelled.group_by("stratum").agg(pl.len()).filter(pl.col("len") < min_cases).get_column("stratum")
    bad = pl.concat([sizes.filter(pl.col("n") < k).get_column("part"), over.get_column("stratum")])
    whole = pl.concat([sizes.filter(pl.col("part").is_in(bad.implode())).get_column("stratum"), small])
    part = pl.when(pl.col("stratum").is_in(whole.unique().implode())).then(pl.col("stratum") * 1_000)
    return fine.select("caseid", part.otherwise("part").rank("dense").cast(pl.Int64).sub(1).alias("stratum"))


def seriousness_strata(
    cases: pl.DataFrame,
    demo: pl.DataFrame,
    probabilities: pl.DataFrame,
    thetas: Mapping[str, float],
    *,
    k: int,
    split_min: int = SEX_SPLIT_MIN,
) -> list[pl.DataFrame]:
    """``cases`` split by the seriousness of their OUTC set (docs/outcomes.md, "Strata"), or ``[cases]``.

    Strata: serious (``demo.outcome`` a set of codes), non-serious (``none``), missing (null). Groups
    made inside one stratum are released ``serious``/``other serious`` or ``non-serious``, never ``*``.
    The split is kept only when every non-empty stratum has ≥ k cases and every protected value s
    has its stratum share Σ_{c ∈ stratum} P(s | c) / |stratum| ≤ θ_s (else no grouping inside that
    stratum could meet θ_s: the whole quarter is one stratum, with a logged warning). Each stratum is
    then split by sex where that is safe too (:func:`split_by_sex`, from ``split_min`` cases), when
    ``cases`` has ``sex``: a :class:`Strata` then.

    Args:
        cases: the cases frame (``caseid``, optionally ``sex``).
        demo: DEMO rows with ``caseid`` and ``outcome`` (:func:`faers_anon.io.qid_fields.with_outcome_sets`).
        probabilities: P(s | c) (caseid, value, p) with the outcome pseudo-values.
        thetas: θ_s of the protected values (:attr:`Thresholds.thetas`).
    """
    if "outcome" not in demo.columns:
        return [cases]
    kind = pl.when(pl.col("outcome").is_null()).then(2).when(pl.col("outcome") == "none").then(1).otherwise(0)
    label = demo.select("caseid", kind.alias("stratum")).unique("caseid")
    labelled = cases.join(label, on="caseid", how="left").with_columns(pl.col("stratum").fill_null(2))
    sizes = labelled.group_by("stratum").agg(pl.len().alias("n")).get_column("n")
    if sizes.len() < 2 or int(sizes.min()) < k:  # type: ignore[arg-type]
        return [cases]
    over = _over_theta(labelled.select("caseid", "stratum"), probabilities, thetas)
    if over.height:
        first = over.sort("value").row(0, named=True)
        log.warning("outcome strata not used: %d values over θ inside a stratum (e.g. %s: %.3f > %.3f)",
                    over.height, first["value"], first["p"] / first["n"], first["theta"])  # fmt: skip
        return [cases]
    if "sex" not in cases.columns:
        return _frames(labelled)
    parts = split_by_sex(
        labelled.select("caseid", "sex", "stratum"), probabilities, thetas, k=k, min_cases=split_min
    )
    whole = labelled.select("caseid", pl.col("stratum").alias("whole"), pl.len().over("stratum").alias("n"))
    bases = parts.join(whole, on="caseid").group_by("stratum").agg(pl.col("n").first()).sort("stratum")
    labelled = labelled.drop("stratum").join(parts, on="caseid", how="left", maintain_order="left")
    return Strata(_frames(labelled), bases.get_column("n").to_list())


def versioned_strata(
    cases: pl.DataFrame,
    plan: VersionPlan,
    demo: pl.DataFrame,
    probabilities: pl.DataFrame,
    thetas: Mapping[str, float],
    *,
    k: int,
    outcome: bool,
    split_min: int = SEX_SPLIT_MIN,
) -> Strata:
    """``cases`` split by the version count each keeps (:func:`.versions.version_strata`, lowest count
    first; mandatory, never skipped), then, with ``outcome``, each count's cases by seriousness and sex
    (:func:`seriousness_strata`, which skips an unsafe split inside that count only). One
    :class:`Strata`: the parts in count order, each with its basis: the basis b it has inside its
    count's n_c cases (a sex part's seriousness stratum, else its own size) scaled by √(N / n_c), N the
    cases of the whole (:func:`~faers_anon.algorithms._encode.class_cap`: a part's cap is
    CLASS_WORK · n / basis²). A stage 1 costs about 2^28 class visits whatever its size (docs/engine.md
    "Strata by sex"): unscaled, each count's runs paid that again (realistic 400k release, load 6-9:
    91.4 CPU-s before the version strata, 123.8 unscaled, NIL 0.2661 -> 0.2638); scaled by N / n_c
    (the whole's class density) 94.9 CPU-s, NIL 0.2716; by √(N / n_c) 94.5 CPU-s, NIL 0.2683.
    """
    frames: list[pl.DataFrame] = []
    basis: list[int] = []
    for stratum in version_strata(cases, plan):
        parts = (
            seriousness_strata(stratum, demo, probabilities, thetas, k=k, split_min=split_min)
            if outcome
            else [stratum]
        )
        own = parts.basis if isinstance(parts, Strata) else [p.height for p in parts]
        frames.extend(parts)
        basis.extend(int(b * math.sqrt(cases.height / max(stratum.height, 1))) for b in own)
    return Strata(frames, basis)


def _frames(labelled: pl.DataFrame) -> list[pl.DataFrame]:
    """The non-empty strata of ``labelled`` (caseid, …, stratum) in stratum order, without ``stratum``."""
    count = int(labelled.get_column("stratum").max()) + 1  # type: ignore[arg-type]
    strata = [labelled.filter(pl.col("stratum") == i).drop("stratum") for i in range(count)]
    return [s for s in strata if s.height]


def _run_packed(strata: list[pl.DataFrame], run: Callable[[pl.DataFrame], Partition]) -> list[Partition]:
    """``run`` on every stratum by ``ENGINE_THREADS`` workers, the largest strata first (LPT packing),
    each within its :class:`Strata` basis (the class cap); the partitions in the strata's order."""
    basis = strata.basis if isinstance(strata, Strata) else [s.height for s in strata]
    order = iter(sorted(range(len(strata)), key=lambda i: (-strata[i].height, i)))
    parts: list[Partition | None] = [None] * len(strata)
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                i = next(order, None)
            if i is None:
                return
            with class_basis(basis[i]):
                parts[i] = run(strata[i])

    with Stages() as stages:
        tasks = [
            stages.start(f"engine {w}", worker, announce=False)
            for w in range(min(ENGINE_THREADS, len(strata)))
        ]
        for task in tasks:
            task.result()
    return [p for p in parts if p is not None]


def with_outcome_strata(strata: list[pl.DataFrame], run: Callable[[pl.DataFrame], Partition]) -> Partition:
    """The engine (``run``) on each stratum, one partition: group ids offset stratum by stratum.

    Stratum i's groups get ids after those of strata < i; the counts are summed and ``first_seed`` is
    the first stratum's. The strata's engines run on ``ENGINE_THREADS`` threads (:class:`Stages`: the
    kernels are ``nogil``, so two threads fill the two cores), each taking the largest stratum not yet
    run (``FAERS_ANON_STAGES=sequential``: one after the other in the caller's thread). Each run draws
    from its own generator, so the partition does not depend on the order or the thread.
    """
    parts = _run_packed(strata, run)
    frames, offset = [], 0
    for part in parts:
        frames.append(part.frame.with_columns(pl.col("group_id") + offset))
        offset += int(part.frame.get_column("group_id").max() or 0) + 1  # type: ignore[arg-type]
    counts = ("groups", "leftovers", "forced", "failed_groups", "invalid_groups", "merged_groups")
    summed = {c: sum(getattr(p, c) for p in parts) for c in counts}
    return replace(parts[0], frame=pl.concat(frames, how="vertical_relaxed"), **summed)
