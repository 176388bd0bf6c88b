"""The series step re-plans until its plan passes the recheck with its own E and θ* (docs/series.md §4
rule 4): no cap of attempts after which a plan is published unchecked (the rule before: 4 plans, the
fourth kept whatever its recheck said)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import faers_anon.series.recheck as recheck_module
import faers_anon.series.step as step_module
from faers_anon import api
from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.keys import load_key
from faers_anon.series.generate import make_series


@pytest.fixture(scope="module")
def quarter_two(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A generated series' first quarter released with a ledger (k 3), the second ingested."""
    root = tmp_path_factory.mktemp("bound")
    raws = make_series(300, root / "raw", quarters=2, follow=0.3, seed=3)
    ledger = root / "ledger"
    api.release([raws[0]], root / "rel0", config=api.release_config(None, {"k": 3, "ledger": ledger}))
    return {"ledger": ledger, "ingested": api.ingest([raws[1]], root / "ingested").out, "root": root}


def test_a_plan_failing_its_own_recheck_five_times_is_never_kept(
    quarter_two: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The recheck with the composition's own E and θ* reports one more planned unit over θ* on each of
    # its first five calls (forced). The step must withhold each and plan again, six times with its own
    # inputs, and keep only the plan whose recheck found nothing: none of the five units is published.
    check = recheck_module.Recheck.__call__
    forced: list[str] = []
    outcomes: list[frozenset[str]] = []

    def recheck(self: Any, plan: Any, inputs: Any, thetas: dict[str, float] | None = None) -> frozenset[str]:
        failing = check(self, plan, inputs, thetas)
        if thetas is None and len(forced) < 5:
            units = sorted(set(plan.frozen.get_column("unit").to_list()) - set(forced))
            forced.append(units[0])
            failing = failing | {units[0]}
        if thetas is None:
            outcomes.append(failing)
        return failing

    monkeypatch.setattr(recheck_module.Recheck, "__call__", recheck)
    work = quarter_two["root"] / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    step = step_module.prepare(quarter_two["ledger"], quarter_two["ingested"], ["2024Q2"], work,
                               AnonymizeConfig(k=3), load_key(None))  # fmt: skip
    assert len(forced) == 5 and len(outcomes) == 6  # six plans checked with their own E and θ*
    assert all(outcomes[:5]) and outcomes[5] == frozenset()
    published = set(step.plan.frozen.get_column("unit").to_list())
    assert published.isdisjoint(forced)
    assert step.plan.counts["rechecked_withheld_units"] >= 5


def test_a_unit_failing_again_once_withheld_is_an_error_not_a_loop() -> None:
    # A failing set inside the withheld units cannot come from a plan (a plan holds no withheld unit):
    # the step stops with an error instead of planning the same plan forever.
    assert step_module._more(frozenset({"1:2"}), frozenset({"1:3"})) == frozenset({"1:2", "1:3"})
    with pytest.raises(RuntimeError, match="withheld already"):
        step_module._more(frozenset({"1:2", "1:3"}), frozenset({"1:3"}))
