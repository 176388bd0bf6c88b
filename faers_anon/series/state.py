"""The ledger's current state: one row per case pseudonym, beside the append-only history.

Source: issue 14 (the ledger read must not grow with the number of releases); docs/series.md §3.
A release needs, of every earlier case, only (a) its *history* (the ``release:group`` pairs, in
release order), (b) its last released region and (c) the union of the sensitive values it ever
exposed. Reading them from every ``release-NNNN.parquet`` made quarter n read n − 1 files, every
republished case once per release. ``state-NNNN.parquet`` holds them after release NNNN, one row per
case pseudonym ever published:

    state_n(c) = state_{n−1}(c) ⊕ entry_n(c):  history_n = history_{n−1} | "n:g",
                 region_n = region of release n, values_n = values_{n−1} ∪ values of release n,

and unchanged for a case release n did not publish (:func:`advance`). Its SHA-256 is in
``ledger.json`` under the MAC, so release n + 1 reads one checked file whose rows are the distinct
cases of the series (not the sum over releases) and whose per-row size does not grow with n beyond
the history string. The release files stay (the append-only record; :func:`state_from_entries`
rebuilds the state from them for a ledger written before the state file existed).
"""

from __future__ import annotations

import polars as pl

from faers_anon.anonymize.partition import QID_COLUMNS

__all__ = ["LISTS", "STATE_SCHEMA", "advance", "state_from_entries"]

#: The value lists of a ledger row (release entries and state alike).
LISTS = ("reactions", "indications", "drug_keys", "outcomes")
_REGION = QID_COLUMNS
STATE_SCHEMA: dict[str, pl.DataType] = {
    "caseid": pl.Int64(), "history": pl.Utf8(), "last": pl.UInt32(),
    "age_group": pl.Utf8(), "age_min": pl.Float64(), "age_max": pl.Float64(), "sex": pl.Utf8(),
    "wt_min": pl.Float64(), "wt_max": pl.Float64(),
    **{name: pl.List(pl.Utf8()) for name in LISTS},
}  # fmt: skip


def advance(state: pl.DataFrame, entries: pl.DataFrame, index: int, /) -> pl.DataFrame:
    """The state after release ``index``, whose ledger rows are ``entries`` (module docstring).

    The cases of only one side are taken as they are; only those in both are merged (the list
    union on every row cost 5.6 s on a 100k release at load 15).

    Args:
        state: the state before (:data:`STATE_SCHEMA`; empty for the first release).
        entries: release ``index``'s rows (``caseid``, ``group``, the region, the value lists).
    """
    new = entries.select(
        "caseid",
        pl.concat_str([pl.lit(str(index)), pl.col("group").cast(pl.Utf8)], separator=":").alias("history"),
        pl.lit(index, pl.UInt32).alias("last"),
        *_REGION,
        *LISTS,
    )
    both = state.join(new.select("caseid"), on="caseid", how="semi")
    old_only = state.join(new.select("caseid"), on="caseid", how="anti")
    again = new.join(both.select("caseid", "history", *[pl.col(n).alias(f"_old_{n}") for n in LISTS]),
                     on="caseid", how="left", suffix="_old")  # fmt: skip
    merged = again.with_columns(
        pl.when(pl.col("history_old").is_null()).then(pl.col("history"))
        .otherwise(pl.concat_str(["history_old", "history"], separator="|")).alias("history"),
        *[pl.when(pl.col(f"_old_{n}").is_null()).then(pl.col(n))
          .otherwise(pl.concat_list(f"_old_{n}", n).list.unique().list.sort()).alias(n) for n in LISTS],
    )  # fmt: skip
    return (
        pl.concat([old_only.select(list(STATE_SCHEMA)), merged.select(list(STATE_SCHEMA))],
                  how="vertical_relaxed")  # fmt: skip
        .cast(STATE_SCHEMA)  # type: ignore[arg-type]
        .sort("caseid")
    )


def state_from_entries(entries: pl.DataFrame, /) -> pl.DataFrame:
    """The state after every release of ``entries`` (rows of several releases, ``release`` column)."""
    state = pl.DataFrame(schema=STATE_SCHEMA)
    for index in sorted(entries.get_column("release").unique().to_list()):
        state = advance(state, entries.filter(pl.col("release") == index), int(index))
    return state
