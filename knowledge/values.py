"""The canonical key of a sensitive value: one namespace for indications, reactions and E-diseases.

docs/architecture.md, "Sensitive values and P(s | case)": a sensitive value is a term string whose
identity is case-insensitive; its key is ``upper(strip(collapse_whitespace(term)))``. An attacker who
learns "the patient has headache" learns it whatever table the term came from, so INDI_PT, PT and the
diseases of E all share this key.
"""

from __future__ import annotations

import polars as pl

__all__ = ["value_key_expr"]


def value_key_expr(term: pl.Expr) -> pl.Expr:
    """Canonical key of a term: runs of whitespace collapsed to one space, stripped, upper-cased.

    Args:
        term: a Utf8 expression of verbatim terms (MedDRA PTs, disease names).

    Returns:
        A Utf8 expression; null where the term is null or blank (a blank term names no value).
    """
    key = term.str.replace_all(r"\s+", " ").str.strip_chars().str.to_uppercase()
    return pl.when(key.str.len_chars() > 0).then(key).otherwise(None)
