"""Composition over a series of releases R1..Rn (SPEC §11; m-invariance, Xiao & Tao 2007).

A case (by its pseudonym, ``caseid``) appears in some releases R(c); in each it sits in a QID-group
G_r(c) (the cases sharing its released ``age_group, age_min, age_max, sex, wt_min, wt_max``). An
attacker who follows the pseudonym intersects the member sets:
I(c) = ∩_{r ∈ R(c)} G_r(c). A case is *singled out* when |I(c)| < k, *unique* when |I(c)| = 1.
A case of one release only has I(c) = its group there.

Attribute composition: conf(I(c) → s) = Σ_{c' ∈ I(c)} P(s | c') / |I(c)|, over the values of the
first release's ``thresholds.csv`` with θ < 1. The attacker holds every release, so he reads any
case through any release's knowledge: P(s | c') = 1 when s is a value c' shows in some release, else
max over the drugs d c' shows in some release of E*(d, s), with E*(d, s) = max over the releases r of
w_r(d, s) (each release's ``knowledge.csv``; docs/series.md §4, rule 6). Before, P(s | c') was the
largest over the releases holding c' of P through *that* release's E only, which missed a weight
another release published for a drug of the case: on the 4 × 400k series made at 6ff8937, 1
intersection over θ that way, 1,036 through every release's E (max conf 0.92).

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
from knowledge.values import value_key_expr

__all__ = ["composition"]


def _groups(data: CaseData, qids: list[str], index: int) -> pl.DataFrame:
    present = [q for q in qids if q in data.view.columns]
    tuples = data.view.select(present).unique().with_row_index("g")
    return data.view.join(tuples, on=present, nulls_equal=True).select(
        "caseid", pl.col("g").cast(pl.Int64).alias(f"g{index}")
    )


def _knowledge(releases: list[tuple[Path, CaseData]]) -> pl.DataFrame:
    """E* (``term``, ``value``, ``p``): each (drug, disease) at its largest weight over the releases'
    ``knowledge.csv`` (keys canonical, as :func:`._inference.case_probabilities` reads them)."""
    tables = [
        pl.read_csv(path / "knowledge.csv", infer_schema=False).select(
            value_key_expr(pl.col("drug_key")).alias("term"),
            value_key_expr(pl.col("disease")).alias("value"),
            pl.col("weight").cast(pl.Float64, strict=False).alias("p"),
        )
        for path, _ in releases
        if (path / "knowledge.csv").is_file()
    ]
    if not tables:
        return pl.DataFrame(schema={"term": pl.String, "value": pl.String, "p": pl.Float64})
    return pl.concat(tables).drop_nulls().group_by("term", "value").agg(pl.col("p").max())


def _through_all(releases: list[tuple[Path, CaseData]]) -> pl.DataFrame:
    """``caseid``, ``value``, ``p``: max over the drugs a case shows in any release of E*(d, s)."""
    e = _knowledge(releases)
    drugs = pl.concat([data.drugs.select("caseid", "term") for _, data in releases]).unique()
    return (
        drugs.join(e, on="term")
        .group_by("caseid", "value")
        .agg(pl.col("p").max())
        .select("caseid", "value", "p")
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
    for i, (_, data) in enumerate(releases):  # each case's latest report pseudonym there (_receipt)
        latest = data.reports.group_by("caseid").agg(pl.col("primaryid").max().alias(f"p{i}"))
        wide = wide.join(latest, on="caseid", how="left")
    target_parts: list[pl.DataFrame] = []
    member_parts: list[pl.DataFrame] = []
    receipt_parts: list[pl.DataFrame] = []
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
        receipt_parts.append(_receipt(holders, pattern, key))
    targets = pl.concat(target_parts)
    receipt = pl.concat(receipt_parts)
    several = targets.join(wide.filter(pl.col("present").str.count_matches("1") > 1), on="caseid", how="semi")
    member_rows = pl.concat(member_parts).join(
        targets.select("intersection").unique(), on="intersection", how="semi"
    )
    own = pl.concat([case_probabilities(path, data) for path, data in releases])
    every = pl.concat([own, _through_all(releases)])
    sizes = targets.group_by("intersection").agg(pl.col("size").first())
    conf, conf_own = (_conf(member_rows, sizes, p, thetas) for p in (every, own))
    n = max(several.height, 1)
    top = conf.sort(["conf", "value"], descending=[True, False]).head(1).to_dicts()
    told = several.select("caseid").join(receipt, on="caseid")
    above = pl.col("conf") > pl.col("theta") + 1e-9
    return {
        "releases": len(releases),
        "cases": targets.height,
        "cases_in_several": several.height,
        "below_k": several.filter(pl.col("size") < k).height / n if several.height else 0.0,
        "unique": several.filter(pl.col("size") == 1).height / n if several.height else 0.0,
        "below_k_all": targets.filter(pl.col("size") < k).height / max(targets.height, 1),
        # the attacker who also knows in which quarters the target's reports came in (docs/series.md §4)
        "below_k_by_receipt": told.filter(pl.col("size") < k).height / n if several.height else 0.0,
        "unique_by_receipt": told.filter(pl.col("size") == 1).height / n if several.height else 0.0,
        "cases_with_a_new_report": told.filter(pl.col("changed")).height,
        "new_report_below_k_by_receipt": _share(told.filter(pl.col("changed")), k),
        "max_conf": top[0]["conf"] if top else 0.0,
        "max_conf_value": top[0]["value"] if top else None,
        "intersections_above_theta": conf.filter(above).get_column("intersection").n_unique(),
        # read through the E of the releases holding each case only (the attack before, SPEC §11)
        "max_conf_own_e": conf_own.select(pl.col("conf").max()).item() if conf_own.height else 0.0,
        "intersections_above_theta_own_e": conf_own.filter(above).get_column("intersection").n_unique(),
    }


def _receipt(holders: pl.DataFrame, pattern: str, key: pl.Expr) -> pl.DataFrame:
    """``caseid``, ``size``, ``changed`` of the cases present exactly in ``pattern``'s releases: |I_R(c)|,
    the members of I(c) (``holders`` grouped on ``key``) whose reports changed between the same releases
    as c's, and whether c's did (a new report in some release after its first).

    The attacker who knows when the target's reports came in (a receipt date, SPEC §11) keeps of I(c)
    only the cases showing a new report in the same releases: in each release, a case's latest report
    pseudonym ``p<i>`` (the highest: one slot per version, docs/keys.md) is labelled with the first of
    c's releases (in the order given) that shows the same report. A republished case shows the report it
    showed before; a follow-up a new one. Without republication every member of I(c) shows a new report
    wherever it appears, and I_R(c) = I(c).
    """
    chosen = [i for i, flag in enumerate(pattern) if flag == "1"]
    labels = [_label(chosen, j) for j in range(len(chosen))]
    first = pl.col(f"p{chosen[0]}")
    changed = pl.any_horizontal(pl.lit(False), *[pl.col(f"p{m}") != first for m in chosen[1:]])
    refined = pl.concat_str([key, *labels], separator="|").alias("_r")
    keyed = holders.select("caseid", "present", refined, changed.alias("changed"))
    counts = keyed.group_by("_r").agg(pl.len().alias("size"))
    mine = keyed.filter(pl.col("present") == pattern).join(counts, on="_r")
    return mine.select("caseid", "size", "changed")


def _share(told: pl.DataFrame, k: int) -> float:
    """The share of ``told``'s cases with |I_R(c)| < k (0 when there are none)."""
    return told.filter(pl.col("size") < k).height / told.height if told.height else 0.0


def _label(chosen: list[int], j: int) -> pl.Expr:
    """The position among ``chosen`` of the first release showing the same latest report as the j-th."""
    at = pl.col(f"p{chosen[j]}")
    label: pl.Expr = pl.lit(j)
    for position in reversed(range(j)):  # built inside out: the first match wins
        label = pl.when(pl.col(f"p{chosen[position]}") == at).then(pl.lit(position)).otherwise(label)
    return label.cast(pl.String)


def _conf(members: pl.DataFrame, sizes: pl.DataFrame, p: pl.DataFrame, thetas: pl.DataFrame) -> pl.DataFrame:
    """``intersection``, ``value``, ``conf`` = Σ_{c ∈ I} max P(s | c) / |I|, ``theta``, for P rows ``p``
    (each (case, value) at its largest over the rows)."""
    best = p.group_by("caseid", "value").agg(pl.col("p").max())
    protected = best.join(thetas.filter(pl.col("theta") < 1.0), on="value", how="semi")
    return (
        members.join(protected, on="caseid")
        .group_by("intersection", "value")
        .agg(pl.col("p").sum().alias("sigma"))
        .join(sizes, on="intersection")
        .with_columns((pl.col("sigma") / pl.col("size")).alias("conf"))
        .join(thetas, on="value")
    )
