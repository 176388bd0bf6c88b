"""Figures and the HTML page of ``faers-anon evaluate`` (after Lin, Yang & Wang 2016, Figures 3–4).

* ``nil_<setting>_theta<θ>.png``: NIL per quarter and model, one panel per k of the grid's smallest
  and largest (the paper shows k (or l) = 5 and 20 and omits 10 and 15 as "in between"), log scale
  (the models differ by orders of magnitude; a NIL of 0 is drawn at the axis floor).
* ``dr_<setting>.png``: DR per model (mean over quarters), one panel per θ, one bar per k.
* ``evaluation.html``: the run's options, a summary table (means over quarters) and every figure
  inlined as base64 PNG, so the page needs no other file.

Plots use matplotlib's non-interactive Agg backend.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

__all__ = ["draw_figures", "render_page", "summary_table"]

_FLOOR = 1e-4


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def _names(rows: pl.DataFrame) -> list[tuple[str, str]]:
    """(name, kind) in registry order: models first, then methods."""
    seen = rows.select("kind", "model").unique(maintain_order=True)
    return [
        (n, k)
        for k in ("model", "method")
        for n, kk in zip(seen["model"], seen["kind"], strict=True)
        if kk == k
    ]


def _nil_figure(rows: pl.DataFrame, setting: str, theta: float, ks: Sequence[int]) -> bytes:
    fig, axes = plt.subplots(1, len(ks), figsize=(5.2 * len(ks), 3.8), squeeze=False, sharey=True)
    quarters = sorted(rows["quarter"].unique().to_list())
    colors = plt.get_cmap("tab20").colors  # type: ignore[attr-defined]
    for ax, k in zip(axes[0], ks, strict=True):
        part = rows.filter((pl.col("k") == k) | pl.col("k").is_null())
        for i, (name, kind) in enumerate(_names(rows)):
            series = part.filter(pl.col("model") == name).sort("quarter")
            x = [quarters.index(q) for q in series["quarter"].to_list()]
            y = [max(v, _FLOOR) for v in series["nil"].to_list()]
            style = (
                {"marker": "o", "linestyle": "-"} if kind == "model" else {"marker": "s", "linestyle": ":"}
            )
            ax.plot(x, y, color=colors[(2 * i) % 20 if i < 10 else (2 * i + 1) % 20], label=name, **style)
        ax.set_yscale("log")
        ax.set_xticks(range(len(quarters)), quarters, rotation=45, ha="right")
        ax.set_title(f"k (or l) = {k}")
        ax.set_xlabel("quarter")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"NIL (log; 0 drawn at {_FLOOR:g})")
    axes[0][-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle(f"NIL per quarter and model: θ* {setting}, θ (or α) = {theta:g}")
    return _png(fig)


def _dr_figure(rows: pl.DataFrame, setting: str, thetas: Sequence[float]) -> bytes:
    fig, axes = plt.subplots(1, len(thetas), figsize=(6.0 * len(thetas), 3.8), squeeze=False, sharey=True)
    for ax, theta in zip(axes[0], thetas, strict=True):
        part = rows.filter(pl.col("theta") == theta)
        means = part.group_by("model", "k").agg(pl.col("dr").mean()).sort("model", "k", nulls_last=True)
        models = [name for name, _ in _names(rows)]
        ks = means["k"].unique().sort(nulls_last=True).to_list()
        width = 0.8 / max(len(ks), 1)
        for j, k in enumerate(ks):
            sub = means.filter(pl.col("k").is_null() if k is None else pl.col("k") == k)
            x = [models.index(m) + (j - (len(ks) - 1) / 2) * width for m in sub["model"].to_list()]
            values = sub["dr"].to_list()
            ax.bar(x, values, width=width, label="k: n/a" if k is None else f"k = {k}")
            for xi, v in zip(x, values, strict=True):
                if v == 0.0:  # a bar of height 0 is invisible: say so
                    ax.text(xi, 0.01, "0", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(models)), models, rotation=45, ha="right")
        ax.set_ylim(0, 1)
        ax.set_title(f"θ (or α) = {theta:g}")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("DR (mean over quarters)")
    axes[0][-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle(f"Dangerous ratio per model: θ* {setting} (against MS(k, θ*) thresholds)")
    return _png(fig)


def draw_figures(rows: pl.DataFrame, folder: Path) -> dict[str, bytes]:
    """Draw every figure into ``folder`` (created); returns file name → PNG bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    figures: dict[str, bytes] = {}
    ks = sorted(rows["k"].drop_nulls().unique().to_list())
    shown = sorted({ks[0], ks[-1]}) if ks else []
    for setting in rows["theta_setting"].unique(maintain_order=True).to_list():
        part = rows.filter(pl.col("theta_setting") == setting)
        thetas = sorted(part["theta"].unique().to_list())
        if shown:
            for theta in thetas:
                figures[f"nil_{setting}_theta{theta:g}.png"] = _nil_figure(
                    part.filter(pl.col("theta") == theta), setting, theta, shown
                )
        figures[f"dr_{setting}.png"] = _dr_figure(part, setting, thetas)
    for name, data in figures.items():
        (folder / name).write_bytes(data)
    return figures


def summary_table(rows: pl.DataFrame) -> pl.DataFrame:
    """Means over quarters per (setting, θ, k, model): NIL, DR, groups, seconds, signal figures."""
    optional = [
        c for c in ("signal_survival", "signal_survival_strata", "panel_mean_abs_dprr") if c in rows.columns
    ]
    return (
        rows.group_by("theta_setting", "theta", "k", "model", maintain_order=True)
        .agg(
            pl.len().alias("quarters"),
            *(pl.col(c).mean() for c in ("nil", "dr", "groups", "seconds", *optional)),
        )
        .sort("theta_setting", "theta", "k", "nil", nulls_last=True)
    )


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return html.escape(str(value))


def render_page(
    rows: pl.DataFrame, figures: Mapping[str, bytes], options: Mapping[str, Any], csv_name: str
) -> str:
    """The self-contained HTML page (module docstring)."""
    table = summary_table(rows)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>" for row in table.iter_rows()
    )
    opts = "".join(f"<tr><th>{html.escape(k)}</th><td>{_cell(v)}</td></tr>" for k, v in options.items())
    images = "".join(
        f"<h3>{html.escape(name)}</h3><img alt='{html.escape(name)}' "
        f"src='data:image/png;base64,{base64.b64encode(data).decode('ascii')}'/>"
        for name, data in figures.items()
    )
    style = (
        "body{font-family:sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse;"
        "font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}img{max-width:100%}"
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>faers-anon evaluation</title>"
        f"<style>{style}</style></head><body><h1>Model comparison (after Lin et al. 2016, Figures 3–4)</h1>"
        f"<p>{rows.height} rows in <code>{html.escape(csv_name)}</code>; quarters: "
        f"{html.escape(', '.join(sorted(rows['quarter'].unique().to_list())))}. NIL on each model's units; "
        "DR on the cases of each released QID-group against the setting's MS(k, θ*) thresholds (with E).</p>"
        f"<h2>Options</h2><table>{opts}</table>"
        f"<h2>Means over quarters</h2><table><tr>{head}</tr>{body}</table>"
        f"<h2>Figures</h2>{images}</body></html>"
    )
