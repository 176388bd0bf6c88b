"""The verifier's reading of a release table and its conf(q → s, E) (SPEC §5), from the files alone.

Part of the independent verifier (:mod:`faers_anon.verify.verifier`): it imports nothing of the
anonymizer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import numpy as np
import polars as pl

from faers_anon.errors import InputError
from faers_anon.verify.classes import released_drug_names
from faers_anon.verify.methods import with_possible_items
from faers_anon.verify.stated import canonical_column

__all__ = ["case_codes", "confidences", "release_rows", "release_table", "with_case_codes"]

_SHIFT = 1 << 32


@with_possible_items  # DRUG and REAC of a disassociation release: its possible items (_verify_disassociation)
def release_rows(
    release: Path, table: str, columns: Sequence[str], optional: Sequence[str] = ()
) -> pl.LazyFrame:
    """One release table (parquet, else the ascii files of every quarter), ``caseid`` as stored.

    ``columns`` must be there (InputError naming the field); ``optional`` ones are read when present.
    """
    parquet = release / "parquet" / f"{table}.parquet"
    pattern = re.compile(rf"^{table}\d\dq[1-4]\.txt$", re.IGNORECASE)
    texts = sorted(p for p in (release / "ascii").glob("*") if pattern.match(p.name)) if (
        release / "ascii"
    ).is_dir() else []  # fmt: skip
    if parquet.is_file():
        frame, where = pl.scan_parquet(parquet), parquet
    elif texts:
        scans = [pl.scan_csv(p, separator="$", quote_char=None, infer_schema=False) for p in texts]
        frame, where = pl.concat(scans, how="diagonal"), texts[0]
    else:
        raise InputError(
            f"missing table {table} (neither parquet/{table}.parquet nor ascii files)", path=release
        )
    present = frame.collect_schema().names()
    for name in columns:
        if name not in present:
            raise InputError("missing column", path=where, field=name)
    return frame.select(*columns, *(name for name in optional if name in present and name not in columns))


def release_table(
    release: Path, table: str, columns: Sequence[str], optional: Sequence[str] = ()
) -> pl.LazyFrame:
    """:func:`release_rows` with ``caseid`` as text (the verifier's one type of case id)."""
    return release_rows(release, table, columns, optional).with_columns(pl.col("caseid").cast(pl.String))


def with_case_codes(rows: pl.LazyFrame, ids: pl.LazyFrame) -> pl.LazyFrame:
    """``rows`` (``caseid`` as stored) joined to ``ids`` (``caseid`` as text, ``cid``) on the case id as text.

    An Int64 ``caseid`` meets the text ids through their integer value, which is the same join
    without turning every row's id into text: str(v) = s exactly when s is the decimal form of an
    integer v (``ids`` carry it as ``_int`` when ``str(int(s)) == s``, :func:`case_codes`).
    """
    if rows.collect_schema()["caseid"] == pl.Int64:
        return rows.join(ids.select(pl.col("_int").alias("caseid"), "cid"), on="caseid")
    return rows.with_columns(pl.col("caseid").cast(pl.String)).join(ids.select("caseid", "cid"), on="caseid")


def case_codes(members: pl.DataFrame) -> pl.LazyFrame:
    """The distinct ``caseid`` (text) of ``members`` numbered ``cid``, with ``_int`` (module helper
    :func:`with_case_codes`): the Int64 whose decimal form is the id, null when there is none."""
    ids = members.select("caseid").unique(maintain_order=True).with_row_index("cid")
    as_int = pl.col("caseid").cast(pl.Int64, strict=False)
    return ids.with_columns(
        pl.when(as_int.cast(pl.String) == pl.col("caseid")).then(as_int).alias("_int")
    ).lazy()


def _pair(high: str, low: str) -> pl.Expr:
    """Two UInt32 codes as one UInt64 key, high · 2^32 + low (one integer column to group on)."""
    return (pl.col(high).cast(pl.UInt64) * _SHIFT + pl.col(low).cast(pl.UInt64)).alias("key")


def _low(key: str, alias: str) -> pl.Expr:
    """The low code of a :func:`_pair` key (key mod 2^32)."""
    return (pl.col(key) % _SHIFT).cast(pl.UInt32).alias(alias)


def confidences(
    release: Path,
    members: pl.DataFrame,
    sizes: pl.DataFrame,
    tables: frozenset[str],
    thetas: pl.DataFrame,
    knowledge: pl.DataFrame,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """conf(q → s, E) and θ_s for every group q and listed s some case reaches; rule ``unlisted``.

    ``knowledge`` is E as (drug_key, value, weight), canonical; ``thetas`` (value, theta).
    """
    # integer codes for the group-bys, fixed once (a lazy unique may number them anew at each use)
    vocab = thetas.select("value").unique(maintain_order=True).with_row_index("vid").lazy()
    ids = case_codes(members)
    knowledge, levels = _ranked(knowledge)  # each p as its rank r in levels (_group_sums)
    one = int(np.searchsorted(levels, 1.0))
    parts = [pl.DataFrame(schema={"key": pl.UInt64, "r": pl.UInt32}).lazy()]
    unlisted_parts = [pl.DataFrame(schema={"value": pl.String}).lazy()]
    own = {"indi": "indi_pt", "reac": "pt"}
    for table in sorted(tables):
        rows = release_rows(release, table, ["caseid", own[table]])
        terms = canonical_column(rows.select(pl.col(own[table]).unique()), own[table], "value")
        terms = terms.join(vocab, on="value", how="left")  # per distinct term, not per row
        unlisted_parts.append(terms.filter(pl.col("vid").is_null()).select("value"))
        found = with_case_codes(rows, ids).join(terms.drop_nulls("vid"), on=own[table])
        parts.append(found.select(_pair("cid", "vid"), pl.lit(one, pl.UInt32).alias("r")))
    if knowledge.height:
        names = released_drug_names(partial(release_rows, release)).rename({"drug_key": "_name"})
        # the distinct names and their canonical keys d, numbered once (did): the rows meet them as integers
        distinct = canonical_column(names.select(pl.col("_name").unique()), "_name", "drug_key").collect()
        codes = distinct.select(pl.col("drug_key").drop_nulls().unique().sort()).with_row_index("did").lazy()
        canon = distinct.lazy()
        reach = canon.join(knowledge.lazy(), on="drug_key").join(vocab, on="value", how="left")
        unlisted_parts.append(reach.filter(pl.col("vid").is_null()).select("value"))
        # max over a case's drug names of w(d, s) = max over their distinct canonical keys d
        named = canon.join(codes, on="drug_key").select("_name", "did")
        keys = with_case_codes(names, ids).join(named, on="_name")
        weighted = knowledge.lazy().join(vocab, on="value").join(codes, on="drug_key")
        found = keys.select("cid", "did").unique().join(weighted.select("did", "vid", "_r"), on="did")
        parts.append(found.select(_pair("cid", "vid"), pl.col("_r").alias("r")))
    missing_plan = pl.concat(unlisted_parts).drop_nulls().unique().sort("value")
    cases_plan = members.lazy().join(ids.select("caseid", "cid"), on="caseid").select("cid", "group")
    pairs, missing, cases = pl.collect_all([pl.concat(parts), missing_plan, cases_plan])
    group, vid, sigma = _group_sums(pairs, cases, levels)
    sums = pl.DataFrame(
        [pl.Series("group", group, pl.Int64), pl.Series("vid", vid, pl.UInt32), pl.Series("sigma", sigma)]
    )
    conf = (
        sums.lazy()
        .join(vocab, on="vid")
        .join(sizes.lazy(), on="group")
        .join(thetas.lazy(), on="value")
        .with_columns((pl.col("sigma") / pl.col("cases")).alias("conf"))
        .drop("vid")
        .collect()
    )
    unlisted = missing.select(
        pl.lit(None, pl.Int64).alias("group"),
        pl.lit("unlisted").alias("rule"),
        pl.format("value {} of a sensitive attribute is not in the thresholds: its decision is not stated",
                  "value").alias("detail"),
    )  # fmt: skip
    return conf, unlisted


def _ranked(knowledge: pl.DataFrame) -> tuple[pl.DataFrame, np.ndarray]:
    """``knowledge`` with ``_r``, the rank of its weight among ``levels``: the distinct weights and 1.0
    (the p of a case's own term), sorted; rows without a weight left out (they reach nothing)."""
    weights = knowledge.get_column("weight").cast(pl.Float64).drop_nulls().to_numpy()
    levels = np.unique(np.concatenate([[1.0], weights]))
    rank = pl.col("weight").cast(pl.Float64).replace_strict(levels.tolist(), range(len(levels)), default=None)
    known = knowledge.filter(pl.col("weight").is_not_null())
    return known.with_columns(rank.cast(pl.UInt32).alias("_r")), levels


def _group_sums(
    pairs: pl.DataFrame, cases: pl.DataFrame, levels: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """σ(g, s) = Σ_{c ∈ g} P(s | c), P(s | c) the largest p of the case's rows for s (SPEC §5).

    ``pairs``: ``key`` = cid · 2^32 + vid (:func:`_pair`) and ``r``, the rank of p in ``levels`` (the
    distinct p, sorted). One value sort of the words (cid, vid, r) puts each (c, s)'s largest p last in
    its run; each (c, s) counts in every group of its case (``cases``: cid, group); one sort of the
    words (group, vid, r) gives each (g, s) its terms, summed in increasing p (a fixed order; the
    former hash group-bys summed in thread order). Returns (group, vid, σ), sorted by group and vid.
    """
    key, rank = pairs.get_column("key").to_numpy(), pairs.get_column("r").to_numpy().astype(np.uint64)
    cid, vid = key >> np.uint64(32), key & np.uint64(_SHIFT - 1)
    by_case = cases.sort("cid", "group")
    m_cid, m_group = (
        by_case.get_column("cid").to_numpy().astype(np.int64),
        by_case.get_column("group").to_numpy(),
    )
    rb, vb = _bits(len(levels)), _bits(int(vid.max(initial=0)) + 1)
    gb = _bits(int(max(m_group.max(initial=0), cid.max(initial=0))) + 1)
    if gb + vb + rb > 64:  # pragma: no cover - beyond 2^64 (group or case, value, p) triples
        raise InputError(f"too many groups ({gb} bits), values ({vb}) and weights ({rb}) for 64-bit keys")
    words = np.sort((cid << np.uint64(vb + rb)) | (vid << np.uint64(rb)) | rank)
    words = words[_run_ends(words >> np.uint64(rb))]  # one per (c, s): its largest p
    cid = (words >> np.uint64(vb + rb)).astype(np.int64)
    if len(m_cid) == int(m_cid.max(initial=-1)) + 1:  # one group per case (cid = 0 .. n - 1)
        at, group = np.arange(len(words)), m_group[cid]
    else:  # a case in several groups (case_split): each (c, s) repeated for each of them
        count = np.bincount(m_cid, minlength=int(cid.max(initial=-1)) + 1)
        times = count[cid]
        at = np.repeat(np.arange(len(words)), times)
        first = np.concatenate([[0], np.cumsum(count)[:-1]])[cid[at]]
        group = m_group[first + np.arange(len(at)) - np.repeat(np.cumsum(times) - times, times)]
    low = words[at] & np.uint64((1 << (vb + rb)) - 1)
    words = np.sort((group.astype(np.uint64) << np.uint64(vb + rb)) | low)
    cell = words >> np.uint64(rb)
    starts = np.flatnonzero(np.concatenate([[True], cell[1:] != cell[:-1]])) if len(cell) else at[:0]
    terms = levels[(words & np.uint64((1 << rb) - 1)).astype(np.int64)]
    sums = np.add.reduceat(terms, starts) if len(words) else terms
    cell = cell[starts]
    return (cell >> np.uint64(vb)).astype(np.int64), (cell & np.uint64((1 << vb) - 1)).astype(np.uint32), sums


def _run_ends(cells: np.ndarray) -> np.ndarray:
    """The last index of each run of equal values in sorted ``cells``."""
    return (
        np.flatnonzero(np.concatenate([cells[1:] != cells[:-1], [True]]))
        if len(cells)
        else np.zeros(0, np.int64)
    )


def _bits(n: int) -> int:
    """Bits of the numbers 0 .. n - 1 (at least 1)."""
    return max(1, (n - 1).bit_length())
