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

__all__ = ["confidences", "release_table"]

_SHIFT = 1 << 32


@with_possible_items  # DRUG and REAC of a disassociation release: its possible items (_verify_disassociation)
def release_table(
    release: Path, table: str, columns: Sequence[str], optional: Sequence[str] = ()
) -> pl.LazyFrame:
    """One release table (parquet, else the ascii files of every quarter), ``caseid`` as text.

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
    chosen = [*columns, *(name for name in optional if name in present and name not in columns)]
    return frame.select(chosen).with_columns(pl.col("caseid").cast(pl.String))


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
    ids = members.select("caseid").unique(maintain_order=True).with_row_index("cid").lazy()
    parts = [pl.DataFrame(schema={"key": pl.UInt64, "p": pl.Float64}).lazy()]
    unlisted_parts = [pl.DataFrame(schema={"value": pl.String}).lazy()]
    own = {"indi": "indi_pt", "reac": "pt"}
    for table in sorted(tables):
        rows = release_table(release, table, ["caseid", own[table]])
        terms = canonical_column(rows.select(pl.col(own[table]).unique()), own[table], "value")
        terms = terms.join(vocab, on="value", how="left")  # per distinct term, not per row
        unlisted_parts.append(terms.filter(pl.col("vid").is_null()).select("value"))
        found = rows.join(ids, on="caseid").join(terms.drop_nulls("vid"), on=own[table])
        parts.append(found.select(_pair("cid", "vid"), pl.lit(1.0).alias("p")))
    if knowledge.height:
        names = released_drug_names(partial(release_table, release)).rename({"drug_key": "_name"})
        canon = canonical_column(names.select(pl.col("_name").unique()), "_name", "drug_key")
        reach = canon.join(knowledge.lazy(), on="drug_key").join(vocab, on="value", how="left")
        unlisted_parts.append(reach.filter(pl.col("vid").is_null()).select("value"))
        # max over a case's drug names of w(d, s) = max over their distinct canonical keys d
        keys = names.join(ids, on="caseid").join(canon.drop_nulls("drug_key"), on="_name")
        weights = knowledge.lazy().join(vocab, on="value").select("drug_key", "vid", "weight")
        found = keys.select("cid", "drug_key").unique().join(weights, on="drug_key")
        parts.append(found.select(_pair("cid", "vid"), pl.col("weight").alias("p")))
    maxima = pl.concat(parts).group_by("key").agg(pl.col("p").max())  # P(s | c), one integer key
    maxima = maxima.select((pl.col("key") // _SHIFT).cast(pl.UInt32).alias("cid"), _low("key", "vid"), "p")
    conf_plan = (
        members.lazy()
        .join(ids, on="caseid")
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
