"""The recheck of a plan's units with the release's own E and θ*, attempt after attempt (issue 14 item 7).

Source: docs/series.md §4 (rule 4) and §6 ("The series step's cost, fifth session"). The series step
plans with this quarter's E and θ*, then checks every planned unit again with the E and θ* its
composition mines (:func:`faers_anon.series.step.prepare`): the bundle check
(:func:`faers_anon.series.placement.over_theta`) and the earlier intersections
(:mod:`faers_anon.series.earlier`). A unit failing there is withheld and the plan made again, which
changes the composition, so its E and θ* — and the next attempt checks again.

From the second attempt on, only what can change is checked (:class:`Recheck`); the units a
re-plan keeps are those of the last attempt less the withheld ones (:class:`.placement.Planner`:
each unit's bundle is chosen once), and for them:

* P(s | c) of a member is a function of its own value lists (now and in the ledger), its OUTC codes
  (its own rows, the same in both compositions), the class file and E's rows of its drugs
  (:func:`faers_anon.series.exposed.exposed_probabilities`; SPEC §5). So only a member holding a
  drug whose E rows changed (drug keys as P reads them, each (drug, value) at its largest weight)
  can have a new P, and only for a value of a changed row or a class holding one (Δ values). When
  no row changed the last attempt's rows are kept; otherwise every member's P is computed again:
  as arrays (:mod:`.linked`) that costs less than renewing only the holders' changed values did
  (the holders found, their terms cut, the frames merged and sorted: 1.44 CPU-s over the 100k
  quarter 4's 3 calls, twelfth session).
* The bundle check of (unit, s) reads only the members' P(s) and θ_s. Every unit the last attempt
  kept passed there for every s, so it still passes for s outside the Δ values and the values whose
  θ changed (V*): only V* is checked (θ* restricted to V*).
* The earlier check of (history h, s) reads the published holders' P(s), the others' P(s) before
  (fixed) and θ_s. Removing units only lowers the published holders' sums (P now ≥ P before:
  :class:`.earlier.EarlierCheck`), so an h kept in the last attempt that passed for s still passes
  for s outside V*; the histories kept now and not then, and those failing then, are checked for
  every value, every kept history for V*.

A unit the last attempt did not check (not expected: a re-plan only removes units) makes the attempt
check everything. The step checks every plan with the composition's E and the last composition's θ*
(``thetas``; the plan's before the first composition's are known), then a plan that passed again with
its own θ*: E is the same, so no P is computed again, and a θ that rose cannot fail a unit (its conf
is the same), so V* holds only the values whose θ fell or is new (:func:`.renew.change`). Each shortcut
gives the full check's units; tests compare them on hand-built cases
(tests/faers_anon/series/test_recheck.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import polars as pl

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.series.composition import Mined, ReleaseInputs
from faers_anon.series.earlier import check_histories, kept_histories
from faers_anon.series.exposed import exposed_probabilities
from faers_anon.series.ledger import Ledger
from faers_anon.series.placement import SeriesPlan, over_theta
from faers_anon.series.raised_passes import RaiseCheck
from faers_anon.series.renew import as_read, changed_rows
from faers_anon.series.renew import change as change_of
from faers_anon.series.store import stored_knowledge

__all__ = ["Recheck", "changed_rows"]

_LISTS = ("indications", "reactions", "drug_keys")
Probabilities = Callable[[pl.DataFrame], pl.DataFrame]


@dataclass(frozen=True, slots=True)
class _Attempt:
    """What one attempt checked: E as P reads it (``drug_key``, ``value``, ``weight``), θ*, the units,
    P(s | c) of the members (``caseid``, ``value``, ``p``), the kept and the failing histories."""

    knowledge: pl.DataFrame
    thetas: dict[str, float]
    units: pl.DataFrame
    probabilities: pl.DataFrame
    kept: pl.DataFrame
    failing: pl.DataFrame


class Recheck:
    """The failing units of each attempt's plan (module docstring), checking from the second attempt
    on only what the withheld units changed.

    Args:
        ledger: the opened ledger; past: ``pseudonym``, ``history`` of its cases; known: ``caseid`` →
        ``pseudonym`` of the planned members; config: the run's options; before: P(s | c) of ledger-only
        members through the earlier releases' E (:mod:`faers_anon.series.earlier`), shared with the plan.
    """

    def __init__(self, ledger: Ledger, past: pl.DataFrame, known: pl.DataFrame, config: AnonymizeConfig,
                 before: Probabilities) -> None:  # fmt: skip
        self._ledger, self._past, self._known, self._config = ledger, past, known, config
        self._before = before
        self._sizes = past.group_by("history").agg(pl.len().alias("n"))
        self._last: _Attempt | None = None
        self._raise = RaiseCheck()  # pass after pass, only what can fail since the last (.raised_passes)
        self._earlier: pl.DataFrame | None = None  # E*_{t−1} as stored_knowledge reads it, once a step
        self._held: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame] | None = None  # the last _members

    def _stored(self, current: pl.DataFrame) -> pl.DataFrame:
        """:func:`.store.stored_knowledge` of ``current`` with the earlier releases' files read and
        verified once per step (their max taken again with ``current``'s rows: the same frame)."""
        if self._earlier is None:
            ledger = self._ledger
            self._earlier = stored_knowledge(ledger.path, ledger.meta["releases"], current.clear())
        rows = current.select("drug_key", "disease", pl.col("weight").cast(pl.Float64))
        return (
            pl.concat([rows, self._earlier]).group_by("drug_key", "disease").agg(pl.col("weight").max())
            .sort("drug_key", "disease")
        )  # fmt: skip

    def __call__(
        self, plan: SeriesPlan, inputs: ReleaseInputs | Mined, thetas: dict[str, float] | None = None
    ) -> frozenset[str]:
        """The planned units over θ* with the release's own E (and every earlier release's) and θ*:
        their bundles or the earlier intersections they reach. ``thetas``: θ* to check with instead of
        the composition's (``inputs`` then need not hold them: a :class:`.composition.Mined`)."""
        if thetas is None:
            if not isinstance(inputs, ReleaseInputs):
                raise TypeError("Recheck: θ* are needed when the inputs hold none")
            thetas = inputs.thresholds.thetas
        ledger = self._ledger
        knowledge = self._stored(inputs.knowledge)
        members = self._members(plan, inputs)
        probabilities = partial(exposed_probabilities, entries=ledger.state, knowledge=knowledge,
                                config=self._config, outcomes=inputs.outcomes)  # fmt: skip
        read = as_read(knowledge)
        units = members.select("unit").unique()
        last, self._last = self._last, None  # its P(s | c) let go before P is made again (memory)
        if last is None or units.join(last.units, on="unit", how="anti").height:
            now = probabilities(members)
            failing, checked = self._full(members, now, probabilities, thetas)
        else:
            change = change_of(last.knowledge, read, self._config, (last.thetas, thetas))
            if change.values:  # every member's P again: cheaper than renewing the changed ones (docstring)
                last = replace(last, probabilities=last.probabilities.clear())
                now = probabilities(members)
            else:
                now = last.probabilities.join(members.select("caseid"), on="caseid", how="semi")
            failing, checked = self._changed(members, now, probabilities, thetas, change.wanted, last)
        self._last = _Attempt(read, thetas, units, now, *checked)
        return failing

    def _members(self, plan: SeriesPlan, inputs: ReleaseInputs | Mined) -> pl.DataFrame:
        """The plan's published ledger cases: ``caseid`` (raw), value lists now, ``bundle``, ``unit``,
        ``history``, ``pseudonym``. The last call's frame again for the same frozen members and
        super-records (the raise check and the recheck of one attempt, the passes leaving links out of
        one plan: :class:`.composition.Miner` gives their super-records again; 11 joins of 590k
        super-records → 4 at the 400k quarter 4)."""
        if self._held is not None and self._held[0] is plan.frozen and self._held[1] is inputs.cases:
            return self._held[2]
        self._held = None  # the last members let go before these are joined (memory)
        members = inputs.cases.select("caseid", *_LISTS).join(
            plan.frozen.select("caseid", "bundle", "unit", "history"), on="caseid"
        )
        members = members.join(self._known, on="caseid")
        self._held = (plan.frozen, inputs.cases, members)
        return members

    def links(
        self, plan: SeriesPlan, inputs: ReleaseInputs | Mined, thetas: dict[str, float] | None = None
    ) -> pl.DataFrame:
        """The (``drug_key``, ``disease``) pairs of the composition's E whose INDI links the release must
        leave out: a weight it raises over every earlier release's lifts a kept history over θ*, also
        one with no case in this release (:mod:`faers_anon.series.raised`). ``thetas``: as in
        :meth:`__call__` (the composition's θ* when None)."""
        if thetas is None:
            if not isinstance(inputs, ReleaseInputs):
                raise TypeError("Recheck.links: θ* are needed when the inputs hold none")
            thetas = inputs.thresholds.thetas
        earlier = self._stored(inputs.knowledge.clear())
        own = inputs.knowledge if inputs.own is None else inputs.own  # E_t as mined, not E*_t: its raises
        return self._raise(self._members(plan, inputs), self._past, self._ledger.state, earlier, own, thetas,
                           self._config)  # fmt: skip

    def _full(
        self, members: pl.DataFrame, now: pl.DataFrame, probabilities: Probabilities, thetas: dict[str, float]
    ) -> tuple[frozenset[str], tuple[pl.DataFrame, pl.DataFrame]]:
        """Every unit's bundle and every earlier intersection it reaches (the first attempt)."""
        kept = kept_histories(self._sizes, members)
        units, failing = check_histories(members, self._past, probabilities, thetas, now, kept, self._before)
        return over_theta(members, now, thetas) | units, (kept, failing)

    def _changed(
        self, members: pl.DataFrame, now: pl.DataFrame, probabilities: Probabilities,
        thetas: dict[str, float], wanted: list[str], last: _Attempt,
    ) -> tuple[frozenset[str], tuple[pl.DataFrame, pl.DataFrame]]:  # fmt: skip
        """The checks of V* (``wanted``) for every unit and kept history, and of every value for the
        histories kept now only or failing last (module docstring)."""
        some = {v: thetas[v] for v in wanted if v in thetas}
        kept = kept_histories(self._sizes, members)
        fresh = pl.concat([kept.join(last.kept, on="history", how="anti"), last.failing])
        only = kept.join(fresh, on="history", how="semi")
        past, before = self._past, self._before
        units, failing = check_histories(members, past, probabilities, thetas, now, only, before)
        units_v, failing_v = check_histories(members, past, probabilities, some, now, kept, before)
        failing = pl.concat([failing, failing_v]).unique()
        return over_theta(members, now, some) | units | units_v, (kept, failing)
