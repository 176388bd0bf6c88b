"""Composition over a series of releases R1..Rn (SPEC §11; m-invariance, Xiao & Tao 2007).

A case (by its pseudonym, ``caseid``) appears in some releases R(c); in each it sits in a QID-group
G_r(c) (the cases sharing its released ``age_group, age_min, age_max, sex, wt_min, wt_max``). An
attacker who follows the pseudonym intersects the member sets:
I(c) = ∩_{r ∈ R(c)} G_r(c). A case is *singled out* when |I(c)| < k, *unique* when |I(c)| = 1.
A case of one release only has I(c) = its group there.

Attribute composition: conf(I(c) → s) = Σ_{c' ∈ I(c)} P(s | c') / |I(c)|, with P(s | c') the largest
over the releases holding c' (the attacker sees them all), over the values of the first release's
``thresholds.csv`` with θ < 1.

Computation: I(c) depends only on the groups c has in R(c), so for each distinct set S of releases
(a loop over at most 2^n − 1 subsets, n the series length) the cases present in every release of S
are grouped on their groups there; the count of that group-by is |I(c)| for the cases with R(c) = S.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.risk._inference import case_probabilities
from faers_anon.risk._view import CaseData

__all__ = ["composition"]


def _groups(data: CaseData, qids: list[str], index: int) -> pl.DataFrame:
    present = [q for q in qids if q in data.view.columns]
    tuples = data.view.select(present).unique().with_row_index("g")
    return data.view.join(tuples, on=present, nulls_equal=True).select(
        "caseid", pl.col("g").cast(pl.Int64).alias(f"g{index}")
    )


def composition(
    releases: list[tuple[Path, CaseData]], *, qids: list[str], k: int, thetas: pl.DataFrame
) -> dict[str, Any]:
    """The ``composition`` section: cases below k and unique after intersection, max conf over I(c)."""
    wide = _groups(releases[0][1], qids, 0)
    for index, (_, data) in enumerate(releases[1:], start=1):
        wide = wide.join(_groups(data, qids, index), on="caseid", how="full", coalesce=True)
    columns = [f"g{i}" for i in range(len(releases))]
    wide = wide.with_columns(
        pl.concat_str([pl.col(c).is_not_null().cast(pl.UInt8).cast(pl.String) for c in columns]).alias(
            "present"
        )
    )
    target_parts: list[pl.DataFrame] = []
    member_parts: list[pl.DataFrame] = []
    for pattern in wide.get_column("present").unique().sort().to_list():
        chosen = [c for c, flag in zip(columns, pattern, strict=True) if flag == "1"]
        holders = wide.filter(pl.all_horizontal(pl.col(c).is_not_null() for c in chosen))
        key = pl.concat_str([pl.lit(pattern), *[pl.col(c).cast(pl.String) for c in chosen]], separator="|")
        members = holders.select("caseid", key.alias("intersection"))
        counts = members.group_by("intersection").agg(pl.len().alias("size"))
        target_parts.append(
            wide.filter(pl.col("present") == pattern)
            .select("caseid", key.alias("intersection"))
            .join(counts, on="intersection")
        )
        member_parts.append(members)
    targets = pl.concat(target_parts)
    several = targets.join(wide.filter(pl.col("present").str.count_matches("1") > 1), on="caseid", how="semi")
    member_rows = pl.concat(member_parts).join(
        targets.select("intersection").unique(), on="intersection", how="semi"
    )
    p = (
        pl.concat([case_probabilities(path, data) for path, data in releases])
        .group_by("caseid", "value")
        .agg(pl.col("p").max())
    )
    protected = p.join(thetas.filter(pl.col("theta") < 1.0), on="value", how="semi")
    conf = (
        member_rows.join(protected, on="caseid")
        .group_by("intersection", "value")
        .agg(pl.col("p").sum().alias("sigma"))
        .join(targets.group_by("intersection").agg(pl.col("size").first()), on="intersection")
        .with_columns((pl.col("sigma") / pl.col("size")).alias("conf"))
        .join(thetas, on="value")
    )
    n = max(several.height, 1)
    top = conf.sort(["conf", "value"], descending=[True, False]).head(1).to_dicts()
    return {
        "releases": len(releases),
        "cases": targets.height,
        "cases_in_several": several.height,
        "below_k": several.filter(pl.col("size") < k).height / n if several.height else 0.0,
        "unique": several.filter(pl.col("size") == 1).height / n if several.height else 0.0,
        "below_k_all": targets.filter(pl.col("size") < k).height / max(targets.height, 1),
        "max_conf": top[0]["conf"] if top else 0.0,
        "max_conf_value": top[0]["value"] if top else None,
        "intersections_above_theta": conf.filter(pl.col("conf") > pl.col("theta") + 1e-9)
        .select(pl.col("intersection").n_unique())
        .item(),
    }
