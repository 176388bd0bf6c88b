"""The figures of a release's report.json, and the frames its plots are drawn from.

``build_report`` gathers what each stage measured into one JSON-ready dict (the HTML shows the
same numbers): parameters; counts in and out (every input report accounted for: read = out +
quarantined + deleted + superseded reports left out, ``reports_superseded_left_out``, so that a case's
number of reports is common to its group: :mod:`faers_anon.anonymize.versions`); privacy (the
verifier's DR and group sizes, k achieved, θ* actions);
utility (NIL overall and per QID); for a release made with a method (``--method``), its name, parameters
and own privacy figures beside DR; signals (survival overall and per stratum for the chosen
criterion under the ``expected`` reading; per criterion — Evans, ROR025 > 1, IC025 > 0, EB05 ≥ 2 —
its rule, count floor and source with the survival overall, pooled over the strata and in the worst
stratum, and the panel's; the reference panel with its Mantel–Haenszel ROR; release-only
signals; the MGPS prior each side's EBGM was scored under, ``ebgm_prior``, in the
``--ebgm-prior`` form — exact decimals, :func:`prior_option`); rejects per table and reason. Stage
timings differ from run to run, so they go to manifest.json's ``timings`` (left out of
reproducibility checks), not into the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from faers_anon.anonymize.method_run import item_form
from faers_anon.json_data import json_data
from faers_anon.release.report import ReportInputs
from faers_anon.release.report_html import worst_stratum

if TYPE_CHECKING:
    from faers_anon.anonymize.pipeline import AnonymizeResult
    from faers_anon.io.ingest_report import IngestResult
    from faers_anon.release.config import ReleaseConfig
    from faers_anon.verify.verifier import Verdict
    from signals import Comparison
    from signals.ebgm import GammaMixture

__all__ = ["build_report", "by_criterion", "prior_option", "report_inputs"]

_PANEL_READING = "expected"
_PANEL_COLUMNS = [
    "drug", "event", "condition", "reading",
    "a_raw", "prr_raw", "prr_lo_raw", "prr_hi_raw", "ror_raw", "ror_lo_raw", "ror_hi_raw", "ic025_raw",
    "a_release", "prr_release", "prr_lo_release", "prr_hi_release",
    "ror_release", "ror_lo_release", "ror_hi_release", "ic025_release",
    "prr_change", "ror_change", "survived",
    "ror_mh_raw", "ror_mh_lo_raw", "ror_mh_hi_raw",
    "ror_mh_release", "ror_mh_lo_release", "ror_mh_hi_release",
]  # fmt: skip


def _rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    return frame.to_dicts()


def prior_option(prior: GammaMixture | None) -> str | None:
    """``alpha1,beta1,alpha2,beta2,p`` as ``--ebgm-prior`` reads it back; None without EBGM.

    Each number is Python's shortest round-trip decimal (``repr``), so the prior read back is the
    fitted one to the last bit: the fit's last bits vary across machines (signals/ebgm.py,
    "Reproducibility"), a prior given back does not.
    """
    if prior is None:
        return None
    return ",".join(repr(float(v)) for v in (prior.alpha1, prior.beta1, prior.alpha2, prior.beta2, prior.p))


def _rejects(ingested: IngestResult) -> list[dict[str, Any]]:
    rows = []
    for table, counts in ingested.report["tables"].items():
        for reason, n in sorted(counts.get("reasons", {}).items()):
            rows.append({"table": table, "reason": reason, "rows": n})
        if counts.get("deleted"):
            rows.append({"table": table, "reason": "caseid_deleted", "rows": counts["deleted"]})
    return rows


def by_criterion(overview: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per criterion of the comparison (``Comparison.as_dict()``): ``rule``, ``min_a``, ``source``;
    survival ``overall``, pooled over the ``strata`` and in the ``worst_stratum`` (null when no
    stratum holds a raw signal), both under the strata's reading (``expected`` on a release); and
    ``panel``, the reference rules signalling on the raw data that do (``yes``) / do not (``no``)
    still signal, in that reading."""
    strata = overview["strata"]
    reading = _PANEL_READING if _PANEL_READING in strata else next(iter(strata), None)
    panel = overview["panel"]["by_criterion"]
    return {
        name: {
            **rule,
            "reading_of_strata": reading,
            "overall": overview["overall"][name],
            "strata": strata[reading][name] if reading else None,
            "worst_stratum": overview["worst_stratum"].get(name, {}).get(reading),
            "panel": panel.get(name, {}).get(reading, {"yes": 0, "no": 0}),
        }
        for name, rule in overview["criteria"].items()
    }


def _method_figures(anonymized: AnonymizeResult) -> dict[str, Any]:
    """A method release's name, parameters and own privacy figures (DR beside them is for information)."""
    if anonymized.method is None:
        return {}
    return {
        "method": anonymized.method.method,
        "method_parameters": json_data(anonymized.method.describe()),
        "method_privacy": json_data(anonymized.method.privacy),
        "dr_against": "MS(k, θ*) thresholds.csv with E, for information (the method is not bounded by θ*)",
    }


def build_report(
    *,
    config: ReleaseConfig,
    version: str,
    ingested: IngestResult,
    anonymized: AnonymizeResult,
    verdict: Verdict,
    comparison: Comparison,
    risk: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything report.json holds; see the module docstring."""
    reports = ingested.report["tables"]["reports"]
    overview = comparison.as_dict()
    criterion = overview["criterion"]
    overall = overview["overall"][criterion]
    # Explicit sorts: frames from group-bys come in thread-dependent order, and report.json (and the
    # plots drawn from the same frames) must be byte-identical for the same inputs.
    survival = (
        comparison.survival.filter(
            (pl.col("criterion") == criterion) & pl.col("reading").is_in(["exact", _PANEL_READING])
        )
        .drop("criterion")
        .sort("stratum", "reading")
    )
    panel = comparison.panel.select([c for c in _PANEL_COLUMNS if c in comparison.panel.columns]).sort(
        "drug", "event", "condition", "reading"
    )
    new = comparison.new_signals.filter(pl.col("criterion") == criterion).sort(
        "stratum", "reading", "drug", "event"
    )
    sizes = verdict.group_sizes
    thresholds = anonymized.thresholds
    return {
        "tool": {"name": "faers-anon", "version": version},
        "parameters": config.parameters(),
        "counts": {
            "quarters": ingested.report["quarters"],
            "reports_read": reports["read"],
            "reports_quarantined": reports["quarantined"],
            "reports_deleted": reports["deleted"],
            "reports_superseded_left_out": (anonymized.superseded or {}).get("reports", 0),
            "cases_with_superseded_left_out": (anonymized.superseded or {}).get("cases", 0),
            "reports_out": verdict.n_reports,
            "cases": verdict.n_cases,
            "tables": {
                name: {k: t[k] for k in ("read", "kept", "quarantined", "deleted")}
                | {"note": t.get("note", "")}  # e.g. "not in the source"
                for name, t in ingested.report["tables"].items()
            },
        },
        "privacy": {
            "model": config.anonymize.model if anonymized.method is None else None,
            **_method_figures(anonymized),
            "k": verdict.k,
            "k_achieved": int(sizes["size"].min()) if sizes.height else 0,  # type: ignore[arg-type]
            "groups": verdict.n_groups,
            # the engine's groups before the released tuples merge; a method has no engine (None)
            "engine_groups": None if anonymized.partition is None else anonymized.partition.groups,
            "dangerous_groups": verdict.n_dangerous,
            "dr": verdict.dr,
            "share_cases_in_groups_of_exactly_k": anonymized.share_k,
            "thresholds_rule": thresholds.rule,
            "protected_values": thresholds.count("protected") + thresholds.count("raised"),
            "raised_values": thresholds.count("raised"),
            "suppressed_values": thresholds.count("suppressed"),
            "on_infeasible": thresholds.on_infeasible,
            "group_sizes": _rows(sizes),
            "items": anonymized.items,  # --items-m: what was suppressed (docs/items.md); None when off
        },
        "utility": {"nil": anonymized.nil, **{f"nil_{q}": v for q, v in anonymized.nil_by_qid.items()}},
        "signals": {
            **({"release_side": form.signals_note} if (form := item_form(config.anonymize.method)) else {}),
            "criterion": criterion,
            "reading_of_strata": _PANEL_READING,
            "survival_overall": overall["share_survived"],
            "n_raw_overall": overall["n_raw"],
            "n_survived_overall": overall["n_survived"],
            "n_new_overall": overall["n_new"],
            "prr_spearman": overview["prr_spearman"],
            "panel_rules": overview["panel"]["rules"],
            "panel_raw_signals": overview["panel"]["raw_signals"],
            "panel_survived": overview["panel"]["survived"].get(_PANEL_READING, {}).get("yes", 0),
            "per_stratum": _rows(survival),
            "worst_stratum": worst_stratum(
                _rows(
                    survival.filter((pl.col("stratum") != "overall") & (pl.col("reading") == _PANEL_READING))
                )
            ),
            "by_criterion": by_criterion(overview),
            "panel": _rows(panel),
            "new_signals": _rows(new.head(100)),
            "ebgm_prior": {
                "raw": prior_option(comparison.raw.ebgm_prior),
                "release": prior_option(comparison.release.ebgm_prior),
            },
        },
        "verification": {
            "ok": verdict.ok,
            "dr": verdict.dr,
            "groups": verdict.n_groups,
            "violations": verdict.violations.height,
        },
        "rejects": _rejects(ingested),
        **({"risk": risk} if risk is not None else {}),
    }


def report_inputs(
    ingested: Path, release: Path, verdict: Verdict, comparison: Comparison, config: ReleaseConfig
) -> ReportInputs:
    """The frames of the plots: one row per case (latest version) on each side, sizes, panel, survival."""
    raw = (
        pl.scan_parquet(ingested / "reports.parquet")
        .filter(pl.col("is_latest"))
        .select("age_years", "weight_kg")
        .collect()
    )
    released = (
        pl.scan_parquet(release / "parquet" / "demo.parquet")
        .filter(pl.col("is_latest"))
        .select("age_min", "age_max", "wt_min", "wt_max")
        .collect()
    )
    criterion = comparison.as_dict()["criterion"]
    panel = (
        # a rule with no raw report of the pair is "not in this quarter": listed, never plotted
        comparison.panel.filter((pl.col("reading") == _PANEL_READING) & (pl.col("a_raw").fill_null(0) > 0))
        .sort("drug", "event", "condition")
        .select(
            pl.concat_str(["drug", "event", "condition"], separator=" / ").alias("label"),
            *[
                pl.col(f"{m}{part}_{side}").alias(f"{m}_{side}{part}")
                for m in ("prr", "ror")
                for side in ("raw", "release")
                for part in ("", "_lo", "_hi")
            ],
        )
    )
    survival = (
        comparison.survival.filter(
            (pl.col("criterion") == criterion) & pl.col("reading").is_in(["exact", _PANEL_READING])
        )
        .sort("stratum", "reading")
        .select(
            pl.col("stratum"), pl.col("n_raw").alias("raw_signals"), pl.col("n_survived").alias("survived")
        )
    )
    return ReportInputs(
        raw_ages=raw["age_years"],
        released_ages=released.select("age_min", "age_max"),
        raw_weights=raw["weight_kg"],
        released_weights=released.select("wt_min", "wt_max"),
        group_sizes=verdict.group_sizes.select("size", "groups"),
        panel=panel,
        survival=survival,
    )
