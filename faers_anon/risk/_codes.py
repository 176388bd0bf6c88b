"""Integer codes of the case-view fields, shared by the release and the raw data (SPEC §11).

Every knowledge set groups the same view on a different subset of its fields. Reading, casting and
joining the view's text, date and float columns again for each set is what made the risk command
slow; instead each field is encoded **once** to a ``UInt32`` code, the same code for the same value
on both sides (release and raw), and every knowledge set then works on integer columns only:

* code 0 is "missing" (null); the values 1..n are the dense rank of the distinct values over the
  release and the raw data together, so equal values get equal codes whatever side they come from;
* a knowledge set's key is the fields' codes folded into one ``UInt64`` (``key · (n_f + 1) + code``),
  re-ranked densely whenever the next fold could overflow (:func:`key_expr`): one group-by column
  for any number of fields, exact (no hashing, no collision);
* a field is *comparable* with the raw data when the raw view holds it with the same type and every
  released value (but ``*``, "any value", issue 18) occurs among the raw values; only comparable
  fields take part in journalist risk (:mod:`faers_anon.risk._population`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

__all__ = ["Codes", "encode_fields", "key_expr"]

_MAX_KEY = 1 << 62  # folds stay below 2^64 as long as key · width < 2^62 · 2^2 headroom
STAR = "*"


@dataclass(frozen=True, kw_only=True, slots=True)
class Codes:
    """The view's fields as integer codes.

    Attributes:
        view: ``caseid`` and one ``UInt32`` column per field (same names), one row per released case.
        raw: ``caseid`` and one code column per comparable field, one row per raw case; None without
            the raw data.
        widths: field → largest code (for folding keys).
        comparable: the fields journalist risk can match value for value (module docstring).
        star: field → the code of ``*`` where the release writes it.
    """

    view: pl.DataFrame
    raw: pl.DataFrame | None
    widths: dict[str, int]
    comparable: frozenset[str]
    star: dict[str, int]


def _encode(released: pl.Series, raw: pl.Series | None) -> tuple[pl.Series, pl.Series | None, int]:
    """Dense codes (null → 0, values → 1..n) of ``released`` and ``raw`` over their union."""
    if released.dtype == pl.String and (raw is None or raw.dtype == pl.String):
        # the rank of a text among the sorted distinct texts, by a hash lookup (an Enum of them):
        # the same codes as a dense rank, without sorting every row's text; each side's distinct
        # texts first (no concatenated copy of every row's text)
        sides = [released] if raw is None else [released, raw]
        distinct = pl.concat([side.drop_nulls().unique() for side in sides]).unique().sort()
        enum = pl.Enum(distinct)
        coded = [(side.cast(enum).to_physical().cast(pl.UInt32) + 1).fill_null(0) for side in sides]
        return coded[0], coded[1] if raw is not None else None, distinct.len()
    both = released if raw is None else pl.concat([released, raw])
    codes = both.rank("dense").fill_null(0).cast(pl.UInt32)
    width = int(codes.max() or 0)  # type: ignore[arg-type]
    if raw is None:
        return codes, None, width
    return codes.head(released.len()), codes.tail(raw.len()), width


def _comparable(released: pl.Series, raw: pl.Series | None) -> bool:
    """Same type on both sides, and every released value but ``*`` among the raw values."""
    if raw is None or raw.dtype != released.dtype:
        return False
    values = released.drop_nulls().unique()
    if released.dtype == pl.String:
        values = values.filter(values != STAR)
    missing = values.to_frame("v").join(raw.drop_nulls().unique().to_frame("v"), on="v", how="anti")
    return missing.height == 0


def encode_fields(view: pl.DataFrame, raw: pl.DataFrame | None, fields: Sequence[str]) -> Codes:
    """Encode ``fields`` of the released ``view`` (and of the ``raw`` view) once (module docstring)."""
    released: dict[str, pl.Series] = {}
    raws: dict[str, pl.Series] = {}
    widths: dict[str, int] = {}
    star: dict[str, int] = {}
    comparable = set()
    for name in fields:
        column = view.get_column(name)
        other = raw.get_column(name) if raw is not None and name in raw.columns else None
        shared = _comparable(column, other)
        code, raw_code, widths[name] = _encode(column, other if shared else None)
        released[name] = code
        if shared and raw_code is not None:
            comparable.add(name)
            raws[name] = raw_code
        if column.dtype == pl.String:
            hit = code.filter(column == STAR)
            if hit.len():
                star[name] = int(hit[0])
    raw_codes = None
    if raw is not None:
        raw_codes = pl.DataFrame([raw.get_column("caseid"), *raws.values()])
    return Codes(
        view=pl.DataFrame([view.get_column("caseid"), *released.values()]),
        raw=raw_codes,
        widths=widths,
        comparable=frozenset(comparable),
        star=star,
    )


def key_expr(fields: Sequence[str], widths: dict[str, int]) -> pl.Expr:
    """One ``UInt64`` key equal for two rows exactly when all their ``fields`` codes are equal.

    key = (…(c_1 · (w_2 + 1) + c_2) · (w_3 + 1) + c_3 …), with w the field's largest code; when the
    next fold could pass 2^62 the key so far is first replaced by its dense rank (≤ rows), which keeps
    it exact. No field: the constant 0 (everyone agrees on nothing).
    """
    key: pl.Expr = pl.lit(0, pl.UInt64)
    bound = 1
    for name in fields:
        width = widths[name] + 1
        if bound * width >= _MAX_KEY:
            key, bound = key.rank("dense").cast(pl.UInt64), 1 << 32
        key = key * width + pl.col(name).cast(pl.UInt64)
        bound *= width
    return key
