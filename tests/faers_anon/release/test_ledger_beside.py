"""A ledgered release: what runs beside its series step, and what its raw side is (issue 14 item 7).

The later modules' import needs no series step, so with ``--ledger`` it starts before it (its child
process leaves part of the two cores idle). The raw halves of signals and risk read the raw data of the
cases the release publishes, the folder the step makes (the quarter less the withheld cases, with the
republished ones), so they start after it, beside the engine, as without a ledger; so do the sources'
SHA-256, so that a failing step has no stage to stop. Checked: both raw halves start after the step
and risk's reads the step's folder; the release's files and the ledger's new files are the same as
when every stage runs one after the other; a step that fails is one ``Error:`` line and an interrupted
step leaves no thread, no release and no work folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import signals
from faers_anon import risk
from faers_anon.cli import cli
from faers_anon.errors import InputError, Interrupted
from faers_anon.release import pipeline as release_module
from faers_anon.release.config import ReleaseConfig, build_release_config
from faers_anon.release.stages import STAGES_ENV
from faers_anon.series import apart
from faers_anon.series.generate import make_series

RAW_HALVES = ("signals_raw", "risk_raw")
_FOLDERS: dict[str, Path] = {}  # the folder risk's raw half read, and the step's (_recorded)


@pytest.fixture(scope="module")
def series(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two linked quarters of 300 cases; the ledger after the first one's ledgered release."""
    root = tmp_path_factory.mktemp("series")
    raws = make_series(300, root / "raw", quarters=2, follow=0.3, seed=5)
    ledger = root / "ledger"
    release_module.release([raws[0]], root / "rel0", config=_config(root, ledger))
    return {"raw1": raws[1], "ledger": ledger}


def _config(tmp_path: Path, ledger: Path) -> ReleaseConfig:
    config = build_release_config(flag_options={"k": 3, "seed": 5})
    (tmp_path / "work").mkdir(exist_ok=True)
    return replace(config, work=tmp_path / "work", ledger=ledger, republish=True)


def _recorded(monkeypatch: pytest.MonkeyPatch, step: Any = None) -> list[str]:
    """The order in which the raw halves and the series step (``step``, or the real one) are called;
    the folder risk's raw half reads, and the one the step returned, in ``_FOLDERS``."""
    events: list[str] = []
    _FOLDERS.clear()
    for name, (home, function) in zip(RAW_HALVES, ((signals, "raw_side"), (risk, "raw_cases")), strict=True):
        real = getattr(home, function)

        def traced(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            events.append(_name)
            if _name == "risk_raw":
                _FOLDERS["risk_raw"] = Path(args[0])
            return _real(*args, **kwargs)

        monkeypatch.setattr(home, function, traced)  # the pipeline imports each where it uses it
    prepare = step or apart.prepare_apart

    def series_step(*args: Any, **kwargs: Any) -> Any:
        events.append("step")
        made = prepare(*args, **kwargs)
        _FOLDERS["step"] = made.ingested
        return made

    monkeypatch.setattr(apart, "prepare_apart", series_step)
    return events


def _files(folder: Path) -> dict[str, str]:
    """SHA-256 of every file; manifest.json without its run-time fields, certificate.json by its key,
    ledger.json's records without the release's path and manifest hash, and without the MAC."""
    out = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if path.name == "manifest.json":
            manifest = json.loads(data)
            manifest.pop("created"), manifest.pop("timings")
            data = json.dumps(manifest, sort_keys=True).encode()
        elif path.name == "certificate.json":
            data = json.loads(data)["public_key"].encode()
        elif path.name == "ledger.json":
            meta = json.loads(data)
            meta.pop("mac")
            for record in meta["releases"]:
                record.pop("release"), record.pop("manifest_sha256")
            data = json.dumps(meta, sort_keys=True).encode()
        out[path.relative_to(folder).as_posix()] = hashlib.sha256(data).hexdigest()
    return out


def test_with_a_ledger_the_raw_halves_read_the_series_step_folder_with_the_same_files(
    series: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = _recorded(monkeypatch)
    runs = {}
    for chosen in ("sequential", "concurrent"):
        monkeypatch.setenv(STAGES_ENV, chosen)
        ledger = tmp_path / f"ledger-{chosen}"
        shutil.copytree(series["ledger"], ledger)
        events.clear()
        result = release_module.release([series["raw1"]], tmp_path / chosen, config=_config(tmp_path, ledger))
        runs[chosen] = (_files(result.path), _files(ledger), list(events), result.seconds)
        # the step's own folder (cases withheld and republished), not the quarter as ingested
        assert _FOLDERS["risk_raw"] == _FOLDERS["step"] and _FOLDERS["step"].name == "ingested-series"
    (seq_release, seq_ledger, seq_events, _), (release, ledger_files, con_events, seconds) = runs.values()
    assert seq_events == ["step", "signals_raw", "risk_raw"]  # one after the other: in stage order
    assert con_events[0] == "step" and sorted(con_events[1:]) == sorted(RAW_HALVES)  # beside the engine
    assert len(seq_release) > 20 and release == seq_release
    assert "release-0002.parquet" in ledger_files and ledger_files == seq_ledger
    assert {"signals_raw", "risk_raw", "anonymize"} <= seconds.keys()
    assert not list((tmp_path / "work").iterdir())


def test_each_raw_half_runs_once_without_a_ledger_too(
    series: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """anonymize_folder calls its ``beside`` hook a second time after the engine (for a run that
    called none); the raw halves were then computed twice, the second time for nothing."""
    monkeypatch.setenv(STAGES_ENV, "concurrent")
    events = _recorded(monkeypatch)
    config = replace(_config(tmp_path, tmp_path / "unused"), ledger=None)
    result = release_module.release([series["raw1"]], tmp_path / "out", config=config)
    assert sorted(events) == sorted(RAW_HALVES)
    assert set(RAW_HALVES) <= result.seconds.keys() and (result.path / "manifest.json").is_file()


def test_a_failed_series_step_is_one_error_line_and_starts_no_raw_half(
    series: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STAGES_ENV, "concurrent")

    def failing(ledger: Path, *_: object) -> object:
        raise InputError("simulated: ledger unreadable", path=ledger)

    events = _recorded(monkeypatch, failing)
    ledger, work = tmp_path / "ledger", tmp_path / "work"
    shutil.copytree(series["ledger"], ledger)
    work.mkdir()
    before = _files(ledger)
    result = CliRunner().invoke(cli, ["release", str(series["raw1"]), "-o", str(tmp_path / "out"), "--k", "3",
                                      "--ledger", str(ledger), "--work-dir", str(work),
                                      "--republish"])  # fmt: skip
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "simulated: ledger unreadable" in errors[0], result.output
    assert "Traceback" not in result.output
    assert events == ["step"]
    assert not (tmp_path / "out").exists() and not list(work.iterdir()) and _files(ledger) == before
    assert not [t for t in threading.enumerate() if t.name.startswith("faers-anon ")]


def test_an_interrupted_series_step_leaves_nothing(
    series: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STAGES_ENV, "concurrent")

    def interrupted(*_: object) -> object:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(60)  # the handler raises Interrupted here
        raise AssertionError("not interrupted")

    events = _recorded(monkeypatch, interrupted)
    ledger = tmp_path / "ledger"
    shutil.copytree(series["ledger"], ledger)
    before = _files(ledger)
    start = time.monotonic()
    with pytest.raises(Interrupted):
        release_module.release([series["raw1"]], tmp_path / "out", config=_config(tmp_path, ledger))
    assert time.monotonic() - start < 60
    assert events == ["step"]
    assert not (tmp_path / "out").exists() and not list((tmp_path / "work").iterdir())
    assert _files(ledger) == before
    assert not [t for t in threading.enumerate() if t.name.startswith("faers-anon ")]


def test_a_ledgered_release_times_its_series_step_and_its_ledger_update(
    series: dict[str, Path], tmp_path: Path
) -> None:
    """The step's wall time is in the manifest's timings and its line names the child's CPU seconds,
    the ledger's update at publication its own (bench_series.py splits a ledgered release's cost so)."""
    ledger = tmp_path / "ledger"
    shutil.copytree(series["ledger"], ledger)
    lines: list[str] = []
    result = release_module.release([series["raw1"]], tmp_path / "out", config=_config(tmp_path, ledger),
                                    progress=lines.append)  # fmt: skip
    step = next(line for line in lines if line.startswith("[series] ledger"))
    cpu = float(step.rsplit("step process ", 1)[1].removesuffix(" CPU-s)"))
    manifest = json.loads((result.path / "manifest.json").read_text())
    assert 0 < cpu < 600 and 0 < manifest["timings"]["series"] < manifest["timings"]["total"]
    recorded = next(line for line in lines if line.startswith("[ledger]"))
    assert "release 2 recorded" in recorded and recorded.endswith(" CPU-s)")
    assert json.loads((ledger / "ledger.json").read_text())["releases"][-1]["index"] == 2
