"""Withheld follow-ups offered again: the ledger's pending cases (docs/series.md §4).

Source: issue 14 (a withheld follow-up must not be lost). A returning case that a release withholds
(no bundle of its unit passes k and θ*, :mod:`faers_anon.series.placement`) keeps the version that
came in: its rows of every table are written to that release's store under ``pending/``
(:func:`write_pending`; SHA-256 under the ledger's MAC), and the next release offers them again as
if they had come in with its quarter (:func:`carried`), unless

* the next quarter brings a version of the case (the quarter's version is the later one, FDA's
  latest-version rule: it is placed instead, and the pending one is *superseded*), or
* the case is on a DELETE list (this quarter's or a stored one): *deleted*.

A pending case withheld again is carried again; a published one leaves the pending set. So a
withheld case is never dropped silently: each release counts ``retried`` (pending cases offered
again), ``retried_published``, ``retried_reports`` (their DEMO rows added to the release's input),
``pending_superseded``, ``pending_deleted`` and ``pending_waiting`` (below), and its own withheld cases
become the next pending set (``withheld``, ``withheld_reports``) with the waiting ones.

Without ``republish`` (the default, docs/series.md §4) a returning case is published only beside
returning cases of its own unit, so a pending case whose unit brings no new follow-up this quarter
would only meet the pending cases it failed with before, fewer if some were superseded or deleted
(:func:`waiting`). It is not offered (its unit's check cannot pass that did not pass) and *waits*: its
rows go to this release's ``pending/`` unchanged and it is counted ``pending_waiting``. A unit with
a new follow-up offers all its pending cases again. Without this, every withheld follow-up was offered
every quarter: 52,618 → 105,968 → 158,174 pending cases on 400k quarters 2–4, growing with the series.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.series.store import PENDING, STORED, checked_file
from faers_anon.series.units import pseudonym_ids, unit_of

__all__ = ["carried", "waiting", "write_pending"]

#: The pending tables: every stored table with rows per case (DELETE lists are not a case's rows).
TABLES = tuple(name for name in STORED if name != "deleted")


def carried(
    ledger: Path, releases: list[dict[str, Any]], current: pl.Series, deleted: pl.Series, key: bytes
) -> tuple[dict[str, pl.DataFrame], dict[str, int]]:
    """The pending cases of the ledger's last release offered to this one, per table.

    Args:
        current: this quarter's raw caseids (a pending case among them is superseded).
        deleted: case pseudonyms on any DELETE list; key: the pseudonym key.

    Returns:
        (table name → rows of the cases offered again; empty when none), and the counts
        ``retried``, ``retried_reports``, ``pending_superseded``, ``pending_deleted``.

    Raises:
        InputError: a pending file changed (SHA-256 under the MAC).
    """
    counts = dict.fromkeys(("retried", "retried_reports", "pending_superseded", "pending_deleted",
                            "pending_waiting"), 0)  # fmt: skip
    last = releases[-1] if releases else {}
    paths = {n: checked_file(ledger, last, f"{PENDING}/{n}.parquet") for n in TABLES}
    tables = {n: pl.read_parquet(p) for n, p in paths.items() if p is not None}
    if "cases" not in tables:
        return {}, counts
    cases = tables["cases"].select("caseid")
    superseded = cases.filter(pl.col("caseid").is_in(current.implode()))
    ids = pseudonym_ids(cases, key)
    gone = ids.filter(pl.col("pseudonym").is_in(deleted.implode())).join(superseded, on="caseid", how="anti")
    drop = pl.concat([superseded.get_column("caseid"), gone.get_column("caseid")]).implode()
    kept = {n: t.filter(~pl.col("caseid").is_in(drop)) for n, t in tables.items()}
    counts.update(
        retried=kept["cases"].height,
        retried_reports=kept["reports"].height if "reports" in kept else 0,
        pending_superseded=superseded.height,
        pending_deleted=gone.height,
    )
    return (kept if kept["cases"].height else {}), counts


def waiting(pending: pl.DataFrame, past: pl.DataFrame, arrived: pl.Series) -> pl.Series:
    """The pending cases whose unit brings no new follow-up: none of this quarter's returning cases has a
    history that starts with theirs or that theirs starts with (the only cases a returning-only bundle
    could add to their intersections, :mod:`faers_anon.series.units`).

    Args:
        pending: ``caseid`` (raw), ``pseudonym`` of the pending cases still offered.
        past: ``pseudonym``, ``history`` of the ledger's cases.
        arrived: the histories of this quarter's returning cases (the pending ones not among them).

    Returns:
        The raw caseids that wait.
    """
    new = arrived.unique().drop_nulls()
    parts = new.str.split("|").to_frame("parts")
    upto = parts.with_columns(pl.int_ranges(1, pl.col("parts").list.len() + 1).alias("n")).explode("n")
    reached = upto.select(pl.col("parts").list.head(pl.col("n")).list.join("|")).to_series()  # new's prefixes
    own = pending.join(past, on="pseudonym", how="left")
    inside = unit_of(own.get_column("history").drop_nulls(), new).get_column("history")  # start with new's
    history = pl.col("history")
    met = history.is_null() | history.is_in(reached.implode()) | history.is_in(inside.implode())
    return own.filter(~met).get_column("caseid")


def write_pending(
    ingested: Path, offered: dict[str, pl.DataFrame], withheld: pl.Series, out: Path,
    waited: dict[str, pl.DataFrame] | None = None,
) -> Path | None:  # fmt: skip
    """Write the rows of the ``withheld`` cases (raw caseids), from the quarter's ``ingested`` tables
    and the ``offered`` pending ones, with every row of the ``waited`` ones (pending cases not offered,
    :func:`waiting`), to ``out/<table>.parquet``; None when there are none."""
    waited = waited or {}
    if withheld.is_empty() and not waited:
        return None
    out.mkdir(mode=0o700)
    ids = withheld.implode()
    for name in TABLES:
        path = ingested / f"{name}.parquet"
        parts = [pl.scan_parquet(path).filter(pl.col("caseid").is_in(ids)).collect()] if (
            path.is_file()) else []  # fmt: skip
        if name in offered:
            parts.append(offered[name].filter(pl.col("caseid").is_in(ids)))
        if name in waited:
            parts.append(waited[name])
        if parts:
            pl.concat(parts, how="diagonal_relaxed").write_parquet(out / f"{name}.parquet")
    return out
