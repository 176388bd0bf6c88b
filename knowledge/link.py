"""Linking cases to sensitive values: P(s | case) and the group confidence conf(q → s, E).

SPEC §5; Lin, Yang & Wang 2016, Definition 1 and Example 1. For a case c and a sensitive value s:
P(s | c) = 1 if s is among c's own indications (INDI_PT) or reactions (PT), else
max over c's drugs d of w(d, s), and 0 when no drug of c reaches s through E.
conf(q → s, E) = Σ_{c in q} P(s | c) / (number of distinct cases in q).

Values share one namespace (``knowledge.values.value_key_expr``): INDI_PT "Headache", PT "HEADACHE"
and an E-disease "headache" are one value.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from knowledge.drug_names import name_key_expr
from knowledge.errors import KnowledgeError
from knowledge.mining import FILLER_TERMS
from knowledge.table import validate_table
from knowledge.values import value_key_expr

__all__ = ["SENSITIVE_ATTRIBUTES", "case_value_probabilities", "confidence"]

# Canonical keys (upper case, whitespace collapsed, as value_key_expr makes them) of the filler terms.
_FILLER_KEYS = [" ".join(term.upper().split()) for term in FILLER_TERMS]

#: The sensitive attributes of SPEC §5: the case's own INDI_PT and PT lists, and E-diseases.
SENSITIVE_ATTRIBUTES = ("indications", "reactions", "diseases")
_OWN = ("indications", "reactions")
_SCHEMA = pl.Schema({"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})


def _check_columns(frame: pl.LazyFrame, needed: Sequence[str], where: str) -> None:
    present = frame.collect_schema().names()
    missing = [c for c in needed if c not in present]
    if missing:
        raise KnowledgeError(f"{where}: missing columns {missing} (expected the cases.parquet contract)")


def case_value_probabilities(
    cases: pl.DataFrame | pl.LazyFrame,
    table: pl.DataFrame,
    /,
    *,
    sensitive: Sequence[str] = SENSITIVE_ATTRIBUTES,
) -> pl.DataFrame:
    """P(s | c) for every case c and every value s it reaches, as a frame (SPEC §5).

    p = 1 for the case's own indications and reactions (for those of the two attributes that are in
    ``sensitive``), except the filler terms that name no condition (:data:`FILLER_TERMS`, e.g.
    "Product used for unknown indication": a third of FAERS reports carry it, so protecting it would
    force every group towards the root while hiding nothing about the patient); otherwise, when
    ``"diseases"`` is sensitive, p = max over the case's drug keys
    d of w(d, s), exactly as SPEC §5 states it (a combination key ``A\\B`` reaches only E's rows for
    ``A\\B``: ``knowledge.with_combinations`` adds those rows from the ingredients' rows, so that
    the E written with a release reproduces every p). Values are canonical keys (upper-case,
    whitespace collapsed). Vectorized: explode, join, sort, unique.

    Args:
        cases: one row per caseid with list columns ``indications``, ``reactions``, ``drug_keys``
            (the cases.parquet contract; only the columns the ``sensitive`` choice needs are read).
        table: E (drug_key, disease, weight). Its drug keys are passed through ``name_key_expr``
            once more (a no-op on keys, which are their own keys), so a hand-written E with
            ``Paracetamol`` still meets the case key ``PARACETAMOL``; the cases' ``drug_keys`` are
            used as they are (ingest made them with the same function).
        sensitive: a subset of ``("indications", "reactions", "diseases")``.

    Returns:
        A frame (caseid Int64, value Utf8, p Float64) with 0 < p ≤ 1, one row per (caseid, value),
        sorted by caseid then value. Cases that reach no value have no rows.

    Raises:
        KnowledgeError: an unknown sensitive attribute, a missing column, or an invalid E.
    """
    unknown = sorted(set(sensitive) - set(SENSITIVE_ATTRIBUTES))
    if unknown:
        raise KnowledgeError(
            f"case_value_probabilities: sensitive: unknown attributes {unknown} "
            f"(expected a subset of {', '.join(SENSITIVE_ATTRIBUTES)})"
        )
    lazy = cases.lazy()
    own = [a for a in _OWN if a in sensitive]
    needed = ["caseid", *own, *(["drug_keys"] if "diseases" in sensitive else [])]
    _check_columns(lazy, needed, "cases")
    # Values become dense integer ids (ordered like the values) before the large sort: sorting and
    # de-duplicating millions of (Int64, Utf8) pairs costs several times more than (Int64, UInt32).
    terms = [
        lazy.select(pl.col("caseid").cast(pl.Int64), pl.col(attribute).cast(pl.List(pl.Utf8)).alias("_term"))
        .explode("_term")
        .drop_nulls("_term")
        for attribute in own
    ]
    distinct = pl.col("_term").unique(maintain_order=True)  # canonical keys computed once per term
    own_values = (
        pl.concat(terms).select(
            "caseid", pl.col("_term").replace(distinct, value_key_expr(distinct)).alias("value")
        )
        if terms
        else pl.LazyFrame(schema={"caseid": pl.Int64, "value": pl.Utf8})
    ).filter(~pl.col("value").is_in(_FILLER_KEYS)).collect()
    knowledge = (
        validate_table(table)
        .lazy()
        .select(name_key_expr(pl.col("drug_key")), value_key_expr(pl.col("disease")).alias("value"), "weight")
        .collect()
        if "diseases" in sensitive
        else pl.DataFrame(schema={"drug_key": pl.Utf8, "value": pl.Utf8, "weight": pl.Float64})
    )
    dictionary = (
        pl.concat([own_values.select("value"), knowledge.select("value")])
        .drop_nulls()
        .unique()
        .sort("value")
        .with_row_index("_id")
    )
    parts: list[pl.LazyFrame] = [
        own_values.lazy().join(dictionary.lazy(), on="value").select("caseid", "_id", pl.lit(1.0).alias("p"))
    ]
    if "diseases" in sensitive:
        drugs = (
            lazy.select(
                pl.col("caseid").cast(pl.Int64), pl.col("drug_keys").cast(pl.List(pl.Utf8)).alias("drug_key")
            )
            .explode("drug_key")
            .drop_nulls("drug_key")
        )
        weights = knowledge.lazy().join(dictionary.lazy(), on="value").select("drug_key", "_id", "weight")
        parts.append(
            drugs.join(weights, on="drug_key", how="inner").select(
                "caseid", "_id", pl.col("weight").alias("p")
            )
        )
    return (
        pl.concat(parts)
        .filter(pl.col("p") > 0)
        .sort(["caseid", "_id", "p"], descending=[False, False, True])  # the largest p of a pair first
        .unique(["caseid", "_id"], keep="first", maintain_order=True)  # cheaper than group_by + sort
        .join(dictionary.lazy(), on="_id", how="left", maintain_order="left")
        .select("caseid", "value", "p")
        .collect()
        .cast(_SCHEMA)
    )


def confidence(
    group_of_case: pl.DataFrame | pl.LazyFrame,
    probabilities: pl.DataFrame | pl.LazyFrame,
    /,
    *,
    group_col: str = "group_id",
) -> pl.DataFrame:
    """conf(q → s, E) = Σ_{c in q} P(s | c) / |q| for every group q and every value s it reaches.

    Source: Lin, Yang & Wang 2016, Definition 1; SPEC §5. |q| counts the distinct cases that
    ``group_of_case`` puts in q (k counts cases, never rows). Rows of ``probabilities`` whose case
    is in no group are ignored.

    Args:
        group_of_case: one row per caseid with its group in ``group_col`` (e.g. the partition frame).
        probabilities: the frame of ``case_value_probabilities``.
        group_col: the group column's name.

    Returns:
        A frame (group_col, value Utf8, conf Float64) with 0 < conf ≤ 1, sorted by group then value;
        a (group, value) pair that no case reaches has no row (its conf is 0).

    Raises:
        KnowledgeError: a missing column, or a caseid placed in two groups.
    """
    groups = group_of_case.lazy()
    _check_columns(groups, ["caseid", group_col], "group_of_case")
    groups = groups.select(pl.col("caseid").cast(pl.Int64), group_col).unique()
    split = groups.group_by("caseid").agg(pl.len().alias("n")).filter(pl.col("n") > 1).head(1).collect()
    if split.height:
        raise KnowledgeError(
            f"group_of_case: caseid {split.item(0, 'caseid')} is in {split.item(0, 'n')} groups "
            "(expected one group per case)"
        )
    sizes = groups.group_by(group_col).agg(pl.len().alias("_cases"))
    return (
        probabilities.lazy()
        .select(pl.col("caseid").cast(pl.Int64), "value", "p")
        .join(groups, on="caseid", how="inner")
        .group_by(group_col, "value")
        .agg(pl.col("p").sum().alias("_sigma"))
        .join(sizes, on=group_col, how="inner")
        .select(group_col, "value", (pl.col("_sigma") / pl.col("_cases")).alias("conf"))
        .sort(group_col, "value")
        .collect()
    )
