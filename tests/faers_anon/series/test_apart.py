"""The series step in a child process (:mod:`faers_anon.series.apart`, issue 14 item 7): the same step as
in the release's process, its errors as they would be raised there, its ledger state read again at
publication, and no child left behind when the release is interrupted."""

from __future__ import annotations

import os
import shutil
import signal
import threading
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal, assert_series_equal

from faers_anon import api
from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.errors import ConfigError, InfeasibleThetaError, InputError, Interrupted
from faers_anon.io.workspace import signals_raise
from faers_anon.keys import AgencyKey, load_key
from faers_anon.series.apart import RESULT_NAME, _outcome, _rebuilt, prepare_apart, with_state
from faers_anon.series.generate import make_series
from faers_anon.series.step import prepare


@pytest.fixture(scope="module")
def quarter(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Quarter 1 of a 2-quarter series released with a ledger; quarter 2 ingested, not released."""
    root = tmp_path_factory.mktemp("apart")
    raws = make_series(300, root / "raw", quarters=2, follow=0.3, seed=3)
    flags: dict[str, object] = {"k": 3, "ledger": root / "ledger", "key_file": root / "agency.key",
                               "republish": True}
    api.release([raws[0]], root / "rel0", config=api.release_config(None, flags))
    api.ingest([raws[1]], root / "ingested")
    return {"root": root, "raw1": raws[1], "ledger": root / "ledger", "ingested": root / "ingested",
            "key": root / "agency.key"}  # fmt: skip


def _copy(quarter: dict[str, Path], tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A copy of the ledger and an empty work folder (a step writes into both)."""
    ledger = shutil.copytree(quarter["ledger"], tmp_path / f"ledger-{name}")
    work = tmp_path / f"work-{name}"
    work.mkdir()
    return ledger, work


def _key(quarter: dict[str, Path]) -> AgencyKey:
    return load_key(quarter["key"])


def test_the_step_apart_equals_the_step_in_process(quarter: dict[str, Path], tmp_path: Path) -> None:
    config, key = AnonymizeConfig(k=3), _key(quarter)
    here_ledger, here_work = _copy(quarter, tmp_path, "here")
    apart_ledger, apart_work = _copy(quarter, tmp_path, "apart")
    here = prepare(here_ledger, quarter["ingested"], ["2024Q2"], here_work, config, key, True)
    apart = prepare_apart(apart_ledger, quarter["ingested"], ["2024Q2"], apart_work, config, key, True)
    assert here.plan.counts == apart.plan.counts and here.plan.counts["returning"] > 0
    assert here.plan.counts["republished"] > 0
    # the plan's per-case frames and the composition's cases, OUTC codes and own E are not read by the
    # release: they come back empty, with their schemas
    assert not here.plan.frozen.is_empty() and not here.plan.republish.is_empty()
    assert not here.plan.withheld.is_empty()
    assert_frame_equal(here.plan.frozen.clear(), apart.plan.frozen)
    assert_frame_equal(here.plan.republish.clear(), apart.plan.republish)
    assert_series_equal(here.plan.withheld.clear(), apart.plan.withheld)
    assert here.ids is not None and apart.ids is not None
    assert_frame_equal(here.ids, apart.ids)
    assert here.inputs is not None and apart.inputs is not None
    for name in ("knowledge", "probabilities"):
        assert_frame_equal(getattr(here.inputs, name), getattr(apart.inputs, name))
    assert_frame_equal(here.inputs.thresholds.frame, apart.inputs.thresholds.frame)
    assert_frame_equal(here.inputs.cases.clear(), apart.inputs.cases)
    for name in ("outcomes", "own"):
        ours, theirs = getattr(here.inputs, name), getattr(apart.inputs, name)
        assert (ours is None and theirs is None) or (ours is not None and theirs is not None and
                                                      theirs.equals(ours.clear()))  # fmt: skip
    assert here.ledger.meta == apart.ledger.meta and here.quarters == apart.quarters
    # the folder the release is written from, the frozen bundles and the pending cases: the same files
    assert apart.ingested == apart_work / "ingested-series" and apart.frozen == apart_work / "frozen.parquet"
    assert here.pending is not None and apart.pending is not None
    for ours, theirs in ((here.ingested, apart.ingested), (here.pending, apart.pending)):
        names = sorted(p.name for p in ours.glob("*.parquet"))
        assert names == sorted(p.name for p in theirs.glob("*.parquet")) and names
        for name in names:
            assert_frame_equal(pl.read_parquet(ours / name), pl.read_parquet(theirs / name))
    assert not (apart_work / RESULT_NAME).exists()  # the child's result files are removed
    # the ledger's state stays behind until publication, then is read again
    assert apart.ledger.state.is_empty() and not here.ledger.state.is_empty()
    assert_frame_equal(with_state(apart, key).ledger.state, here.ledger.state)


def test_the_childs_user_errors_are_raised_as_in_process(quarter: dict[str, Path], tmp_path: Path) -> None:
    ledger, work = _copy(quarter, tmp_path, "errors")
    key = _key(quarter)
    wrong = AnonymizeConfig(k=3, model="k-anonymity")
    with pytest.raises(ConfigError) as here:
        prepare(ledger, quarter["ingested"], ["2024Q2"], work, wrong, key)
    with pytest.raises(ConfigError) as apart:
        prepare_apart(ledger, quarter["ingested"], ["2024Q2"], work, wrong, key)
    assert str(apart.value) == str(here.value) and not getattr(apart.value, "__notes__", [])
    other = AgencyKey.from_secret(bytes(range(32)))
    with pytest.raises(InputError) as refused:
        prepare_apart(ledger, quarter["ingested"], ["2024Q2"], work, AnonymizeConfig(k=3), other)
    assert "another agency key" in str(refused.value) and refused.value.path == ledger  # attributes kept
    assert not (work / RESULT_NAME).exists()


def test_an_exception_comes_back_with_its_type_attributes_and_where_a_bug_happened() -> None:
    infeasible = InfeasibleThetaError({"DEATH": (0.1, 0.3)})
    again = _rebuilt(*_outcome(infeasible)[1:])  # its __init__ takes the shares, not the message
    assert type(again) is InfeasibleThetaError and str(again) == str(infeasible)
    assert again.shares == {"DEATH": (0.1, 0.3)} and not getattr(again, "__notes__", [])
    try:
        raise KeyError("missing")
    except KeyError as error:
        bug = _rebuilt(*_outcome(error)[1:])
    assert type(bug) is KeyError and bug.args == ("missing",)
    (note,) = bug.__notes__
    assert note.startswith("in the series step's child process:") and "KeyError: 'missing'" in note


def test_a_ledger_changed_meanwhile_is_refused(quarter: dict[str, Path], tmp_path: Path) -> None:
    ledger, work = _copy(quarter, tmp_path, "changed")
    key = _key(quarter)
    step = prepare_apart(ledger, quarter["ingested"], ["2024Q2"], work, AnonymizeConfig(k=3), key, True)
    assert len(with_state(step, key).ledger.meta["releases"]) == 1  # unchanged: read again, accepted
    flags: dict[str, object] = {"k": 3, "ledger": ledger, "key_file": quarter["key"], "republish": True}
    api.release([quarter["raw1"]], tmp_path / "other", config=api.release_config(None, flags))
    with pytest.raises(InputError, match="ledger changed while this release was made"):
        with_state(step, key)


def _children_with(text: str) -> list[int]:
    """Processes whose command line holds ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in line:
                found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/cmdline").is_file(), reason="needs /proc")
def test_an_interrupted_release_leaves_no_child(quarter: dict[str, Path], tmp_path: Path) -> None:
    ledger, work = _copy(quarter, tmp_path, "interrupted")
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
    with signals_raise(), pytest.raises(Interrupted):
        timer.start()
        prepare_apart(ledger, quarter["ingested"], ["2024Q2"], work, AnonymizeConfig(k=3), _key(quarter))
    timer.join()
    assert _children_with(str(work / RESULT_NAME)) == []  # killed and reaped
    assert not (work / RESULT_NAME).exists()
