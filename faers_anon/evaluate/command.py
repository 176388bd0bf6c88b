"""The ``faers-anon evaluate`` command (registered on the group in :mod:`faers_anon.cli`).

Parses options, builds an :class:`~.pipeline.EvaluateConfig`, calls :func:`faers_anon.api.evaluate`
and prints its summary; user errors reach the group's handler (one ``Error:`` line).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from faers_anon import api
from faers_anon.commands.options import table_options
from faers_anon.evaluate.pipeline import EvaluateConfig
from faers_anon.methods import METHODS
from faers_anon.models import MODELS

__all__ = ["evaluate_command"]


def _split(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def _models(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    return tuple(MODELS) if value.strip().lower() == "all" else _split(value)


def _methods(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...]:
    if value is None or value.strip().lower() == "none":
        return ()
    return tuple(METHODS) if value.strip().lower() == "all" else _split(value)


def _lower(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    return tuple(v.lower() for v in _split(value))


def _ints(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in _split(value))
    except ValueError:
        raise click.BadParameter(
            f"expected comma-separated integers, e.g. 5,10,15,20; got {value!r}"
        ) from None


def _floats(ctx: click.Context, param: click.Parameter, value: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in _split(value))
    except ValueError:
        raise click.BadParameter(f"expected comma-separated numbers, e.g. 0.2,0.4; got {value!r}") from None


@click.command(name="evaluate")
@click.argument("sources", nargs=-1, type=click.Path(path_type=Path))
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Output folder (results.csv, figures/, evaluation.html, options.json).")  # fmt: skip
@click.option("--demo", is_flag=True, help="Also evaluate the bundled demo quarter.")
@click.option("--models", default="all", show_default=True, callback=_models,
              help=f"Models, comma-separated, or all ({', '.join(MODELS)}).")  # fmt: skip
@click.option("--methods", default=None, callback=_methods,
              help=f"Methods, comma-separated, all or none [none] ({', '.join(METHODS)}).")  # fmt: skip
@click.option("--k", "ks", default="5,10,15,20", show_default=True, callback=_ints, help="k (or l) values.")
@click.option("--theta", "thetas", default="0.2,0.4", show_default=True, callback=_floats,
              help="θ (or α) values.")  # fmt: skip
@click.option("--theta-setting", "settings", default="uniform,level,frequency", show_default=True,
              callback=_lower, help="θ* settings.")  # fmt: skip
@click.option("--theta-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Level-wise θ-file (docs/formats.md) [default: bundled level_classes.csv].")  # fmt: skip
@click.option("--theta-slope", "frequency_slope", type=float, default=1.0, show_default=True,
              help="Frequency rule: θ_s = min(1, θ + slope·P(s)).")  # fmt: skip
@click.option("--sensitive", default="indications,reactions,diseases", show_default=True, callback=_lower,
              help="Sensitive attributes, comma-separated.")  # fmt: skip
@click.option("--knowledge", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Drug→disease table E for every quarter [default: mined per quarter].")  # fmt: skip
@click.option("--on-infeasible", type=click.Choice(["raise-theta", "suppress", "error"]),
              default="raise-theta", show_default=True, help="θ_s below its share P(s).")  # fmt: skip
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of every run.")
@click.option(
    "--complete-qids", is_flag=True, help="Only cases without missing age, sex or weight (as the paper)."
)
@click.option("--no-signals", "signals", is_flag=True, flag_value=False, default=True,
              help="Skip signal survival (faster).")  # fmt: skip
@table_options(["work"])  # --work-dir: as the release's (faers_anon.release.options)
def evaluate_command(sources: tuple[Path, ...], out: Path, **options: Any) -> None:
    """Compare the privacy models (and methods) on NIL, DR and signal survival, as Lin et al. 2016 did.

    SOURCES are FDA quarterly zips or folders (ingested into a private work folder, removed at the
    end) or ingested folders; every model runs on every quarter for every k, θ and θ* setting. Writes
    OUT/results.csv (one row per quarter, model, k, setting and θ), OUT/figures/*.png and
    OUT/evaluation.html.

    Example: faers-anon evaluate faers_ascii_2024q1.zip -o eval/ --k 5,20 --theta 0.2,0.4 --methods ra
    """
    click.echo(
        api.evaluate(list(sources), out, config=EvaluateConfig(**options), progress=click.echo).summary()
    )
