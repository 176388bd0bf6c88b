"""The release report: ``report.json`` (figures) and ``report.html`` (one self-contained page with plots).

SPEC §1, §8, §10 and the release issue: a reviewer reads parameters; privacy (DR, k achieved, the
group-size histogram); utility (NIL overall and per QID; raw vs released age and weight
distributions); signals (the reference panel as a forest plot of raw vs released PRR with
their CIs; survival overall and per stratum; new signals); and the rejects summary. The HTML holds
the same figures as the JSON, with the plots inlined as base64 PNG so the page needs nothing else.

Plots are drawn with matplotlib's non-interactive Agg backend. Released ages are ranges: the
"released" distribution spreads each case uniformly over its range (the *expected* reading of
SPEC §9), open top bands (80+) over [lo, lo + 20), so the two curves are comparable; a value released
at the root ([0, ∞), "any age") counts with the missing ones.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from faers_anon.json_data import json_data  # noqa: E402
from faers_anon.release.report_html import render_page, stratum_words  # noqa: E402

__all__ = ["ReportInputs", "build_figures", "render_html", "write_json", "write_report"]

_OPEN_BAND_SPAN = 20.0  # years an open top age band (e.g. 80+) is spread over in the plots
_AGE_BINS = np.arange(0.0, 106.0, 5.0)
_WEIGHT_BINS = np.arange(0.0, 205.0, 10.0)


@dataclass(frozen=True, kw_only=True, slots=True)
class ReportInputs:
    """The frames the plots are drawn from (the JSON figures travel separately as a dict).

    Attributes:
        raw_ages: one value per case (years, latest version), nulls allowed.
        released_ages: one row per case: ``age_min``, ``age_max`` (max exclusive; null = open/missing).
        raw_weights: one value per case (kg), nulls allowed.
        released_weights: one row per case: ``wt_min``, ``wt_max`` (inclusive), nulls for missing.
        group_sizes: ``size`` (distinct cases in a group), ``groups`` (how many groups have it).
        panel: reference-panel rows with ``label`` and, per measure m in (prr, ror) and side s in
            (raw, release): ``m_s``, ``m_s_lo``, ``m_s_hi``; null where a side has no estimate.
        survival: per stratum: ``stratum``, ``raw_signals``, ``survived`` (strata with no raw signal
            are left out of the plot).
    """

    raw_ages: pl.Series
    released_ages: pl.DataFrame
    raw_weights: pl.Series
    released_weights: pl.DataFrame
    group_sizes: pl.DataFrame
    panel: pl.DataFrame = field(default_factory=pl.DataFrame)
    survival: pl.DataFrame = field(default_factory=pl.DataFrame)


def _png(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _spread(lo: np.ndarray, hi: np.ndarray, bins: np.ndarray) -> np.ndarray:
    """Expected count per bin when each case is uniform over [lo, hi) (a point when lo == hi)."""
    hi = np.where(np.isnan(hi), lo + _OPEN_BAND_SPAN, hi)
    left, right = bins[:-1], bins[1:]
    width = np.maximum(hi - lo, 0.0)
    point = width == 0
    overlap = np.clip(np.minimum(hi[:, None], right) - np.maximum(lo[:, None], left), 0.0, None)
    share = np.where(point[:, None], 0.0, overlap / np.where(point, 1.0, width)[:, None])
    points = np.zeros_like(share)
    if point.any():
        index = np.clip(np.searchsorted(bins, lo[point], side="right") - 1, 0, len(left) - 1)
        points[np.flatnonzero(point), index] = 1.0
    return np.asarray((share + points).sum(axis=0))


def _known_ranges(lo: pl.Series, hi: pl.Series) -> np.ndarray:
    """Which released ranges say something about the value.

    Missing (null lo) does not; neither does the root of a numeric tree, [0, ∞) (age released as
    "any": a group mixing missing and known ages), which counts with the missing ones instead of
    being spread over [0, 20) like an open top band.
    """
    root = ((lo == 0.0) & hi.is_null()).fill_null(False)
    return np.asarray((lo.is_not_null() & ~root).to_numpy(), dtype=bool)


def _distribution_plot(
    raw: pl.Series, lo: pl.Series, hi: pl.Series, *, bins: np.ndarray, unit: str, title: str
) -> str:
    raw_values = raw.drop_nulls().cast(pl.Float64).to_numpy()
    known = _known_ranges(lo, hi)
    lo_values = lo.cast(pl.Float64).to_numpy()[known]
    hi_values = hi.cast(pl.Float64).fill_null(float("nan")).to_numpy()[known]
    raw_counts, _ = np.histogram(np.clip(raw_values, bins[0], bins[-1] - 1e-9), bins=bins)
    released = _spread(lo_values, hi_values, bins)
    fig, ax = plt.subplots(figsize=(7, 3))
    centers = (bins[:-1] + bins[1:]) / 2
    step = bins[1] - bins[0]
    ax.bar(centers - step / 4, raw_counts, width=step / 2, label=f"raw ({len(raw_values):,} known)")
    ax.bar(centers + step / 4, released, width=step / 2, label=f"released, expected ({known.sum():,} known)")
    ax.set_xlabel(unit)
    ax.set_ylabel("cases")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return _png(fig)


def _group_size_plot(group_sizes: pl.DataFrame) -> str:
    fig, ax = plt.subplots(figsize=(7, 3))
    if group_sizes.height:
        capped = (
            group_sizes.with_columns(pl.col("size").clip(upper_bound=30))
            .group_by("size")
            .agg(pl.col("groups").sum())
        )
        ax.bar(capped["size"].to_numpy(), capped["groups"].to_numpy(), width=0.8)
    ax.set_xlabel("distinct cases per QID-group (30 = 30 or more)")
    ax.set_ylabel("groups")
    ax.set_title("Group sizes")
    return _png(fig)


def _forest_plot(panel: pl.DataFrame, measure: str) -> str:
    rows = panel.height
    fig, ax = plt.subplots(figsize=(7, 0.45 * rows + 1.2))
    y = np.arange(rows)[::-1].astype(float)
    for offset, side, marker in ((0.15, "raw", "o"), (-0.15, "release", "s")):
        est = panel[f"{measure}_{side}"].cast(pl.Float64).fill_null(float("nan")).to_numpy()
        lo = panel[f"{measure}_{side}_lo"].cast(pl.Float64).fill_null(float("nan")).to_numpy()
        hi = panel[f"{measure}_{side}_hi"].cast(pl.Float64).fill_null(float("nan")).to_numpy()
        ok = np.isfinite(est) & np.isfinite(lo) & np.isfinite(hi) & (est > 0) & (lo > 0)
        ax.errorbar(
            est[ok],
            y[ok] + offset,
            xerr=[est[ok] - lo[ok], hi[ok] - est[ok]],
            fmt=marker,
            capsize=3,
            label=side,
        )
    ax.axvline(1.0, color="grey", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yticks(y)
    ax.set_yticklabels(panel["label"].to_list(), fontsize=8)
    ax.set_xlabel(f"{measure.upper()} with 95% CI (log scale)")
    ax.set_title(f"Reference panel: raw vs released {measure.upper()}")
    ax.legend(fontsize=8)
    return _png(fig)


def _survival_plot(survival: pl.DataFrame) -> str:
    # strata without raw signals have no share; "all" repeats the overall figure
    survival = survival.filter((pl.col("raw_signals") > 0) & (pl.col("stratum") != "all"))
    fig, ax = plt.subplots(figsize=(7, 0.4 * survival.height + 1.2))
    share = (survival["survived"] / survival["raw_signals"]).to_numpy()
    y = np.arange(survival.height)[::-1]
    ax.barh(y, share)
    for yy, kept, total in zip(y, survival["survived"], survival["raw_signals"], strict=True):
        ax.text(0.01, yy, f"{kept}/{total}", va="center", fontsize=7)
    ax.set_yticks(y)
    ax.set_yticklabels([stratum_words(s) for s in survival["stratum"].to_list()], fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of raw signals still signalling on the release")
    ax.set_title("Signal survival per stratum")
    return _png(fig)


def build_figures(inputs: ReportInputs) -> dict[str, str]:
    """Draw every plot of the report; returns name → base64 PNG."""
    figures = {
        "group_sizes": _group_size_plot(inputs.group_sizes),
        "age": _distribution_plot(
            inputs.raw_ages,
            inputs.released_ages["age_min"],
            inputs.released_ages["age_max"],
            bins=_AGE_BINS,
            unit="age (years)",
            title="Age: raw vs released",
        ),
        "weight": _distribution_plot(
            inputs.raw_weights,
            inputs.released_weights["wt_min"],
            inputs.released_weights["wt_max"],
            bins=_WEIGHT_BINS,
            unit="weight (kg)",
            title="Weight: raw vs released",
        ),
    }
    if inputs.panel.height:
        figures["panel_prr"] = _forest_plot(inputs.panel, "prr")
    if inputs.survival.height:
        figures["survival"] = _survival_plot(inputs.survival)
    return figures


def _img(figures: Mapping[str, str], name: str, alt: str) -> str:
    if name not in figures:
        return ""
    return f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{figures[name]}'/>"


def render_html(report: Mapping[str, Any], figures: Mapping[str, str]) -> str:
    """Render ``report`` (the dict written to report.json) and the figures as one HTML page.

    The page is laid out for a reviewer (:mod:`faers_anon.release.report_html`).
    """
    return render_page(report, figures, _img)


def write_json(report: Mapping[str, Any]) -> bytes:
    """Serialize the report deterministically (sorted keys, non-finite floats as null).

    Floats are rounded to 12 significant digits: sums of fractional counts (the ``expected``
    reading) are added in a thread-dependent order and differ in their last bits between runs; the
    rounding keeps two runs on the same inputs byte-identical without losing any figure that matters
    (:func:`faers_anon.json_data.json_data`).
    """
    return (json.dumps(json_data(report, digits=12), indent=2, sort_keys=True) + "\n").encode("utf-8")


def write_report(release: Path, report: dict[str, Any], figures: Mapping[str, str]) -> dict[str, bytes]:
    """Write ``report.json`` and ``report.html`` into ``release``; their bytes by file name.

    The page shows the figures exactly as report.json holds them (rounded, deterministic)."""
    report_json = write_json(report)
    page = render_html(json.loads(report_json), figures).encode("utf-8")
    added = {"report.json": report_json, "report.html": page}
    for name, data in added.items():
        (release / name).write_bytes(data)
    return added
