"""The anonymize orchestrator: ingested folder → cases, E, P(s | c), θ* → partition → metrics → release.

:func:`run` is the one run of a model or a method (SPEC §5–§8): a model (``config.model``) partitions
the cases through its algorithm (:func:`partition_cases`: the greedy engine or Mondrian, one
``numpy.random.default_rng(seed)`` per run), a method (``config.method``) through
:func:`.method_run.method_partition`; the field QIDs of the column policy are generalized over the
groups (:func:`faers_anon.io.qid_fields.generalize_fields`) and the figures are computed once, by
:func:`faers_anon.anonymize.metrics.measure`. The engine's diagnostics (groups, leftovers, forced
cases) are reported for a model only; a method reports its own privacy figures instead.

:func:`anonymize_folder` reads an ingested folder (``cases.parquet``; ``drug.parquet``/``indi.parquet``
to mine E when no knowledge file is given), runs as :func:`run` does and writes the release as
:func:`faers_anon.release.writer.write_release` does, its partition-independent half on a thread beside
the engine (issue 18 item 6: the engine is one nogil core of two; :mod:`faers_anon.release.writer_draft`;
a method with its own item form then replaces the item tables: :func:`.method_run.publish_item_form`).
:func:`anonymize_release` (the standalone ``faers-anon anonymize``) builds the release in a private work
folder and publishes it as ``faers-anon release`` does (:func:`faers_anon.io.workspace.publish_release`:
one atomic rename, nothing beside ``out`` before).

The run's options are :class:`.config.AnonymizeConfig`, its inputs besides the cases (E, P(s | c), θ*)
come from :mod:`.inputs`, its outcome is :class:`.result.AnonymizeResult`.

A method is not bounded by θ*: its θ* (thresholds.csv) is that of the single values, without value
classes or OUTC codes, and measures its DR for information.

When ``diseases`` is not among the sensitive attributes the release carries an empty E: the bound then
does not cover what E reveals, and an empty knowledge.csv tells a re-verifier the same.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from faers_anon.algorithms.greedy_cluster import QidCodes, with_links
from faers_anon.algorithms.types import Partition
from faers_anon.anonymize import metrics
from faers_anon.anonymize.config import QIDS, AnonymizeConfig, items_protection
from faers_anon.anonymize.inputs import (
    knowledge_table,
    published_drug_names,
    read_table,
    sensitive_thresholds,
    with_drug_names,
)
from faers_anon.anonymize.method_run import method_parameters, method_partition, publish_item_form
from faers_anon.anonymize.partition import unit_view
from faers_anon.anonymize.result import AnonymizeResult
from faers_anon.anonymize.run_inputs import NO_INPUTS, RunInputs
from faers_anon.anonymize.strata import versioned_strata, with_outcome_strata
from faers_anon.anonymize.thresholds import Thresholds
from faers_anon.anonymize.units import engine_inputs, model_unit, partition_model, report_records
from faers_anon.anonymize.value_classes import read_classes, read_outcomes, release_files
from faers_anon.anonymize.versions import NO_PLAN, VersionPlan, latest_only, run_plan, splits_versions
from faers_anon.io.column_policy import load_policy
from faers_anon.io.qid_fields import generalize_fields
from faers_anon.io.workspace import publish_release, signals_raise, work_folder
from faers_anon.keys import load_key
from faers_anon.methods import MethodResult
from faers_anon.models import make_model
from faers_anon.release.stages import Stages, Task
from faers_anon.release.writer import SealedRelease, place_release, seal_release
from faers_anon.release.writer_draft import ReleaseDraft, discard_draft, prepare_release

__all__ = [
    "AnonymizeConfig",  # re-exported: defined in .config
    "AnonymizeResult",  # re-exported: defined in .result
    "QIDS",
    "RunInputs",  # re-exported: defined in .run_inputs
    "anonymize_folder",
    "anonymize_release",
    "knowledge_table",  # re-exported: defined in .inputs
    "partition_cases",
    "run",
    "sensitive_thresholds",
]

if TYPE_CHECKING:
    from faers_anon.series.composition import ReleaseInputs

log = logging.getLogger(__name__)


def partition_cases(
    cases: pl.DataFrame,
    knowledge: pl.DataFrame,
    /,
    *,
    config: AnonymizeConfig,
    inputs: RunInputs = NO_INPUTS,
    beside: Callable[[], object] | None = None,
    on_plan: Callable[[VersionPlan], object] | None = None,
) -> tuple[Partition, Thresholds, pl.DataFrame]:
    """P(s | c), θ* and the partition of one cases frame (no files); returns (partition, θ*, P(s | c)).

    The model is fed as its requirements say (:mod:`.units`): models whose unit is the report
    need ``inputs.reports`` (:func:`.units.report_records`), and their partition frame has one row
    per report (``primaryid``, ``caseid``). θ* and P(s | c) are always those of the cases.
    With ``inputs.demo`` (the DEMO rows) and ``inputs.policy``, the engine also clusters on the
    policy's other DEMO qids (:func:`.units.engine_inputs`: they and the engine's QID arrays are made on
    a thread beside P(s | c) and θ*).
    ``inputs.drug_names``: the other published drug columns, which P(s | c) reads through E like
    ``drug_key``. ``beside`` is called right before the engine runs (to start work needing no partition),
    ``on_plan`` before it with the version plan (:mod:`.versions`: each case's version count is a
    mandatory stratum, top-coded where it cannot stand; the reports left out).
    """
    with Stages() as stages:
        # each version or outcome stratum, and a series' cases not frozen, take their cases' arrays from
        # the whole frame's (made without class levels, with P(s | c) links: read once, not per stratum)
        parts = config.outcome_strata or splits_versions(config, inputs.demo) or config.frozen is not None
        engine_cases = cases if config.frozen is None else _not_frozen(cases, config.frozen)
        fed = partial(engine_inputs, engine_cases, inputs.demo, inputs.policy, config.hierarchies(),
                      model=config.model, whole=True, parts=parts)  # fmt: skip
        coded = stages.start("engine fields", fed, announce=False)
        probabilities, thresholds = inputs.known or sensitive_thresholds(
            with_drug_names(cases, inputs.drug_names), knowledge, config=config, classes=inputs.classes,
            outcomes=inputs.outcomes,
        )  # fmt: skip
        model = make_model(config.model, k=config.k, thetas=thresholds.thetas)
        codes, hierarchies, qids = coded.result()
    with Stages() as side:  # the strata's P(s | c) links beside the version plan and the strata
        ahead, links, req = qids, None, model.requirements()
        if ahead is not None and ahead.levels is None:
            links = side.start("links", partial(with_links, ahead, probabilities, req), announce=False)
        plan = run_plan(config, inputs.demo, probabilities, thresholds.thetas)
        if on_plan is not None:
            on_plan(plan)
        if beside is not None:
            beside()

        def run(engine_cases: pl.DataFrame, qids: QidCodes | None) -> Partition:
            return partition_model(
                engine_cases, knowledge, model=model, hierarchies=hierarchies,
                rng=np.random.default_rng(config.seed), sensitive=config.sensitive, reports=inputs.reports,
                probabilities=probabilities, candidates=config.candidates, scan_limit=config.scan_limit,
                codes=codes, qids=qids,
            ).partition  # fmt: skip

        def engine(fresh: pl.DataFrame) -> Partition:  # version and outcome strata; a series' new cases
            if inputs.demo is None or (plan is NO_PLAN and not config.outcome_strata):
                return run(fresh, ahead if links is None else links.result())
            strata = versioned_strata(fresh, plan, inputs.demo, probabilities, thresholds.thetas,
                                      k=config.k, outcome=config.outcome_strata)  # fmt: skip
            return with_outcome_strata(strata, partial(run, qids=ahead if links is None else links.result()))

        if config.frozen is None:
            partition = engine(cases)
        else:  # a series: frozen bundles placed around the engine (faers_anon.series.step)
            from faers_anon.series.step import with_frozen  # the series step imports this module

            partition = with_frozen(cases, config.frozen, engine)
    if partition.invalid_groups:
        log.warning("%d groups do not satisfy %s (%d leftovers forced)", partition.invalid_groups,
                    config.model, partition.forced)  # fmt: skip
    return partition, thresholds, probabilities


def _not_frozen(cases: pl.DataFrame, frozen: Path) -> pl.DataFrame:
    """A series' engine's cases: those of no frozen bundle (as ``series.step.with_frozen`` runs it)."""
    return cases.join(pl.read_parquet(frozen, columns=["caseid"]), on="caseid", how="anti")


@dataclass(frozen=True, kw_only=True, slots=True)
class _Partitioned:
    """A run before its metrics and field QIDs: the algorithm's frame, θ*, P(s | c), the engine's or
    the method's outcome, and the seconds it took."""

    frame: pl.DataFrame
    thresholds: Thresholds
    probabilities: pl.DataFrame
    partition: Partition | None
    method: MethodResult | None
    seconds: float


def _partitioned(
    cases: pl.DataFrame, knowledge: pl.DataFrame, config: AnonymizeConfig, inputs: RunInputs,
    beside: Callable[[], object] | None, on_plan: Callable[[VersionPlan], object] | None = None,
) -> _Partitioned:  # fmt: skip
    """The partition half of :func:`run` (``beside``, ``on_plan``: as :func:`partition_cases`)."""
    clock = time.perf_counter()
    partition, result = None, None
    if config.method is None:
        partition, thresholds, probabilities = partition_cases(
            cases, knowledge, config=config, inputs=inputs, beside=beside, on_plan=on_plan
        )
        frame = partition.frame
    else:
        if on_plan is not None and inputs.demo is not None:
            on_plan(latest_only(inputs.demo))  # a method publishes each case's latest report (.versions)
        if beside is not None:
            beside()
        frame, result = method_partition(
            config.method, cases, k=config.k, seed=config.seed, sensitive=config.sensitive
        )
        probabilities, thresholds = sensitive_thresholds(
            with_drug_names(cases, inputs.drug_names), knowledge, config=config
        )
    return _Partitioned(
        frame=frame, thresholds=thresholds, probabilities=probabilities, partition=partition, method=result,
        seconds=time.perf_counter() - clock,
    )  # fmt: skip


def _generalized(frame: pl.DataFrame, inputs: RunInputs) -> tuple[pl.DataFrame, dict[str, float]]:
    """The frame to write (the policy's field QIDs generalized over the groups) and NIL per field."""
    demo, policy = inputs.demo, inputs.policy
    return (frame, {}) if demo is None or policy is None else generalize_fields(frame, demo, policy)


def _measured(
    done: _Partitioned,
    generalized: Callable[[], tuple[pl.DataFrame, dict[str, float]]],
    cases: pl.DataFrame,
    config: AnonymizeConfig,
    inputs: RunInputs,
) -> AnonymizeResult:
    """The metrics half of :func:`run`: the result, measured once; ``generalized`` (:func:`_generalized`
    of the run's frame) is asked for last, when only the fields' NIL is missing."""
    clock = time.perf_counter()
    # NIL on the algorithm's own units (reports or cases), DR on the cases an attacker finds in each group
    raw = cases if inputs.reports is None or done.partition is None else unit_view(inputs.reports)
    measures = metrics.measure(done.frame, raw, done.probabilities, done.thresholds.frame,
                               hierarchies=config.hierarchies(), k=config.k)  # fmt: skip
    written, field_nil = generalized()
    return AnonymizeResult(
        release=None,
        frame=written,
        thresholds=done.thresholds,
        k=config.k,
        cases=cases.height,
        measures=metrics.with_field_nil(measures, field_nil),
        partition=done.partition,
        method=done.method,
        seconds={"anonymize": done.seconds, "metrics": time.perf_counter() - clock},
    )


def run(
    cases: pl.DataFrame,
    knowledge: pl.DataFrame,
    /,
    *,
    config: AnonymizeConfig,
    inputs: RunInputs = NO_INPUTS,
) -> AnonymizeResult:
    """One run of a model or a method on a cases frame, measured once (module docstring; no files).

    Args:
        cases: the cases frame (cases.parquet contract).
        knowledge: E (drug_key, disease, weight).
        config: the run's options; ``config.method`` chooses a method, else ``config.model`` runs.
        inputs: what the run reads besides (:class:`RunInputs`).

    Returns:
        The result without a release: ``frame`` is the partition frame to write (field QIDs
        generalized), ``partition`` the engine's output (None for a method), ``method`` the method's
        result (None for a model).
    """
    done = _partitioned(cases, knowledge, config, inputs, None)
    generalized = _generalized(done.frame, inputs)
    return _measured(done, lambda: generalized, cases, config, inputs)


def anonymize_folder(
    ingested: Path,
    out: Path | None,
    /,
    *,
    config: AnonymizeConfig,
    beside: Callable[[], object] | None = None,
    known: ReleaseInputs | None = None,
) -> AnonymizeResult:
    """Anonymize an ingested folder (:func:`run`) and write the release to ``out`` (None: compute only).

    Beside the engine (threads of :class:`~faers_anon.release.stages.Stages`; issue 18 item 6): the
    release's partition-independent half (:func:`~faers_anon.release.writer_draft.prepare_release`)
    is written while the engine runs, and the metrics are computed while the release is completed
    (:func:`~faers_anon.release.writer.seal_release`); it is renamed into place once they are known
    (:func:`~faers_anon.release.writer.place_release`); E and the DEMO rows are read beside the cases.
    ``FAERS_ANON_STAGES=sequential``: each step where it ran before. A failure stops the threads,
    removes the draft and surfaces as alone. ``beside``: called right before the engine (or method).
    ``known``: E, P(s | c) and θ* of ``ingested`` already computed (``SeriesStep.inputs``).

    Raises:
        InputError: a missing or unreadable ingested table or knowledge file.
        ConfigError: ``out`` exists without ``force``, or an invalid option.
        InfeasibleThetaError: some θ_s < P(s) with ``on_infeasible = "error"``.
    """
    pid = os.getpid()
    try:
        with Stages() as stages:
            return _anonymize_folder(ingested, out, config, stages, pid, beside, known)
    except BaseException:
        if out is not None:
            discard_draft(out, pid)  # after every thread has ended (the block above waits for them)
        raise


def _anonymize_folder(
    ingested: Path,
    out: Path | None,
    config: AnonymizeConfig,
    stages: Stages,
    pid: int,
    beside: Callable[[], object] | None,
    known: ReleaseInputs | None,
) -> AnonymizeResult:
    """:func:`anonymize_folder` in its stages; results asked for in the old order (sequential: same order)."""
    clock = time.perf_counter()
    model = config.method is None
    # a ledgered release: E*_t (docs/series.md §4)
    mine = partial(knowledge_table, ingested, sensitive=config.sensitive, knowledge=config.knowledge,
                   earlier=config.earlier_knowledge)  # fmt: skip
    mined = stages.start("E", mine if known is None else lambda: known.knowledge, announce=False)
    demo_rows = stages.start("demo", lambda: read_table(ingested / "reports.parquet"), announce=False)
    cases = read_table(ingested / "cases.parquet")
    knowledge = mined.result()
    reports = report_records(ingested) if model and model_unit(config.model) == "reports" else None
    policy = load_policy(config.column_policy)
    classes = read_classes(config.classes) if model else None
    outcomes = read_outcomes(ingested) if model and config.protect_outcomes else None
    demo = demo_rows.result()
    read = time.perf_counter() - clock
    inputs = RunInputs(
        reports=reports, classes=classes, outcomes=outcomes, demo=demo, policy=policy,
        drug_names=published_drug_names(ingested, policy),
        known=None if known is None else (known.probabilities, known.thresholds),
    )  # fmt: skip
    drafts: list[Task[ReleaseDraft]] = []
    plans: list[VersionPlan] = []  # the version plan, decided before the engine (none for a method)
    once = None if beside is None else cache(beside)  # the hook runs once (called twice below)

    def start_draft() -> None:  # the release's partition-independent half, beside the engine
        if out is not None and not drafts:
            drafts.append(stages.start("release draft", lambda: prepare_release(
                ingested, out, policy=policy, key=load_key(config.key_file), force=config.force,
                items=items_protection(config), pid=pid, left_out=(plans or [NO_PLAN])[0].left_out),
                announce=False))  # fmt: skip
        if once is not None:
            once()

    done = _partitioned(cases, knowledge, config, inputs, start_draft, plans.append)
    generalized = stages.start("fields", lambda: _generalized(done.frame, inputs), announce=False)
    if not stages.concurrent:
        generalized.result()  # before the metrics, as before
    if out is None:
        result = _measured(done, generalized.result, cases, config, inputs)
        return replace(result, seconds={"read": read, **result.seconds})
    start_draft()  # started already, unless the run called no hook

    def finish() -> SealedRelease:
        singles, class_files = release_files(done.thresholds.frame, classes)
        return seal_release(
            drafts[0].result(),
            generalized.result()[0],
            knowledge=knowledge,
            thresholds=singles,
            parameters=config.parameters() if done.method is None else method_parameters(done.method, config),
            extra_files=class_files,
            items=items_protection(config),
        )

    write = stages.start("write", finish, announce=False)  # sequentially: when asked, after the metrics
    result = _measured(done, generalized.result, cases, config, inputs)
    written = place_release(write.result())  # only once the metrics are known, as before
    if result.method is not None:
        publish_item_form(out, result.method, written.ids.apply, load_key(config.key_file))
    seconds = {"read": read, **result.seconds, "write": write.seconds}
    items = written.manifest["counts"].get("items")
    superseded = written.manifest["counts"].get("superseded_left_out")
    return replace(result, release=out, items=items, superseded=superseded, seconds=seconds)


def anonymize_release(
    ingested: Path, out: Path, /, *, config: AnonymizeConfig, work: Path | None = None
) -> AnonymizeResult:
    """:func:`anonymize_folder` into a private work folder (under ``work``, default the system temp
    folder), then the release moved to ``out`` in one rename (module docstring); the work folder is
    removed on success, error or interrupt (SIGINT, SIGTERM, SIGHUP).

    Raises:
        as :func:`anonymize_folder`; OutputError: ``out`` may not be replaced (checked again at the end).
    """
    with signals_raise(), work_folder("anonymize", work) as folder:
        built = folder / out.name
        result = anonymize_folder(ingested, built, config=replace(config, force=True))
        publish_release(built, out, force=config.force)
    return replace(result, release=out)
