"""``faers-anon fetch`` and ``faers-anon ingest``: the FDA's files in, typed tables out (stage 1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from faers_anon import api
from faers_anon.io.fetch import FDA_BASE_URL, FetchConfig

__all__ = ["fetch_command", "ingest_command"]


@click.command(name="fetch")
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
def fetch_command(quarters: tuple[str, ...], out: Path, base_url: str, timeout: float) -> None:
    """Download FDA FAERS quarterly ASCII zips (resumable, integrity-checked).

    Example: faers-anon fetch 2024Q1 2024Q2 -o downloads/
    """
    result = api.fetch(
        list(quarters), out, config=FetchConfig(base_url=base_url, timeout=timeout), progress=click.echo
    )
    click.echo(result.summary())


@click.command(name="ingest")
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
def ingest_command(sources: tuple[Path, ...], out: Path, **options: Any) -> None:
    """Read FAERS quarterly files (FDA zips or folders, FAERS or legacy AERS) into typed Parquet.

    Bad rows go to OUT/rejects/ with a reason; cases on DELETE lists are removed; versions of a case
    are merged into OUT/cases.parquet; OUT/ingest_report.json counts every row.

    Example: faers-anon ingest faers_ascii_2023q1.zip faers_ascii_2023q2.zip -o out/2023
    """
    from faers_anon.io.ingest import IngestConfig

    click.echo(api.ingest(list(sources), out, config=IngestConfig(**options)).summary())
