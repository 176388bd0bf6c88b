"""θ over the earlier intersections a release's new values reach (attribute composition backwards).

Source: SPEC §11 "Composition"; docs/series.md §4. A returning case c published now exposes its new
values; an attacker who follows any *other* case d whose earlier intersection I(d) holds c reads
them too, and I(d) does not change when d is not in this release. So the check is, for every
ledger history h that some case keeps (not every case of history h is published now) and whose
``release:group`` pairs are all among c's:

    conf(I(h) → s) = Σ_{e ∈ I(h)} P(s | e) / |I(h)| ≤ θ_s,   I(h) = the ledger cases whose pairs contain h's,

with P(s | e) over everything e exposed before and, for a case published now, its current values
(:func:`faers_anon.series.step.exposed_probabilities`). A conf over θ_s that publishing did not
raise (already there before) is not charged to this release. *Before* is what the earlier releases
let an attacker read: the values the ledger records with the E the earlier releases published
(``before``), not with this release's E: a republished case whose old drug this release's E links
to s for the first time raises P(s | e) as much as a new value does (docs/series.md §4, "A new E
weight is a new value": a 4 × 400k series read 0.6003 > θ 0.6 through one, issue 14). The checked
histories include those outside c's unit (e.g. a case first released in the group c was published
in), which the bundle check (:func:`faers_anon.series.placement.over_theta`) does not see.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

__all__ = ["EarlierCheck", "check_histories", "earlier_over_theta", "kept_histories"]

_LISTS = ("indications", "reactions", "drug_keys")
_EPS = 1e-12
#: P(s | c) of a members frame (:func:`faers_anon.series.step.exposed_probabilities`).
Probabilities = Callable[[pl.DataFrame], pl.DataFrame]


def _pairs(frame: pl.DataFrame, column: str = "history") -> pl.DataFrame:
    """One row per ``release:group`` pair of ``column``, in ``pair``."""
    return frame.with_columns(pl.col(column).str.split("|").alias("pair")).explode("pair")


def _releases(column: str) -> pl.Expr:
    """The releases of a history's pairs, in order, as text: ``1:5|3:2`` → ``1,3``."""
    return pl.col(column).str.split("|").list.eval(pl.element().str.split(":").list.first()).list.join(",")


def _contained(outer: pl.DataFrame, inner: pl.DataFrame, key: str) -> pl.DataFrame:
    """(``history``, ``key``) where every pair of ``inner``'s history lies in the pairs of the
    history of ``outer``'s ``key`` (``outer``: ``key``, ``history``).

    A history lists each release once, in release order, so h lies in H exactly when H cut to h's
    releases *is* h: per set of releases R of the inner histories, every distinct outer history
    holding all of R is cut to R and matched to the inner histories of R by equality, then the
    outer histories are joined to their keys. Work: Σ_R (outer histories holding R), a handful of
    sets R a quarter. Before, the pairs of inner and outer histories were joined and the hits
    counted: a row per (inner, outer) history sharing a pair, and a release-2 group of a 400k
    series held 2,528 distinct histories (6.4 M rows for that pair alone; 13.8 CPU-s of a quarter
    3's series step); before that, a row per (inner history, case): 5.4 GB and 360 s at 100k.
    """
    sets = inner.select("history").unique().with_columns(_releases("history").alias("set"))
    pairs = (
        outer.select(pl.col("history").alias("outer")).unique()
        .with_columns(pl.col("outer").str.split("|").alias("pair")).explode("pair")
        .with_columns(pl.col("pair").str.split(":").list.first().alias("release"))
    )  # fmt: skip
    found = [pl.DataFrame(schema={"outer": pl.Utf8, "history": pl.Utf8})]
    for releases in sets.get_column("set").unique().sort().to_list():
        wanted = releases.split(",")
        cut = (
            pairs.filter(pl.col("release").is_in(wanted))
            .group_by("outer", maintain_order=True).agg(pl.col("pair"))  # in the history's order
            .filter(pl.col("pair").list.len() == len(wanted))
            .select("outer", pl.col("pair").list.join("|").alias("history"))
        )  # fmt: skip
        found.append(cut.join(sets.filter(pl.col("set") == releases).select("history"), on="history"))
    keys = outer.select(key, pl.col("history").alias("outer"))
    return pl.concat(found).join(keys, on="outer").select("history", key)


def _as_ledger_only(cases: pl.DataFrame) -> pl.DataFrame:
    """Members with no current values, keyed by pseudonym: P over what the ledger says they exposed."""
    empty = pl.lit([], pl.List(pl.Utf8))
    return cases.select(pl.col("pseudonym").alias("caseid"), "pseudonym", *[empty.alias(n) for n in _LISTS])


def kept_histories(sizes: pl.DataFrame, published: pl.DataFrame) -> pl.DataFrame:
    """The ledger histories some case keeps: fewer of their ``n`` cases are published now (``history``)."""
    out = published.group_by("history").agg(pl.len().alias("m"))
    return (
        sizes.join(out, on="history", how="left")
        .filter(pl.col("n") > pl.col("m").fill_null(0))
        .select("history")
    )


def _thetas(thetas: dict[str, float]) -> pl.DataFrame:
    return pl.DataFrame({"value": list(thetas), "theta": list(thetas.values())},
                        schema={"value": pl.Utf8, "theta": pl.Float64})  # fmt: skip


def check_histories(
    published: pl.DataFrame, past: pl.DataFrame, probabilities: Probabilities,
    thetas: dict[str, float], now: pl.DataFrame | None, kept: pl.DataFrame, earlier: Probabilities,
) -> tuple[frozenset[str], pl.DataFrame]:  # fmt: skip
    """(the failing units, the failing histories) of :func:`earlier_over_theta`, for the ``kept``
    histories and the values of ``thetas`` only (each (history, value)'s conf is computed from its
    own members' P(s): the result for one does not depend on which others are checked).

    Only the protected values and the members of the reached histories enter the P frames (the full
    join of every published case's P and the product of (history, value) pairs with every member
    before the sums: 3.4 M rows, 3 s of CPU a call on a 100k quarter).
    """
    reached = published.select("pseudonym", "history")
    affected = _contained(reached, kept, "pseudonym") if thetas else kept.clear()
    if affected.is_empty():
        return frozenset(), pl.DataFrame(schema={"history": pl.Utf8})
    members = _contained(
        past.select("pseudonym", "history"), affected.select("history").unique(), "pseudonym"
    )
    holders = members.select("pseudonym").unique()
    theta = _thetas(thetas)
    protected = theta.select("value")
    ids = published.select("caseid", "pseudonym").join(holders, on="pseudonym", how="semi")
    now = probabilities(published.join(holders, on="pseudonym", how="semi")) if now is None else now
    now = now.join(ids, on="caseid").join(protected, on="value", how="semi")
    before = earlier(_as_ledger_only(holders)).join(protected, on="value", how="semi")
    p = before.join(
        now.select(pl.col("pseudonym").alias("caseid"), "value", pl.col("p").alias("p_now")),
        on=["caseid", "value"], how="full", coalesce=True,
    ).select(
        "caseid",
        "value",
        pl.col("p").fill_null(0.0).alias("p_before"),
        pl.col("p_now").fill_null(pl.col("p")),  # a member not published now keeps its earlier P
    )  # fmt: skip
    raised = p.filter(pl.col("p_now") > pl.col("p_before") + _EPS).select("caseid", "value")
    pairs = members.join(raised, left_on="pseudonym", right_on="caseid").select("history", "value").unique()
    counts = members.group_by("history").agg(pl.len().alias("size"))
    conf = (
        members.join(p, left_on="pseudonym", right_on="caseid")
        .join(pairs, on=["history", "value"], how="semi")
        .group_by("history", "value")
        .agg(pl.col("p_before").sum(), pl.col("p_now").sum())
        .join(counts, on="history")
        .join(theta, on="value")
        .filter(
            (pl.col("p_now") / pl.col("size") > pl.col("theta") + _EPS)
            & (pl.col("p_now") > pl.col("p_before") + _EPS)
        )
    )
    failing = conf.select("history").unique()
    units = affected.join(failing, on="history", how="semi").join(
        published.select("pseudonym", "unit"), on="pseudonym"
    )
    return frozenset(units.get_column("unit").unique().to_list()), failing


def earlier_over_theta(
    published: pl.DataFrame,
    past: pl.DataFrame,
    probabilities: Callable[[pl.DataFrame], pl.DataFrame],
    thetas: dict[str, float],
    *,
    now: pl.DataFrame | None = None,
    before: Probabilities | None = None,
) -> frozenset[str]:
    """The units whose published cases raise some kept earlier intersection over θ* (module docstring).

    Args:
        published: this release's frozen members: ``caseid`` (raw), ``pseudonym``, ``unit``,
            ``history`` and the value lists (current).
        past: ``pseudonym``, ``history`` of every ledger case.
        probabilities: P(s | c) of a members frame (``caseid``, ``pseudonym``, value lists).
        thetas: θ* of the protected values.
        now: P(s | c) of ``published`` when already computed (``caseid`` raw, ``value``, ``p``).
        before: P(s | c) with the E of the earlier releases only (module docstring); None: the same
            as ``probabilities`` (an E that does not change between releases).
    """
    if published.is_empty() or not thetas:
        return frozenset()
    sizes = past.group_by("history").agg(pl.len().alias("n"))
    earlier = probabilities if before is None else before
    kept = kept_histories(sizes, published)
    return check_histories(published, past, probabilities, thetas, now, kept, earlier)[0]


class EarlierCheck:
    """:func:`earlier_over_theta` of the subsets of one published set, each checking what can fail.

    Removing published units from a set S only lowers every p_now (P over a case's values now and
    before is at least P over its values before: a max over more drugs, 1 for more own values), so a
    kept history that passes for S passes for every subset of S; a history failing for S fails for
    a subset only while a case of S that holds it stays published, and a history kept by the subset
    only (its cases all published in S) was not checked at all. So the check of a subset S' of the
    ``reference`` set covers the histories kept by S' and not by S, and those failing for S
    (checked once, in full): the same units as a full check (a test compares them), at the cost of
    the histories that changed. The placement's rounds and re-plans (:class:`.placement.Planner`)
    check subsets of the placed members: 9 full checks of 2–3 s a 100k quarter before.

    Args:
        reference: the set every later ``published`` is a subset of (rows of the same frame).
        now: P(s | c) of any subset of ``reference`` (``caseid`` raw, ``value``, ``p``).
        past, probabilities, thetas, before: as :func:`earlier_over_theta`.
    """

    def __init__(
        self, reference: pl.DataFrame, past: pl.DataFrame, probabilities: Probabilities,
        thetas: dict[str, float], now: Probabilities, before: Probabilities | None = None,
    ) -> None:  # fmt: skip
        self._reference, self._past, self._thetas = reference, past, thetas
        self._probabilities, self._now = probabilities, now
        self._before = probabilities if before is None else before
        self._sizes = past.group_by("history").agg(pl.len().alias("n"))
        self._found: tuple[pl.DataFrame, pl.DataFrame, frozenset[str]] | None = None

    def _full(self) -> tuple[pl.DataFrame, pl.DataFrame, frozenset[str]]:
        """(kept histories, failing histories, failing units) of the reference, checked once."""
        if self._found is None:
            kept = kept_histories(self._sizes, self._reference)
            units, failing = check_histories(self._reference, self._past, self._probabilities, self._thetas,
                                             self._now(self._reference), kept, self._before)  # fmt: skip
            self._found = kept, failing, units
        return self._found

    def __call__(self, published: pl.DataFrame) -> frozenset[str]:
        """The units of ``published`` (a subset of the reference) that fail the earlier check."""
        if published.is_empty() or not self._thetas:
            return frozenset()
        kept, failing, units = self._full()
        if published.height == self._reference.height:  # the reference itself
            return units
        now_kept = kept_histories(self._sizes, published)
        changed = pl.concat([now_kept.join(kept, on="history", how="anti"), failing])
        only = now_kept.join(changed, on="history", how="semi")
        return check_histories(published, self._past, self._probabilities, self._thetas,
                               self._now(published), only, self._before)[0]  # fmt: skip
