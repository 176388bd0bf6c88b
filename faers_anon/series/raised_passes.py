"""Rule 6's raise check pass after pass: each checks only what can fail since the last (issue 14 item 7).

Source: docs/series.md §4 (rule 6) and §6 ("The series step's cost (item 7), tenth session");
:mod:`faers_anon.series.raised` (the check, :func:`~faers_anon.series.raised.links_over_theta`). The
series step leaves links out, mines again and checks again until no kept history fails
(:func:`faers_anon.series.step.prepare`); between two passes E*_{t−1}, the ledger and its histories
are fixed, E*_t and θ* change, and a re-plan can withhold units (the published set S' of a pass is then
a subset of the last one's, S). On the 4 × 100k series' quarter 4 the four calls of the full check took
5–6 CPU-s each, 41 % of the step's samples.

Why the pairs :class:`RaiseCheck` skips cannot fail. conf_t(I(h) → s) = Σ_{e ∈ I(h)} P_t(s | e) / |I(h)|
and the check fails (h, s) when it is over θ_s and over conf_{t−1} (P over the ledger's values
through E*_{t−1}: fixed), for a kept h reached from a member *raised by E* for s (P_t(s | e) above
``mid``, e's values through E*_{t−1}; P_t ≥ mid always, E*_t ≥ E*_{t−1}). Take (h, s) failing now
that did not fail last pass, with θ_s not lower than last pass's, h kept last pass too:

* if some member's P_t(s) rose since last pass, the member holds a drug x whose row (x, s'), s' = s
  or a member of the class s, rose in E*_t (a *rise*: its other inputs, its values and published
  state, are those of last pass unless it was withheld now) — and a risen P_t is above ``mid``: the
  member is raised by E now, and h is reached from it;
* else every member reads at most what it read last pass, so conf_t is at most last pass's and the
  failure's conditions held then; h was not checked then, so no member was raised by E then — and a
  member raised by E now whose P_t did not rise has ``mid`` lower than last pass: it was published
  last pass and is withheld now (its current values no longer count).

So a later pass checks the (h, s) reached from the holders of the risen drugs (values: the risen
rows' values and their classes), from the members withheld since last pass (every value), from the
members of the histories kept now and not then (every value), every value whose θ fell or is new
(from every holder, as the full check), and last pass's failing pairs, each summed over its whole
I(h), with every member raised by E in the remedy: the pairs of the full check, pass by pass
(tests/faers_anon/series/test_raised_passes.py; on the 4 × 100k quarter 4 every call of the step
compared equal). A pass whose published set is not a subset of the last one's is checked in full.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.value_classes import CLASS_PREFIX, read_classes
from faers_anon.series.earlier import _histories, _intersections
from faers_anon.series.raised import (
    FAILING_SCHEMA,
    LINKS_SCHEMA,
    _holders,
    _reads,
    failing,
    inputs,
    kept_of,
    pairs,
    raised_by_e,
    raised_up,
)

__all__ = ["RaiseCheck"]

_UP = {"pseudonym": pl.Int64, "value": pl.Utf8, "p_mid": pl.Float64}


@dataclass(frozen=True, slots=True)
class _Pass:
    """What one pass saw: the published pseudonyms (sorted), the kept histories, E*_t as P reads it,
    θ* and the failing (``history``, ``value``) pairs."""

    published: pl.Series
    kept: pl.DataFrame
    star: pl.DataFrame | None
    thetas: dict[str, float]
    failing: pl.DataFrame


class RaiseCheck:
    """:func:`faers_anon.series.raised.links_over_theta`, called pass after pass by one series step;
    from the second call on, only the pairs that can fail since the last call are checked (module
    docstring)."""

    def __init__(self) -> None:
        self._last: _Pass | None = None

    def __call__(
        self, published: pl.DataFrame, past: pl.DataFrame, state: pl.DataFrame, earlier: pl.DataFrame,
        current: pl.DataFrame, thetas: dict[str, float], config: AnonymizeConfig,
    ) -> pl.DataFrame:  # fmt: skip
        """The pairs whose INDI links the release must leave out (arguments as ``links_over_theta``)."""
        last, self._last = self._last, None
        has = "pseudonym" in published.columns
        none = pl.Series("pseudonym", [], pl.Int64)
        ids = published.get_column("pseudonym").unique().sort() if has else none
        kept = kept_of(past, published)
        found = inputs(published, state, earlier, current, thetas, config)
        if found is None:
            self._last = _Pass(ids, kept, None, thetas, pl.DataFrame(schema=FAILING_SCHEMA))
            return pl.DataFrame(schema=LINKS_SCHEMA)
        reader, wanted = found.reader, found.wanted
        extra = None
        if last is None or last.star is None or not ids.is_in(last.published.implode()).all():
            up = raised_up(reader, _holders(state, published, found.found.drugs))
        else:
            rise, risen = _risen(last.star, found.star, config)
            moved = {v for v in wanted if v not in last.thetas or thetas[v] < last.thetas[v]}
            again = [v for v in wanted if v in risen or v in moved]
            drugs = found.found.drugs if moved else rise
            parts = [pl.DataFrame(schema=_UP)]
            if again and drugs.len():
                parts.append(raised_by_e(reader(_holders(state, published, drugs), again)))
            gone = last.published.filter(~last.published.is_in(ids.implode())).to_frame("pseudonym")
            new = kept.join(last.kept, on="history", how="anti")
            if new.height:
                index = _histories(past)
                gone = pl.concat([gone, _intersections(index, index.rows(new)).select("pseudonym")])
            if gone.height:
                parts.append(raised_by_e(reader(gone, wanted)))
            up, extra = pl.concat(parts).unique(), last.failing
        lifted, over = failing(up, extra, kept, published, past, reader, thetas)
        self._last = _Pass(ids, kept, found.star, thetas, over)
        return pairs(lifted, published, state, found.rows, _reads(wanted, config))


def _risen(last: pl.DataFrame, read: pl.DataFrame, config: AnonymizeConfig) -> tuple[pl.Series, set[str]]:
    """The drugs whose E*_t rows (as P reads them) rose since ``last`` (or are new), and the values
    those rows can raise: their own and every class holding one."""
    joined = read.join(last.rename({"weight": "_w"}), on=["drug_key", "value"], how="left")
    up = joined.filter(pl.col("weight") > pl.col("_w").fill_null(0.0))
    values = up.get_column("value").unique()
    members = read_classes(config.classes).members
    classes = members.filter(pl.col("value").is_in(values.implode())).get_column("class").unique()
    return up.get_column("drug_key").unique(), {*values.to_list(), *(CLASS_PREFIX + c for c in classes)}
