"""Journalist risk: how many raw cases a released case's values cover (SPEC §11).

A raw case (latest version, raw values) agrees with a released case on K when every field of K
covers the raw value:

* age (``age_group``/``age_min``/``age_max`` in K; any of them stands for the released range): the
  released range [age_min, age_max) holds ``age_years`` (an open top band, age_max empty, holds every
  age ≥ age_min); a missing released age (the ``missing`` leaf: every case of the group was missing)
  holds only a missing raw age; the root [0, ∞) holds every age, missing included;
* weight (``wt_min``/``wt_max``): [wt_min, wt_max], inclusive; a released empty weight holds every
  raw weight, missing included (the engine writes it both for an all-missing group and for a mix of
  missing and known weights, SPEC §5's root of a hierarchy-free attribute, and a reader cannot tell
  which);
* ``sex``: ``*`` holds F, M and missing; F, M and missing hold themselves;
* any other field: the same value (missing equals missing; :mod:`._codes`), and a released ``*``
  holds every value; a field that is not comparable (another type in the raw data, such as a date
  released as a month, or a released value the raw field never takes) makes K unmeasurable (None).

With items (m drugs or reactions of the target's released list), the raw case must also hold them
in its own list, read from the same drug columns as the release publishes. The journalist class of a
target is then, as the prosecutor's (:mod:`._classes`), the smallest over its m-subsets S of the raw
cases covered on K holding S; m = 1 and 2 here, ``"all"`` through :func:`._classes.class_sizes` with
the raw cases as its population.

Computation (integers only, no row loops): the released ages' bounds cut the age axis into *atoms*,
so a raw age is one atom (0 = missing) and a released range an interval of atoms; raw weights and
released bounds are ranked together, so a raw weight is a rank (0 = missing) and a released range an
interval of ranks. A raw case is then one coordinate atom · (top rank + 1) + weight rank, so that
an interval of atoms with any weight is one interval of coordinates. A distinct released tuple on K
is a *query*: one row per sex it holds (and, when its weight is bounded, per age atom), keyed with
its exact fields' codes (and item); raw cases are sorted once by (key, coordinate) and a query's
count is two binary searches (``numpy.searchsorted``). A released ``*`` drops its field from the
key: one pass per pattern of ``*`` fields (few). Cost: O((raw + queries) log raw) per set.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from faers_anon.risk._codes import Codes, key_expr
from faers_anon.risk._unique import unique_inverse

__all__ = ["AGE", "WEIGHT", "Population", "Ranges"]

AGE = ("age_group", "age_min", "age_max")
WEIGHT = ("wt_min", "wt_max")
_QID = frozenset({*AGE, *WEIGHT, "sex"})
_SEX_CODES = {"F": 1, "M": 2}  # raw sex codes; 0 = missing, 3 = any other raw value
_ALL_SEXES = 0b1111  # a released sex as the set of raw sex codes it holds, one bit per code


def _age_axis(view: pl.DataFrame) -> np.ndarray:
    """The released ages' bounds, sorted: atom j + 1 is [b_(j-1), b_j) (atom 0: missing age)."""
    if "age_min" not in view.columns:
        return np.zeros(0)
    bounds = pl.concat([view.get_column("age_min"), view.get_column("age_max")]).drop_nulls().unique()
    return np.sort(bounds.cast(pl.Float64).to_numpy())


def _atom(values: pl.Series, breaks: np.ndarray) -> np.ndarray:
    """The atom of each raw age (0 when missing)."""
    ages = values.cast(pl.Float64).to_numpy()
    atoms = np.searchsorted(breaks, np.nan_to_num(ages, nan=0.0), side="right") + 1
    return np.where(np.isnan(ages), 0, atoms).astype(np.uint32)


def _atom_range(view: pl.DataFrame, breaks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[alo, ahi] of atoms each released age range holds (module docstring)."""
    top = len(breaks) + 1
    lo = view.get_column("age_min").cast(pl.Float64).to_numpy()
    hi = view.get_column("age_max").cast(pl.Float64).to_numpy()
    alo = np.searchsorted(breaks, np.nan_to_num(lo), side="right") + 1
    ahi = np.where(np.isnan(hi), top, np.searchsorted(breaks, np.nan_to_num(hi), side="right"))
    missing, root = np.isnan(lo), (lo == 0) & np.isnan(hi)
    alo = np.where(missing | root, 0, alo)
    ahi = np.where(missing, 0, ahi)
    return alo.astype(np.uint32), ahi.astype(np.uint32)


def _weight_ranks(view: pl.DataFrame, raw: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Raw weight ranks (0 missing) and released [wlo, whi] rank intervals (empty → every rank)."""
    raw_w = raw.get_column("weight_kg").cast(pl.Float64)
    lo, hi = (view.get_column(c).cast(pl.Float64) for c in WEIGHT)
    axis = np.sort(pl.concat([raw_w, lo, hi]).drop_nulls().unique().to_numpy())
    top = len(axis)

    def rank(series: pl.Series) -> np.ndarray:
        values = series.to_numpy()
        return np.where(np.isnan(values), 0, np.searchsorted(axis, np.nan_to_num(values)) + 1)

    unknown = (lo.is_null() | hi.is_null()).to_numpy()
    wlo = np.where(unknown, 0, rank(lo))
    whi = np.where(unknown, top, rank(hi))
    return rank(raw_w).astype(np.uint32), wlo.astype(np.uint32), whi.astype(np.uint32)


def _sexes() -> pl.Expr:
    """The raw sex codes a released sex holds, as a bit set (``*``: all; missing: missing only)."""
    released = pl.col("sex")
    return (
        pl.when(released == "*").then(pl.lit(_ALL_SEXES, pl.UInt8))
        .when(released.is_null()).then(pl.lit(0b0001, pl.UInt8))
        .when(released == "F").then(pl.lit(0b0010, pl.UInt8))
        .when(released == "M").then(pl.lit(0b0100, pl.UInt8))
        .otherwise(pl.lit(0b1000, pl.UInt8))
    )  # fmt: skip


def range_counts(
    raw_keys: np.ndarray, raw_w: np.ndarray, keys: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> np.ndarray:
    """For each query i: #{raw r : raw_keys[r] = keys[i], lo[i] ≤ raw_w[r] ≤ hi[i]} (two binary searches).

    (key, weight rank) is packed into one UInt64: the key shifted left by the bits the largest weight
    rank needs, b (keys are densely re-ranked together first only when a key reaches 2^(64 − b)).
    The queries are searched in sorted order, which keeps the binary searches in cache (5–10× faster
    than in arbitrary order).
    """
    if len(keys) == 0:
        return np.zeros(0, np.int64)
    bits = max(int(raw_w.max(initial=0)), int(hi.max(initial=0)), int(lo.max(initial=0))).bit_length()
    if max(int(raw_keys.max(initial=0)), int(keys.max())) >= 1 << (64 - bits):
        both = pl.Series(np.concatenate([raw_keys, keys])).rank("dense").cast(pl.UInt64).to_numpy()
        raw_keys, keys = both[: len(raw_keys)], both[len(raw_keys) :]
    shift = np.uint64(bits)
    packed = np.sort((raw_keys.astype(np.uint64) << shift) | raw_w.astype(np.uint64))
    query = keys.astype(np.uint64) << shift
    first_needles = query | lo.astype(np.uint64)
    order = np.argsort(first_needles)
    counts = np.empty(len(keys), np.int64)
    first = np.searchsorted(packed, first_needles[order], side="left")
    last = np.searchsorted(packed, (query | hi.astype(np.uint64))[order], side="right")
    counts[order] = last - first
    return counts


@dataclass(frozen=True, slots=True)
class Ranges:
    """The tuples of one ``*`` pattern as ranges (:meth:`Population.ranges`): which tuple rows have the
    pattern (``asked``), each raw case's value (aligned with :attr:`Population.raw`), and per tuple
    row a CSR ``start`` into ``lo``/``hi``."""

    asked: np.ndarray
    values: np.ndarray
    start: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


class Population:
    """The raw cases as journalist risk's population, for many knowledge sets over one release.

    Built once: every raw case's sex code, age atom, weight rank and field codes; every released
    case's sexes, atom interval and weight interval. Each knowledge set then only groups integers.
    """

    def __init__(self, view: pl.DataFrame, raw: pl.DataFrame, codes: Codes) -> None:
        if codes.raw is None:
            raise ValueError("Population needs the raw codes")
        self.codes = codes
        breaks = _age_axis(view)
        self.atoms = len(breaks) + 1  # largest atom code
        self.has = {
            "age": "age_min" in view.columns and "age_years" in raw.columns,
            "weight": "wt_min" in view.columns and "weight_kg" in raw.columns,
            "sex": "sex" in view.columns and "sex" in raw.columns,
        }
        zeros = (np.zeros(raw.height, np.uint32), np.zeros(view.height, np.uint32))
        raw_w, wlo, whi = _weight_ranks(view, raw) if self.has["weight"] else (zeros[0], zeros[1], zeros[1])
        self.top_w = int(max(whi.max(initial=0), raw_w.max(initial=0)))
        alo, ahi = _atom_range(view, breaks) if self.has["age"] else (zeros[1], zeros[1])
        sex = (
            raw.select(
                pl.when(pl.col("sex").is_null()).then(pl.lit(0, pl.UInt32))
                .otherwise(pl.col("sex").replace_strict(_SEX_CODES, default=3, return_dtype=pl.UInt32))
            ).to_series()
            if self.has["sex"] else pl.Series(zeros[0])
        )  # fmt: skip
        atom = _atom(raw.get_column("age_years"), breaks) if self.has["age"] else zeros[0]
        self.raw = codes.raw.with_columns(sex.alias("_sex"), pl.Series("_atom", atom), pl.Series("_w", raw_w))
        sexes = (
            view.select(_sexes()).to_series()
            if self.has["sex"]
            else pl.repeat(_ALL_SEXES, view.height, eager=True)
        )
        self.view = codes.view.with_columns(
            sexes.cast(pl.UInt8).alias("_sexes"), pl.Series("_alo", alo), pl.Series("_ahi", ahi),
            pl.Series("_wlo", wlo), pl.Series("_whi", whi),
        )  # fmt: skip

    def raw_rows(self, exact: Sequence[str]) -> pl.DataFrame:
        """The raw cases with only what a count on ``exact`` fields reads."""
        return self.raw.select("caseid", "_sex", "_atom", "_w", *exact)

    def queries(self, knows: Sequence[str]) -> tuple[pl.DataFrame, pl.DataFrame, list[str]] | None:
        """The released tuples on K as queries.

        Returns:
            ``caseid``, ``_qt`` (the case's tuple); per ``_qt`` its exact fields' codes, ``_star`` (bit
            i: exact field i released as ``*``), ``_sexes``, ``_alo``/``_ahi``, ``_wlo``/``_whi``
            (QIDs not in K widened to everything); K's exact fields. None when an exact field of K is
            not comparable with the raw data (module docstring).
        """
        exact = [f for f in knows if f not in _QID]
        if not all(f in self.codes.comparable for f in exact) or len(exact) > 63:
            return None
        age = any(f in knows for f in AGE) and self.has["age"]
        weight = any(f in knows for f in WEIGHT) and self.has["weight"]
        sex = "sex" in knows and self.has["sex"]
        star = pl.lit(0, pl.UInt64)
        for i, f in enumerate(exact):
            if f in self.codes.star:
                star = star + (pl.col(f) == self.codes.star[f]).cast(pl.UInt64) * (1 << i)
        attributes = self.view.select(
            "caseid",
            *exact,
            star.alias("_star"),
            pl.col("_sexes") if sex else pl.lit(_ALL_SEXES, pl.UInt8).alias("_sexes"),
            pl.col("_alo") if age else pl.lit(0, pl.UInt32).alias("_alo"),
            pl.col("_ahi") if age else pl.lit(self.atoms, pl.UInt32).alias("_ahi"),
            pl.col("_wlo") if weight else pl.lit(0, pl.UInt32).alias("_wlo"),
            pl.col("_whi") if weight else pl.lit(self.top_w, pl.UInt32).alias("_whi"),
        )
        columns = [*exact, "_star", "_sexes", "_alo", "_ahi", "_wlo", "_whi"]
        widths = {**self.codes.widths, "_star": (1 << len(exact)) - 1, "_sexes": _ALL_SEXES,
                  "_alo": self.atoms, "_ahi": self.atoms, "_wlo": self.top_w, "_whi": self.top_w}  # fmt: skip
        # _qt: the key's dense rank (1, 2, …) by one value sort (:func:`._unique.unique_inverse`); a
        # tuple's row: one case holding it, so the tuples come out in _qt order
        _, which, _ = unique_inverse(attributes.select(key_expr(columns, widths)).to_series().to_numpy())
        cases = attributes.with_columns(pl.Series("_qt", which + 1, pl.UInt32))
        one = np.zeros(int(which.max(initial=-1)) + 1, np.int64)
        one[which] = np.arange(len(which))
        return cases.select("caseid", "_qt"), cases.drop("caseid")[one], exact

    def _ranges(
        self, queries: pl.DataFrame, exact: list[str], extra: Sequence[str] = ()
    ) -> Iterator[tuple[int, list[str], pl.DataFrame]]:
        """Per pattern of ``*`` fields (bit i: exact field i released as ``*``): the pattern, its
        equality keys and its ``rows``: ``_row`` (the query's), the
        keys, ``_lo``/``_hi`` (a range of coordinates: atom · span + weight rank; module docstring)."""
        span = self.top_w + 1
        full = (pl.col("_wlo") == 0) & (pl.col("_whi") == self.top_w)  # any weight: one range of atoms
        for pattern in queries.get_column("_star").unique().sort().to_list():
            keys = ["_sex", *(f for i, f in enumerate(exact) if not (pattern >> i) & 1), *extra]
            chosen = queries.filter(pl.col("_star") == pattern)
            by_sex = pl.concat(
                [
                    chosen.filter((pl.col("_sexes") & (1 << code)) > 0).with_columns(
                        _sex=pl.lit(code, pl.UInt32)
                    )
                    for code in range(4)
                ]
            )
            ranged = (
                by_sex.filter(~full)
                .with_columns(pl.int_ranges("_alo", pl.col("_ahi") + 1, dtype=pl.UInt32).alias("_atom"))
                .explode("_atom")
            )
            yield pattern, keys, pl.concat(
                [
                    by_sex.filter(full & (pl.col("_alo") <= pl.col("_ahi"))).select(  # empty: none
                        "_row", *keys, (pl.col("_alo").cast(pl.UInt64) * span).alias("_lo"),
                        (pl.col("_ahi").cast(pl.UInt64) * span + self.top_w).alias("_hi"),
                    ),
                    ranged.select(
                        "_row", *keys, (pl.col("_atom").cast(pl.UInt64) * span + pl.col("_wlo")).alias("_lo"),
                        (pl.col("_atom").cast(pl.UInt64) * span + pl.col("_whi")).alias("_hi"),
                    ),
                ]
            )  # fmt: skip

    def _coordinate(self, raw: pl.DataFrame) -> np.ndarray:
        """A raw row's (atom, weight rank) as one coordinate: atom · (top rank + 1) + rank."""
        return (raw.get_column("_atom").cast(pl.UInt64) * (self.top_w + 1) + raw.get_column("_w")).to_numpy()

    def count(
        self,
        tuples: pl.DataFrame,
        wanted: pl.DataFrame,
        raw: pl.DataFrame,
        exact: list[str],
        *,
        extra: Sequence[str] = (),
        widths: dict[str, int] | None = None,
    ) -> np.ndarray:
        """The raw rows each row of ``wanted`` covers (an Int64 array aligned with ``wanted``).

        Args:
            tuples: :meth:`queries` tuples; wanted: ``_qt`` (and the ``extra`` columns) to count.
            raw: :attr:`raw` rows (one per raw case, or per raw case and item), with the ``extra`` columns.
            exact: K's exact fields; extra: further equality keys (an item code), with their ``widths``.
        """
        widths = {**self.codes.widths, **(widths or {}), "_sex": 3}
        coordinate = self._coordinate(raw)
        queries = wanted.with_row_index("_row").join(tuples, on="_qt")
        sizes = np.zeros(wanted.height, np.int64)
        for _, keys, rows in self._ranges(queries, exact, extra):
            counts = range_counts(
                raw.select(key_expr(keys, widths)).to_series().to_numpy(),
                coordinate,
                rows.select(key_expr(keys, widths)).to_series().to_numpy(),
                rows.get_column("_lo").to_numpy(),
                rows.get_column("_hi").to_numpy(),
            )
            at = rows.get_column("_row").to_numpy()
            sizes += np.bincount(at, weights=counts, minlength=wanted.height).astype(np.int64)
        return sizes

    def ranges(self, tuples: pl.DataFrame, exact: list[str]) -> Iterator[Ranges]:
        """Per pattern of ``*`` fields, the tuples as ranges of one integer value per raw case
        (:mod:`._covered`): value = key · C + coordinate, key the equality keys' dense rank over both
        sides and C the coordinates' span (atoms + 1) · (top rank + 1), so that a range of
        coordinates under one key is one range of values.
        """
        widths = {**self.codes.widths, "_sex": 3}
        raw = self.raw_rows(exact)
        coordinate = self._coordinate(raw).astype(np.int64)
        span = (self.atoms + 1) * (self.top_w + 1)
        queries = tuples.with_row_index("_row")
        star = queries.get_column("_star").to_numpy()
        for pattern, keys, rows in self._ranges(queries, exact):
            raw_key = raw.select(key_expr(keys, widths)).to_series().to_numpy()
            row_key = rows.select(key_expr(keys, widths)).to_series().to_numpy()
            _, dense = np.unique(np.concatenate([raw_key, row_key]), return_inverse=True)
            dense = dense.ravel().astype(np.int64) * span
            row = rows.get_column("_row").to_numpy()
            order = np.argsort(row, kind="stable")
            bounds = [dense[len(raw_key) :][order] + rows.get_column(c).to_numpy().astype(np.int64)[order]
                      for c in ("_lo", "_hi")]  # fmt: skip
            yield Ranges(
                asked=star == pattern,
                values=dense[: len(raw_key)] + coordinate,
                start=np.concatenate([[0], np.cumsum(np.bincount(row, minlength=tuples.height))]),
                lo=bounds[0],
                hi=bounds[1],
            )

    def sizes(self, knows: Sequence[str]) -> pl.DataFrame | None:
        """``caseid``, ``size``: the raw cases each released case covers on ``knows``; None: not measured."""
        built = self.queries(knows)
        if built is None:
            return None
        cases, tuples, exact = built
        wanted = tuples.select("_qt")
        counted = wanted.with_columns(
            pl.Series("size", self.count(tuples, wanted, self.raw_rows(exact), exact))
        )
        return cases.join(counted, on="_qt").select("caseid", "size")
