"""The method half of a run: ``--method NAME`` of ``anonymize`` and ``release``, and evaluate's methods.

A method of :data:`faers_anon.methods.METHODS` replaces the privacy model and the clustering engine:
:func:`method_partition` runs it on the cases frame with the run's generator
(``numpy.random.default_rng(seed)``) and returns its partition frame, which
:func:`faers_anon.anonymize.pipeline.run` measures and writes like a model's (one run, one metrics
path: :func:`faers_anon.anonymize.metrics.measure`). E, P(s | c) and θ* are built from the options as
for a model, travel with the release (``knowledge.csv``, ``thresholds.csv``) and measure DR *for
information* (the methods are not bounded by θ*; evaluate measures them the same way).

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
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from faers_anon.analysis.signals import read_case_tables
from faers_anon.anonymize.config import RELEASE_METHODS, AnonymizeConfig
from faers_anon.anonymize.partition import PARTITION_SCHEMA, released_groups
from faers_anon.json_data import json_data
from faers_anon.keys import AgencyKey
from faers_anon.methods import METHODS, ItemForm, MethodResult
from faers_anon.methods.base import IdMapping
from faers_anon.release.certificate import seal
from signals import CaseTables, CompareConfig

__all__ = [
    "RELEASE_METHODS",
    "item_form",
    "method_config",
    "method_parameters",
    "method_partition",
    "publish_item_form",
    "signal_inputs",
]


def item_form(method: str | None) -> ItemForm | None:
    """The method's own form of the item lists (None for a model run or a method releasing rows)."""
    return None if method is None else METHODS[method].capabilities.item_form


def method_config(name: str, config: AnonymizeConfig) -> Any:
    """The method's own config from the run's options (module docstring: which options pass on)."""
    return _config(name, k=config.k, seed=config.seed, sensitive=config.sensitive)


def _config(name: str, *, k: int, seed: int, sensitive: tuple[str, ...]) -> Any:
    method = METHODS[name]
    return method.config_type(**method.capabilities.options(k=k, seed=seed, sensitive=sensitive))


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


def method_partition(
    name: str, cases: pl.DataFrame, /, *, k: int, seed: int, sensitive: tuple[str, ...]
) -> tuple[pl.DataFrame, MethodResult]:
    """Run the method ``name`` on ``cases``: its partition frame on the released QID groups, and its result.

    The method takes ``k``, ``seed`` and ``sensitive`` as its capabilities declare (module docstring)
    and runs with ``numpy.random.default_rng(seed)``; the frame's groups are the distinct released QID
    tuples (:func:`faers_anon.anonymize.partition.released_groups`), sorted by caseid. Shared by
    :func:`faers_anon.anonymize.pipeline.run` and ``faers-anon evaluate``.

    Raises:
        ConfigError: invalid method options.
    """
    config = _config(name, k=k, seed=seed, sensitive=sensitive)
    result = METHODS[name](cases, config=config, rng=np.random.default_rng(seed))
    frame = (
        released_groups(result.release)
        .select([pl.col(c).cast(t) for c, t in PARTITION_SCHEMA.items()])
        .sort("caseid")
    )
    return frame, result


def publish_item_form(out: Path, result: MethodResult, ids: IdMapping, key: AgencyKey, /) -> None:
    """Replace the item tables of the written release ``out`` by the method's own form and seal it again.

    Nothing happens for a method that releases the lists as rows (no ``item_form``).
    """
    form = item_form(result.method)
    if form is not None:  # the item lists in the method's own form, naming cases by their pseudonyms
        form.publish(out, result, ids)
        seal(out, key)


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
