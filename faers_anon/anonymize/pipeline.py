"""The anonymize step: ingested folder → cases, E, P(s | c), θ* → partition → release (SPEC §1, §5–§8, §10).

One run reads ``cases.parquet`` (and ``drug.parquet``/``indi.parquet`` to mine E when no knowledge file
is given), computes P(s | c) (:func:`knowledge.case_value_probabilities`), θ*
(:func:`faers_anon.anonymize.thresholds.build_thresholds`), builds the model from the registry, partitions the
cases with :func:`faers_anon.algorithms.greedy_cluster` (one ``numpy.random.default_rng(seed)`` per run),
measures NIL, DR and the group sizes, and writes the release with
:func:`faers_anon.release.writer.write_release`.

The run's options are :class:`.config.AnonymizeConfig`, its inputs besides the cases (E, P(s | c), θ*)
come from :mod:`.inputs`, its outcome is :class:`.result.AnonymizeResult`; a ``--method`` run goes to
:mod:`.method_run`.

When ``diseases`` is not among the sensitive attributes the release carries an empty E: the bound then
does not cover what E reveals, and an empty knowledge.csv tells a re-verifier the same.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import polars as pl

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
from faers_anon.anonymize.method_run import anonymize_with_method
from faers_anon.anonymize.partition import released_groups
from faers_anon.anonymize.result import AnonymizeResult
from faers_anon.anonymize.thresholds import Thresholds
from faers_anon.anonymize.units import (
    case_members,
    engine_fields,
    model_unit,
    partition_model,
    report_records,
    unit_view,
)
from faers_anon.anonymize.value_classes import ValueClasses, read_classes, read_outcomes, release_files
from faers_anon.io.column_policy import ColumnPolicy, load_policy
from faers_anon.io.qid_fields import generalize_fields
from faers_anon.keys import load_key
from faers_anon.models import make_model
from faers_anon.release.writer import write_release

__all__ = [
    "AnonymizeConfig",  # re-exported: defined in .config
    "AnonymizeResult",  # re-exported: defined in .result
    "QIDS",
    "anonymize_folder",
    "knowledge_table",  # re-exported: defined in .inputs
    "partition_cases",
    "sensitive_thresholds",
]

log = logging.getLogger(__name__)


def partition_cases(
    cases: pl.DataFrame,
    knowledge: pl.DataFrame,
    /,
    *,
    config: AnonymizeConfig,
    reports: pl.DataFrame | None = None,
    classes: ValueClasses | None = None,
    outcomes: pl.DataFrame | None = None,
    demo: pl.DataFrame | None = None,
    policy: ColumnPolicy | None = None,
    drug_names: pl.DataFrame | None = None,
) -> tuple[Partition, Thresholds, pl.DataFrame]:
    """P(s | c), θ* and the partition of one cases frame (no files); returns (partition, θ*, P(s | c)).

    The model is fed as its requirements say (:mod:`.units`): models whose unit is the report
    need ``reports`` (:func:`.units.report_records`), and their partition frame has one row
    per report (``primaryid``, ``caseid``). θ* and P(s | c) are always those of the cases.
    With ``demo`` (the DEMO rows) and ``policy``, the engine also clusters on the policy's other DEMO
    qids (:func:`.units.engine_fields`). ``drug_names`` (:func:`.inputs.published_drug_names`): the
    other published drug columns, which P(s | c) reads through E like ``drug_key``.
    """
    probabilities, thresholds = sensitive_thresholds(
        with_drug_names(cases, drug_names), knowledge, config=config, classes=classes, outcomes=outcomes
    )
    model = make_model(config.model, k=config.k, thetas=thresholds.thetas)
    hierarchies, codes = config.hierarchies(), None
    if demo is not None and policy is not None:
        codes, hierarchies = engine_fields(demo, policy, hierarchies, unit=model_unit(config.model))

    def run(engine_cases: pl.DataFrame) -> Partition:
        return partition_model(
            engine_cases,
            knowledge,
            model=model,
            hierarchies=hierarchies,
            rng=np.random.default_rng(config.seed),
            sensitive=config.sensitive,
            reports=reports,
            probabilities=probabilities,
            candidates=config.candidates,
            scan_limit=config.scan_limit,
            codes=codes,
        ).partition

    if config.frozen is None:
        partition = run(cases)
    else:  # a series: frozen bundles placed around the engine (faers_anon.series.step)
        from faers_anon.series.step import with_frozen  # the series step imports this module

        partition = with_frozen(cases, config.frozen, run)
    if partition.invalid_groups:
        log.warning(
            "%d groups do not satisfy %s (%d leftovers forced)",
            partition.invalid_groups,
            config.model,
            partition.forced,
        )
    return partition, thresholds, probabilities


def anonymize_folder(ingested: Path, out: Path | None, /, *, config: AnonymizeConfig) -> AnonymizeResult:
    """Anonymize an ingested folder and write the release to ``out`` (None: compute only).

    Raises:
        InputError: a missing or unreadable ingested table or knowledge file.
        ConfigError: ``out`` exists without ``force``, or an invalid option.
        InfeasibleThetaError: some θ_s < P(s) with ``on_infeasible = "error"``.
    """
    clock = time.perf_counter()
    seconds: dict[str, float] = {}
    cases = read_table(ingested / "cases.parquet")
    knowledge = knowledge_table(ingested, sensitive=config.sensitive, knowledge=config.knowledge)
    if config.method is not None:
        return anonymize_with_method(ingested, out, config=config, cases=cases, knowledge=knowledge)
    reports = report_records(ingested) if model_unit(config.model) == "reports" else None
    policy = load_policy(config.column_policy)
    seconds["read"] = time.perf_counter() - clock
    clock = time.perf_counter()
    classes = read_classes(config.classes)
    demo = read_table(ingested / "reports.parquet")
    partition, thresholds, probabilities = partition_cases(
        cases, knowledge, config=config, reports=reports, classes=classes,
        outcomes=read_outcomes(ingested) if config.protect_outcomes else None, demo=demo, policy=policy,
        drug_names=published_drug_names(ingested, policy),
    )  # fmt: skip
    frame, field_nil = generalize_fields(partition.frame, demo, policy)  # the engine's groups' values
    seconds["anonymize"] = time.perf_counter() - clock
    clock = time.perf_counter()
    # NIL on the model's own units (reports or cases), DR on the cases an attacker finds in each group.
    units = partition.frame if reports is None else unit_view(partition.frame)
    raw = cases if reports is None else unit_view(reports)
    losses = metrics.information_loss(units, raw, hierarchies=config.hierarchies())
    result_metrics = {
        # SPEC §8 over every QID: the engine's and the policy's other DEMO qids (a mean of per-QID NILs)
        "nil": (metrics.nil(losses, qids=len(config.qids)) * len(config.qids) + sum(field_nil.values()))
        / (len(config.qids) + len(field_nil)),
        "nil_by_qid": {q: v for q, v in metrics.nil_by_qid(losses).items() if q in config.qids} | field_nil,
        # DR on the released QID groups (as the method path, evaluate and the verifier count them)
        "dr": metrics.dangerous_ratio(
            case_members(released_groups(partition.frame)), probabilities, thresholds.frame
        ),
        "group_sizes": metrics.group_sizes(units),
        "share_k": metrics.share_exactly_k(units, k=config.k),
    }
    seconds["metrics"] = time.perf_counter() - clock
    release, items = None, None
    if out is not None:
        clock = time.perf_counter()
        singles, class_files = release_files(thresholds.frame, classes)
        written = write_release(
            ingested,
            frame,
            out,
            policy=policy,
            knowledge=knowledge,
            thresholds=singles,
            parameters=config.parameters(),
            extra_files=class_files,
            force=config.force,
            key=load_key(config.key_file),
            items=items_protection(config),
        )
        release = out
        items = written.manifest["counts"].get("items")
        seconds["write"] = time.perf_counter() - clock
    return AnonymizeResult(
        release=release,
        partition=partition,
        thresholds=thresholds,
        k=config.k,
        cases=cases.height,
        seconds=seconds,
        items=items,
        **result_metrics,  # type: ignore[arg-type]
    )
