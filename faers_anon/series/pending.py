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
``pending_superseded`` and ``pending_deleted``, and its own withheld cases become the next pending
set (``withheld``, ``withheld_reports``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.series.store import PENDING, STORED, checked_file
from faers_anon.series.units import pseudonym_ids

__all__ = ["carried", "write_pending"]

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
    counts = dict.fromkeys(("retried", "retried_reports", "pending_superseded", "pending_deleted"), 0)
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


def write_pending(
    ingested: Path, offered: dict[str, pl.DataFrame], withheld: pl.Series, out: Path
) -> Path | None:
    """Write the rows of the ``withheld`` cases (raw caseids), from the quarter's ``ingested`` tables
    and the ``offered`` pending ones, to ``out/<table>.parquet``; None when nothing is withheld."""
    if withheld.is_empty():
        return None
    out.mkdir(mode=0o700)
    ids = withheld.implode()
    for name in TABLES:
        path = ingested / f"{name}.parquet"
        parts = [pl.scan_parquet(path).filter(pl.col("caseid").is_in(ids)).collect()] if (
            path.is_file()) else []  # fmt: skip
        if name in offered:
            parts.append(offered[name].filter(pl.col("caseid").is_in(ids)))
        if parts:
            pl.concat(parts, how="diagonal_relaxed").write_parquet(out / f"{name}.parquet")
    return out
