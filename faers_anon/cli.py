"""The ``faers-anon`` command line: parse options, call one function of :mod:`faers_anon.api`, print.

This module holds the group, its error handling and the input commands (``fetch``, ``ingest``); the
other commands live in :mod:`faers_anon.commands`, one module per stage, and the options of
``anonymize`` and ``release`` are generated from one table (:mod:`faers_anon.release.options`).

No polars and no arithmetic here. User errors are caught once, in :class:`FaersAnonGroup`, and
printed as one ``Error: ...`` line with exit code 1; bugs keep their traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from faers_anon import __version__, api, configure
from faers_anon.commands.anonymize import anonymize_command, release_command
from faers_anon.commands.check import risk_command, verify_command
from faers_anon.commands.signals import compare_command, signals_command
from faers_anon.errors import FaersAnonError, Interrupted
from faers_anon.evaluate.command import evaluate_command
from faers_anon.io.fetch import FDA_BASE_URL, FetchConfig
from faers_anon.io.ingest import IngestConfig
from faers_anon.io.workspace import signals_raise
from hierarchies.errors import HierarchyError
from knowledge.errors import KnowledgeError
from signals.errors import SignalsError

__all__ = ["cli", "main", "USER_ERRORS"]

USER_ERRORS = (FaersAnonError, HierarchyError, KnowledgeError, SignalsError)


class FaersAnonGroup(click.Group):
    """A click group that turns user errors into one ``Error:`` line.

    Every error, click's own included (unknown option, bad value, missing argument), is printed as
    one ``Error: ...`` line on stderr with exit code 1; a usage error names the ``--help`` to read
    instead of printing the usage block. SIGINT, SIGTERM and SIGHUP stop the command through
    :class:`~faers_anon.errors.Interrupted` (its temporary folders are removed on the way out):
    one ``Error:`` line, exit code 128 + the signal's number.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except USER_ERRORS as exc:
            raise click.ClickException(str(exc)) from exc

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
            sys.exit(code)
        return code


@click.group(cls=FaersAnonGroup)
@click.version_option(__version__, prog_name="faers-anon")
def cli() -> None:
    """faers-anon: anonymize FAERS quarterly data under MS(k,θ*)-bounding and check signal survival."""


@cli.command()
@click.argument("quarters", nargs=-1, required=True)
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder for the downloaded zips (created if needed).",
)
@click.option(
    "--base-url",
    default=FDA_BASE_URL,
    show_default=True,
    help="Where the FDA publishes the quarterly ASCII zips.",
)
@click.option(
    "--timeout", default=60.0, show_default=True, type=float, help="Seconds to wait for the server."
)
def fetch(quarters: tuple[str, ...], out: Path, base_url: str, timeout: float) -> None:
    """Download FDA FAERS quarterly ASCII zips (resumable, integrity-checked).

    Example: faers-anon fetch 2024Q1 2024Q2 -o downloads/
    """
    result = api.fetch(
        list(quarters), out, config=FetchConfig(base_url=base_url, timeout=timeout), progress=click.echo
    )
    click.echo(result.summary())


@cli.command()
@click.argument("sources", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder for the ingested tables (replaced if it holds a previous ingest).",
)
@click.option("--demo", is_flag=True, help="Also ingest the bundled demo quarter.")
@click.option(
    "--drug-names",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Brand -> ingredient lookup for drug_key (docs/formats.md; e.g. FDA's unii_names_bn_of.tsv).",
)
@click.option(
    "--work-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Parent of the private (0700) work folder the tables are built in [default: the system "
    "temp folder, $TMPDIR].",
)
def ingest(sources: tuple[Path, ...], out: Path, **options: Any) -> None:
    """Read FAERS quarterly files (FDA zips or folders, FAERS or legacy AERS) into typed Parquet.

    Bad rows go to OUT/rejects/ with a reason; cases on DELETE lists are removed; versions of a case
    are merged into OUT/cases.parquet; OUT/ingest_report.json counts every row.

    Example: faers-anon ingest faers_ascii_2023q1.zip faers_ascii_2023q2.zip -o out/2023
    """
    click.echo(api.ingest(list(sources), out, config=IngestConfig(**options)).summary())


for command in (
    anonymize_command,
    verify_command,
    signals_command,
    compare_command,
    release_command,
    risk_command,
    evaluate_command,
):
    cli.add_command(command)


def main() -> None:
    """Console-script entry point: process settings first (faers_anon.configure), then the command."""
    configure(progress=click.echo)
    cli()
