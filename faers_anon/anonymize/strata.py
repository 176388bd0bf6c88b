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
from typing import NamedTuple

import numpy as np
import polars as pl
from numpy.typing import NDArray

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


class _Keyed(NamedTuple):
    """The protected values' entries of P(s | c) as arrays (caseid, vid, p; vid: the value's index in
    θ) and θ per vid: made once for every split below, each share summed by :func:`numpy.bincount`."""

    caseid: NDArray[np.int64]
    vid: NDArray[np.int64]
    p: NDArray[np.float64]
    theta: NDArray[np.float64]
    ids: NDArray[np.int64] | None = None  # with pos: each entry's case is ids[pos] (ids sorted)
    pos: NDArray[np.int64] | None = None

    def part(self, keep: NDArray[np.bool_], ids: NDArray[np.int64], pos: NDArray[np.int64]) -> _Keyed:
        """The entries ``keep``, each case at ``pos`` in ``ids`` (the part's cases, sorted)."""
        return _Keyed(self.caseid[keep], self.vid[keep], self.p[keep], self.theta, ids, pos)


def _keyed(probabilities: pl.DataFrame, thetas: Mapping[str, float]) -> _Keyed:
    """:class:`_Keyed` of P(s | c) (caseid, value, p) and θ; entries of other values left out."""
    bounds = pl.DataFrame({"value": list(thetas)}, schema={"value": pl.String}).with_row_index("vid")
    keyed = probabilities.select("caseid", "value", "p").join(bounds, on="value", maintain_order="left")
    return _Keyed(
        keyed.get_column("caseid").cast(pl.Int64).to_numpy(),
        keyed.get_column("vid").cast(pl.Int64).to_numpy(),
        keyed.get_column("p").cast(pl.Float64).to_numpy(),
        np.array(list(thetas.values()), np.float64),
    )


def _labels(demo: pl.DataFrame) -> pl.DataFrame:
    """(caseid, stratum): 0 serious (an OUTC set), 1 non-serious (``none``), 2 missing (null)."""
    kind = pl.when(pl.col("outcome").is_null()).then(2).when(pl.col("outcome") == "none").then(1).otherwise(0)
    return demo.select("caseid", kind.alias("stratum")).unique("caseid")


def _over_theta(labelled: pl.DataFrame, keyed: _Keyed) -> pl.DataFrame:
    """(stratum, vid, p, theta, n) of every protected value whose share inside a stratum exceeds θ_s:
    Σ_{c ∈ stratum} P(s | c) / |stratum| > θ_s (``labelled``: caseid, stratum; ``keyed``: :func:`_keyed`)."""
    lab = labelled.select("caseid", "stratum").sort("caseid")
    ids = lab.get_column("caseid").cast(pl.Int64).to_numpy()
    strata, index = np.unique(lab.get_column("stratum").to_numpy(), return_inverse=True)
    values = keyed.theta.shape[0]
    if keyed.pos is not None and keyed.ids is not None and np.array_equal(keyed.ids, ids):
        at, hit = keyed.pos, np.ones(keyed.pos.shape[0], np.bool_)
    else:
        at = np.minimum(np.searchsorted(ids, keyed.caseid), max(ids.shape[0] - 1, 0))
        hit = ids[at] == keyed.caseid if ids.shape[0] else np.zeros(keyed.caseid.shape[0], np.bool_)
    key = index.reshape(-1)[at[hit]] * values + keyed.vid[hit]
    sums = np.bincount(key, weights=keyed.p[hit], minlength=strata.shape[0] * values)
    sums = sums.reshape(strata.shape[0], values)
    n = np.bincount(index.reshape(-1), minlength=strata.shape[0])
    row, vid = np.nonzero(sums / np.maximum(n, 1)[:, None] > keyed.theta[None, :])
    found = {"stratum": strata[row], "vid": vid, "p": sums[row, vid], "theta": keyed.theta[vid], "n": n[row]}
    return pl.DataFrame(found).with_columns(pl.col("stratum").cast(lab.schema["stratum"]))


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
    return _split_by_sex(labelled, _keyed(probabilities, thetas), k=k, min_cases=min_cases)


def _split_by_sex(labelled: pl.DataFrame, keyed: _Keyed, *, k: int, min_cases: int) -> pl.DataFrame:
    """:func:`split_by_sex` with P(s | c) and θ as :func:`_keyed`."""
    sex = pl.col("sex").rank("dense").fill_null(0).cast(pl.Int64)
    fine = labelled.with_columns((pl.col("stratum") * 1_000 + sex).alias("part"))
    sizes = fine.group_by("part").agg(pl.len().alias("n"), pl.col("stratum").first())
    over = _over_theta(fine.select("caseid", pl.col("part").alias("stratum")), keyed)
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
    return _seriousness(cases, _labels(demo), _keyed(probabilities, thetas), list(thetas), k, split_min)


def _seriousness(
    cases: pl.DataFrame, label: pl.DataFrame, keyed: _Keyed, values: list[str], k: int, split_min: int
) -> list[pl.DataFrame]:
    """:func:`seriousness_strata` with the DEMO rows as :func:`_labels` and P(s | c) as :func:`_keyed`
    (``values``: the protected values in θ's order, for the warning)."""
    kind = cases.select("caseid").join(label, on="caseid", how="left", maintain_order="left")
    labelled = cases.with_columns(kind.get_column("stratum").fill_null(2))  # the wide columns not copied
    sizes = labelled.group_by("stratum").agg(pl.len().alias("n")).get_column("n")
    if sizes.len() < 2 or int(sizes.min()) < k:  # type: ignore[arg-type]
        return [cases]
    over = _over_theta(labelled.select("caseid", "stratum"), keyed)
    if over.height:
        named = pl.Series("value", values, pl.String).gather(over.get_column("vid"))
        first = over.with_columns(named).sort("value").row(0, named=True)
        log.warning("outcome strata not used: %d values over θ inside a stratum (e.g. %s: %.3f > %.3f)",
                    over.height, first["value"], first["p"] / first["n"], first["theta"])  # fmt: skip
        return [cases]
    if "sex" not in cases.columns:
        return _frames(labelled)
    parts = _split_by_sex(labelled.select("caseid", "sex", "stratum"), keyed, k=k, min_cases=split_min)
    whole = labelled.select("caseid", pl.col("stratum").alias("whole"), pl.len().over("stratum").alias("n"))
    bases = parts.join(whole, on="caseid").group_by("stratum").agg(pl.col("n").first()).sort("stratum")
    parts = labelled.select("caseid").join(parts, on="caseid", how="left", maintain_order="left")
    labelled = labelled.with_columns(parts.get_column("stratum"))
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
    P(s | c) is keyed by value id and split by count once (:func:`_keyed`), the DEMO rows labelled once.
    """
    frames: list[pl.DataFrame] = []
    basis: list[int] = []
    counts = version_strata(cases, plan)
    split = outcome and "outcome" in demo.columns
    if split:
        label, values = _labels(demo), list(thetas)
        ids = pl.concat([c.select("caseid", pl.lit(i, pl.Int64).alias("n")) for i, c in enumerate(counts)])
        ids = ids.sort("caseid")
        keyed = _keyed(probabilities, thetas)
        whole, of = ids.get_column("caseid").cast(pl.Int64).to_numpy(), ids.get_column("n").to_numpy()
        at = np.minimum(np.searchsorted(whole, keyed.caseid), max(whole.shape[0] - 1, 0))
        count = np.where(whole[at] == keyed.caseid, of[at], -1) if whole.shape[0] else at  # -1: no case
        by_count = {}
        for i in range(len(counts)):
            mine = of == i  # the count's cases (sorted); an entry's case is at its rank among them
            rank = np.cumsum(mine) - 1
            keep = count == i
            by_count[i] = keyed.part(keep, whole[mine], rank[at[keep]])
    for i, stratum in enumerate(counts):
        parts = _seriousness(stratum, label, by_count[i], values, k, split_min) if split else [stratum]
        own = parts.basis if isinstance(parts, Strata) else [p.height for p in parts]
        frames.extend(parts)
        basis.extend(int(b * math.sqrt(cases.height / max(stratum.height, 1))) for b in own)
    return Strata(frames, basis)


def _frames(labelled: pl.DataFrame) -> list[pl.DataFrame]:
    """The non-empty strata of ``labelled`` (caseid, …, stratum) in stratum order, without ``stratum``."""
    strata = labelled.partition_by("stratum", maintain_order=True, include_key=False, as_dict=True)
    return [strata[key] for key in sorted(strata)]


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
