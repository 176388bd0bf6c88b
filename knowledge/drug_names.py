"""Drug-name normalization: the ``drug_key`` that links FAERS DRUG rows to the knowledge table E.

SPEC §3: the key is ``prod_ai`` when present, else ``drugname``; upper-cased, whitespace collapsed,
dose text in parentheses and trailing punctuation removed. The verbatim names stay in their own
columns. Everything here is a polars expression, so ingest applies it to millions of rows at once.
"""

from __future__ import annotations

import polars as pl

__all__ = ["normalize_name_expr", "drug_key_expr"]

_PARENTHESES = r"\([^()]*\)"
_TRAILING_PUNCT = r"[\s.,;:/\\\-_*#+]+$"
_LEADING_PUNCT = r"^[\s.,;:/\\\-_*#+]+"


def normalize_name_expr(name: pl.Expr) -> pl.Expr:
    """Normalize one free-text drug name column.

    Steps: upper-case; drop parenthesized text such as ``(200 MG)`` or ``(ROSIGLITAZONE MALEATE)``;
    collapse runs of whitespace; strip leading/trailing punctuation and spaces. A name that becomes
    empty is null.

    Args:
        name: a Utf8 expression of verbatim names.

    Returns:
        A Utf8 expression; null where the input is null or normalizes to nothing.
    """
    cleaned = (
        name.str.to_uppercase()
        .str.replace_all(_PARENTHESES, " ")
        .str.replace_all(r"\s+", " ")
        .str.replace_all(_TRAILING_PUNCT, "")
        .str.replace_all(_LEADING_PUNCT, "")
        .str.strip_chars()
    )
    return pl.when(cleaned.str.len_chars() > 0).then(cleaned).otherwise(None)


def drug_key_expr(prod_ai: pl.Expr, drugname: pl.Expr) -> pl.Expr:
    """The ``drug_key`` of a DRUG row: normalized ``prod_ai`` when present, else normalized ``drugname``.

    Args:
        prod_ai: active-ingredient column (absent before 2014Q3: pass ``pl.lit(None, pl.Utf8)``).
        drugname: verbatim drug name column.

    Returns:
        A Utf8 expression; null only when both names are missing or empty after normalization.
    """
    return pl.coalesce(normalize_name_expr(prod_ai), normalize_name_expr(drugname))
