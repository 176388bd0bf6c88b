"""Case super-records: every version (report) of a caseid merged into one row (SPEC §4).

Source: SPEC §4 ("Case super-records", the paper's "combined records"); docs/architecture.md
"cases.parquet" (the contract); latest-version rule of FORMAT.md §6.

For the versions V of a case:

* ``primaryids`` / ``caseversions``: every kept report, ordered oldest → latest by the version order
  below; ``n_reports`` = |V|.
* ``latest_primaryid``: the last version in the order — FDA's rule: highest ``caseversion``, then
  latest ``fda_dt``, then highest ``primaryid``; the quarter a version came in plays no part (the
  same primaryid in two quarters is one report, kept once by ingest). A missing ``caseversion``
  (legacy AERS) or ``fda_dt`` ranks below every present one, so a FAERS version supersedes every
  AERS version of the case (:mod:`faers_anon.io.cumulative`).
* ``age_min``/``age_max``, ``wt_min``/``wt_max``: [min, max] of the versions' *known* ``age_years`` /
  ``weight_kg`` — the smallest numeric generalization covering them.
* ``sex``: the one known code when the versions agree, ``*`` (the root of the sex tree, their lowest
  common ancestor) when they disagree.
* ``indications``, ``reactions``: the union over versions of the canonical value keys
  (``knowledge.values.value_key_expr``: upper-cased, whitespace collapsed), so ``Pyrexia`` and the
  legacy ``PYREXIA`` are one value; ``drug_keys``: the union of ``drug_key``. Unique, sorted; an
  empty list when no version has any.

Decision (docs/architecture.md): a version with a missing QID value asserts nothing about the
patient, so the super-record covers the versions' known values and is missing (null) only when every
version is missing there.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl
import pyarrow as pa

from knowledge.values import value_key_expr

__all__ = [
    "VERSION_ORDER",
    "TERM_LISTS",
    "latest_primaryid",
    "latest_versions",
    "term_codes",
    "term_lists",
    "version_summary",
    "combine",
    "merge_versions",
]

#: Version order within a case, ascending: the last one is the latest (FORMAT.md §6).
VERSION_ORDER: tuple[str, ...] = ("caseversion", "fda_dt", "primaryid")

_TERMS = pl.List(pl.Utf8)


def latest_primaryid() -> pl.Expr:
    """``primaryid`` of the latest version by :data:`VERSION_ORDER` (nulls rank lowest).

    Use inside ``group_by("caseid").agg(...)`` or as a window, ``latest_primaryid().over("caseid")``.
    """
    order = [pl.col(c) for c in VERSION_ORDER]
    return pl.col("primaryid").sort_by(order, nulls_last=False).last()


def latest_versions(reports: pl.LazyFrame | pl.DataFrame, /) -> pl.LazyFrame:
    """The latest report of each case.

    Args:
        reports: at least ``caseid``, ``primaryid``, ``caseversion``, ``fda_dt``, ``quarter``.

    Returns:
        A lazy frame ``caseid`` Int64, ``latest_primaryid`` Int64; one row per caseid.
    """
    return reports.lazy().group_by("caseid").agg(latest_primaryid().alias("latest_primaryid"))


def _sex_cover(sex: pl.Expr) -> pl.Expr:
    known = sex.drop_nulls()
    return pl.when(known.n_unique() == 1).then(known.first()).when(known.n_unique() > 1).then(pl.lit("*"))


#: The set-valued attributes of a super-record: name → (source column, canonical value keys?).
TERM_LISTS: dict[str, tuple[str, bool]] = {
    "indications": ("indi_pt", True),
    "reactions": ("pt", True),
    "drug_keys": ("drug_key", False),
}


def term_codes(terms: pl.Series, /) -> tuple[pl.Series, pl.Series]:
    """Each term's index among the distinct terms, and those terms: ``distinct.gather(codes) == terms``.

    One hash of each row (a categorical of its own categories, so none of another column's), instead
    of a ``unique`` and a ``replace_strict`` (two). Null terms get null codes.

    The distinct terms are gathered from the rows, each at its code's first row (a numpy scatter),
    not read from the categories: ``Categories.to_series`` makes a Python string of each (0.1 CPU-s
    for the realistic 400k quarter's five term columns).

    Returns:
        (UInt32 codes, one per row; the distinct non-null terms, Utf8).
    """
    text = terms.cast(pl.Utf8)
    codes = text.cast(pl.Categorical(pl.Categories.random())).to_physical()
    present = codes.drop_nulls().to_numpy()
    rows = np.flatnonzero(codes.is_not_null().to_numpy())
    first = np.zeros(int(present.max()) + 1 if present.size else 0, dtype=np.int64)
    first[present[::-1]] = rows[::-1]  # the last write wins: each code's first row
    return codes, text.gather(first).alias(terms.name)


def term_lists(rows: pl.LazyFrame | pl.DataFrame, name: str, /) -> pl.DataFrame:
    """Per caseid, the unique sorted values of one set-valued attribute (see :data:`TERM_LISTS`).

    Each distinct term (:func:`term_codes`) is mapped once to its canonical value's code: its rank
    in the sorted vocabulary of values; a row takes its term's code by an integer gather. A row
    becomes one integer, ``pair = caseid · n + code`` (n codes), which orders rows by caseid and then
    by value; one sort of these integers puts a case's values together, in order, with a repeated
    value right after the first (so de-duplication compares neighbours), and ``pair // n`` and
    ``pair mod n`` give the caseid and the code back. One integer sort costs a fraction of sorting two
    columns. The pair is an Int64 when every caseid is in [0, (2⁶³ − 1) / n − 1] (always, for FAERS
    ids), else an Int128 (no caseid overflows); Int64 sorts and divides in about half the time.

    Args:
        rows: ``caseid`` and the attribute's source column (e.g. REAC's ``caseid``, ``pt``).
        name: ``"indications"``, ``"reactions"`` or ``"drug_keys"``.

    Returns:
        ``caseid`` Int64 and ``name`` List(Utf8), one row per caseid that has a value, by caseid.
    """
    column, canonical = TERM_LISTS[name]
    frame = rows.lazy().select("caseid", column).collect()
    term, distinct = term_codes(frame.get_column(column))
    keys = pl.DataFrame({name: distinct}).select(value_key_expr(pl.col(name)) if canonical else pl.col(name))
    keyed = keys.to_series()
    values = keyed.drop_nulls().unique().sort()
    code = keyed.cast(pl.Enum(values)).to_physical().gather(term)
    n = max(values.len(), 1)
    caseid = frame.get_column("caseid")
    low, high = caseid.min(), caseid.max()
    fits = caseid.is_empty() or (low is not None and int(low) >= 0 and int(high) < (2**63 - 1) // n - 1)  # type: ignore[arg-type]
    pair = pl.col("_pair")
    pairs = (
        pl.DataFrame({"caseid": caseid.cast(pl.Int64 if fits else pl.Int128), "_code": code})
        .lazy()
        .select((pl.col("caseid") * n + pl.col("_code")).alias("_pair"))
        .drop_nulls()
        .sort("_pair")
        .filter(pair.ne_missing(pair.shift()))
        .select((pair // n).cast(pl.Int64).alias("caseid"), (pair % n).cast(pl.UInt32).alias("_code"))
        .collect()
    )
    ids = pairs.get_column("caseid").to_numpy()
    starts = np.flatnonzero(np.diff(ids, prepend=ids[:1] - 1) if ids.size else ids)  # each case's first pair
    lengths = np.diff(starts, append=ids.size)
    terms = values.gather(pairs.get_column("_code"))
    return pl.DataFrame([pl.Series("caseid", ids[starts], pl.Int64), _list_column(lengths, terms, name)])


def version_summary(reports: pl.LazyFrame | pl.DataFrame, /) -> pl.DataFrame:
    """The QID part of the super-records: versions, latest report, QID ranges and sex cover.

    Returns:
        ``caseid`` … ``wt_max`` of :func:`merge_versions`, sorted by caseid.
    """
    return (
        reports.lazy()
        .sort(["caseid", *VERSION_ORDER], nulls_last=False)
        .group_by("caseid", maintain_order=True)
        .agg(
            pl.col("primaryid").alias("primaryids"),
            pl.col("caseversion").alias("caseversions"),
            pl.len().cast(pl.UInt32).alias("n_reports"),
            pl.col("primaryid").last().alias("latest_primaryid"),
            pl.col("age_years").min().alias("age_min"),
            pl.col("age_years").max().alias("age_max"),
            _sex_cover(pl.col("sex")).alias("sex"),
            pl.col("weight_kg").min().alias("wt_min"),
            pl.col("weight_kg").max().alias("wt_max"),
        )
        .collect()
    )


def _list_column(lengths: np.ndarray, values: pl.Series | pa.Array, name: str, /) -> pl.Series:
    """A List(Utf8) column whose i-th list holds the next ``lengths[i]`` of ``values``: Arrow offsets
    over ``values``, so no value is copied (a group-by or a join gathers every string)."""
    offsets = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = (
        values.rechunk().to_arrow(compat_level=pl.CompatLevel.newest())
        if isinstance(values, pl.Series)
        else values
    )
    return pl.Series(name, pa.LargeListArray.from_arrays(pa.array(offsets), flat))


def _increasing(caseids: pl.Series, /) -> bool:
    ids = caseids.to_numpy()
    return caseids.null_count() == 0 and bool(np.all(ids[1:] > ids[:-1]))


def _placed(case: np.ndarray, frame: pl.DataFrame | None, name: str, /) -> pl.Series:
    """The lists of ``frame`` (caseids increasing) on the rows of ``case`` (caseids increasing): a
    case's list where ``frame`` has one, ``[]`` elsewhere; lists of caseids not in ``case`` dropped."""
    if frame is None:
        return _list_column(np.zeros(case.shape[0], np.int64), pl.Series([], dtype=pl.Utf8), name)
    ids = frame.get_column("caseid").to_numpy()
    at = np.searchsorted(case, ids).clip(0, max(case.shape[0] - 1, 0))
    hit = case[at] == ids if case.shape[0] else np.zeros(ids.shape[0], dtype=bool)
    if not hit.all():
        frame, at = frame.filter(pl.Series(hit)), at[hit]
    lists = frame.get_column(name).rechunk().to_arrow(compat_level=pl.CompatLevel.newest())
    lengths = np.zeros(case.shape[0], dtype=np.int64)
    lengths[at] = lists.value_lengths().fill_null(0).to_numpy(zero_copy_only=False)
    return _list_column(lengths, lists.flatten(), name)


def combine(versions: pl.DataFrame, lists: Mapping[str, pl.DataFrame], /) -> pl.DataFrame:
    """Super-records from :func:`version_summary` and the :func:`term_lists` of each attribute.

    A case without values (or an attribute without a frame in ``lists``) gets an empty list.

    Decision (issue 16 item 3): the lists are placed on the versions' rows by Arrow offsets over the
    list frames' values (:func:`_placed`: a binary search of their caseids), not by a join, which
    gathered every string of the three lists (0.24 CPU-s at 400k cases, now ≈ 0.02); frames whose
    caseids do not increase (not sorted, or repeated) are sorted, or joined as before.

    Returns:
        The super-records, sorted by caseid.
    """
    merged = versions if versions.get_column("caseid").is_sorted() else versions.sort("caseid")
    given = {
        name: frame if _increasing(frame.get_column("caseid")) else frame.sort("caseid")
        for name, frame in lists.items()
        if name in TERM_LISTS
    }
    if not _increasing(merged.get_column("caseid")) or not all(
        _increasing(f.get_column("caseid")) for f in given.values()
    ):
        return _joined(merged, given)
    case = merged.get_column("caseid").to_numpy()
    return merged.with_columns([_placed(case, given.get(name), name) for name in TERM_LISTS])


def _joined(versions: pl.DataFrame, lists: Mapping[str, pl.DataFrame], /) -> pl.DataFrame:
    """:func:`combine` by left joins on caseid (any frames, repeated caseids included)."""
    merged = versions.lazy()
    for name in TERM_LISTS:
        if name in lists:
            merged = merged.join(lists[name].lazy(), on="caseid", how="left", maintain_order="left")
            merged = merged.with_columns(pl.col(name).fill_null(pl.lit([], dtype=_TERMS)))
        else:
            merged = merged.with_columns(pl.lit([], dtype=_TERMS).alias(name))
    return merged.collect()


def merge_versions(
    reports: pl.LazyFrame | pl.DataFrame,
    drug: pl.LazyFrame | pl.DataFrame,
    reac: pl.LazyFrame | pl.DataFrame,
    indi: pl.LazyFrame | pl.DataFrame,
    /,
) -> pl.DataFrame:
    """One super-record per caseid, as docs/architecture.md "cases.parquet" defines it.

    Args:
        reports: kept reports (``caseid``, ``primaryid``, ``caseversion``, ``fda_dt``, ``quarter``,
            ``age_years``, ``sex``, ``weight_kg``); ``primaryid`` unique.
        drug: kept DRUG rows (``caseid``, ``drug_key``).
        reac: kept REAC rows (``caseid``, ``pt``).
        indi: kept INDI rows (``caseid``, ``indi_pt``).

    Returns:
        ``caseid``, ``primaryids``, ``caseversions``, ``n_reports`` (UInt32), ``latest_primaryid``,
        ``age_min``, ``age_max``, ``sex``, ``wt_min``, ``wt_max``, ``indications``, ``reactions``,
        ``drug_keys``; sorted by caseid. Child rows of caseids without a report are ignored.
    """
    sources = {"indications": indi, "reactions": reac, "drug_keys": drug}
    return combine(version_summary(reports), {name: term_lists(rows, name) for name, rows in sources.items()})
