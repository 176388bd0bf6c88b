"""The verifier's reading of a release table and its conf(q → s, E) (SPEC §5), from the files alone.

Part of the independent verifier (:mod:`faers_anon.verify.verifier`): it imports nothing of the
anonymizer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import partial
from pathlib import Path

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
    parts = [pl.DataFrame(schema={"key": pl.UInt64, "p": pl.Float64}).lazy()]
    unlisted_parts = [pl.DataFrame(schema={"value": pl.String}).lazy()]
    own = {"indi": "indi_pt", "reac": "pt"}
    for table in sorted(tables):
        rows = release_rows(release, table, ["caseid", own[table]])
        terms = canonical_column(rows.select(pl.col(own[table]).unique()), own[table], "value")
        terms = terms.join(vocab, on="value", how="left")  # per distinct term, not per row
        unlisted_parts.append(terms.filter(pl.col("vid").is_null()).select("value"))
        found = with_case_codes(rows, ids).join(terms.drop_nulls("vid"), on=own[table])
        parts.append(found.select(_pair("cid", "vid"), pl.lit(1.0).alias("p")))
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
        weights = knowledge.lazy().join(vocab, on="value").join(codes, on="drug_key")
        found = keys.select("cid", "did").unique().join(weights.select("did", "vid", "weight"), on="did")
        parts.append(found.select(_pair("cid", "vid"), pl.col("weight").alias("p")))
    maxima = pl.concat(parts).group_by("key").agg(pl.col("p").max())  # P(s | c), one integer key
    maxima = maxima.select((pl.col("key") // _SHIFT).cast(pl.UInt32).alias("cid"), _low("key", "vid"), "p")
    conf_plan = (
        members.lazy()
        .join(ids.select("caseid", "cid"), on="caseid")
        .join(maxima, on="cid")
        .group_by("group", "vid")
        .agg(pl.col("p").sum().alias("sigma"))
        .join(vocab, on="vid")
        .join(sizes.lazy(), on="group")
        .join(thetas.lazy(), on="value")
        .with_columns((pl.col("sigma") / pl.col("cases")).alias("conf"))
        .drop("vid")
    )
    missing_plan = pl.concat(unlisted_parts).drop_nulls().unique().sort("value")
    conf, missing = pl.collect_all([conf_plan, missing_plan])
    unlisted = missing.select(
        pl.lit(None, pl.Int64).alias("group"),
        pl.lit("unlisted").alias("rule"),
        pl.format("value {} of a sensitive attribute is not in the thresholds: its decision is not stated",
                  "value").alias("detail"),
    )  # fmt: skip
    return conf, unlisted
