"""The series step in a child process, so that its peak memory does not lie under the release's stages.

Source: issue 14 item 7 (a ledgered quarter's memory bounded by one quarter); docs/series.md §6
("Memory, fifth session"). :func:`prepare_apart` runs :func:`faers_anon.series.step.prepare` in a
child process and returns the same :class:`~faers_anon.series.step.SeriesStep`.

Decision (why a child): the step reads the ledger's state and the units' stored rows and computes
P(s | c) over several attempts. In the release's process what it frees stays mapped (polars' allocator
keeps freed pages for 10 s, :mod:`faers_anon._runtime`) while the anonymizer starts: a 100k quarter 4
peaked at 2.27 GB in the step against 1.73 GB for the whole stand-alone release. A child's pages go
back to the system when it exits, and its allocator hands freed pages back within a second
(:data:`faers_anon._runtime.STEP_ALLOCATOR_CONF`): its peak is about the step's live frames.

What comes back: the step without the ledger's state (one row per earlier case: about 100 MB at
that quarter, needed only to stage the ledger's update at publication), which :func:`with_state`
reads again from the ledger then (checked as when it was opened, and refused if the ledger changed
meanwhile), and without the frames the release never reads (:func:`_trimmed`: the plan's per-case
frames and the composition's cases, OUTC codes and own E; only the counts, E*_t, P(s | c) and θ* are
read): 57 of 132 MB of Arrow files at a 100k quarter 4, and the composition's 44 MB cases frame off
the release's memory while the engine reads the same cases from their file; the frames as Arrow IPC
files beside the pickle (a third of pickle's CPU both ways).

How: ``python -P -m faers_anon.series.apart OUT`` (``-P``: the current folder is not on its path),
the arguments pickled on its standard input (the agency key never touches a disk), the result written
to the folder ``OUT`` in the private work folder. The child is a session of its own (a Ctrl-C at the terminal
reaches the release, which stops it) and dies with the release (Linux: ``PR_SET_PDEATHSIG``); the
release kills it when it is interrupted or fails. An exception of the step is re-raised in the
release with its type, message and attributes (a user error stays one ``Error:`` line; any other keeps
the child's traceback as a note).
"""

from __future__ import annotations

import contextlib
import ctypes
import pickle
import shutil
import signal
import subprocess
import sys
import traceback
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import polars as pl

from faers_anon._runtime import child_environment
from faers_anon.errors import FaersAnonError, InputError
from faers_anon.series.ledger import open_ledger

if TYPE_CHECKING:
    from faers_anon.anonymize.config import AnonymizeConfig
    from faers_anon.keys import AgencyKey
    from faers_anon.series.step import SeriesStep

__all__ = ["prepare_apart", "with_state"]

#: The result's folder in the work folder: ``step.pickle`` and one Arrow IPC file per frame.
RESULT_NAME = "series-step"
_PICKLE = "step.pickle"
_PR_SET_PDEATHSIG = 1


def prepare_apart(
    ledger_dir: Path, ingested: Path, quarters: list[str], work: Path, config: AnonymizeConfig,
    key: AgencyKey, republish: bool = False,
) -> SeriesStep:  # fmt: skip
    """:func:`faers_anon.series.step.prepare` in a child process (module docstring); same arguments.
    The ledger's state is left out of the result (empty): :func:`with_state` before publication; so are
    the frames the release does not read (:func:`_trimmed`).

    Raises:
        what ``prepare`` raises; RuntimeError when the child ends without a result (killed).
    """
    out = work / RESULT_NAME
    job = pickle.dumps((ledger_dir, ingested, quarters, work, config, key, republish),
                       protocol=pickle.HIGHEST_PROTOCOL)
    command = [sys.executable, "-P", "-m", __name__, str(out)]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, env=child_environment(), start_new_session=True)
    try:
        with contextlib.suppress(BrokenPipeError):  # a child that died early: its code says so
            assert child.stdin is not None
            child.stdin.write(job)
            child.stdin.close()
        code = child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    if code != 0 or not (out / _PICKLE).is_file():
        raise RuntimeError(f"the series step's child process ended with code {code} and no result")
    with (out / _PICKLE).open("rb") as file:
        outcome = _Reader(file, out).load()
    shutil.rmtree(out)
    if outcome[0] == "ok":
        return outcome[1]  # type: ignore[no-any-return]
    raise _rebuilt(*outcome[1:])


def with_state(step: SeriesStep, key: AgencyKey) -> SeriesStep:
    """``step`` with its ledger opened again, state included (checked as :func:`open_ledger` checks it).

    Raises:
        InputError: the ledger is not the one the step planned on (another release updated it).
    """
    ledger = open_ledger(step.ledger.path, key)
    if ledger.meta != step.ledger.meta:
        raise InputError("ledger changed while this release was made (another release updated it); "
                         "nothing was published", path=step.ledger.path)  # fmt: skip
    return replace(step, ledger=ledger)


class _Writer(pickle.Pickler):
    """A pickler that writes every polars frame and series to an Arrow IPC file of ``folder``."""

    def __init__(self, file: IO[bytes], folder: Path) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._folder, self._count = folder, 0

    def persistent_id(self, obj: Any) -> tuple[str, str] | None:  # pickle's hook
        if isinstance(obj, pl.DataFrame):
            kind, frame = "frame", obj
        elif isinstance(obj, pl.Series):
            kind, frame = "series", obj.to_frame()
        else:
            return None
        self._count += 1
        name = f"{self._count}.arrow"
        frame.write_ipc(self._folder / name, compat_level=pl.CompatLevel.newest())
        return kind, name


class _Reader(pickle.Unpickler):
    """The unpickler of :class:`_Writer`'s files."""

    def __init__(self, file: IO[bytes], folder: Path) -> None:
        super().__init__(file)
        self._folder = folder

    def persistent_load(self, pid: Any) -> pl.DataFrame | pl.Series:  # pickle's hook
        kind, name = pid
        frame = pl.read_ipc(self._folder / name)
        return frame if kind == "frame" else frame.to_series()


def _rebuilt(kind: type[BaseException], args: tuple[Any, ...], attributes: dict[str, Any],
             trace: str) -> BaseException:  # fmt: skip
    """The child's exception in this process: its type, ``args`` and attributes, set without calling
    its ``__init__`` (whose signature may differ from ``args``, e.g. InfeasibleThetaError)."""
    error = kind.__new__(kind, *args)
    error.args = args
    error.__dict__.update(attributes)
    if not isinstance(error, FaersAnonError):  # a bug: where it happened
        error.add_note(f"in the series step's child process:\n{trace}")
    return error


def _outcome(error: BaseException) -> tuple[Any, ...]:
    """What the release needs to raise ``error`` again; a RuntimeError with its text when its
    attributes cannot be pickled."""
    trace = "".join(traceback.format_exception(error))
    outcome = ("error", type(error), error.args, dict(getattr(error, "__dict__", {})), trace)
    try:
        pickle.dumps(outcome)
    except Exception:  # noqa: BLE001 - any pickling failure: keep the message
        return ("error", RuntimeError, (f"{type(error).__name__}: {error}",), {}, trace)
    return outcome


def _trimmed(step: SeriesStep) -> SeriesStep:
    """``step`` as the release reads it (module docstring): the ledger's state, the plan's frames
    (``frozen``, ``withheld``, ``republish``: the counts stay) and the composition's ``cases``,
    ``outcomes`` and ``own`` emptied (their schemas kept; ``outcomes`` and ``own`` None stay None)."""
    ledger = replace(step.ledger, state=step.ledger.state.clear())  # read again at publication
    plan = replace(step.plan, frozen=step.plan.frozen.clear(), withheld=step.plan.withheld.clear(),
                   republish=step.plan.republish.clear())  # fmt: skip
    inputs = step.inputs
    if inputs is not None:
        inputs = replace(inputs, cases=inputs.cases.clear(),
                         outcomes=None if inputs.outcomes is None else inputs.outcomes.clear(),
                         own=None if inputs.own is None else inputs.own.clear())  # fmt: skip
    return replace(step, ledger=ledger, plan=plan, inputs=inputs)


def _die_with_parent() -> None:
    """Ask Linux to kill this process when the release's process ends (elsewhere: nothing)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _main(out: Path) -> None:
    """The child: read the arguments on stdin, run the step, write the outcome to ``out``."""
    _die_with_parent()
    job = pickle.load(sys.stdin.buffer)
    from faers_anon.series.step import prepare

    try:
        outcome: tuple[Any, ...] = ("ok", _trimmed(prepare(*job)))
    except BaseException as error:  # noqa: BLE001 - every outcome goes back to the release
        outcome = _outcome(error)
    out.mkdir(mode=0o700)
    partial = out / (_PICKLE + ".partial")
    with partial.open("wb") as file:
        _Writer(file, out).dump(outcome)
    partial.replace(out / _PICKLE)


if __name__ == "__main__":
    _main(Path(sys.argv[1]))
