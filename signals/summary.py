"""What a comparison pools: survival summed per criterion, the worst stratum, Spearman's ρ of PRR.

SPEC §9; the shapes are those :class:`signals.compare.Comparison` documents.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

__all__ = ["correlation", "finite", "pooled", "spearman", "worst_stratum"]


def spearman(frame: pl.DataFrame | pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
    rho = pl.corr("prr_raw", "prr_release", method="spearman")
    return (
        frame.lazy()
        .filter(pl.col("prr_raw").is_not_null() & pl.col("prr_release").is_not_null())
        .group_by(by)
        .agg(n_common=pl.len(), _rho=rho)
        .with_columns(
            prr_spearman=pl.when((pl.col("n_common") >= 3) & pl.col("_rho").is_finite()).then("_rho")
        )
        .drop("_rho")
    )


def correlation(pairs: pl.DataFrame, combos: pl.DataFrame) -> pl.DataFrame:
    found = spearman(pairs, ["stratum", "reading"]).collect()
    return (
        combos.join(found, on=["stratum", "reading"], how="left")
        .with_columns(pl.col("n_common").fill_null(0).cast(pl.Int64))
        .sort("order")
        .select("stratum", "reading", "n_common", "prr_spearman")
    )


def pooled(survival: pl.DataFrame) -> dict[str, dict[str, Any]]:
    sums = survival.group_by("criterion").agg(pl.col("n_raw", "n_survived", "n_release", "n_new").sum())
    out: dict[str, dict[str, Any]] = {}
    for row in sums.sort("criterion").iter_rows(named=True):
        n_raw = int(row["n_raw"])
        out[row["criterion"]] = {
            "n_raw": n_raw,
            "n_survived": int(row["n_survived"]),
            "share_survived": row["n_survived"] / n_raw if n_raw else None,
            "n_release": int(row["n_release"]),
            "n_new": int(row["n_new"]),
        }
    return out


def worst_stratum(strata: pl.DataFrame) -> dict[str, dict[str, dict[str, Any]]]:
    """Per criterion and reading, the stratum with raw signals whose survival share is lowest (more
    raw signals, then the label, break ties): ``as_dict()["worst_stratum"][criterion][reading]``."""
    ranked = strata.filter(pl.col("n_raw") > 0).sort(
        "share_survived", "n_raw", "stratum", descending=[False, True, False], maintain_order=True
    )
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for r in ranked.group_by("criterion", "reading", maintain_order=True).first().iter_rows(named=True):
        keep = ("stratum", "n_raw", "n_survived", "share_survived", "n_new")
        out.setdefault(r["criterion"], {})[r["reading"]] = {k: r[k] for k in keep}
    return out


def finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
