"""``faers-anon anonymize`` and ``faers-anon release``: their options come from the option table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from faers_anon import api
from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.commands.options import table_options
from faers_anon.io.targets import check_outputs
from faers_anon.release.options import OPTIONS

__all__ = ["anonymize_command", "release_command"]

MODEL_OPTIONS = tuple(name for name, option in OPTIONS.items() if option.section == "anonymize")
"""The options of the privacy model, θ* and the engine: every ``anonymize`` entry of the table."""
RELEASE_ORDER = (
    "demo", "drug_names", *MODEL_OPTIONS, "stratify", "conditions", "min_a", "role", "criterion",
    "reference", "outcome_groups", "force", "work", "keep_work", "ledger", "republish",
)  # fmt: skip


@click.command(name="anonymize")
@click.argument("ingested", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Release folder to write.",
)
@table_options(MODEL_OPTIONS)
@click.option("--force", is_flag=True, help="Replace an existing release folder.")
def anonymize_command(ingested: Path, out: Path, theta_rule: str | None, **options: Any) -> None:
    """Anonymize an ingested folder under MS(k,θ*)-bounding and write the release.

    Example: faers-anon anonymize out/2024Q1 -o out/release-24Q1 --k 5 --theta 0.4 --on-infeasible raise-theta
    """
    rule = theta_rule or ("level" if options["theta_file"] is not None else "uniform")
    click.echo(api.anonymize(ingested, out, config=AnonymizeConfig(theta_rule=rule, **options)).summary())


@click.command(name="release")
@click.argument("sources", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "-o", "--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Release folder."
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="TOML file with the same options (flags win; keys in docs/formats.md).",
)
@table_options(RELEASE_ORDER)
@click.pass_context
def release_command(
    ctx: click.Context, sources: tuple[Path, ...], out: Path, config_file: Path | None, **options: Any
) -> None:
    """Ingest, anonymize, verify, compare signals and report: one publishable release folder.

    OUT appears only when complete and verified (FAERS-layout tables and Parquet, knowledge.csv,
    thresholds.csv, manifest.json, report.json, report.html, rejects/). Progress is printed per stage.

    Example: faers-anon release faers_ascii_2024q1.zip -o release-24Q1 --k 5 --theta 0.4
    """
    given = {
        name: value
        for name, value in options.items()
        if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
        and value is not None
        and value != ()
    }
    check_outputs([out], [config_file])
    config = api.release_config(config_file, given)
    click.echo(api.release(list(sources), out, config=config, progress=click.echo).summary())
