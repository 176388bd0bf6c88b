"""The ``faers-anon`` command line: parse options, call one function of :mod:`faers_anon.api`, print.

No polars and no arithmetic here. User errors are caught once, in :class:`FaersAnonGroup`, and
printed as one ``Error: ...`` line with exit code 1; bugs keep their traceback.
"""

from __future__ import annotations

from typing import Any

import click

from faers_anon import __version__
from faers_anon.errors import FaersAnonError
from hierarchies.errors import HierarchyError
from knowledge.errors import KnowledgeError
from signals.errors import SignalsError

__all__ = ["cli", "main", "USER_ERRORS"]

USER_ERRORS = (FaersAnonError, HierarchyError, KnowledgeError, SignalsError)


class FaersAnonGroup(click.Group):
    """A click group that turns user errors into one ``Error:`` line."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except USER_ERRORS as exc:
            raise click.ClickException(str(exc)) from exc


@click.group(cls=FaersAnonGroup)
@click.version_option(__version__, prog_name="faers-anon")
def cli() -> None:
    """faers-anon: anonymize FAERS quarterly data under MS(k,θ*)-bounding and check signal survival."""


def main() -> None:
    """Console-script entry point."""
    cli()
