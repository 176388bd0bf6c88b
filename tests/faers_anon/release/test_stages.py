"""The release's stages beside each other (issue 18, item 6): verify, signals and risk on threads, the
same files as one after the other, a failed verification or a stage's error stops the others cleanly."""

from __future__ import annotations

import _thread
import gc
import hashlib
import importlib
import json
import os
import signal
import sys
import threading
import time
import weakref
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import signals
from faers_anon import risk
from faers_anon._numba_cache import mode
from faers_anon.cli import cli
from faers_anon.errors import InputError, Interrupted, VerificationError
from faers_anon.release import pipeline as release_module
from faers_anon.release.config import ReleaseConfig, build_release_config
from faers_anon.release.stages import STAGES_ENV, Cancelled, Stages
from faers_anon.synthetic import make_quarter, write_quarter
from faers_anon.verify import verifier

MAIN = threading.main_thread().name


@pytest.fixture(scope="module")
def quarter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("q") / "quarter"
    write_quarter(make_quarter(400, seed=11, quarter="2024Q2"), folder)
    return folder


def _config(tmp_path: Path) -> ReleaseConfig:
    config = build_release_config(flag_options={"theta": 0.4, "on_infeasible": "raise-theta", "seed": 5})
    (tmp_path / "work").mkdir(exist_ok=True)
    return replace(config, work=tmp_path / "work")


def _files(release: Path) -> dict[str, str]:
    """SHA-256 of every file; manifest.json without its run-time fields; certificate.json (which signs
    the manifest's bytes, date included) by its key."""
    out = {}
    for path in sorted(p for p in release.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if path.name == "manifest.json":
            manifest = json.loads(data)
            manifest.pop("created"), manifest.pop("timings")
            data = json.dumps(manifest, sort_keys=True).encode()
        elif path.name == "certificate.json":
            data = json.loads(data)["public_key"].encode()
        out[path.relative_to(release).as_posix()] = hashlib.sha256(data).hexdigest()
    return out


def _threads_of(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Record which thread runs each stage; in concurrent mode the engine waits (up to 60 s) until
    the raw half of signals has started beside it."""
    seen: dict[str, str] = {}
    stages = {"verify": (verifier, "verify_release"), "signals": (signals, "compare"),
              "risk": (risk, "assess_risk"), "raw": (signals, "raw_side")}  # fmt: skip
    for name, (home, stage) in stages.items():  # the pipeline imports each where it uses it
        real = getattr(home, stage)

        def traced(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            seen[_name] = threading.current_thread().name
            return _real(*args, **kwargs)

        monkeypatch.setattr(home, stage, traced)
    engine = release_module.anonymize_folder

    def anonymize(*args: Any, beside: Any, **kwargs: Any) -> Any:
        def started() -> None:  # right before the engine starts: the pipeline starts the raw halves
            beside()
            deadline, concurrent = time.monotonic() + 60, os.environ[STAGES_ENV] == "concurrent"
            while concurrent and "raw" not in seen and time.monotonic() < deadline:
                time.sleep(0.01)
            seen["raw_before_engine_ended"] = str("raw" in seen)

        return engine(*args, beside=started, **kwargs)

    monkeypatch.setattr(release_module, "anonymize_folder", anonymize)
    return seen


def test_concurrent_stages_write_the_same_release_as_sequential_ones(
    quarter: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _threads_of(monkeypatch)
    runs = {}
    for chosen in ("sequential", "concurrent"):
        monkeypatch.setenv(STAGES_ENV, chosen)
        lines: list[str] = []
        result = release_module.release(
            [quarter], tmp_path / chosen, config=_config(tmp_path), progress=lines.append
        )
        runs[chosen] = (_files(result.path), dict(seen), lines, result.seconds)
    (sequential, on_main, seq_lines, _), (concurrent, on_threads, con_lines, seconds) = runs.values()
    assert len(sequential) > 20 and sequential == concurrent
    assert on_main.pop("raw_before_engine_ended") == "False"  # raw side inside signals, after the engine
    assert set(on_main.values()) == {MAIN}  # one after the other in the caller's thread, as before
    assert on_threads.pop("raw_before_engine_ended") == "True"
    assert MAIN not in on_threads.values() and len(set(on_threads.values())) == 4
    starts = [line for line in seq_lines if line.endswith("] …")]
    assert starts == [f"[{s}] …" for s in ("ingest", "anonymize", "verify", "signals", "risk", "report")]
    assert sorted(starts) == sorted(line for line in con_lines if line.endswith("] …"))
    assert set(seconds) == {
        "ingest",
        "anonymize",
        "verify",
        "signals",
        "signals_raw",
        "risk",
        "risk_raw",
        "report",
        "total",
    }
    assert seconds["total"] >= seconds["ingest"] + seconds["anonymize"] + max(
        seconds["verify"], seconds["risk"]
    )
    assert not list((tmp_path / "work").iterdir())


def test_a_failed_verification_stops_the_running_stages_and_publishes_nothing(
    quarter: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verify fails while risk is still at work: risk is stopped before release() returns, while its
    work folder still exists, and nothing is left (not the release, not the work folder)."""
    monkeypatch.setenv(STAGES_ENV, "concurrent")
    risk_started, state = threading.Event(), dict[str, float]()
    real = verifier.verify_release

    def slow_risk(release: Path, **options: object) -> object:
        risk_started.set()
        try:
            while time.monotonic() < state.setdefault("deadline", time.monotonic() + 300):
                time.sleep(0.01)  # a long stage, in Python steps
            state["finished"] = 1.0
        finally:
            state["stopped"], state["work_there"] = time.monotonic(), release.is_dir()
        return None

    def failing(path: Path, **options: object) -> object:
        assert risk_started.wait(60)
        return real(path, k=10_000, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(risk, "assess_risk", slow_risk)
    monkeypatch.setattr(verifier, "verify_release", failing)
    start = time.monotonic()
    with pytest.raises(VerificationError, match="nothing was published"):
        release_module.release([quarter], tmp_path / "out", config=_config(tmp_path))
    returned = time.monotonic()
    assert returned - start < 120 and "finished" not in state
    assert state["stopped"] <= returned and state["work_there"]  # stopped before its folder went
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"] and not list((tmp_path / "work").iterdir())
    assert not [t for t in threading.enumerate() if t.name.startswith("faers-anon ")]


def test_an_error_in_the_risk_stage_is_one_error_line(
    quarter: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STAGES_ENV, "concurrent")

    def broken(release: Path, **options: object) -> object:
        raise InputError("malformed class file (expected value,class)", path=release / "classes.csv")

    monkeypatch.setattr(risk, "assess_risk", broken)
    work = tmp_path / "work"
    work.mkdir()
    result = CliRunner().invoke(
        cli, ["release", str(quarter), "-o", str(tmp_path / "out"), "--theta", "0.4", "--work-dir", str(work)]
    )
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "classes.csv: malformed class file" in errors[0]
    assert "Traceback" not in result.output and "[verify] OK" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"] and not list(work.iterdir())


def test_a_bug_in_a_stage_keeps_its_exception(
    quarter: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STAGES_ENV, "concurrent")

    def broken(*args: object, **kwargs: object) -> object:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(signals, "compare", broken)
    with pytest.raises(ZeroDivisionError, match="a bug"):
        release_module.release([quarter], tmp_path / "out", config=_config(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]


def test_sequential_stages_run_when_asked_in_the_callers_thread_and_context() -> None:
    said: list[str] = []
    order: list[str] = []

    def step(name: str) -> str:
        order.append(name)
        return threading.current_thread().name

    with mode("interpreted"), Stages(said.append, concurrent=False) as stages:
        first = stages.start("first", lambda: step("first"))
        second = stages.start("second", lambda: len(step("second")) and 2)
        assert order == [] and said == []
        assert second.result() == 2 and first.result() == MAIN
    assert order == ["second", "first"] and said == ["[second] …", "[first] …"]


def test_a_thread_sees_the_callers_context_and_is_stopped_at_its_next_python_step() -> None:
    said: list[str] = []
    steps: list[int] = []

    def endless() -> None:
        while True:
            steps.append(1)
            time.sleep(0.001)

    with pytest.raises(RuntimeError, match="verify failed"):
        with mode("interpreted"), Stages(said.append, concurrent=True) as stages:
            from faers_anon import _numba_cache

            seen = stages.start("seen", lambda: _numba_cache._mode.get())
            loop = stages.start("loop", endless)
            assert seen.result() == "interpreted"
            while not steps:
                time.sleep(0.001)
            raise RuntimeError("verify failed")
    assert said == ["[seen] …", "[loop] …"]
    counted = len(steps)
    time.sleep(0.05)
    assert len(steps) == counted  # the loop ended before the block did
    with pytest.raises(Cancelled):
        loop.result()


def test_a_signal_while_a_stage_thread_comes_up_ends_the_block_with_the_signal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SIGTERM's handler may raise while ``Thread.start`` waits for the new thread to come up (seen in CI:
    the block then failed to join a thread "not started" and exited 1, not 128 + 15). Simulated here: the
    thread comes up 50 ms after start() has already raised ``Interrupted``."""
    real_start = threading.Thread.start
    later: list[threading.Thread] = []

    def interrupted_start(thread: threading.Thread) -> None:
        later.append(thread)

        def come_up() -> None:
            time.sleep(0.05)
            real_start(thread)

        _thread.start_new_thread(come_up, ())
        raise Interrupted(signal.SIGTERM)

    ran: list[str] = []
    monkeypatch.setattr(threading.Thread, "start", interrupted_start)
    with pytest.raises(Interrupted):
        with Stages(concurrent=True) as stages:
            stages.start("late", lambda: ran.append("late"))
    monkeypatch.undo()
    (thread,) = later
    assert thread.ident is not None and not thread.is_alive()  # it came up and the block waited for it
    assert ran == []  # cancelled before its work began


def test_a_wrong_stages_setting_is_one_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FAERS_ANON_STAGES=parallel is the user's mistake: one Error: line naming the variable, no traceback."""
    monkeypatch.setenv(STAGES_ENV, "parallel")
    result = CliRunner().invoke(
        cli, ["release", "--demo", "-o", str(tmp_path / "rel"), "--key-file", str(tmp_path / "k.key")]
    )
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1 and "FAERS_ANON_STAGES" in lines[0] and "parallel" in lines[0]
    assert not (tmp_path / "rel").exists()


def _modules(folder: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """Two modules in ``folder`` on sys.path: one that takes 0.2 s and records the thread importing it,
    one whose import fails with its own error."""
    (folder / "slow_for_preload.py").write_text(
        "import threading, time\ntime.sleep(0.2)\nTHREAD = threading.current_thread().name\n"
    )
    (folder / "broken_for_preload.py").write_text("raise RuntimeError('this module is broken')\n")
    monkeypatch.syspath_prepend(str(folder))
    for name in ("slow_for_preload", "broken_for_preload"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return "slow_for_preload", "broken_for_preload"


def test_preloaded_modules_are_imported_beside_and_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow, broken = _modules(tmp_path, monkeypatch)
    with Stages(concurrent=True) as stages:
        stages.preload([broken, slow])
        assert [t.name for t in threading.enumerate()].count("faers-anon imports") == 1
    assert sys.modules[slow].THREAD == "faers-anon imports"  # the block's end waited for it
    assert not [t for t in threading.enumerate() if t.name == "faers-anon imports"]
    assert broken not in sys.modules
    with pytest.raises(RuntimeError, match="this module is broken"):  # its own error, at its first use
        importlib.import_module(broken)


def test_sequential_stages_import_nothing_ahead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slow, _ = _modules(tmp_path, monkeypatch)
    with Stages(concurrent=False) as stages:
        stages.preload([slow])
    assert slow not in sys.modules
    assert importlib.import_module(slow).THREAD == MAIN


def test_a_stage_importing_a_module_being_preloaded_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow, _ = _modules(tmp_path, monkeypatch)
    with Stages(concurrent=True) as stages:
        stages.preload([slow])
        time.sleep(0.05)  # the preload is inside the module's 0.2 s body
        module = importlib.import_module(slow)
        assert module.THREAD == "faers-anon imports"  # complete: imported once, by the preload


def test_a_stopped_stage_closes_the_files_its_frames_hold_and_frees_its_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled can land between ``open()`` returning and its ``with`` (``Path.read_bytes``): the file
    sits on the stage's value stack. Here one file is a local, one on the value stack, beside an array."""
    source = tmp_path / "table.csv"
    source.write_text("drug,event\n")
    unraisable: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    kept: list[weakref.ref[Any]] = []
    up = threading.Event()

    def wait() -> None:
        up.set()
        while True:
            time.sleep(0.001)

    def stage() -> None:
        local = source.open("rb")
        data = np.zeros(1_000_000)
        kept.extend([weakref.ref(local), weakref.ref(data)])
        [open(source, "rb"), wait()]  # noqa: B018, SIM115 - the file is on the value stack only

    with pytest.raises(RuntimeError, match="verify failed"):
        with Stages(concurrent=True) as stages:
            task = stages.start("stage", stage)
            up.wait(5)
            raise RuntimeError("verify failed")
    assert [ref() for ref in kept] == [None, None]  # freed at the block's end, not at the next collection
    gc.collect()
    assert unraisable == []  # no file was left for its finalizer to warn about
    with pytest.raises(Cancelled):
        task.result()
