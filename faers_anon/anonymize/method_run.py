"""Release modes for the comparison methods (``--method NAME`` of ``anonymize`` and ``release``; SPEC §7).

A method of :data:`faers_anon.methods.METHODS` replaces the privacy model and the clustering engine:
it runs on the cases frame with the run's generator (``numpy.random.default_rng(seed)``) and its
partition frame is written by :func:`faers_anon.release.writer.write_release` like a model's. The
rest of the run is the same as for a model: E, P(s | c) and θ* are built from the options, travel with
the release (``knowledge.csv``, ``thresholds.csv``) and measure DR *for information* (the methods are
not bounded by θ*; evaluate measures them the same way), NIL is measured on the same hierarchies.

Options passed on (decisions, also in docs/methods.md "How to release with a method"):

* ``--k`` is the group size of ``kl-anonymity`` (k records per group) and of ``disassociation`` (k^m);
  the other methods have no group size: enhanced RA's own ``k`` (QID values re-drawn per case, default
  2) keeps its default. ``l`` of kl-anonymity and ``m`` of disassociation keep their defaults (2, 2).
* kl-anonymity's sensitive lists are the run's ``--sensitive`` indications and reactions (E's diseases
  are not a list column of the cases; default both).
* The released QID groups are the distinct released QID tuples (two groups of a method that generalize
  to the same tuple are one group to an attacker, and to the verifier).

manifest.json → ``parameters`` records ``method``, ``method_parameters`` (the result's ``describe()``),
``method_privacy`` (its privacy figures; non-finite numbers as null) and ``k`` only for the methods
with a group size; ``model`` is absent (the verifier reads ``method``).

Disassociation publishes DRUG and REAC as its chunked form in ``disassociated/`` instead of rows
(:func:`faers_anon.anonymize.disassociation_run.publish_disassociated`, which also records ``m``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from faers_anon.algorithms import Partition
from faers_anon.anonymize import metrics
from faers_anon.anonymize.disassociation_run import publish_disassociated
from faers_anon.anonymize.partition import PARTITION_SCHEMA
from faers_anon.anonymize.units import case_members
from faers_anon.keys import load_key
from faers_anon.methods import METHODS, MethodResult
from faers_anon.methods.disassociation import DisassociationResult
from faers_anon.release.certificate import seal
from faers_anon.release.writer import write_release

if TYPE_CHECKING:
    from faers_anon.anonymize.pipeline import AnonymizeConfig, AnonymizeResult

__all__ = [
    "METHOD_K",
    "RELEASE_METHODS",
    "anonymize_with_method",
    "json_data",
    "method_config",
    "method_parameters",
]

METHOD_K = frozenset({"kl-anonymity", "disassociation"})
"""Methods whose ``k`` is a group size: they get the run's ``--k``."""

RELEASE_METHODS: tuple[str, ...] = tuple(METHODS)
"""The methods ``--method`` accepts (disassociation's release: :mod:`.disassociation_run`)."""

_QIDS = tuple(c for c in PARTITION_SCHEMA if c not in ("caseid", "group_id"))


def method_config(name: str, config: AnonymizeConfig) -> Any:
    """The method's own config from the run's options (module docstring: which options pass on)."""
    options: dict[str, Any] = {}
    if name == "kl-anonymity":
        lists = tuple(s for s in config.sensitive if s in ("indications", "reactions"))
        options = {"k": config.k, "sensitive": lists or ("indications", "reactions")}
    elif name == "disassociation":
        options = {"k": config.k, "seed": config.seed}
    return METHODS[name].config_type(**options)


def json_data(value: Any) -> Any:
    """JSON data: numpy scalars as Python numbers, non-finite floats as None, tuples as lists."""
    if isinstance(value, Mapping):
        return {str(k): json_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_data(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def method_parameters(result: MethodResult, config: AnonymizeConfig) -> dict[str, Any]:
    """manifest.json parameters of a method release (module docstring)."""
    drop = {"k", "candidates", "scan_limit"}
    params: dict[str, Any] = {k: v for k, v in config.parameters().items() if k not in drop}
    if result.method in METHOD_K:
        params["k"] = config.k
    params["method"] = result.method
    params["method_parameters"] = json_data(result.describe())
    params["method_privacy"] = json_data(result.privacy)
    return params


def released_groups(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame with ``group_id`` renumbered by distinct released QID tuple (sorted, nulls last)."""
    ids = (
        frame.select(_QIDS)
        .unique()
        .sort(_QIDS, nulls_last=True)
        .with_row_index("group_id")
        .with_columns(pl.col("group_id").cast(pl.Int64))
    )
    joined = frame.drop("group_id").join(ids, on=_QIDS, how="left", nulls_equal=True)
    return joined.select([pl.col(c).cast(t) for c, t in PARTITION_SCHEMA.items()]).sort("caseid")


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
    from faers_anon.anonymize.pipeline import AnonymizeResult

    assert config.method is not None
    seconds: dict[str, float] = {}
    clock = time.perf_counter()
    method = METHODS[config.method]
    result = method(
        cases, config=method_config(config.method, config), rng=np.random.default_rng(config.seed)
    )
    frame = released_groups(result.release)
    seconds["anonymize"] = time.perf_counter() - clock
    clock = time.perf_counter()
    from faers_anon.anonymize.pipeline import (
        sensitive_thresholds,  # anonymize imports this module: import late
    )

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
        if isinstance(result, DisassociationResult):  # its members name cases: by their pseudonyms
            members = written.ids.apply(result.released.members).sort("cluster_id", "caseid")
            publish_disassociated(out, replace(result, released=replace(result.released, members=members)))
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
