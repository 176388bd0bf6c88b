"""Private work folders, cleanup on signals, and the atomic move of a finished folder into place (issue 12).

Decisions:
    * **Where raw data lives.** Intermediate tables (exact ages, dates, countries) are written only
      in a private folder made by :func:`tempfile.mkdtemp` (mode 0700: no other user can list or read
      it), named ``faers-anon-<what>-<random>``, under the system temporary folder (``TMPDIR``) or a
      folder the user names (``--work-dir``). Never beside the output: the folder a release is
      published from is never one whose siblings hold raw data.
    * **Cleanup.** The folder is removed on success and on any exception; :func:`signals_raise`
      turns SIGINT, SIGTERM and SIGHUP into :class:`~faers_anon.errors.Interrupted` so the same
      ``finally`` blocks run (a second signal during cleanup is ignored, so the cleanup finishes).
      A SIGKILL cannot be caught: each work folder holds ``owner.pid`` (the pid and, on Linux, the
      process's start time) and every later run removes the work folders of the same user, under
      the same parent, whose owner is no longer running (a pid now held by a process that started
      at another time counts as gone; without a start time a reused pid keeps the folder).
    * **Publication.** A finished folder is first moved to a hidden ``.<OUT>.staging-<pid>`` beside
      ``OUT`` (a rename on the same filesystem, else a copy: a rename across filesystems is not
      possible), then renamed to ``OUT``: a rename within one folder is atomic, so ``OUT`` is always
      either the earlier complete folder or the new one. An earlier ``OUT`` is renamed to
      ``.<OUT>.old-<pid>`` first and removed last; on any failure it is put back. Only finished,
      publishable content ever sits in the staging folder. Hidden siblings of ``OUT`` that a killed
      run left (``.<OUT>.staging-<pid>``, ``.<OUT>.old-<pid>``, ``.<OUT>.tmp-<pid>`` with a dead pid,
      and the ``.<OUT>.work-*`` / ``.<OUT>.partial`` folders of versions before 0.2) are removed
      before publishing. A release and its restricted folder (``<OUT>-restricted``) are published
      by :func:`publish_release`, restricted first, each in one rename; ``release`` and the
      standalone ``anonymize`` both build in a work folder and publish this way.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from faers_anon.errors import InputError, Interrupted
from faers_anon.io.targets import check_replaceable

__all__ = [
    "make_work_folder",
    "remove_work_folder",
    "work_folder",
    "remove_stale",
    "signals_raise",
    "paused_gc",
    "publish_folder",
    "publish_release",
    "OWNER_FILE",
    "PREFIX",
]

#: Name prefix of every work folder (``faers-anon-release-…``, ``faers-anon-ingest-…``).
PREFIX = "faers-anon-"
#: File in a work folder holding its owner's process id.
OWNER_FILE = "owner.pid"
_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def _started(pid: int) -> str:
    """When process ``pid`` started, in clock ticks since boot (Linux ``/proc``), or "" if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        return stat.rsplit(")", 1)[1].split()[19]  # field 22, counted after the command name
    except (OSError, IndexError):
        return ""


def _alive(pid: int, started: str = "") -> bool:
    """Whether process ``pid`` (started at ``started``, if recorded) still runs.

    A recorded start time that differs from the running process's means the pid was reused (a new
    container's pid 1, a wrapped-around pid): the owner is gone. Unknown counts as alive (the
    folder is then kept).
    """
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: another user's live process
        return True
    now = _started(pid)
    return not (started and now and now != started)


def _owner(folder: Path) -> tuple[int, str] | None:
    """The pid and start time ``owner.pid`` records (``"<pid> <start ticks>"``)."""
    try:
        fields = (folder / OWNER_FILE).read_text(encoding="ascii").split()
        return int(fields[0]), fields[1] if len(fields) > 1 else ""
    except (OSError, ValueError, IndexError):
        return None


def _mine(path: Path) -> bool:
    try:
        return os.name != "posix" or path.lstat().st_uid == os.getuid()
    except OSError:
        return False


def remove_stale(parent: Path, /) -> list[Path]:
    """Remove this user's work folders under ``parent`` whose owner process is gone; return them."""
    removed = []
    for folder in parent.glob(f"{PREFIX}*"):
        owner = _owner(folder)
        if owner is not None and folder.is_dir() and _mine(folder) and not _alive(*owner):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def make_work_folder(what: str, base: Path | None = None, /) -> Path:
    """A new private (0700) work folder under ``base`` (default: the system temp folder).

    Stale work folders of earlier killed runs under the same parent are removed first.

    Raises:
        InputError: the folder cannot be created.
    """
    parent = Path(base) if base is not None else Path(tempfile.gettempdir())
    try:
        parent.mkdir(parents=True, exist_ok=True)
        remove_stale(parent)
        folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{what}-", dir=parent))
    except OSError as exc:
        raise InputError(f"cannot create a work folder ({exc.strerror or exc})", path=parent) from exc
    try:
        (folder / OWNER_FILE).write_text(f"{os.getpid()} {_started(os.getpid())}\n", encoding="ascii")
    except BaseException as exc:  # a full disk, an interrupt: no folder without its owner stays behind
        shutil.rmtree(folder, ignore_errors=True)
        if isinstance(exc, OSError):
            raise InputError(f"cannot write in the work folder ({exc.strerror or exc})", path=folder) from exc
        raise
    return folder


def remove_work_folder(folder: Path, /, *, keep: bool = False) -> None:
    """Remove a work folder; with ``keep`` only its ``owner.pid`` (so no later run removes it)."""
    if keep:
        (folder / OWNER_FILE).unlink(missing_ok=True)
    else:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def work_folder(what: str, base: Path | None = None, /, *, keep: bool = False) -> Iterator[Path]:
    """:func:`make_work_folder`, removed on exit (success, exception, interrupt) unless ``keep``."""
    folder = make_work_folder(what, base)
    try:
        yield folder
    finally:
        remove_work_folder(folder, keep=keep)


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """Within the block, SIGINT/SIGTERM/SIGHUP raise :class:`Interrupted` once; handlers restored after.

    Signals the process ignores (``SIG_IGN``, e.g. SIGINT of a background job) stay ignored. Outside
    the main thread nothing is installed (Python delivers signals to the main thread only).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        if fired:  # already stopping: let the cleanup finish
            return
        fired.append(signum)
        raise Interrupted(signum)

    previous = {}
    for signum in _SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old if old is not None else signal.SIG_DFL)


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Within the block, Python's cyclic garbage collector does not run; as it was after.

    Decision (speed): the ingest allocates few Python objects that could form cycles (its data lives
    in polars and Arrow), but the imports inside it (numba's, when it split the files) and the glue
    around the tables trigger a few hundred collections, full ones over every module object loaded
    (0.3-0.5 CPU-s of a 400k-case ingest, ``gc.callbacks``). Reference counting still frees everything
    that is not in a cycle, and the cycles left are collected after the block.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_STALE = (
    r"\.{name}\.(?:staging|old|tmp)-(\d+)"
    r"|\.\.{name}\.staging-(\d+)\.tmp-\d+"
    r"|\.{name}\.work-\w+|\.{name}\.partial"
)


def _remove_stale_siblings(out: Path) -> None:
    """Remove hidden siblings of ``out`` that killed runs left (see the module docstring)."""
    pattern = re.compile(_STALE.format(name=re.escape(out.name)))
    for path in out.parent.iterdir() if out.parent.is_dir() else ():
        match = pattern.fullmatch(path.name)
        if match is None or not path.is_dir() or not _mine(path):
            continue
        pid = match.group(1) or match.group(2)
        if pid is None or not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def publish_folder(built: Path, out: Path, /) -> None:
    """Move the finished folder ``built`` to ``out`` (resolved) in one atomic rename, replacing ``out``.

    The caller has checked that ``out`` may be replaced (:mod:`faers_anon.io.targets`).
    """
    _remove_stale_siblings(out)
    staging = out.with_name(f".{out.name}.staging-{os.getpid()}")
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    moved_old = False
    try:
        _move(built, staging)
        if out.exists():
            os.rename(out, old)
            moved_old = True
        os.rename(staging, out)
    except BaseException:
        if moved_old:
            if out.exists():
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.rename(old, out)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if moved_old:
        try:
            shutil.rmtree(old)
        finally:  # an interrupt during the removal: finish it, then stop
            shutil.rmtree(old, ignore_errors=True)


def _move(built: Path, staging: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)
    try:
        os.rename(built, staging)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        shutil.copytree(built, staging)


def publish_release(built: Path, out: Path, /, *, force: bool) -> None:
    """Move the finished release ``built`` and its restricted folder (if any) to ``out``, each atomically.

    The restricted folder ``<built>-restricted`` goes first (to ``<out>-restricted``), so a visible
    release is always complete. ``out`` is checked again (another run may have written it since the
    command started).

    Raises:
        OutputError: ``out`` may not be replaced (:func:`faers_anon.io.targets.check_replaceable`).
        InputError: a rename failed; nothing was published.
    """
    check_replaceable(out, force=force)
    restricted = built.with_name(f"{built.name}-restricted")
    try:
        if restricted.exists():
            publish_folder(restricted, out.with_name(f"{out.name}-restricted"))
        publish_folder(built, out)
    except OSError as exc:
        raise InputError(
            f"cannot publish the release ({exc.strerror or exc}); nothing was published", path=out
        ) from exc
