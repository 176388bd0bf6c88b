"""θ over the earlier intersections a release's new values reach (attribute composition backwards).

Source: SPEC §11 "Composition"; docs/series.md §4. A returning case c published now exposes its new
values; an attacker who follows any *other* case d whose earlier intersection I(d) holds c reads
them too, and I(d) does not change when d is not in this release. So the check is, for every
ledger history h that some case keeps (not every case of history h is published now) and whose
``release:group`` pairs are all among c's:

    conf(I(h) → s) = Σ_{e ∈ I(h)} P(s | e) / |I(h)| ≤ θ_s,   I(h) = the ledger cases whose pairs contain h's,

with P(s | e) over everything e exposed before and, for a case published now, its current values
(:func:`faers_anon.series.step.exposed_probabilities`). A conf over θ_s that publishing did not
raise (already there before) is not charged to this release. The checked histories include those
outside c's unit (e.g. a case first released in the group c was published in), which the bundle
check (:func:`faers_anon.series.placement.over_theta`) does not see.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

__all__ = ["earlier_over_theta"]

_LISTS = ("indications", "reactions", "drug_keys")
_EPS = 1e-12


def _pairs(frame: pl.DataFrame, column: str = "history") -> pl.DataFrame:
    """One row per ``release:group`` pair of ``column``, in ``pair``."""
    return frame.with_columns(pl.col(column).str.split("|").alias("pair")).explode("pair")


def _contained(outer: pl.DataFrame, inner: pl.DataFrame, key: str) -> pl.DataFrame:
    """(``history``, ``key``) where every pair of ``inner``'s history lies in the pairs of the
    history of ``outer``'s ``key`` (``outer``: ``key``, ``history``).

    The pairs are matched between distinct histories, then the outer histories joined to their
    keys: matching every key's pairs made a row per (inner history, case) sharing a pair, a
    product that reached 5.4 GB and 360 s of a 100k quarter's series step (a ledger group whose
    pair many histories and cases hold); the distinct histories are those of the groups.
    """
    counted = _pairs(inner.select("history", pl.col("history").str.count_matches(r"\|").add(1).alias("size")))
    histories = _pairs(outer.select(pl.col("history").alias("outer")).unique(), "outer")
    found = (
        counted.join(histories, on="pair")
        .group_by("history", "size", "outer")
        .agg(pl.len().alias("hit"))
        .filter(pl.col("hit") == pl.col("size"))
        .select("history", "outer")
    )
    return found.join(outer.select(key, pl.col("history").alias("outer")), on="outer").select("history", key)


def _as_ledger_only(cases: pl.DataFrame) -> pl.DataFrame:
    """Members with no current values, keyed by pseudonym: P over what the ledger says they exposed."""
    empty = pl.lit([], pl.List(pl.Utf8))
    return cases.select(pl.col("pseudonym").alias("caseid"), "pseudonym", *[empty.alias(n) for n in _LISTS])


def earlier_over_theta(
    published: pl.DataFrame,
    past: pl.DataFrame,
    probabilities: Callable[[pl.DataFrame], pl.DataFrame],
    thetas: dict[str, float],
    *,
    now: pl.DataFrame | None = None,
) -> frozenset[str]:
    """The units whose published cases raise some kept earlier intersection over θ* (module docstring).

    Args:
        published: this release's frozen members: ``caseid`` (raw), ``pseudonym``, ``unit``,
            ``history`` and the value lists (current).
        past: ``pseudonym``, ``history`` of every ledger case.
        probabilities: P(s | c) of a members frame (``caseid``, ``pseudonym``, value lists).
        thetas: θ* of the protected values.
        now: P(s | c) of ``published`` when already computed (``caseid`` raw, ``value``, ``p``).
    """
    if published.is_empty() or not thetas:
        return frozenset()
    sizes = past.group_by("history").agg(pl.len().alias("n"))
    out = published.group_by("history").agg(pl.len().alias("m"))
    kept = sizes.join(out, on="history", how="left").filter(pl.col("n") > pl.col("m").fill_null(0))
    affected = _contained(published.select("pseudonym", "history"), kept, "pseudonym")
    if affected.is_empty():
        return frozenset()
    reached = affected.select("history").unique()
    members = _contained(past.select("pseudonym", "history"), reached, "pseudonym")
    before = probabilities(_as_ledger_only(members.select("pseudonym").unique()))
    now = (probabilities(published) if now is None else now).join(
        published.select("caseid", "pseudonym"), on="caseid"
    )
    now = now.select(pl.col("pseudonym").alias("caseid"), "value", pl.col("p").alias("p_now"))
    p = before.join(now, on=["caseid", "value"], how="full", coalesce=True).select(
        "caseid",
        "value",
        pl.col("p").fill_null(0.0).alias("p_before"),
        pl.col("p_now").fill_null(pl.col("p")),  # a member not published now keeps its earlier P
    )
    theta = pl.DataFrame({"value": list(thetas), "theta": list(thetas.values())},
                         schema={"value": pl.Utf8, "theta": pl.Float64})  # fmt: skip
    raised = p.filter(pl.col("p_now") > pl.col("p_before") + _EPS).join(theta, on="value", how="semi")
    counts = members.group_by("history").agg(pl.len().alias("size"))
    conf = (
        members.join(raised.select("caseid", "value").unique(), left_on="pseudonym", right_on="caseid")
        .select("history", "value")
        .unique()
        .join(members, on="history")
        .join(p, left_on=["pseudonym", "value"], right_on=["caseid", "value"])
        .group_by("history", "value")
        .agg(pl.col("p_before").sum(), pl.col("p_now").sum())
        .join(counts, on="history")
        .join(theta, on="value")
        .filter(
            (pl.col("p_now") / pl.col("size") > pl.col("theta") + _EPS)
            & (pl.col("p_now") > pl.col("p_before") + _EPS)
        )
    )
    failing = affected.join(conf.select("history").unique(), on="history", how="semi")
    units = failing.join(published.select("pseudonym", "unit"), on="pseudonym")
    return frozenset(units.get_column("unit").unique().to_list())
