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

__all__ = ["LISTS", "STATE_SCHEMA", "advance", "history", "state_from_entries"]

#: The value lists of a ledger row (release entries and state alike).
LISTS = ("reactions", "indications", "drug_keys", "outcomes")
_REGION = QID_COLUMNS
STATE_SCHEMA: dict[str, pl.DataType] = {
    "caseid": pl.Int64(), "history": pl.Utf8(), "last": pl.UInt32(),
    "age_group": pl.Utf8(), "age_min": pl.Float64(), "age_max": pl.Float64(), "sex": pl.Utf8(),
    "wt_min": pl.Float64(), "wt_max": pl.Float64(),
    **{name: pl.List(pl.Utf8()) for name in LISTS},
}  # fmt: skip
_OLD = {name: f"_old_{name}" for name in LISTS}


def advance(state: pl.DataFrame, entries: pl.DataFrame, index: int, /) -> pl.DataFrame:
    """The state after release ``index``, whose ledger rows are ``entries`` (module docstring).

    The cases of only one side are taken as they are; of those in both (the state's and the release's rows
    of them side by side: both in ``caseid`` order), a value list is unioned only where this release exposed
    a value the state does not hold, looked for only where the lists differ (elsewhere the union is the
    state's list, already unique and sorted). The state's other rows and the new ones are put in ``caseid``
    order by one gather of one chunk (across chunks, a gather of the list columns cost 1.9 CPU-s against
    0.7): at the 400k series' quarter 4 (1.04 M cases before, 589,867 published, 270,270 of them in the
    state, 113,284 with other lists, 75,898 grown) 2.4-2.7 -> 2.2-2.3 CPU-s (three pairs, load 10).

    Args:
        state: the state before (:data:`STATE_SCHEMA`, in ``caseid`` order; empty for the first release).
        entries: release ``index``'s rows (``caseid``, ``group``, the region, the value lists).
    """
    new = entries.select(
        "caseid",
        pl.concat_str([pl.lit(str(index)), pl.col("group").cast(pl.Utf8)], separator=":").alias("history"),
        pl.lit(index, pl.UInt32).alias("last"),
        *_REGION,
        *LISTS,
    ).cast(STATE_SCHEMA)  # type: ignore[arg-type]
    new = new if new.get_column("caseid").is_sorted() else new.sort("caseid")
    state = state if state.get_column("caseid").is_sorted() else state.sort("caseid")
    known, ids = state.get_column("caseid"), new.get_column("caseid")
    published, returning = known.is_in(ids.implode()), ids.is_in(known.implode())
    before = state.filter(published).select(pl.col("history").alias("_old_history"),
                                            *[pl.col(n).alias(o) for n, o in _OLD.items()])  # fmt: skip
    again = pl.concat([new.filter(returning), before], how="horizontal").with_columns(
        pl.concat_str(["_old_history", "history"], separator="|").alias("history"),
        pl.any_horizontal(pl.col(n).ne_missing(pl.col(o)) for n, o in _OLD.items()).alias("_other"),
    )
    other = again.filter("_other")
    grown = other.select(pl.any_horizontal(pl.col(n).list.set_difference(o).list.len() > 0
                                           for n, o in _OLD.items())).to_series()  # fmt: skip
    parts = [
        state,
        new.filter(~returning),
        pl.concat([again.filter(~pl.col("_other")), other.filter(~grown)])
        .with_columns(pl.col(o).alias(n) for n, o in _OLD.items()),
        other.filter(grown).with_columns(
            pl.concat_list(o, n).list.unique().list.sort().alias(n) for n, o in _OLD.items()
        ),
    ]  # fmt: skip
    frame = pl.concat([part.select(list(STATE_SCHEMA)) for part in parts]).rechunk()  # a cheaper gather
    kept = pl.concat([(~published).arg_true(), pl.int_range(state.height, frame.height, dtype=pl.UInt32,
                                                              eager=True)])  # fmt: skip
    order = kept.gather(frame.get_column("caseid").gather(kept).arg_sort())
    return frame.select(pl.all().gather(order))


def state_from_entries(entries: pl.DataFrame, /) -> pl.DataFrame:
    """The state after every release of ``entries`` (rows of several releases, ``release`` column)."""
    state = pl.DataFrame(schema=STATE_SCHEMA)
    for index in sorted(entries.get_column("release").unique().to_list()):
        state = advance(state, entries.filter(pl.col("release") == index), int(index))
    return state


def history(entries: pl.DataFrame, /) -> pl.DataFrame:
    """Per case pseudonym of the ledger: its publication history and its last region.

    Args:
        entries: ledger rows of several releases, or the ledger's state (it holds both already).

    Returns:
        ``caseid``, ``history`` (the ``release:group`` pairs in release order, ``|``-joined: two cases
        with the same history shared a group in every release where either appeared), and the
        region columns of its last release.
    """
    if "history" in entries.columns:
        return entries.select("caseid", "history", *_REGION)
    return (
        entries.sort("release")
        .group_by("caseid", maintain_order=True)
        .agg(
            pl.concat_str([pl.col("release").cast(pl.Utf8), pl.col("group").cast(pl.Utf8)], separator=":")
            .str.join("|")
            .alias("history"),
            *[pl.col(c).last() for c in _REGION],
        )
    )
