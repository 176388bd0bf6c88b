"""The ``faers-anon`` command line: parse options, call one function of :mod:`faers_anon.api`, print.

This module holds the group and its error handling; the commands live in :mod:`faers_anon.commands`,
one module per stage (``evaluate`` in :mod:`faers_anon.evaluate.command`), and the options of
``anonymize`` and ``release`` are generated from one table (:mod:`faers_anon.release.options`).

No polars and no arithmetic here. User errors are caught once, in :class:`FaersAnonGroup`, and
printed as one ``Error: ...`` line with exit code 1; bugs keep their traceback.

Decision (start-up, issue 18 item 6): a command's module is imported only when that command runs or
shows its help (:data:`COMMANDS`, :class:`LazyCommands`). Its options need the option table and its
run needs polars, numba, scipy, matplotlib…: importing every command eagerly took 2.4 s of the 3.3 s
that ``faers-anon --version`` took. The group's ``--help`` lists each command by the first paragraph
of its help, kept in :data:`COMMANDS` (a test checks that it is the command's own, so the listing is
the one click would print from the commands themselves).
"""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from typing import Any, Final, NamedTuple

import click

from faers_anon import __version__, configure
from faers_anon.errors import FaersAnonError, Interrupted
from faers_anon.io.workspace import signals_raise

__all__ = ["COMMANDS", "LIBRARY_ERRORS", "LazyCommands", "cli", "main", "user_errors"]


class Where(NamedTuple):
    """Where a command is defined, and the first paragraph of its help (the group's listing)."""

    module: str
    attribute: str
    summary: str


COMMANDS: Final[Mapping[str, Where]] = {
    "fetch": Where(
        "faers_anon.commands.inputs", "fetch_command",
        "Download FDA FAERS quarterly ASCII zips (resumable, integrity-checked).",
    ),
    "ingest": Where(
        "faers_anon.commands.inputs", "ingest_command",
        "Read FAERS quarterly files (FDA zips or folders, FAERS or legacy AERS) into typed Parquet.",
    ),
    "anonymize": Where(
        "faers_anon.commands.anonymize", "anonymize_command",
        "Anonymize an ingested folder under MS(k,θ*)-bounding and write the release.",
    ),
    "verify": Where(
        "faers_anon.commands.check", "verify_command",
        "Re-check a release from its files alone: its privacy model, its certificate, its integrity.",
    ),
    "signals": Where(
        "faers_anon.commands.signals", "signals_command",
        "PRR, ROR, IC, chi-square and signal criteria for every drug-event pair of DATA.",
    ),
    "compare": Where(
        "faers_anon.commands.signals", "compare_command",
        "Signal survival from RAW (ingested folder) to RELEASE, and the MedWatch reference panel.",
    ),
    "release": Where(
        "faers_anon.commands.anonymize", "release_command",
        "Ingest, anonymize, verify, compare signals and report: one publishable release folder.",
    ),
    "risk": Where(
        "faers_anon.commands.check", "risk_command",
        "What an attacker who knows X learns from RELEASE: re-identification, linkage, inference, "
        "composition.",
    ),
    "evaluate": Where(
        "faers_anon.evaluate.command", "evaluate_command",
        "Compare the privacy models (and methods) on NIL, DR and signal survival, as Lin et al. 2016 did.",
    ),
}  # fmt: skip
"""Every command of the group: where it is defined and its help's first paragraph (module docstring)."""

LIBRARY_ERRORS: Final = (
    ("hierarchies.errors", "HierarchyError"),
    ("knowledge.errors", "KnowledgeError"),
    ("signals.errors", "SignalsError"),
)
"""The error base of each library (module, class): user mistakes, like :class:`FaersAnonError`."""


def user_errors() -> tuple[type[Exception], ...]:
    """:class:`FaersAnonError` and the error base of every library imported so far: a library that
    was never imported raised nothing, so it is not imported (with its dependencies) to be checked."""
    loaded = [(sys.modules.get(module), name) for module, name in LIBRARY_ERRORS]
    return (FaersAnonError, *(getattr(module, name) for module, name in loaded if module is not None))


class LazyCommands(MutableMapping[str, click.Command]):
    """A group's commands by name, each imported from :data:`COMMANDS` when first looked up.

    Iterating and ``in`` use the names alone (nothing is imported: click lists the names sorted);
    ``commands[name]`` and ``commands.get(name)`` import the command's module.
    """

    def __init__(self, where: Mapping[str, Where]) -> None:
        self._where = dict(where)
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            where = self._where[name]  # KeyError: no such command
            self._loaded[name] = getattr(importlib.import_module(where.module), where.attribute)
        return self._loaded[name]

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return self[name] if name in self else default

    def __contains__(self, name: object) -> bool:
        return name in self._where or name in self._loaded

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._where.pop(name, None)
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(self._where), **dict.fromkeys(self._loaded)})

    def __len__(self) -> int:
        return len(set(self._where) | set(self._loaded))

    def listed(self, name: str) -> click.Command:
        """The command if imported, else a stand-in with its help's first paragraph (the listing)."""
        if name in self._loaded or name not in self._where:
            return self[name]
        return click.Command(name, help=self._where[name].summary)


class FaersAnonGroup(click.Group):
    """A click group that turns user errors into one ``Error:`` line.

    Every error, click's own included (unknown option, bad value, missing argument), is printed as
    one ``Error: ...`` line on stderr with exit code 1; a usage error names the ``--help`` to read
    instead of printing the usage block. SIGINT, SIGTERM and SIGHUP stop the command through
    :class:`~faers_anon.errors.Interrupted` (its temporary folders are removed on the way out):
    one ``Error:`` line, exit code 128 + the signal's number.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = LazyCommands(COMMANDS)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's listing, of the commands as :meth:`LazyCommands.listed` gives them (no import)."""
        commands = self.commands
        listed = commands.listed if isinstance(commands, LazyCommands) else commands.__getitem__
        listing = click.Group(self.name, commands={name: listed(name) for name in self.list_commands(ctx)})
        listing.format_commands(ctx, formatter)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            if isinstance(exc, user_errors()):
                raise click.ClickException(str(exc)) from exc
            raise

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        code, message = 0, None
        try:
            with signals_raise():
                result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            code = result if isinstance(result, int) else 0
        except click.exceptions.NoArgsIsHelpError as exc:
            click.echo(exc.ctx.get_help())
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "faers-anon"
            code, message = 1, f"{exc.format_message()} (see '{where} --help')"
        except click.ClickException as exc:
            code, message = 1, exc.format_message()
        except click.Abort:
            code, message = 1, "aborted"
        except Interrupted as exc:
            code, message = 128 + exc.signum, f"{exc}: stopped; its temporary folders were removed"
        if message is not None:
            click.echo("Error: " + " ".join(message.split()), err=True)
        if standalone_mode:
            # The process ends here: frozen, the heap is not walked again by the interpreter's exit
            # (numba and polars leave ~140k objects; 0.25-0.35 CPU-s of an ingest's exit, helper run).
            gc.freeze()
            sys.exit(code)
        return code


@click.group(cls=FaersAnonGroup)
@click.version_option(__version__, prog_name="faers-anon")
def cli() -> None:
    """faers-anon: anonymize FAERS quarterly data under MS(k,θ*)-bounding and check signal survival."""


def main() -> None:
    """Console-script entry point: process settings first (faers_anon.configure), then the command."""
    configure(progress=click.echo)
    cli()
