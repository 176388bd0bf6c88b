"""The ``faers-anon`` command line: parse options, call one function of :mod:`faers_anon.api`, print.

No polars and no arithmetic here. User errors are caught once, in :class:`FaersAnonGroup`, and
printed as one ``Error: ...`` line with exit code 1; bugs keep their traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from faers_anon import __version__, api
from faers_anon.errors import FaersAnonError, VerificationError
from faers_anon.fetch import FDA_BASE_URL, FetchConfig
from faers_anon.io.ingest import IngestConfig
from faers_anon.verify import VerifyConfig
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
    help="Brand -> ingredient lookup for drug_key (e.g. FDA's unii_names_bn_of.tsv).",
)
def ingest(sources: tuple[Path, ...], out: Path, **options: Any) -> None:
    """Read FAERS quarterly files (FDA zips or folders, FAERS or legacy AERS) into typed Parquet.

    Bad rows go to OUT/rejects/ with a reason; cases on DELETE lists are removed; versions of a case
    are merged into OUT/cases.parquet; OUT/ingest_report.json counts every row.

    Example: faers-anon ingest faers_ascii_2023q1.zip faers_ascii_2023q2.zip -o out/2023
    """
    click.echo(api.ingest(list(sources), out, config=IngestConfig(**options)).summary())


@cli.command()
@click.argument("release", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--k", type=int, default=None, help="Minimum distinct cases per group [default: manifest's].")
@click.option("--no-hashes", is_flag=True, help="Skip the SHA-256 check of the files manifest.json lists.")
def verify(release: Path, k: int | None, no_hashes: bool) -> None:
    """Re-check a release against MS(k,θ*)-bounding from its files alone; exit 1 when it fails.

    Prints DR, the group-size distribution and the violating groups (first 20, then a count).

    Example: faers-anon verify out/release-24Q1 --k 5
    """
    verdict = api.verify(release, config=VerifyConfig(k=k, check_hashes=not no_hashes))
    click.echo(verdict.summary(limit=20))
    if not verdict.ok:
        count = verdict.violations.height
        raise VerificationError(f"{release}: fails MS(k={verdict.k}, θ*)-bounding ({count} violation(s))")


def main() -> None:
    """Console-script entry point."""
    cli()
