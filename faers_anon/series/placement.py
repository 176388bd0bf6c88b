"""Composition-safe placement of returning cases: frozen groups, released together or not at all.

Source: issue 14 item 3; SPEC §11 "Composition"; Xiao & Tao 2007 (m-invariance: a record keeps the
same signature across releases); docs/series.md (the argument and its limits).

Terms: a case's *history* is the list of (release, group) it had in the releases of the ledger
(:func:`faers_anon.series.ledger.history`); I(c) = ∩ G_r(c) over those releases is what an attacker
who follows its pseudonym learns (:mod:`faers_anon.risk._composition`). Two cases with the same
history shared a group in every release where either appeared, so each is in the other's I.

Rule, for the cases of this quarter (``cases.parquet``, raw caseids; pseudonyms under the series key):

1. a case not in the ledger is *fresh*: the engine places it as in a stand-alone release;
2. a case in the ledger is *returning*; its *unit* (:mod:`faers_anon.series.units`) is every
   earlier case whose history starts with its own (or with a shorter returning history's):
   the group it was released in, as it was. With the setting ``republish``, the unit's members that
   do not return this quarter are *republished* with it, their last version unchanged (rows kept in
   the ledger's store); by default (docs/series.md §4, "Knowing when a report came in") the step
   gives the planner no stored member, so a bundle holds returning cases only;
3. a *bundle* B drawn from the unit is published as one group (a *frozen* group: its own group id,
   not the engine's): each history class holding a returning case filled up to k of its own
   history (:func:`_trim`; then 2k, then the whole unit when a check fails, then the unit less its
   history classes below k, :func:`_pruned`), with its last
   released region, widened to the root of any QID where a member's value falls outside it (so
   the region is never narrower than before: no QID range shrinks by intersecting releases); it is
   kept when every member's intersection in B has ≥ k members and meets θ*
   (conf = Σ P(s | c) / |I| ≤ θ_s, P(s | c) over the union of what c exposes now and what the
   ledger says it exposed before), and no earlier intersection it reaches goes over θ*
   (:mod:`faers_anon.series.earlier`);
4. every other returning case is *withheld*: none of its reports is in this release (it stays in
   the ledger with its earlier releases, and is counted).

Why it bounds composition: a member c of a published bundle B has G_new(c) ⊇ B (other cases may share
the tuple, never fewer), and every member of B whose history starts with c's shared c's group in
every earlier release of c, so I_new(c) ⊇ {those members}, at least k by rule 3. A fresh case
appears once; a withheld case's I is unchanged. By induction over the releases every case in
several releases keeps |I(c)| ≥ k.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl

from faers_anon.series.earlier import EarlierCheck
from faers_anon.series.ledger import REGION, history
from faers_anon.series.units import intersection_pairs, over_theta, pseudonym_ids, unit_of

__all__ = ["SeriesPlan", "over_theta", "plan_series", "pseudonym_ids", "unit_members", "ROOT"]

#: The root of each QID's generalization: the region a QID is widened to when a follow-up leaves it.
ROOT: dict[str, dict[str, object]] = {
    "age": {"age_group": "*", "age_min": 0.0, "age_max": None},
    "sex": {"sex": "*"},
    "weight": {"wt_min": None, "wt_max": None},
}


_REPUBLISH = {"caseid": pl.Int64, "store": pl.Int64}


@dataclass(frozen=True, slots=True)
class SeriesPlan:
    """Where this quarter's returning cases go.

    Attributes:
        frozen: one row per case of a published unit (returning or republished): ``caseid`` (raw),
            ``bundle`` (index), the region columns (:data:`faers_anon.series.ledger.REGION`).
        withheld: raw caseids of the returning cases not published in this release.
        counts: ``fresh``, ``returning``, ``bundles``, ``published_returning``, ``republished``,
            ``withheld``, ``withheld_small`` (unit below k, or the case's class dropped from a unit
            placed in part), ``withheld_theta`` (unit over θ*), ``widened``, the units placed at each
            level (``placed_k``, ``placed_2k``, ``placed_unit``, ``placed_part``), ``withheld_earlier``.
        republish: the earlier cases published again with their unit: ``caseid`` (raw), ``store``
            (the release index whose stored rows hold their last version).
    """

    frozen: pl.DataFrame
    withheld: pl.Series
    counts: dict[str, int]
    republish: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=_REPUBLISH))


def _outside(region: str, lo: str, hi: str, exclusive: bool) -> pl.Expr:
    """True where a case's [lo, hi] (super-record range) leaves the region's [min, max)."""
    top = pl.col(f"{region}_max")
    above = (pl.col(hi) >= top) if exclusive else (pl.col(hi) > top)
    below = pl.col(f"{region}_min").is_not_null() & (pl.col(lo) < pl.col(f"{region}_min"))
    return pl.col(lo).is_not_null() & (below | (top.is_not_null() & above))


def _widened(bundles: pl.DataFrame) -> pl.DataFrame:
    """Widen each bundle's region to the root of any QID a member's current value leaves."""
    outside = {
        "age": _outside("age", "case_age_min", "case_age_max", exclusive=True),
        "sex": pl.col("case_sex").is_not_null() & (pl.col("sex").is_null() | (
            (pl.col("sex") != "*") & (pl.col("sex") != pl.col("case_sex")))),
        "weight": _outside("wt", "case_wt_min", "case_wt_max", exclusive=False),
    }  # fmt: skip
    flags = bundles.with_columns(**{f"_out_{q}": e.any().over("bundle") for q, e in outside.items()})
    widen = [pl.when(pl.col(f"_out_{qid}")).then(pl.lit(value, flags.schema[column]))
             .otherwise(pl.col(column)).alias(column)
             for qid, root in ROOT.items() for column, value in root.items()]  # fmt: skip
    widened = pl.any_horizontal(pl.col(f"_out_{q}") for q in ROOT)
    return flags.with_columns(*widen, widened.alias("widened")).drop(f"_out_{q}" for q in ROOT)


def _sizes(members: pl.DataFrame, pairs: pl.DataFrame | None = None) -> pl.DataFrame:
    """``unit``, ``d_history``, ``size``: |I(d)| after the release for each history of each unit, the
    members of each member's I counted per history (``pairs``: :func:`.units.intersection_pairs`)."""
    pairs = intersection_pairs(members) if pairs is None else pairs
    return _summed(members.group_by("unit", "history").len("e_count"), pairs)


def _summed(counts: pl.DataFrame, pairs: pl.DataFrame) -> pl.DataFrame:
    """:func:`_sizes` from the classes' member counts (``unit``, ``history``, ``e_count``)."""
    found = pairs.join(counts, left_on=["unit", "e_history"], right_on=["unit", "history"])
    return found.group_by("unit", "d_history").agg(pl.col("e_count").sum().alias("size"))


_QIDS = ("age_min", "age_max", "sex", "wt_min", "wt_max")
#: The bundle levels: filled to k, to 2k (multiples of k), then the whole unit (None).
_LEVELS = (("placed_k", 1), ("placed_2k", 2), ("placed_unit", None))
#: Every level counted in a plan: the bundle levels, then the unit less its classes below k.
_COUNTED = (*(name for name, _ in _LEVELS), "placed_part")
#: Placement rounds: units failing the earlier-intersection check are blocked and the rest placed again.
_ROUNDS = 8
_LISTS = ("indications", "reactions", "drug_keys")
_EXPOSED = sum((pl.col(name).list.len() for name in _LISTS), pl.lit(0, pl.UInt32))  # null lists: null


def _members(
    returning: pl.DataFrame, past: pl.DataFrame, stored: pl.DataFrame, deleted: pl.Series
) -> pl.DataFrame:
    """Every available member of a unit: the returning cases (current values) and the stored, not
    deleted, earlier cases of the unit (their last stored values, to republish). Joins on the pseudonyms
    with a row index, the rows gathered once from one chunk, the bundle the unit's rank among those present
    (400k quarter 4 replayed: 2.4–3.9 -> 0.8–1.4 CPU-s); the rows in the order whole rows' joins gave."""
    units = unit_of(past.get_column("history"), returning.get_column("history"))
    pseudonyms, n, qids = stored.get_column("pseudonym"), returning.height, [f"case_{c}" for c in _QIDS]
    again = np.flatnonzero((~pseudonyms.is_in(returning.get_column("pseudonym").implode())).to_numpy())
    now = returning.select("pseudonym", "caseid", pl.lit(None, pl.Int64).alias("store"), *qids, *_LISTS)
    rows = stored.select("pseudonym", "caseid", "store", *[pl.col(c[5:]).alias(c) for c in qids], *_LISTS)
    source = pl.concat([now, rows], how="vertical_relaxed").rechunk()
    base = returning.join(units, on="history").filter(pl.col("history") == pl.col("unit"))
    region = base.group_by("unit").agg(pl.col(c).first() for c in REGION).sort("unit").with_row_index("_u")
    keys = (
        pl.concat([now.get_column("pseudonym"), pseudonyms.gather(again)]).to_frame().with_row_index("_i")
        .filter(~pl.col("pseudonym").is_in(deleted.implode())).join(past.select("pseudonym", "history"),
        on="pseudonym").join(units, on="history").join(region.select(pl.exclude("_u"), "_u"), on="unit")
    )  # fmt: skip
    index = np.concatenate([np.arange(n), n + again])[keys.get_column("_i").to_numpy()]
    unit = keys.get_column("_u").to_numpy().astype(np.int64)
    present = np.zeros(region.height, np.int64)
    present[unit] = 1  # the bundle: the unit's dense rank (from 1)
    bundle = pl.Series("bundle", np.cumsum(present)[unit], pl.Int64)
    return source[index].hstack(keys.drop("_i", "pseudonym", "_u")).with_columns(bundle)


def unit_members(ids: pl.DataFrame, entries: pl.DataFrame, /) -> pl.Series:
    """The case pseudonyms of the ledger that lie in a unit of this quarter's returning cases
    (``ids``: their ``caseid`` → ``pseudonym``): the only earlier cases a release may republish."""
    past = history(entries).rename({"caseid": "pseudonym"})
    returning = past.join(ids, on="pseudonym", how="semi")
    units = unit_of(past.get_column("history"), returning.get_column("history"))
    return past.join(units, on="history").get_column("pseudonym")


def _trim(members: pl.DataFrame, target: int) -> pl.DataFrame:
    """The members published when each returning history class is filled up to ``target``.

    Per unit and history class h (n_h available members, r_h of them returning), with
    sup_r(h) = Σ r_h' over the classes h' whose pairs contain h's (h included): a class holding a
    returning case keeps its r_h returning members and adds min(n_h − r_h, max(0, target − sup_r(h)))
    of its stored members; a class without one is not published. Every published class h then has
    Σ_{h' ⊇ h} x_h' ≥ min(target, sup_r(h) + n_h − r_h) members in the bundle; :func:`_sizes`
    checks k. Stored members are taken fewest exposed values first, then by pseudonym (deterministic).
    Ordered on the keys alone, the rows taken once; the classes numbered in (unit, history) order, so
    rows sort on integers (400k quarter 4's members: 1.78 -> 1.40 CPU-s at k, 2.11 -> 1.48 at 2k).
    """
    is_returning = pl.col("store").is_null()
    classes = (
        members.select("unit", "history", "store").with_row_index("_i").group_by("unit", "history")
        .agg(pl.len().alias("n"), is_returning.sum().alias("r"), "_i").sort("unit", "history")
    )  # fmt: skip
    sup = (
        intersection_pairs(classes.select("unit", "history"))
        .join(classes.select("unit", pl.col("history").alias("e_history"), "r"), on=["unit", "e_history"])
        .group_by("unit", "d_history").agg(pl.col("r").sum().alias("sup"))
    )  # fmt: skip
    short = (target - pl.col("sup").cast(pl.Int64)).clip(lower_bound=0)  # counts are UInt32: no wrap
    added = pl.min_horizontal(pl.col("n") - pl.col("r"), short)
    quota = classes.join(sup, left_on=["unit", "history"], right_on=["unit", "d_history"], how="left",
                         maintain_order="left").select(  # a class without its sup row: none taken
        pl.when(pl.col("r") > 0).then(pl.col("r") + added).otherwise(0).fill_null(0).cast(pl.Int64)
    ).to_series().to_numpy()  # fmt: skip
    group = np.empty(members.height, np.int64)  # each member's class number
    n = classes.get_column("n").to_numpy()
    group[classes.get_column("_i").explode().to_numpy()] = np.repeat(np.arange(classes.height), n)
    exposed = pl.col("_x") if "_x" in members.columns else _EXPOSED  # the planner's: counted once
    stored = pl.col("store").is_not_null().alias("_s")
    keys = members.select(pl.Series("_g", group), stored, exposed.alias("_x"), "pseudonym")
    keys = keys.with_row_index("_i").sort("_g", "_s", "_x", "pseudonym")
    at = keys.get_column("_g").to_numpy()
    rank = np.arange(len(at)) - np.searchsorted(at, at)  # the rank within the member's class
    return members[keys.get_column("_i").filter(pl.Series(rank < quota[at]))]


def _pruned(trial: pl.DataFrame, k: int) -> pl.DataFrame:
    """``trial`` less its history classes whose intersection would hold fewer than k members, dropped
    until none is left below k (a dropped class also leaves the intersections that counted it).

    Safe (docs/series.md §4, "A unit in part"): a kept member's I is counted over the kept members
    only, as :func:`_sizes` counts it; a dropped class's cases are withheld, so their I is unchanged;
    the unit's own class (its history a prefix of every member's) lies in every I and has the largest,
    so it is kept whenever anything is. The pairs are found once; each pass sums over classes only
    (:func:`_summed`).
    """
    pairs = intersection_pairs(trial)
    counts = trial.group_by("unit", "history").len("e_count")
    while True:
        low = _summed(counts, pairs).filter(pl.col("size") < k)
        low = low.select("unit", pl.col("d_history").alias("history"))
        if low.is_empty():
            return trial.join(counts.select("unit", "history"), on=["unit", "history"], how="semi")
        counts = counts.join(low, on=["unit", "history"], how="anti")
        pairs = pairs.join(low.rename({"history": "d_history"}), on=["unit", "d_history"], how="anti")


def _place(
    members: pl.DataFrame, *, k: int, probabilities: Callable[[pl.DataFrame], pl.DataFrame],
    thetas: dict[str, float],
) -> tuple[pl.DataFrame, pl.DataFrame]:  # fmt: skip
    """Choose, per unit, the smallest bundle that passes: filled to k, then 2k, then the whole unit,
    then the unit less its history classes below k (:func:`_pruned`, the level ``placed_part``).

    Every step is per unit (:func:`_trim`, :func:`_sizes`, :func:`over_theta` group by unit; P(s | c)
    is a function of c alone), so a unit's outcome does not depend on the other units: the plan
    places every unit once and a round that blocks units only leaves theirs out (:class:`Planner`).

    Returns:
        (the published members, with ``level``: ``placed_k``, ``placed_2k``, ``placed_unit`` or
        ``placed_part``; the members left out: those of units no level placed, and those a
        ``placed_part`` bundle dropped, with ``small`` true for a member left out for k: its class
        dropped, or its unit below k whole).
    """
    placed, pending = [], members
    small = pl.Series([], dtype=pl.Utf8)
    for name, target in _LEVELS:
        trial = pending if target is None else _trim(pending, target * k)
        small = _sizes(trial).filter(pl.col("size") < k).get_column("unit").unique()
        fit = trial.filter(~pl.col("unit").is_in(small.implode()))
        failing = over_theta(fit, probabilities(fit), thetas) if fit.height else frozenset()
        done = fit.filter(~pl.col("unit").is_in(failing))
        placed.append(done.with_columns(pl.lit(name).alias("level")))
        pending = pending.join(done.select("unit").unique(), on="unit", how="anti")
    part = _pruned(pending.filter(pl.col("unit").is_in(small.implode())), k)
    failing = over_theta(part, probabilities(part), thetas) if part.height else frozenset()
    done = part.filter(~pl.col("unit").is_in(failing))
    placed.append(done.with_columns(pl.lit("placed_part").alias("level")))
    left = pending.join(done.select("unit", "pseudonym"), on=["unit", "pseudonym"], how="anti")
    return pl.concat(placed), left.with_columns(pl.col("unit").is_in(small.implode()).alias("small"))


class Memo:
    """``probabilities`` of frames keyed by ``caseid``, each case computed once over the calls.

    P(s | c) is a function of c's own row (SPEC §5: its values and E), so the rows of a frame are
    those of its cases whenever they were computed: the earlier-intersection check asks, in every
    round and every re-plan, for the ledger-only P of the holders of the histories it reaches
    (:func:`faers_anon.series.earlier.earlier_over_theta`), mostly the same cases again; the bundle
    levels ask for the members they try (P of every unit member up front, ``_once`` before, computed
    P for 136,597 members of a 100k quarter 4 where the levels and rounds try about 85,000).
    """

    def __init__(self, probabilities: Callable[[pl.DataFrame], pl.DataFrame]) -> None:
        self._probabilities = probabilities
        self._known: pl.DataFrame | None = None
        self._done = pl.DataFrame(schema={"caseid": pl.Int64})

    def __call__(self, frame: pl.DataFrame) -> pl.DataFrame:
        ids = frame.select(pl.col("caseid").cast(pl.Int64)).unique()
        missing = ids.join(self._done, on="caseid", how="anti")
        if missing.height or self._known is None:
            new = self._probabilities(frame.join(missing, on="caseid", how="semi"))
            self._known = new if self._known is None else pl.concat([self._known, new])
            self._done = pl.concat([self._done, missing])
        return self._known.filter(pl.col("caseid").is_in(ids.get_column("caseid").implode()))  # semi: 2x


class Planner:
    """The placement of one quarter's returning cases, made once, re-planned for withheld units.

    :func:`_place` decides each unit on its own (its docstring), so it runs once for every unit;
    a round of :meth:`plan` (a unit blocked by the earlier-intersection check, or withheld by the
    release's own E and θ*: :func:`faers_anon.series.step.prepare`) only leaves the blocked units'
    bundles out and checks the earlier intersections again. The result is that of placing the
    remaining units from scratch (the loop before, 2 to 4 re-plans a quarter).

    Args: as :func:`plan_series`.
    """

    def __init__(
        self, cases: pl.DataFrame, entries: pl.DataFrame, pseudonym_key: bytes, *, k: int,
        probabilities: Callable[[pl.DataFrame], pl.DataFrame], thetas: dict[str, float],
        stored: pl.DataFrame | None = None, deleted: pl.Series | None = None, ids: pl.DataFrame | None = None,
        before: Callable[[pl.DataFrame], pl.DataFrame] | None = None,
    ) -> None:  # fmt: skip
        ids = pseudonym_ids(cases, pseudonym_key) if ids is None else ids
        self.current = cases.select("caseid", *[pl.col(c).alias(f"case_{c}") for c in _QIDS], *_LISTS).join(
            ids, on="caseid"
        )
        self.past = history(entries).rename({"caseid": "pseudonym"})
        self.returning = self.current.join(self.past, on="pseudonym")
        empty = pl.DataFrame(schema={"pseudonym": pl.Int64, "caseid": pl.Int64, "store": pl.Int64,
                                     **dict.fromkeys(_QIDS, pl.Float64), "sex": pl.Utf8,
                                     **dict.fromkeys(_LISTS, pl.List(pl.Utf8))})  # fmt: skip
        self.members = _members(self.returning, self.past, empty if stored is None else stored,
                                pl.Series([], dtype=pl.Int64) if deleted is None else deleted)  # fmt: skip
        self.now = Memo(lambda frame: probabilities(self._rows(frame)))  # the members the levels try, once
        rows = pl.int_range(pl.len()).alias("_r")
        light = self.members.select(pl.exclude(_LISTS), _EXPOSED.alias("_x"), rows)
        self.placed, self.left = _place(light, k=k, probabilities=self.now, thetas=thetas)  # no list column
        before = before if isinstance(before, Memo) else Memo(probabilities if before is None else before)
        self.earlier = EarlierCheck(self.placed, self.past, probabilities, thetas, now=self.now,
                                    before=before)  # fmt: skip
        self._last: tuple[frozenset[str], SeriesPlan] | None = None

    def _rows(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The members' rows (their value lists, for P) of a frame of the placement's (``_r``: the row).
        The levels, their filters and joins carry no list column (400k quarter 4: ~5 M terms gathered
        ~6 times); only the rows P is computed of are gathered, in the order of the frame's."""
        if all(name in frame.columns for name in _LISTS):
            return frame
        if "_r" in frame.columns:
            return self.members[frame.get_column("_r")]
        return self.members.join(frame.select("caseid"), on="caseid", how="semi")

    def plan(self, withhold: frozenset[str] = frozenset()) -> SeriesPlan:
        """The plan with the units ``withhold`` (history strings) withheld whatever the checks say; the last
        one, copied, for the last ``withhold`` (a pass leaving links out: 3 of 7 plans a 100k quarter 4)."""
        if self._last is None or self._last[0] != withhold:
            self._last = (withhold, self._plan(withhold))
        return replace(self._last[1], counts=dict(self._last[1].counts))

    def _plan(self, withhold: frozenset[str]) -> SeriesPlan:
        """:meth:`plan`, made: rounds of the earlier check until it blocks no more units."""
        blocked = set(withhold)
        for _ in range(_ROUNDS):
            placed = self.placed.filter(~pl.col("unit").is_in(blocked))
            left = self.left.filter(~pl.col("unit").is_in(blocked))
            late = self.earlier(placed)  # rounds and re-plans check subsets of the placed members
            blocked |= late
            if not late:
                break
        return self._result(placed, left, blocked, blocked - set(withhold))

    def _result(
        self, placed: pl.DataFrame, left: pl.DataFrame, blocked: set[str], late: set[str]
    ) -> SeriesPlan:
        """The plan of the last round's ``placed`` members and ``left`` units less the ``blocked``
        units (``late``: those the earlier check blocked); the level counts are the round's."""
        chosen = placed.filter(~pl.col("unit").is_in(blocked))
        frozen = _widened(chosen)
        returning = self.returning.select("caseid", "history")  # no list column gathered
        withheld = returning.join(frozen.select("caseid"), on="caseid", how="anti").get_column("caseid")
        again = frozen.filter(pl.col("store").is_not_null())
        levels = placed.group_by("level").agg(pl.col("unit").n_unique())
        counts = {
            "fresh": self.current.height - returning.height,
            "returning": returning.height,
            "bundles": frozen.get_column("bundle").n_unique(),
            "published_returning": frozen.height - again.height,
            "republished": again.height,
            "withheld": withheld.len(),
            "withheld_small": left.filter(pl.col("small") & pl.col("store").is_null()).height,
            "widened": int(frozen.get_column("widened").sum()),
            **dict.fromkeys(_COUNTED, 0),
            **dict(levels.iter_rows()),
        }
        late_histories = self.members.select("unit", "history").filter(pl.col("unit").is_in(late))
        counts["withheld_earlier"] = returning.filter(pl.col("history").is_in(
            late_histories.get_column("history").implode()
        )).join(frozen.select("caseid"), on="caseid", how="anti").height  # fmt: skip
        counts["withheld_theta"] = counts["withheld"] - counts["withheld_small"]
        return SeriesPlan(frozen.select("caseid", "bundle", "unit", "history", *REGION), withheld, counts,
                          again.select("caseid", "store"))  # fmt: skip


def plan_series(
    cases: pl.DataFrame, entries: pl.DataFrame, pseudonym_key: bytes, *, k: int, thetas: dict[str, float],
    probabilities: Callable[[pl.DataFrame], pl.DataFrame], stored: pl.DataFrame | None = None,
    deleted: pl.Series | None = None, withhold: frozenset[str] = frozenset(), ids: pl.DataFrame | None = None,
    before: Callable[[pl.DataFrame], pl.DataFrame] | None = None,
) -> SeriesPlan:  # fmt: skip
    """Split this quarter's cases into fresh, published returning (with their bundles) and withheld.

    Args:
        cases: this quarter's super-records (``caseid`` raw, the QID ranges, the value lists).
        entries: the ledger's rows of every earlier release.
        pseudonym_key: the series key's pseudonym key (the ledger holds pseudonyms).
        k: the release's k.
        probabilities: P(s | c) of a members frame (``caseid`` raw, ``pseudonym``, value lists) over
            everything they exposed (:func:`faers_anon.series.step.exposed_probabilities`).
        thetas: θ* of the protected values.
        stored: the earlier cases that can be republished (``pseudonym``, ``caseid`` raw, ``store``,
            QID ranges, value lists); None: none (a returning case then needs ≥ k returning mates).
        deleted: case pseudonyms on a DELETE list (never republished).
        withhold: units (their history strings) to withhold whatever the checks say (a unit found
            over θ* once the release's own E and θ* are known: :func:`faers_anon.series.step.prepare`).
        ids: ``caseid`` → ``pseudonym`` of ``cases`` when already computed (:func:`pseudonym_ids`).
        before: P(s | c) as ``probabilities`` with the E of the earlier releases only, for what the
            earlier intersections read before this release (:mod:`faers_anon.series.earlier`); None:
            ``probabilities`` (an E that does not change).
    """
    planner = Planner(cases, entries, pseudonym_key, k=k, probabilities=probabilities, thetas=thetas,
                      stored=stored, deleted=deleted, ids=ids, before=before)  # fmt: skip
    return planner.plan(withhold)
