"""One quarter of ``faers-anon evaluate``: every model and method on every k and θ* setting (SPEC §7–§9).

The quarter's tables are read once (:class:`QuarterData`). For each k:

* θ* is built for every (setting, θ) pair (:func:`faers_anon.anonymize.thresholds.build_thresholds`, with the
  run's ``on_infeasible`` and k: a raised θ_s depends on k).
* A model is run once per θ* it depends on and its partition reused for every row it serves:
  models without value caps or risk term (k-anonymity, (X,Y)-anonymity, l-diversity) once per k;
  a model with one bound for every value (``Requirements.uniform_bound``: (α,k)-anonymity, "α is set
  to 0.2 or 0.4") once per θ, with that bound = θ in every setting; MS(k, θ*) once per (setting, θ).
  Methods run once per quarter, or once per k when their ``k`` is a group size (their
  ``Capabilities.group_size``); those without are measured against the θ* of the grid's first k (a
  raised θ_s depends on k). A method that publishes the drug and reaction lists in its own form
  (``Capabilities.item_form``) gets no signal figures here: they read the raw lists with the released
  QIDs, which would not measure it (its own figures are in its columns).
* Each partition is measured against every θ* it serves (:func:`row_figures`) and, once, for signal
  survival (:func:`signal_figures`), without writing a release.

Measures: the anonymize run's own (:func:`faers_anon.anonymize.metrics.measure`, one metrics path for
``faers-anon anonymize``, ``release`` and this harness): NIL on the algorithm's groups and the model's
own units (reports for report-unit models); groups, the smallest group and DR on the *released QID
tuples*, the QID-groups an attacker sees. A method runs as ``--method`` runs it
(:func:`faers_anon.anonymize.method_run.method_partition`: the options its capabilities take).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from faers_anon.algorithms.types import QidHierarchies
from faers_anon.analysis.signals import read_case_tables
from faers_anon.anonymize import metrics
from faers_anon.anonymize.method_run import method_partition
from faers_anon.anonymize.partition import QID_COLUMNS
from faers_anon.anonymize.thresholds import Thresholds, build_thresholds
from faers_anon.anonymize.units import model_unit, partition_model, report_records
from faers_anon.methods import METHODS
from faers_anon.models import make_model
from knowledge import case_value_probabilities
from signals import CaseTables, compare

__all__ = [
    "CORE_COLUMNS",
    "QuarterData",
    "RunSpec",
    "load_quarter",
    "row_figures",
    "quarter_rows",
    "signal_figures",
]

CORE_COLUMNS = (
    "quarter", "kind", "model", "unit", "k", "theta_setting", "theta", "nil", "dr", "groups",
    "dangerous_groups", "k_achieved", "n_units", "raised_values", "forced", "invalid_groups", "seconds",
    "signal_survival", "signal_survival_strata", "new_signals", "panel_mean_abs_dprr", "panel_survived",
    "panel_raw_signals", "signal_seconds",
)  # fmt: skip
"""The columns every row has; a method's own figure of the same name is renamed ``method_<name>``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunSpec:
    """What :func:`quarter_rows` runs (a validated subset of :class:`.pipeline.EvaluateConfig`)."""

    models: tuple[str, ...]
    methods: tuple[str, ...]
    ks: tuple[int, ...]
    thetas: tuple[float, ...]
    settings: tuple[str, ...]
    theta_file: Path
    frequency_slope: float
    sensitive: tuple[str, ...]
    on_infeasible: str
    seed: int
    signals: bool
    candidates: int
    scan_limit: int
    complete_qids: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class QuarterData:
    """The tables one quarter's runs share (read once)."""

    label: str
    cases: pl.DataFrame
    knowledge: pl.DataFrame
    probabilities: pl.DataFrame
    reports: pl.DataFrame | None
    raw: CaseTables | None
    latest: pl.DataFrame


def load_quarter(label: str, ingested: Path, knowledge: pl.DataFrame, spec: RunSpec) -> QuarterData:
    """Read the cases, P(s | c), the report records (if a report-unit model runs), the raw signal input.

    With ``spec.complete_qids`` only the cases none of whose reports misses age, sex or weight are kept
    (the paper's experiments: "any record with QID containing missing values was discarded"; a case is
    kept or dropped whole, so its super-record and every report agree).
    """
    cases = pl.read_parquet(ingested / "cases.parquet")
    needs_reports = any(model_unit(m) == "reports" for m in spec.models)
    reports = pl.read_parquet(
        ingested / "reports.parquet",
        columns=["primaryid", "caseid", "is_latest", "age_years", "sex", "weight_kg"],
    )
    records = report_records(ingested) if needs_reports else None
    raw = read_case_tables(ingested) if spec.signals else None
    if spec.complete_qids:
        gaps = pl.any_horizontal(pl.col(c).is_null() for c in ("age_years", "sex", "weight_kg"))
        keep = cases.select("caseid").join(reports.filter(gaps).select("caseid"), on="caseid", how="anti")
        cases = cases.join(keep, on="caseid", how="semi")
        reports = reports.join(keep, on="caseid", how="semi")
        records = None if records is None else records.join(keep, on="caseid", how="semi")
        if raw is not None:
            raw = CaseTables(
                *(f.join(keep, on="caseid", how="semi") for f in (raw.cases, raw.drugs, raw.events))
            )
    return QuarterData(
        label=label,
        cases=cases,
        knowledge=knowledge,
        probabilities=case_value_probabilities(cases, knowledge, sensitive=spec.sensitive),
        reports=records,
        raw=raw,
        latest=reports.filter(pl.col("is_latest")).select("primaryid", "caseid"),
    )


def row_figures(
    frame: pl.DataFrame, raw_units: pl.DataFrame, data: QuarterData, thresholds: Thresholds, k: int
) -> dict[str, Any]:
    """NIL, DR and group figures of a partition frame against one θ*: the anonymize run's metrics
    (:func:`faers_anon.anonymize.metrics.measure`), as row columns."""
    m = metrics.measure(
        frame, raw_units, data.probabilities, thresholds.frame, hierarchies=QidHierarchies.default(), k=k
    )
    return {
        "n_units": m.n_units,
        "groups": m.groups,
        "k_achieved": m.k_achieved,
        "nil": m.nil,
        "dr": m.dr,
        "dangerous_groups": m.dangerous_groups,
        "raised_values": thresholds.count("raised"),
    }


def _release_tables(frame: pl.DataFrame, data: QuarterData) -> CaseTables:
    """The release's signals input: the latest report of each case with its group's released QIDs."""
    assert data.raw is not None
    key = "primaryid" if "primaryid" in frame.columns else "caseid"
    point = frame.select(
        ((pl.col("age_min") == pl.col("age_max")) | pl.col("age_min").is_null()).all()
        & ((pl.col("wt_min") == pl.col("wt_max")) | pl.col("wt_min").is_null()).all()
    ).item()
    cases = data.latest.join(frame.select(key, *QID_COLUMNS), on=key, how="inner")
    if point:  # a point release (swapping, random anonymization): released values are exact
        shown = cases.select(
            "caseid",
            pl.col("age_min").alias("age_years"),
            pl.col("sex").replace("*", None),
            pl.col("wt_min").alias("weight_kg"),
        )
    else:
        shown = cases.select("caseid", "age_min", "age_max", "sex", "wt_min", "wt_max")
    return CaseTables(cases=shown, drugs=data.raw.drugs, events=data.raw.events)


def signal_figures(frame: pl.DataFrame, data: QuarterData) -> dict[str, Any]:
    """Signal survival (Evans, overall and pooled strata) and the reference panel's mean |ΔPRR|.

    The strata and the panel use the ``expected`` reading of released ranges (``exact`` for point
    releases). ``panel_mean_abs_dprr`` averages |PRR_release / PRR_raw − 1| over the panel rules with
    both PRRs finite; null when there is none.
    """
    if data.raw is None:
        return {}
    clock = time.perf_counter()
    comparison = compare(data.raw, _release_tables(frame, data))
    overview = comparison.as_dict()
    reading = "expected" if "expected" in overview["strata"] else "exact"
    strata = overview["strata"].get(reading, {}).get("evans", {})
    panel = comparison.panel.filter(pl.col("reading") == reading)
    change = panel.select(pl.col("prr_change").abs()).to_series().drop_nulls().drop_nans()
    change = change.filter(change.is_finite())
    return {
        "signal_survival": overview["overall"]["evans"]["share_survived"],
        "signal_survival_strata": strata.get("share_survived"),
        "new_signals": overview["overall"]["evans"]["n_new"],
        "panel_mean_abs_dprr": float(change.mean()) if change.len() else None,  # type: ignore[arg-type]
        "panel_survived": int(panel.filter(pl.col("survived") == "yes").height),
        "panel_raw_signals": int(panel.filter(pl.col("signal_raw")).height),
        "signal_seconds": time.perf_counter() - clock,
    }


def _thresholds(data: QuarterData, spec: RunSpec, setting: str, theta: float, k: int) -> Thresholds:
    return build_thresholds(
        data.probabilities,
        data.cases.height,
        rule=setting,  # type: ignore[arg-type]
        theta=theta,
        theta_file=spec.theta_file if setting == "level" else None,
        slope=spec.frequency_slope,
        on_infeasible=spec.on_infeasible,  # type: ignore[arg-type]
        k=k,
    )


def _scalars(privacy: Any) -> dict[str, Any]:
    """A method's finite scalar privacy figures (nested ones left out; core names get ``method_``)."""
    return {
        (f"method_{k}" if k in CORE_COLUMNS else str(k)): v
        for k, v in dict(privacy).items()
        if isinstance(v, bool | int | float) and not (isinstance(v, float) and not math.isfinite(v))
    }


Progress = Callable[[str], None]


def quarter_rows(data: QuarterData, spec: RunSpec, progress: Progress) -> Iterator[dict[str, Any]]:
    """Every row of one quarter: model/method × k × setting × θ (module docstring)."""
    grid = [(s, t) for s in spec.settings for t in spec.thetas]
    method_done: dict[tuple[str, int | None], tuple[pl.DataFrame, dict[str, Any], float, dict[str, Any]]] = {}
    for k in spec.ks:
        star = {(s, t): _thresholds(data, spec, s, t, k) for s, t in grid}
        runs: dict[tuple[str, object], tuple[Any, float, dict[str, Any]]] = {}
        for name in spec.models:
            req = make_model(name, k=k, thetas={}).requirements()
            depends = req.value_caps or req.risk != "none"
            for setting, theta in grid:
                if not depends:
                    key: object = None
                    thetas: dict[str, float] = {}
                elif req.uniform_bound:
                    key = theta
                    thetas = _thresholds(data, spec, "uniform", theta, k).thetas
                else:
                    key = (setting, theta)
                    thetas = star[(setting, theta)].thetas
                if (name, key) not in runs:
                    clock = time.perf_counter()
                    run = partition_model(
                        data.cases,
                        data.knowledge,
                        model=make_model(name, k=k, thetas=thetas),
                        hierarchies=QidHierarchies.default(),
                        rng=np.random.default_rng(spec.seed),
                        sensitive=spec.sensitive,
                        reports=data.reports,
                        probabilities=data.probabilities,
                        candidates=spec.candidates,
                        scan_limit=spec.scan_limit,
                    )
                    seconds = time.perf_counter() - clock
                    runs[(name, key)] = (run, seconds, signal_figures(run.partition.frame, data))
                    progress(f"  {data.label} {name} k={k} {'' if key is None else key}: {seconds:.1f} s")
                run, seconds, sig = runs[(name, key)]
                yield {
                    "quarter": data.label,
                    "kind": "model",
                    "model": name,
                    "unit": run.unit,
                    "k": k,
                    "theta_setting": setting,
                    "theta": theta,
                    **row_figures(run.partition.frame, run.units, data, star[(setting, theta)], k),
                    "forced": run.partition.forced,
                    "invalid_groups": run.partition.invalid_groups,
                    "seconds": seconds,
                    **sig,
                }
        for name in spec.methods:
            method = METHODS[name]
            mk = k if method.capabilities.group_size else None
            if (name, mk) not in method_done:
                clock = time.perf_counter()
                frame, result = method_partition(
                    name, data.cases, k=k, seed=spec.seed, sensitive=spec.sensitive
                )
                seconds = time.perf_counter() - clock
                sig = {} if method.capabilities.item_form else signal_figures(frame, data)
                method_done[(name, mk)] = (frame, _scalars(result.privacy), seconds, sig)
                progress(f"  {data.label} {name}{'' if mk is None else f' k={mk}'}: {seconds:.1f} s")
            elif mk is None and k != spec.ks[0]:
                continue
            release, privacy, seconds, sig = method_done[(name, mk)]
            for setting, theta in grid:
                yield {
                    "quarter": data.label,
                    "kind": "method",
                    "model": name,
                    "unit": "cases",
                    "k": mk,
                    "theta_setting": setting,
                    "theta": theta,
                    **row_figures(release, data.cases, data, star[(setting, theta)], k),
                    "seconds": seconds,
                    **sig,
                    **privacy,
                }
