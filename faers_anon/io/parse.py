"""Typing FAERS text fields: integers, numbers and (partial) dates, as polars expressions.

Source: FORMAT.md §2, §4 and §7 (partial dates, float artefacts such as ``61.0`` and ``20141226.0``
from files re-saved through pandas); SPEC §3 ("read as strings first, then type").

Every parser is ``cast(strict=False)``-like: a value it cannot read becomes null, and
:func:`cast_failed` tells which non-empty values were turned null, so the ingest can count them
(rules ``<column>_is_integer``, ``<column>_is_number``, ``<column>_is_date``). Surrounding spaces are
ignored for typed fields; text fields stay verbatim.

Decision (speed): each parser first tries a plain cast of the text, which reads the common clean
value (``"61"``, ``"20230105"``) exactly as the full rules would; the full rules (strip spaces and
the ``.0`` suffix, partial dates) run only on the values the cast could not read, as a column that
is null elsewhere, so their string work is done for those few values (:func:`_unless_read`).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from faers_anon.io.schema import Kind

__all__ = ["empty_to_null", "parse_int", "parse_float", "parse_date", "parse", "cast_failed"]

_FLOAT_SUFFIX = ".0"


def empty_to_null(raw: pl.Expr) -> pl.Expr:
    """An empty field is missing (FORMAT.md §7): ``""`` → null, every other value unchanged."""
    return pl.when(raw.str.len_bytes() > 0).then(raw)


def _unless_read(fast: pl.Expr, raw: pl.Expr, full: Callable[[pl.Expr], pl.Expr]) -> pl.Expr:
    """``fast`` where it read the value, else ``full`` applied to the raw text.

    ``fast`` reads only plain text (polars' number casts refuse surrounding spaces and a ``.0``
    suffix; a full date must also pass the integer cast), for which ``full`` reads the same value;
    so ``full`` is given only the non-empty values ``fast`` left null. ``fast`` and ``raw`` are
    computed once, as fields of a struct (used twice in one expression, polars computed them twice).
    """
    read, text = pl.field("_read"), pl.field("_text")
    rest = full(pl.when(read.is_null() & (text.str.len_bytes() > 0)).then(text))
    value = (
        pl.struct(fast.alias("_read"), raw.alias("_text"))
        .struct.with_fields(pl.coalesce(read, rest).alias("_value"))
        .struct.field("_value")
    )
    name = fast.meta.output_name(raise_if_undetermined=False)  # the name ``coalesce(fast, …)`` had
    return value if name is None else value.alias(name)


def _full_int(raw: pl.Expr) -> pl.Expr:
    return raw.str.strip_chars().str.strip_suffix(_FLOAT_SUFFIX).cast(pl.Int64, strict=False)


def parse_int(raw: pl.Expr) -> pl.Expr:
    """Int64 from text: ``"61"`` → 61; ``"61.0"`` → 61 (the float artefact pandas writes).

    Decision: only the exact ``.0`` suffix is taken as an integral float; other float forms
    (``"61.5"``, ``"6.1e1"``) are not integers here and are flagged. Surrounding spaces are ignored.

    Returns:
        Int64; null for empty, non-integral, non-numeric or out-of-range values.
    """
    return _unless_read(raw.cast(pl.Int64, strict=False), raw, _full_int)


def parse_float(raw: pl.Expr) -> pl.Expr:
    """Float64 from text: ``"61"``, ``"61.0"``, ``" 2.5 "``.

    Returns:
        Float64; null for empty or non-numeric values and for ``nan``/``inf`` (not measurements).
    """
    value = _unless_read(
        raw.cast(pl.Float64, strict=False),
        raw,
        lambda rest: rest.str.strip_chars().cast(pl.Float64, strict=False),
    )
    return pl.when(value.is_finite()).then(value)


def parse_date(raw: pl.Expr) -> pl.Expr:
    """Date from FAERS date text: ``YYYYMMDD``; partial ``YYYYMM`` / ``YYYY`` → first of month / year.

    A pandas float artefact (``20141226.0``) is read as the integer it stands for. Source: FORMAT.md
    §3 (legacy forced partial dates to full ones), §7 (FAERS keeps partial dates).

    Returns:
        Date; null for empty values, other lengths, non-digits and impossible dates (``20120231``).
    """
    # Only a number of 8 bytes: a plain integer cast refuses spaces (``to_date`` may skip them).
    plain = (raw.str.len_bytes() == 8) & raw.cast(pl.Int64, strict=False).is_not_null()
    return _unless_read(pl.when(plain).then(raw.str.to_date("%Y%m%d", strict=False)), raw, _any_date)


def _any_date(raw: pl.Expr) -> pl.Expr:
    """The full rules of :func:`parse_date` (spaces, ``.0``, partial dates).

    Decision (speed): the stripped text, its length and its year are computed once, as fields of a
    struct that the date is then made from; written as one expression, each use of them computed
    the string work again (polars does not share sub-expressions here), which cost more than the
    reading of THER, where a quarter of the start dates are partial.
    """
    digits = pl.field("digits")
    length, year = pl.field("length"), pl.field("year")
    date = (
        pl.when(length == 8)
        .then(digits.str.to_date("%Y%m%d", strict=False))
        .when(length == 6)
        .then(digits.str.to_date("%Y%m", strict=False))
        .when((length == 4) & (year > 0))
        .then(_first_of_year(year))
    )
    return (
        pl.struct(raw.str.strip_chars().str.strip_suffix(_FLOAT_SUFFIX).alias("digits"))
        .struct.with_fields(
            digits.str.len_bytes().alias("length"), digits.cast(pl.Int32, strict=False).alias("year")
        )
        .struct.with_fields(date.alias("date"))
        .struct.field("date")
    )


def _first_of_year(year: pl.Expr) -> pl.Expr:
    """1 January of ``year`` (1–9999) as a Date, by arithmetic on day numbers (days since 1970-01-01).

    Days before 1 January of year y = 365·(y − 1970) + L(y) − L(1970), where L(y) = ⌊(y−1)/4⌋ −
    ⌊(y−1)/100⌋ + ⌊(y−1)/400⌋ counts the leap years before y (proleptic Gregorian, as polars' Date).
    Integer arithmetic costs a fraction of ``pl.date`` on every row. Other years give any value (the
    caller uses only years > 0 of four digits).
    """
    before = year.clip(1, 9999).cast(pl.Int32) - 1
    leap_years = before // 4 - before // 100 + before // 400
    return (365 * (before - 1969) + leap_years - 477).cast(pl.Date)


def parse(raw: pl.Expr, kind: Kind) -> pl.Expr:
    """Type one raw text column according to its :class:`~faers_anon.io.schema.Kind`.

    Args:
        raw: the column as text (empty fields already null or still ``""``).
        kind: how to type it.

    Returns:
        Int64 for ID/INT, Float64 for FLOAT, Date for DATE, Utf8 (empty → null) for TEXT.
    """
    if kind in (Kind.ID, Kind.INT):
        return parse_int(raw)
    if kind is Kind.FLOAT:
        return parse_float(raw)
    if kind is Kind.DATE:
        return parse_date(raw)
    return empty_to_null(raw)


def cast_failed(raw: pl.Expr, typed: pl.Expr) -> pl.Expr:
    """True where a non-blank raw value was turned null by typing (the value was unreadable).

    The spaces are stripped only from the non-empty values typing turned null (null elsewhere).
    """
    unread = pl.when(typed.is_null() & (raw.str.len_bytes() > 0)).then(raw)
    return unread.str.strip_chars().str.len_bytes().fill_null(0) > 0
