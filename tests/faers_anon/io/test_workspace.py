"""Real signals sent to a running ``faers-anon release --demo``: nothing is left behind (issue 12, bullet 2).

Each run works in its own temporary folders: ``--work-dir`` (and ``TMPDIR``) inside ``tmp_path``, so
every folder the run could leave is visible to the test. The moment of each signal is chosen by
reading the run's progress lines (``[ingest] …``, ``[anonymize] …``, ``[signals] …``), not by sleeping.
"""

from __future__ import annotations

import errno
import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from faers_anon.errors import OutputError
from faers_anon.io import workspace as _workspace
from faers_anon.io.ingest import demo_source

FAERS_ANON = Path(sys.executable).with_name("faers-anon")

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _start(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "FAERS_ANON_KEY_FILE": str(tmp_path / "key")}
    return subprocess.Popen(
        [str(FAERS_ANON), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )


def _release(tmp_path: Path) -> subprocess.Popen[str]:
    (tmp_path / "work").mkdir(exist_ok=True)
    (tmp_path / "pub").mkdir(exist_ok=True)
    return _start(tmp_path, "release", "--demo", "-o", str(tmp_path / "pub" / "out"),
                  "--work-dir", str(tmp_path / "work"), "--theta", "0.4")  # fmt: skip


def _wait_for(process: subprocess.Popen[str], line: str) -> list[str]:
    """Read progress lines until ``line`` (the stage has started); fail if the run ends first."""
    assert process.stdout is not None
    seen = []
    for got in process.stdout:
        seen.append(got.rstrip("\n"))
        if got.startswith(line):
            return seen
    _, err = process.communicate()
    pytest.fail(f"the run ended before {line!r}: {seen} {err}")


def _leftovers(tmp_path: Path) -> list[str]:
    """Everything the run could have left: beside OUT, in the work dir, in TMPDIR."""
    return sorted(
        str(p.relative_to(tmp_path))
        for folder in ("pub", "work", "tmp")
        for p in (tmp_path / folder).iterdir()
    )


@pytest.mark.parametrize(
    ("stage", "signum"),
    [
        ("[ingest] …", signal.SIGINT),
        ("[anonymize] …", signal.SIGTERM),
        ("[signals] …", signal.SIGTERM),
    ],
)
def test_signal_leaves_nothing(tmp_path: Path, stage: str, signum: int) -> None:
    demo = _digest(demo_source())
    process = _release(tmp_path)
    _wait_for(process, stage)
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signum, err
    name = signal.Signals(signum).name
    assert [line for line in err.splitlines() if line.startswith("Error:")] == [
        f"Error: interrupted by {name}: stopped; its temporary folders were removed"
    ]
    assert "Traceback" not in err
    assert _leftovers(tmp_path) == []  # no release, no hidden staging or work folder anywhere
    assert _digest(demo_source()) == demo


def test_sigkill_leaves_a_work_folder_the_next_run_removes(tmp_path: Path) -> None:
    process = _release(tmp_path)
    _wait_for(process, "[anonymize] …")
    process.kill()
    process.communicate(timeout=30)
    (stale,) = (tmp_path / "work").iterdir()  # the killed run's private folder, raw data inside
    assert stale.name.startswith("faers-anon-release-") and (stale / "ingested" / "reports.parquet").is_file()
    assert stale.stat().st_mode & 0o777 == 0o700
    assert int((stale / "owner.pid").read_text().split()[0]) == process.pid
    assert list((tmp_path / "pub").iterdir()) == []  # nothing beside the public folder
    rerun = _start(tmp_path, "ingest", "--demo", "-o", str(tmp_path / "ingested"),
                   "--work-dir", str(tmp_path / "work"))  # fmt: skip
    _, err = rerun.communicate(timeout=60)
    assert rerun.returncode == 0, err
    assert list((tmp_path / "work").iterdir()) == []
    assert (tmp_path / "ingested" / "ingest_report.json").is_file()


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


def test_publishing_removes_what_killed_runs_left_beside_out(tmp_path: Path) -> None:
    dead, live = _dead_pid(), os.getppid()
    out = tmp_path / "out"
    stale = [".out.work-ab_12cd/ingested", f".out.staging-{dead}", f"..out.staging-{dead}.tmp-{dead}"]
    left = [*stale, f".out.old-{dead}", f".out.tmp-{dead}", f".out.staging-{live}", f".other.staging-{dead}"]
    for name in left:
        (tmp_path / name).mkdir(parents=True)
        (tmp_path / name / "reports.parquet").write_bytes(b"raw")
    built = tmp_path / "built"
    built.mkdir()
    (built / "manifest.json").write_text("{}")
    _workspace.publish_folder(built, out)
    # a live run's staging folder and another release's folders are kept
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f".other.staging-{dead}",
        f".out.staging-{live}",
        "out",
    ]
    assert (out / "manifest.json").read_text() == "{}"


def test_failed_rename_puts_the_earlier_release_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out, built = tmp_path / "out", tmp_path / "built"
    for folder, text in ((out, "earlier"), (built, "new")):
        folder.mkdir()
        (folder / "manifest.json").write_text(text)
    rename = os.rename

    def failing(src: str | Path, dst: str | Path) -> None:
        if Path(dst) == out and ".staging-" in Path(src).name:
            raise OSError(5, "Input/output error")
        rename(src, dst)

    monkeypatch.setattr(_workspace.os, "rename", failing)
    with pytest.raises(OSError, match="Input/output"):
        _workspace.publish_folder(built, out)
    assert (out / "manifest.json").read_text() == "earlier"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="process start times from /proc")
def test_a_reused_pid_does_not_keep_a_stale_work_folder(tmp_path: Path) -> None:
    ours = _workspace.make_work_folder("release", tmp_path)  # records this process's pid and start
    reused = tmp_path / "faers-anon-release-reused"  # same pid, another start: a killed run's folder
    reused.mkdir()
    (reused / "owner.pid").write_text(f"{os.getpid()} 1\n")
    assert _workspace.remove_stale(tmp_path) == [reused]
    assert sorted(tmp_path.iterdir()) == [ours]


def test_publishing_across_filesystems_copies_then_renames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, built = tmp_path / "pub" / "out", tmp_path / "work" / "built"
    (built / "parquet").mkdir(parents=True)
    (built / "parquet" / "demo.parquet").write_bytes(b"public")
    out.parent.mkdir()
    rename = os.rename

    def no_cross_device(src: str | Path, dst: str | Path) -> None:
        if Path(src).parent != Path(dst).parent:  # as between the temp folder and another disk
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        rename(src, dst)

    monkeypatch.setattr(_workspace.os, "rename", no_cross_device)
    _workspace.publish_folder(built, out)
    assert (out / "parquet" / "demo.parquet").read_bytes() == b"public"
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]


def _built_release(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True)
    manifest = '{"tool": {"name": "faers-anon"}, "outputs": {}}'
    (folder / "manifest.json").write_text(manifest, encoding="utf-8")
    (folder / "demo.txt").write_text(text, encoding="utf-8")
    return folder


def test_publish_release_moves_the_restricted_folder_first_and_checks_out_again(tmp_path: Path) -> None:
    """One publication for `release` and the standalone `anonymize` (io.workspace.publish_release)."""
    work, pub = tmp_path / "work", tmp_path / "pub"
    pub.mkdir()
    built = _built_release(work / "rel", "one")
    (work / "rel-restricted").mkdir()
    (work / "rel-restricted" / "raw.parquet").write_text("r", encoding="utf-8")
    _workspace.publish_release(built, pub / "out", force=False)
    assert sorted(p.name for p in pub.iterdir()) == ["out", "out-restricted"]
    assert (pub / "out" / "demo.txt").read_text(encoding="utf-8") == "one" and not built.exists()
    again = _built_release(work / "rel", "two")
    with pytest.raises(OutputError):  # an earlier release is replaced only with force
        _workspace.publish_release(again, pub / "out", force=False)
    assert (pub / "out" / "demo.txt").read_text(encoding="utf-8") == "one" and again.exists()
    _workspace.publish_release(again, pub / "out", force=True)
    assert (pub / "out" / "demo.txt").read_text(encoding="utf-8") == "two"
    assert sorted(p.name for p in pub.iterdir()) == ["out", "out-restricted"]  # nothing else beside it
