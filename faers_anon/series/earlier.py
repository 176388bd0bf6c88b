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

import weakref
from collections.abc import Callable

import polars as pl

from faers_anon.series.earlier_arrays import Numbered, check_numbered
from faers_anon.series.units import pair_key, pair_parts

__all__ = ["EarlierCheck", "check_histories", "earlier_over_theta", "kept_histories"]

_LISTS = ("indications", "reactions", "drug_keys")
_EPS = 1e-12
#: P(s | c) of a members frame (:func:`faers_anon.series.step.exposed_probabilities`).
Probabilities = Callable[[pl.DataFrame], pl.DataFrame]


def _releases(column: str) -> pl.Expr:
    """The releases of a history's pairs, in order, as text: ``1:5|3:2`` → ``1,3``."""
    return pl.col(column).str.split("|").list.eval(pl.element().str.split(":").list.first()).list.join(",")


def _wide(histories: pl.Series) -> pl.DataFrame:
    """The distinct ``histories`` with ``set`` (their releases, :func:`_releases`) and one column
    ``g<r>`` per release r: the history's group in r (Int64), null where it has none."""
    frame = pl.DataFrame({"history": histories}, schema={"history": pl.Utf8}).unique(maintain_order=True)
    part = pl.col("_pair").str.split(":")
    pairs = (
        frame.with_columns(pl.col("history").str.split("|").alias("_pair")).explode("_pair")
        .select("history", part.list.first().alias("_r"), part.list.last().cast(pl.Int64).alias("_g"))
    )  # fmt: skip
    wide = frame.with_columns(_releases("history").alias("set"))
    for release in pairs.get_column("_r").unique().sort().to_list():
        group = pairs.filter(pl.col("_r") == release).select("history", pl.col("_g").alias(f"g{release}"))
        wide = wide.join(group, on="history", how="left")
    return wide


def _matched(outer: pl.DataFrame, inner: pl.DataFrame, key: str = "history") -> pl.DataFrame:
    """(``inner``, ``outer``): the ``key`` of each ``inner`` history and of each ``outer`` one that
    contains it (both :func:`_wide` frames).

    A history lists each release once, so h lies in H exactly when H's group equals h's in every
    release of h: per set of releases R of the inner histories (a handful), one join on the groups of
    R (integers; an outer history without a release of R has a null there, and nulls never join).
    Before (the same sets), each outer history holding R was cut to R as text, and before that the
    ``release:group`` pairs of inner and outer histories were joined and the hits counted: a row per
    (inner, outer) history sharing a pair (6.4 M rows for one release-2 group of a 400k series), and
    before that a row per (inner history, case): 5.4 GB and 360 s at 100k.
    """
    dtype = inner.schema[key]
    found = [pl.DataFrame(schema={"inner": dtype, "outer": dtype})]
    for releases in inner.get_column("set").unique().sort().to_list():
        on = [f"g{r}" for r in releases.split(",")]
        if not set(on) <= set(outer.columns):
            continue
        left = inner.filter(pl.col("set") == releases).select(pl.col(key).alias("inner"), *on)
        right = outer.select(pl.col(key).alias("outer"), *on).drop_nulls(on)
        found.append(left.join(right, on=on).select("inner", "outer"))
    return pl.concat(found)


def _contained(outer: pl.DataFrame, inner: pl.DataFrame, key: str) -> pl.DataFrame:
    """(``history``, ``key``) where every pair of ``inner``'s history lies in the pairs of the
    history of ``outer``'s ``key`` (``outer``: ``key``, ``history``; :func:`_matched`)."""
    pairs = _matched(_wide(outer.get_column("history")), _wide(inner.get_column("history")))
    keys = outer.select(key, pl.col("history").alias("outer"))
    return pairs.join(keys, on="outer").select(pl.col("inner").alias("history"), key)


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
    """``value``, ``theta`` and ``_v`` (the value's number: the sums group integers, not text)."""
    return pl.DataFrame({"value": list(thetas), "theta": list(thetas.values())},
                        schema={"value": pl.Utf8, "theta": pl.Float64}).with_row_index("_v")  # fmt: skip


class _Histories:
    """The ledger's histories numbered (``_h``) and split by release (:func:`_wide`), made once per
    ``past`` frame: every check of a step reads the same ledger (11 checks a 400k quarter 4, each of
    which numbered and cut its 1 M histories again)."""

    def __init__(self, past: pl.DataFrame) -> None:
        self.wide = _wide(past.get_column("history")).with_row_index("_h")
        numbers = self.wide.select("history", "_h")
        self.cases = past.select("pseudonym", "history").join(numbers, on="history").select("pseudonym", "_h")
        self._numbered: Numbered | None = None

    def numbered(self) -> Numbered:
        """The cases and histories as arrays (:class:`.earlier_arrays.Numbered`), made on first use."""
        if self._numbered is None:
            self._numbered = Numbered(self.wide, self.cases, _matched(self.wide, self.wide, "_h"))
        return self._numbered

    def rows(self, histories: pl.DataFrame) -> pl.DataFrame:
        """The :func:`_wide` rows of the distinct ``histories`` (any not in the ledger numbered after)."""
        distinct = histories.select("history").unique()
        known = self.wide.filter(pl.col("history").is_in(distinct.get_column("history").implode()))
        new = distinct.filter(~pl.col("history").is_in(known.get_column("history").implode()))
        if new.is_empty():
            return known
        extra = _wide(new.get_column("history")).with_row_index("_h", offset=self.wide.height)
        return pl.concat([known, extra], how="diagonal_relaxed")


_INDEXES: dict[int, tuple[weakref.ref[pl.DataFrame], _Histories]] = {}


def _histories(past: pl.DataFrame) -> _Histories:
    """The :class:`_Histories` of ``past``, kept while that frame lives (the plan's and the recheck's);
    a live frame equal to ``past`` (the step's and the plan's, each read from the ledger) shares its own."""
    for key in [key for key, (ref, _) in _INDEXES.items() if ref() is None]:
        del _INDEXES[key]
    found = _INDEXES.get(id(past))
    if found is None or found[0]() is not past:
        same = [index for ref, index in _INDEXES.values() if (df := ref()) is not None and df.equals(past)]
        found = (weakref.ref(past), same[0] if same else _Histories(past))
        _INDEXES[id(past)] = found
    return found[1]


def _probabilities(
    published: pl.DataFrame,
    holders: pl.DataFrame,
    now: pl.DataFrame,
    earlier: Probabilities,
    values: pl.LazyFrame,
) -> pl.DataFrame:
    """``pseudonym``, ``_v``, ``p_before``, ``p_now`` and ``raised`` (p_now > p_before) of the
    published ``holders`` for the protected ``values``: P before from the ledger (``earlier``), P
    now from ``now`` (where it has no row, the earlier P)."""
    ids = published.lazy().select("caseid", "pseudonym").join(holders.lazy(), on="pseudonym", how="semi")
    current = (
        now.lazy()
        .join(ids, on="caseid")
        .join(values, on="value")
        .select("pseudonym", "_v", pl.col("p").alias("p_now"))
    )
    both = _before(holders, earlier, values).join(current, on=["pseudonym", "_v"], how="full", coalesce=True)
    p_before, p_now = pl.col("p").fill_null(0.0).alias("p_before"), pl.col("p_now").fill_null(pl.col("p"))
    raised = (pl.col("p_now") > pl.col("p_before") + _EPS).alias("raised")
    return both.select("pseudonym", "_v", p_before, p_now).with_columns(raised).collect()


def _before(holders: pl.DataFrame, earlier: Probabilities, values: pl.LazyFrame) -> pl.LazyFrame:
    """``pseudonym``, ``_v``, ``p``: P(s | c) of the ``holders`` over what the ledger says they exposed."""
    frame = earlier(_as_ledger_only(holders)).lazy()
    return frame.join(values, on="value").select(pl.col("caseid").alias("pseudonym"), "_v", "p")


def _reached(
    index: _Histories, published: pl.DataFrame, kept: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the :func:`_wide` rows of the published and ``kept`` histories, numbered; ``inner``,
    ``pseudonym``: each kept history and the published cases whose histories contain it)."""
    reached = published.select("pseudonym", "history")
    both = index.rows(pl.concat([reached.select("history"), kept.select("history")]))
    found = _matched(
        both.join(reached, on="history", how="semi"), both.join(kept, on="history", how="semi"), "_h"
    )
    ids = reached.join(both.select("history", "_h"), on="history").select(
        "pseudonym", pl.col("_h").alias("outer")
    )
    return both, found.join(ids, on="outer").select("inner", "pseudonym")


def _intersections(index: _Histories, histories: pl.DataFrame) -> pl.DataFrame:
    """``inner``, ``pseudonym``: the ledger cases whose histories contain each of ``histories``
    (:func:`_wide` rows, numbered): I(h)."""
    cases = index.cases.select("pseudonym", pl.col("_h").alias("outer"))
    return _matched(index.wide, histories, "_h").join(cases, on="outer").select("inner", "pseudonym")


def _over(members: pl.DataFrame, p: pl.DataFrame, theta: pl.DataFrame) -> pl.DataFrame:
    """``inner``: the histories h with a value s raised in I(h) (``members``) and
    conf(I(h) → s) = Σ p_now / |I(h)| > θ_s, over Σ p_before (module docstring)."""
    sizes = members.lazy().group_by("inner").agg(pl.len().alias("size"))
    return (
        members.lazy().join(p.lazy(), on="pseudonym")
        .group_by(pair_key("inner"))
        .agg(pl.col("p_before").sum(), pl.col("p_now").sum(), pl.col("raised").any())
        .filter("raised")
        .select(*pair_parts("inner"), "p_before", "p_now")
        .join(sizes, on="inner")
        .join(theta.lazy().select("_v", "theta"), on="_v")
        .filter(
            (pl.col("p_now") / pl.col("size") > pl.col("theta") + _EPS)
            & (pl.col("p_now") > pl.col("p_before") + _EPS)
        )
        .select("inner")
        .unique()
        .collect()
    )  # fmt: skip


def check_histories(
    published: pl.DataFrame, past: pl.DataFrame, probabilities: Probabilities,
    thetas: dict[str, float], now: pl.DataFrame | None, kept: pl.DataFrame, earlier: Probabilities,
) -> tuple[frozenset[str], pl.DataFrame]:  # fmt: skip
    """(the failing units, the failing histories) of :func:`earlier_over_theta`, for the ``kept``
    histories and the values of ``thetas`` only (each (history, value)'s conf is computed from its
    own members' P(s): the result for one does not depend on which others are checked).

    Only the protected values and the members of the reached histories enter the P frames. A
    (history h, value s) can fail only when a member of I(h) raised its P(s), and only a published
    member can (the others read as before), i.e. one of the published cases reaching h: P of those
    is computed first, and only the histories one of them raised are summed (every history at a full
    check, 1–2 % of them for the few values a recheck's later attempt checks). Histories and values
    are numbered and a pair's sums and "raised" are one group-by on one integer (before: text keys
    and the raised pairs joined back to 6.4 M members' rows; the 11 calls of a 400k quarter 4, P
    before read from memory: 23.8 → 10.9 CPU-s; docs/series.md §6, seventh session). Since the twelfth
    session the check runs on numbered cases (:mod:`.earlier_arrays`: the same units and histories);
    the joins here are the fallback when the ledger lacks a published case, and the tests' reference.
    """
    empty: tuple[frozenset[str], pl.DataFrame] = frozenset(), pl.DataFrame(schema={"history": pl.Utf8})
    if not thetas or kept.is_empty() or published.is_empty():
        return empty
    index = _histories(past)
    found = check_numbered(index.numbered(), published, thetas, now, kept, earlier, probabilities)
    if found is not None:  # on numbered cases; the joins below when the ledger lacks a published case
        return found
    both, affected = _reached(index, published, kept)
    if affected.is_empty():
        return empty
    theta = _thetas(thetas)
    values = theta.lazy().select("value", "_v")
    reaching = affected.select("pseudonym").unique()
    p_published = _probabilities(
        published, reaching, _now(published, reaching, now, probabilities), earlier, values
    )
    raised = affected.join(
        p_published.filter("raised").select("pseudonym").unique(), on="pseudonym", how="semi"
    )
    if raised.is_empty():
        return empty
    members = _intersections(
        index, both.join(raised.select(pl.col("inner").alias("_h")), on="_h", how="semi")
    )
    others = members.select("pseudonym").unique().join(reaching, on="pseudonym", how="anti")
    as_before = [pl.col("p").alias("p_before"), pl.col("p").alias("p_now"), pl.lit(False).alias("raised")]
    kept_back = _before(others, earlier, values).select("pseudonym", "_v", *as_before).collect()
    over = _over(members, pl.concat([p_published, kept_back]), theta)
    failing = both.join(over, left_on="_h", right_on="inner", how="semi").select("history")
    units = affected.join(over, on="inner", how="semi").join(
        published.select("pseudonym", "unit"), on="pseudonym"
    )
    return frozenset(units.get_column("unit").unique().to_list()), failing


def _now(
    published: pl.DataFrame, holders: pl.DataFrame, now: pl.DataFrame | None, probabilities: Probabilities
) -> pl.DataFrame:
    """P(s | c) now of the published ``holders`` (``now``, or computed when not given)."""
    if now is not None:
        return now
    return probabilities(published.join(holders, on="pseudonym", how="semi"))


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
    check subsets of the placed members: 9 full checks of 2–3 s a 100k quarter before. P now is asked
    of ``now`` for the published cases reaching a checked history only (before, of every published
    case at each call: the memo's filter over all its rows for the few a subset's check reads).

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
            units, failing = check_histories(self._reference, self._past, self._now, self._thetas, None, kept,
                                             self._before)  # fmt: skip
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
        return check_histories(published, self._past, self._now, self._thetas, None, only,
                               self._before)[0]  # fmt: skip
