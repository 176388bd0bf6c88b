"""Release modes for the comparison methods (``--method NAME`` of ``anonymize`` and ``release``; SPEC §7).

A method of :data:`faers_anon.methods.METHODS` replaces the privacy model and the clustering engine:
it runs on the cases frame with the run's generator (``numpy.random.default_rng(seed)``) and its
partition frame is written by :func:`faers_anon.release.writer.write_release` like a model's. The
rest of the run is the same as for a model: E, P(s | c) and θ* are built from the options, travel with
the release (``knowledge.csv``, ``thresholds.csv``) and measure DR *for information* (the methods are
not bounded by θ*; evaluate measures them the same way), NIL is measured on the same hierarchies.

Options passed on (decisions, also in docs/methods.md "How to release with a method"):

What a method takes from the run is what its registry entry declares
(:class:`faers_anon.methods.Capabilities`; this module names no method):

* ``--k`` when its ``k`` is a group size (``group_size``: k records per group, or k^m); a method without
  one keeps its own ``k`` default (enhanced RA: QID values re-drawn per case). Its other parameters
  (``l``, ``m``) keep their defaults.
* ``--seed`` when its config has a seed (``seeded``).
* the run's ``--sensitive`` indications and reactions when it protects list columns
  (``sensitive_lists``; E's diseases are not a list column of the cases; default both).
* The released QID groups are the distinct released QID tuples (two groups of a method that generalize
  to the same tuple are one group to an attacker, and to the verifier).

manifest.json → ``parameters`` records ``method``, ``method_parameters`` (the result's ``describe()``),
``method_privacy`` (its privacy figures; non-finite numbers as null) and ``k`` only for the methods
with a group size; ``model`` is absent (the verifier reads ``method``).

A method with an ``item_form`` (:class:`faers_anon.methods.ItemForm`) publishes DRUG and REAC in its own
form instead of rows: the form replaces them after the writer and the release is sealed again; the
signal comparison reads its release side through the form (:func:`signal_inputs`).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from faers_anon.algorithms.types import Partition
from faers_anon.analysis.signals import read_case_tables
from faers_anon.anonymize import metrics
from faers_anon.anonymize.config import RELEASE_METHODS, AnonymizeConfig
from faers_anon.anonymize.inputs import sensitive_thresholds
from faers_anon.anonymize.partition import PARTITION_SCHEMA, released_groups
from faers_anon.anonymize.result import AnonymizeResult
from faers_anon.anonymize.units import case_members
from faers_anon.json_data import json_data
from faers_anon.keys import load_key
from faers_anon.methods import METHODS, ItemForm, MethodResult
from faers_anon.release.certificate import seal
from faers_anon.release.writer import write_release
from signals import CaseTables, CompareConfig

__all__ = [
    "RELEASE_METHODS",
    "anonymize_with_method",
    "item_form",
    "method_config",
    "method_parameters",
    "signal_inputs",
]


def item_form(method: str | None) -> ItemForm | None:
    """The method's own form of the item lists (None for a model run or a method releasing rows)."""
    return None if method is None else METHODS[method].capabilities.item_form


def method_config(name: str, config: AnonymizeConfig) -> Any:
    """The method's own config from the run's options (module docstring: which options pass on)."""
    method = METHODS[name]
    options = method.capabilities.options(k=config.k, seed=config.seed, sensitive=config.sensitive)
    return method.config_type(**options)


def method_parameters(result: MethodResult, config: AnonymizeConfig) -> dict[str, Any]:
    """manifest.json parameters of a method release (module docstring)."""
    drop = {"k", "candidates", "scan_limit"}
    params: dict[str, Any] = {k: v for k, v in config.parameters().items() if k not in drop}
    if METHODS[result.method].capabilities.group_size:
        params["k"] = config.k
    params["method"] = result.method
    params["method_parameters"] = json_data(result.describe())
    params["method_privacy"] = json_data(result.privacy)
    return params


def anonymize_with_method(
    ingested: Path,
    out: Path | None,
    /,
    *,
    config: AnonymizeConfig,
    cases: pl.DataFrame,
    knowledge: pl.DataFrame,
) -> AnonymizeResult:
    """Run ``config.method`` on ``cases`` and write its release to ``out`` (None: compute only).

    Raises:
        ConfigError: invalid method options, or ``out`` exists without ``force``.
        InfeasibleThetaError: some θ_s < P(s) with ``on_infeasible = "error"`` (θ* measures DR).
    """
    assert config.method is not None
    seconds: dict[str, float] = {}
    clock = time.perf_counter()
    method = METHODS[config.method]
    result = method(
        cases, config=method_config(config.method, config), rng=np.random.default_rng(config.seed)
    )
    # the released QID groups: two groups of a method with one released tuple are one group
    frame = (
        released_groups(result.release)
        .select([pl.col(c).cast(t) for c, t in PARTITION_SCHEMA.items()])
        .sort("caseid")
    )
    seconds["anonymize"] = time.perf_counter() - clock
    clock = time.perf_counter()
    probabilities, thresholds = sensitive_thresholds(cases, knowledge, config=config)
    losses = metrics.information_loss(frame, cases, hierarchies=config.hierarchies())
    groups = frame["group_id"].n_unique()
    partition = Partition(
        frame=frame, groups=groups, leftovers=0, forced=0, failed_groups=0, invalid_groups=0, first_seed=-1
    )
    seconds["metrics"] = time.perf_counter() - clock
    if out is not None:
        clock = time.perf_counter()
        key = load_key(config.key_file)
        written = write_release(
            ingested,
            frame,
            out,
            knowledge=knowledge,
            thresholds=thresholds.frame,
            parameters=method_parameters(result, config),
            force=config.force,
            key=key,
        )
        form = item_form(config.method)
        if form is not None:  # the item lists in the method's own form, naming cases by their pseudonyms
            form.publish(out, result, written.ids.apply)
            seal(out, key)
        seconds["write"] = time.perf_counter() - clock
    return AnonymizeResult(
        release=out,
        partition=partition,
        thresholds=thresholds,
        k=config.k,
        cases=cases.height,
        nil=metrics.nil(losses, qids=len(config.qids)),
        nil_by_qid={q: v for q, v in metrics.nil_by_qid(losses).items() if q in config.qids},
        dr=metrics.dangerous_ratio(case_members(frame), probabilities, thresholds.frame),
        group_sizes=metrics.group_sizes(frame),
        share_k=metrics.share_exactly_k(frame, k=config.k),
        seconds=seconds,
        method=result,
    )


def signal_inputs(
    ingested: Path, release: Path, /, *, compare: CompareConfig, method: str | None, seed: int
) -> tuple[CaseTables, CaseTables, CompareConfig]:
    """Raw and release case tables and the comparison options of the release pipeline's signals stage.

    For a method with an item form the release side is the form's :meth:`~ItemForm.case_tables` and
    the drug role is the form's on both sides; otherwise both sides are read as they are.
    """
    raw = read_case_tables(ingested)
    form = item_form(method)
    if form is None:
        return raw, read_case_tables(release), compare
    signals = dataclasses.replace(compare.signals, role=form.signals_role)
    return raw, form.case_tables(release, seed=seed), dataclasses.replace(compare, signals=signals)
