"""Rule 6's raise check pass after pass (:mod:`faers_anon.series.raised_passes`; docs/series.md §6).

Every pass of one :class:`RaiseCheck` (the ledger's arrays and E*_{t−1} kept from pass to pass) must give
a fresh full check's pairs (:func:`faers_anon.series.raised.links_over_theta`) and the reference's
(tests/faers_anon/series/raise_reference.py). The hand-built ledger is
test_raised.py's: history ``1:0|2:3`` (cases 1–6; 1–3 expose X, 4 takes D, which releases 1–2's E
links to X at 0.25), θ_X 0.6, conf = (3 + w(D, X)) / 6.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.series.raised import links_over_theta
from faers_anon.series.raised_passes import RaiseCheck
from faers_anon.series.recheck import Recheck
from faers_anon.series.store import stored_knowledge
from tests.faers_anon.series import test_attempts
from tests.faers_anon.series.raise_reference import reference
from tests.faers_anon.series.test_raised import _E, _EARLIER, _LIST, _nobody, _state

quarter_two, _prepare = test_attempts.quarter_two, test_attempts._prepare


def _e(weight: float) -> pl.DataFrame:
    return pl.DataFrame({"drug_key": ["D"], "disease": ["X"], "weight": [weight]}, schema=_E)


def _case_four(reactions: list[str]) -> pl.DataFrame:
    """Release 3 publishes case 4 of history 1:0|2:3 (drug D) with these reactions."""
    return pl.DataFrame(
        [(4, 4, "u1", "1:0|2:3", [], reactions, ["D"])], orient="row",
        schema={"caseid": pl.Int64, "pseudonym": pl.Int64, "unit": pl.Utf8, "history": pl.Utf8,
                "indications": _LIST, "reactions": _LIST, "drug_keys": _LIST},
    )  # fmt: skip


def _passes(calls: list[tuple[pl.DataFrame, float, float]]) -> list[list[tuple[str, str]]]:
    """The pairs of each call (published, w(D, X), θ_X) of one :class:`RaiseCheck`, each checked
    against a full check of the same inputs."""
    state = _state()
    past = state.select(pl.col("caseid").alias("pseudonym"), "history")
    check, found = RaiseCheck(), []
    for published, weight, theta in calls:
        args = (published, past, state, _EARLIER, _e(weight), {"X": theta}, AnonymizeConfig())
        got = check(*args)
        assert got.equals(links_over_theta(*args))
        assert got.rows() == reference(*args)[0]
        found.append(got.rows())
    return found


def test_a_later_pass_finds_a_rise_a_lower_theta_and_nothing_else() -> None:
    # 1.0: (3 + 1) / 6 over 0.6, left out; 0.5: last pass's failing history again, 3.5 / 6 = 0.583
    # passes; 0.61 rose: 3.61 / 6 = 0.602 fails; 0.35 fell: 0.558 passes; the same weight under θ 0.55
    # (θ fell, no rise): fails; the same again: last pass's failing pair, still over
    nobody = _nobody()
    calls = [(nobody, 1.0, 0.6), (nobody, 0.5, 0.6), (nobody, 0.61, 0.6), (nobody, 0.35, 0.6),
             (nobody, 0.35, 0.55), (nobody, 0.35, 0.55)]  # fmt: skip
    dx = [("D", "X")]
    assert _passes(calls) == [dx, [], dx, [], dx, dx]


def test_a_case_withheld_since_the_last_pass_is_checked_through_its_earlier_values() -> None:
    # Pass 1 publishes case 4 with reaction X: P(X | 4) = 1 with or without E, so no member is raised by
    # E (the history's 4 / 6 is rule 4's, not this check's). Pass 2 withholds it (a re-plan): it reads
    # only D, raised by E from 0.25 to 1.0, and the history fails with nothing risen since pass 1.
    dx = [("D", "X")]
    assert _passes([(_case_four(["X"]), 1.0, 0.6), (_nobody(), 1.0, 0.6)]) == [[], dx]
    assert _passes([(_case_four(["X"]), 1.0, 0.6), (_case_four(["X"]), 1.0, 0.6)]) == [[], []]


def test_every_pass_of_the_step_leaves_out_what_a_full_check_would(
    quarter_two: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The generated series' quarter 2 (k 3): each call of the step's raise check gives a fresh full
    # check's pairs on the same plan, E and θ*, and the reference's.
    calls: list[int] = []
    links = Recheck.links

    def compared(
        self: Recheck, plan: Any, inputs: Any, thetas: dict[str, float] | None = None
    ) -> pl.DataFrame:
        found = links(self, plan, inputs, thetas)
        e_before = stored_knowledge(
            self._ledger.path, self._ledger.meta["releases"], inputs.knowledge.clear()
        )
        own = inputs.knowledge if inputs.own is None else inputs.own
        given = inputs.thresholds.thetas if thetas is None else thetas
        args = (
            self._members(plan, inputs),
            self._past,
            self._ledger.state,
            e_before,
            own,
            given,
            self._config,
        )
        assert found.equals(links_over_theta(*args))
        assert found.rows() == reference(*args)[0]
        calls.append(found.height)
        return found

    monkeypatch.setattr(Recheck, "links", compared)
    step = _prepare(quarter_two, quarter_two["root"] / "work-passes")
    assert len(calls) >= 2 and calls[-1] == 0
    assert step.plan.counts["left_out_links"] == sum(calls)
