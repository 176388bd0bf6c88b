"""The shape figures of a quarter (real or synthetic): what ``REALISTIC`` is fitted to and tested on.

``quarter_figures(tables)`` measures a quarter given as ``{"DEMO", "DRUG", "REAC", "INDI"}`` frames
of FAERS string columns. ``zipf_mandelbrot(counts)`` is the law fitted to value frequencies.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.optimize import minimize

__all__ = ["quarter_figures", "zipf_mandelbrot", "UNKNOWN_SHARE_KEY"]

UNKNOWN_SHARE_KEY = "indi unknown-indication share"


def zipf_mandelbrot(counts: np.ndarray) -> tuple[float, float]:
    """MLE ``(s, q)`` of ``P(rank r) ∝ (r + q)^-s`` over ranks 1..len(counts) (``q`` = 0: plain Zipf).

    ``counts`` are the frequencies of the distinct values in any order; ranks are by decreasing
    count. Bounds s ∈ [0.2, 4], q ∈ [0, 500]; L-BFGS-B from (1, 1).
    """
    n = np.sort(np.asarray(counts, dtype=np.float64))[::-1]
    r = np.arange(1, n.size + 1, dtype=np.float64)

    def nll(x: np.ndarray) -> float:
        log_w = -x[0] * np.log(r + x[1])
        return float(-(n * log_w).sum() + n.sum() * np.log(np.exp(log_w).sum()))

    fit = minimize(nll, np.array([1.0, 1.0]), bounds=[(0.2, 4.0), (0.0, 500.0)], method="L-BFGS-B")
    return float(fit.x[0]), float(fit.x[1])


def _share(mask: pl.Series) -> float:
    """Share of true values (0 for an empty series)."""
    return float(mask.sum()) / mask.len() if mask.len() else 0.0


def quarter_figures(tables: dict[str, pl.DataFrame]) -> dict[str, float]:
    """Per-report counts, missingness, follow-ups, vocabularies and laws of one quarter.

    Values are compared case-blind. Per-case laws count the cases listing each PS drug (by ``prod_ai``,
    else ``drugname``) or PT, as the 2022Q3 whole-quarter table does.
    """
    demo, drug, reac, indi = (tables[t] for t in ("DEMO", "DRUG", "REAC", "INDI"))
    n = demo.height
    out: dict[str, float] = {
        "reports": n,
        "drug per report": drug.height / n,
        "reac per report": reac.height / n,
        "indi per report": indi.height / n,
        "follow-up share": _share(demo["i_f_code"] == "F"),
        "age missing": _share(demo["age"].is_null()),
        "weight missing": _share(demo["wt"].is_null()),
        "sex UNK or null": _share(demo["sex"].is_null() | (demo["sex"] == "UNK")),
        "rept DIR": _share(demo["rept_cod"] == "DIR"),
        "senders distinct": demo["mfr_sndr"].n_unique(),
        "countries distinct": demo["reporter_country"].n_unique(),
        "country top share": float(demo["reporter_country"].value_counts()["count"].max() or 0) / n,  # type: ignore[arg-type]
        "fda_dt Mon-Fri share": _share(demo["fda_dt"].str.to_date("%Y%m%d").dt.weekday() <= 5),
        UNKNOWN_SHARE_KEY: _share(indi["indi_pt"] == "Product used for unknown indication"),
    }
    per_report = drug.group_by("primaryid").len()["len"]
    out["drug share of reports with 1"] = _share(per_report == 1)
    per_report = reac.group_by("primaryid").len()["len"]
    out["reac share of reports with 1"] = _share(per_report == 1)
    ps = drug.filter(pl.col("role_cod") == "PS").select(
        "caseid", pl.coalesce("prod_ai", "drugname").str.to_lowercase().alias("v")
    )
    pts = reac.select("caseid", pl.col("pt").str.to_lowercase().alias("v"))
    for name, frame in (("drug", ps), ("pt", pts)):
        per_value = frame.unique().group_by("v").len()["len"].to_numpy()
        out[f"{name} per case distinct"] = per_value.size
        out[f"{name} per case zipf s"], out[f"{name} per case zipf q"] = zipf_mandelbrot(per_value)
        out[f"{name} share of cases with the top value"] = per_value.max() / demo["caseid"].n_unique()
    for name, col, frame in (("drug", "drugname", drug), ("reac", "pt", reac), ("indi", "indi_pt", indi)):
        out[f"{name} distinct"] = frame[col].str.to_lowercase().n_unique()
    return out
