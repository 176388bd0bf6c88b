"""``faers-anon signals`` and ``faers-anon compare``: options of :class:`signals.SignalConfig`.

The options a release shares (strata, conditions, minimum count, drug role; compare's criterion,
reference pairs and outcome groups) come from the option table (:mod:`faers_anon.release.options`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click

from faers_anon import api
from faers_anon.commands.options import signal_options, table_options
from signals import CompareConfig, SignalConfig

__all__ = ["compare_command", "signals_command"]


def _signal_config(base: SignalConfig, options: dict[str, Any]) -> SignalConfig:
    given = {k: v for k, v in options.items() if v is not None and v != ()}
    return dataclasses.replace(base, **given)


@click.command(name="signals")
@click.argument(
    "data", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Parquet (or .csv) file.",
)
@signal_options
def signals_command(data: tuple[Path, ...], output: Path, **options: Any) -> None:
    """PRR, ROR, IC, chi-square and signal criteria for every drug-event pair of DATA.

    DATA is an ingested folder (exact ages) or a release (age ranges: each condition is read as
    certain, possible and expected). Cases are counted, not drug-event rows. Several DATA folders
    (the quarters of a series, all ingested or all releases) count each case once, at its latest
    version across them.

    Example: faers-anon signals out/24Q1 -o signals.parquet --stratify age,sex --condition "age>=18" --min-a 3
    """
    click.echo(api.signals(list(data), output, config=_signal_config(SignalConfig(), options)).summary())


@click.command(name="compare")
@click.argument("raw", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("release", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "-o", "--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Output folder."
)
@signal_options
@table_options(("criterion", "reference", "outcome_groups"))
@click.option(
    "--raw-series",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="More ingested quarters on the RAW side (repeatable): each case once, at its latest version.",
)
@click.option(
    "--release-series",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="More releases on the RELEASE side (repeatable): each case once, at its latest version.",
)
def compare_command(
    raw: Path,
    release: Path,
    out: Path,
    criterion: str,
    reference: Path | None,
    outcome_groups: Path | None,
    raw_series: tuple[Path, ...],
    release_series: tuple[Path, ...],
    **options: Any,
) -> None:
    """Signal survival from RAW (ingested folder) to RELEASE, and the MedWatch reference panel.

    Defaults: age x sex strata, the conditions age>=18, age>=60, age<18, sex=F, min a 3.
    Writes summary.json, survival.csv, correlation.csv, new_signals.csv, panel.csv, pairs.parquet.

    Example: faers-anon compare out/24Q1 out/release-24Q1 -o out/compare-24Q1 --criterion evans
    """
    base = CompareConfig()
    config = CompareConfig(
        signals=_signal_config(base.signals, options),
        criterion=criterion,
        reference=reference,
        outcome_groups=outcome_groups,
    )
    raws, releases = [raw, *raw_series], [release, *release_series]
    click.echo(api.compare(raws, releases, out, config=config).summary())
