"""The release's stages on worker threads beside each other, or one after the other (issue 18, item 6).

:class:`Stages` starts a stage as a :class:`Task`: in ``concurrent`` mode (the default) on a thread of
its own, started at once; in ``sequential`` mode it runs in the caller's thread when its result is
first asked for, so the pipeline's order of calls is its order of stages. ``FAERS_ANON_STAGES``
(:data:`STAGES_ENV`) chooses; the release's files are the same either way (a test compares them).

Decision (threads, not processes): the stages' work is polars queries, numpy and numba kernels, which
release the GIL (the kernels are compiled ``nogil``: :mod:`faers_anon._numba_cache`), so two threads
keep both cores busy without copying the data between processes; a thread shares the caller's
context variables (the kernels' compile mode and size, :func:`contextvars.copy_context`).

Decision (an outcome nobody will read): when the block of :class:`Stages` ends, normally or by an
exception (a failed verification, a stage's error, SIGINT/SIGTERM turned into ``Interrupted``), every
task still running is cancelled: :class:`Cancelled` is raised inside its thread at its next Python
step (``PyThreadState_SetAsyncExc``), so a stage stops within its current polars query or kernel
call, never halfway through a Python statement of ours; then the block waits for every thread to end.
Only then does the caller go on (and the release's work folder is removed): no thread still reads it.
A cancelled task's outcome is discarded; the exception that ended the block is the one raised.

Decision (what a cancelled stage leaves behind): :class:`Cancelled` may land between ``open()``
returning and its ``with`` taking the file (``Path.read_bytes`` is such a place). The file object,
not yet anyone's, is then finalized as the exception unwinds: closed at once, in the stopped thread,
with a ``ResourceWarning`` that it was not closed by its owner (an error under ``-W error``, reported
through :data:`sys.unraisablehook` against whatever runs next). That warning is expected, so while the
block stops its tasks it drops a ``ResourceWarning`` raised in a thread it stopped, and passes every
other report on. The stopped frames also stay reachable from the exception's traceback, holding the
stage's files and data frames until the :class:`Stages` is dropped; so once the threads have ended,
the block closes the file objects those frames hold as locals (a file left open keeps its bytes on
disk after the work folder is removed) and clears the frames, freeing the stage's memory before the
caller goes on.

Decision (modules imported ahead, :meth:`Stages.preload`): a thread imports the modules of later
stages while earlier ones run. It is never cancelled (an exception raised inside the import system could
leave a module's import lock held); the block's end waits for it instead (at most the imports' own
time). An import that fails there is forgotten: the module is not in ``sys.modules``, so the stage that
needs it imports it again and raises the module's own error. Two threads importing the same module is
safe (the import system's per-module locks); our package has no import cycle (``tests/test_imports.py``).
"""

from __future__ import annotations

import contextvars
import ctypes
import gc
import importlib
import io
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Final, Generic, TypeVar

from faers_anon.errors import ConfigError

__all__ = ["STAGES_ENV", "Cancelled", "Stages", "Task", "concurrent_stages"]

#: ``concurrent`` (default) or ``sequential``: how :class:`Stages` runs the release's stages.
STAGES_ENV: Final = "FAERS_ANON_STAGES"
_MODES: Final = ("concurrent", "sequential")

_T = TypeVar("_T")

log = logging.getLogger(__name__)


class Cancelled(BaseException):
    """Raised inside a stage's thread whose outcome is no longer wanted (a BaseException, so that no
    ``except Exception`` of the stage's code swallows it)."""


def concurrent_stages() -> bool:
    """Whether stages run on threads beside each other (:data:`STAGES_ENV`, default ``concurrent``).

    Raises:
        ConfigError: any other value (one ``Error:`` line naming the variable).
    """
    chosen = os.environ.get(STAGES_ENV, "concurrent")
    if chosen not in _MODES:
        choices = ", ".join(_MODES)
        raise ConfigError(f"environment variable {STAGES_ENV} must be one of {choices}; got {chosen!r}")
    return chosen == "concurrent"


class Task(Generic[_T]):
    """One stage: its function, its outcome, and the wall seconds its own work took (``seconds``)."""

    def __init__(
        self, name: str, work: Callable[[], _T], *, announce: Callable[[], object] | None = None
    ) -> None:
        self.name = name
        self._announce = announce
        self.seconds = 0.0
        self._work: Callable[[], _T] | None = work
        self._context = contextvars.copy_context()
        self._thread: threading.Thread | None = None
        self._value: _T | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._running = False

    def _run(self) -> None:
        """Do the work once and keep its value or exception (a stage's error surfaces in :meth:`result`).

        :meth:`cancel` sends :class:`Cancelled` only between the two ``with self._lock`` blocks, so it
        arrives inside the outer ``try`` (at the latest when the second block ends), never in the
        thread's own start or teardown.
        """
        try:
            with self._lock:
                work, self._work = self._work, None
                self._running = work is not None
            if work is None:
                return
            start = time.perf_counter()
            try:
                self._value = self._context.run(work)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller of result()
                self._error = exc
            self.seconds = time.perf_counter() - start
            with self._lock:
                self._running = False
        except Cancelled:  # delivered after the work ended, while its outcome was being kept
            self._error = Cancelled(self.name)

    def start(self) -> None:
        """Run on a daemon thread of its own (daemon: an interrupted process does not wait for it).

        The thread is kept before it is started: a signal handler may raise (``Interrupted``) while
        ``Thread.start`` waits for the new thread to come up, and that thread, already created, is
        then joined like any other (:func:`_join`)."""
        if self._announce is not None:
            self._announce()
        self._thread = threading.Thread(target=self._run, name=f"faers-anon {self.name}", daemon=True)
        self._thread.start()

    def result(self) -> _T:
        """The stage's value, once it has run (here, in sequential mode); its exception re-raised."""
        if self._thread is None:
            if self._announce is not None and self._work is not None:
                self._announce()
            self._run()
        else:
            _join(self._thread)
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    def cancel(self) -> None:
        """Raise :class:`Cancelled` in a running thread (module docstring); nothing once it ended."""
        with self._lock:
            thread = self._thread
            if thread is not None and self._running and thread.ident is not None:
                _raise_in(thread.ident, Cancelled)
            self._work = None  # a sequential task not run yet never runs

    @property
    def running(self) -> bool:
        """Whether the stage's work is running on its thread now."""
        with self._lock:
            return self._running and self._thread is not None

    @property
    def ident(self) -> int | None:
        """The identifier of the stage's thread (``None`` before it started, and in sequential mode)."""
        return None if self._thread is None else self._thread.ident

    def join(self) -> None:
        if self._thread is not None:
            _join(self._thread)

    def let_go(self) -> None:
        """Once the thread ended: if the stage was stopped, close the files its frames hold and free
        them (module docstring); its outcome stays :class:`Cancelled`."""
        error = self._error
        if not isinstance(error, Cancelled):
            return
        self._error = Cancelled(self.name)
        self._value = None
        _let_go(error)


#: Seconds :func:`_join` waits for a thread whose start was interrupted to come up.
_COME_UP_SECONDS: Final = 5.0


def _join(thread: threading.Thread) -> None:
    """Wait for ``thread`` to end, also when its ``start()`` was interrupted.

    ``Thread.start`` creates the OS thread, then waits for it to say it is up; a signal handler raising
    during that wait leaves a thread that runs but is not yet marked started, and ``Thread.join``
    refuses such a thread (``RuntimeError``). So: retry until it is marked started, for at most
    :data:`_COME_UP_SECONDS` (longer means the thread was never created: ``start()`` failed before)."""
    deadline = time.monotonic() + _COME_UP_SECONDS
    while True:
        try:
            thread.join()
            return
        except RuntimeError:
            if thread.is_alive() or time.monotonic() > deadline:
                raise
            time.sleep(0.001)


def _raise_in(thread: int, kind: type[BaseException]) -> None:
    """Have ``kind`` raised in the Python thread ``thread`` at its next step (CPython's C API)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread), ctypes.py_object(kind))


class Stages:
    """The block within which stages run (module docstring): ``with Stages(say) as stages: ...``.

    Args:
        say: told ``[name] …`` when a stage starts (in sequential mode: when it is first asked for).
        concurrent: threads or one after the other; default from :data:`STAGES_ENV`.
    """

    def __init__(self, say: Callable[[str], object] | None = None, *, concurrent: bool | None = None) -> None:
        self.concurrent = concurrent_stages() if concurrent is None else concurrent
        self._say = say or (lambda _line: None)
        self._tasks: list[Task[Any]] = []
        self._imports: list[threading.Thread] = []

    def start(self, name: str, work: Callable[[], _T], *, announce: bool = True) -> Task[_T]:
        """A task doing ``work``: started now on its own thread, or (sequential) when first asked."""
        line = f"[{name}] …" if announce else None
        task = Task(name, work, announce=None if line is None else lambda: self._say(line))
        self._tasks.append(task)
        if self.concurrent:
            task.start()
        return task

    def preload(self, modules: Sequence[str]) -> None:
        """Import ``modules`` on a thread of their own, in order (concurrent mode; nothing in sequential
        mode, where each is imported at its first use). Module docstring: never cancelled, waited for."""
        if self.concurrent:
            thread = threading.Thread(
                target=_import, args=(tuple(modules),), name="faers-anon imports", daemon=True
            )
            self._imports.append(thread)  # kept before start(): Task.start says why
            thread.start()

    def __enter__(self) -> Stages:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, trace: TracebackType | None
    ) -> None:
        stopped = {task.ident for task in self._tasks if task.running}
        previous = sys.unraisablehook
        sys.unraisablehook = _QuietFor(stopped, previous)
        try:
            for task in self._tasks:
                task.cancel()
            for task in self._tasks:
                task.join()
        finally:
            if isinstance(sys.unraisablehook, _QuietFor):
                sys.unraisablehook = previous
        for thread in self._imports:
            _join(thread)
        for task in self._tasks:
            task.let_go()


class _QuietFor:
    """An unraisable hook dropping a ``ResourceWarning`` raised in one of the ``stopped`` threads (module
    docstring: a file finalized as :class:`Cancelled` unwinds); every other report goes to ``passed``."""

    def __init__(self, stopped: set[int | None], passed: Callable[[Any], object]) -> None:
        self._stopped = stopped
        self._passed = passed

    def __call__(self, report: Any) -> None:
        if issubclass(report.exc_type, ResourceWarning) and threading.get_ident() in self._stopped:
            log.debug("a stopped stage's file was closed by its finalizer: %s", report.exc_value)
            return
        self._passed(report)


def _let_go(error: BaseException) -> None:
    """Close the file objects the ended frames of ``error``'s traceback hold as locals (what
    :func:`gc.get_referents` finds of an ended frame), then clear those frames and drop the traceback."""
    trace = error.__traceback__
    error.__traceback__ = None
    while trace is not None:
        frame = trace.tb_frame
        for held in gc.get_referents(frame):
            if isinstance(held, io.IOBase) and not held.closed:
                try:
                    held.close()
                except OSError as exc:  # a file that cannot flush: its data is the stopped stage's
                    log.debug("closing a file of a stopped stage failed: %s", exc)
        try:
            frame.clear()
        except RuntimeError:  # still running: not a frame of the ended thread
            pass
        trace = trace.tb_next


def _import(modules: tuple[str, ...]) -> None:
    """Import each module; one that fails is left to its first use (module docstring)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - raised again where the module is used
            log.debug("importing %s ahead failed: %s", name, exc)
