"""``faers-anon verify`` and ``faers-anon risk``: check a release, measure what an attacker learns.

The verifier and the risk modules are imported when the command runs, not for its ``--help``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from faers_anon import api
from faers_anon.commands.options import comma_list
from faers_anon.errors import VerificationError
from faers_anon.keys import load_key, read_public_key

__all__ = ["risk_command", "verify_command"]


@click.command(name="verify")
@click.argument(
    "release", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option("--series", is_flag=True, help="RELEASE... are a series: every case in several releases "
              "must share its group with >= k cases in all of them (names each one below).")  # fmt: skip
@click.option("--k", type=int, default=None, help="Minimum distinct cases per group [default: manifest's].")
@click.option(
    "--no-hashes",
    is_flag=True,
    help="Skip the integrity checks (certificate, SHA-256, counts, ascii = parquet).",
)
@click.option(
    "--public-key",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The agency's published public key (.pub); the certificate must verify under it.",
)
@click.option(
    "--key-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The agency key file: its public key is trusted [$FAERS_ANON_KEY_FILE].",
)
@click.option(
    "--thresholds",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The θ* the agency states (as thresholds.csv, docs/formats.md), not the release's.",
)
@click.option(
    "--knowledge",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The E the agency states (as knowledge.csv, docs/formats.md), not the release's.",
)
@click.option(
    "--policy",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The column policy the agency states (JSON as manifest.json's, docs/formats.md).",
)
def verify_command(
    release: tuple[Path, ...], series: bool, k: int | None, no_hashes: bool, public_key: Path | None,
    key_file: Path | None, **stated: Path | None,
) -> None:  # fmt: skip
    """Re-check a release from its files alone: its privacy model, its certificate, its integrity.

    Exit 1 when it fails. What the agency states (--k, --thresholds, --knowledge, --policy) overrides
    what the release says about itself; each difference is named. Prints DR, the group-size
    distribution and the violations (first 20, then a count).

    Example: faers-anon verify out/release-24Q1 --public-key agency.key.pub --k 5
    (a series: faers-anon verify --series release-24Q1 release-24Q2 release-24Q3 --public-key agency.key.pub)
    """
    from faers_anon.verify.series import verify_series
    from faers_anon.verify.verifier import VerifyConfig

    if len(release) > 1 and not series:
        raise click.UsageError("several releases need --series")
    trusted = (
        read_public_key(public_key) if public_key is not None
        else load_key(key_file, create=False).public_key if key_file is not None else None
    )  # fmt: skip
    config = VerifyConfig(k=k, check_hashes=not no_hashes, public_key=trusted, **stated)  # type: ignore[arg-type]
    failed = []
    for one in release:
        verdict = api.verify(one, config=config)
        click.echo(verdict.summary(limit=20))
        if not verdict.ok:
            failed.append(f"{one}: fails {verdict.label} ({verdict.violations.height} violation(s))")
    if series:  # composition across the releases (faers_anon.verify.series: the verifier's own code)
        composed = verify_series(release, k=k)
        click.echo(composed.summary(limit=20))
        if not composed.ok:
            below, told = composed.violations.height, composed.receipt.height
            failed.append(f"series: {below} case(s) below k {composed.k} across releases, {told} knowing "
                          "when their reports came in")  # fmt: skip
    if failed:
        raise VerificationError("; ".join(failed))


@click.command(name="risk")
@click.argument("release", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="risk.json to write.")  # fmt: skip
@click.option("--raw", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="The ingested raw folder: adds linkage and journalist risk.")  # fmt: skip
@click.option("--series", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Another release of these cases (repeatable): composition by intersection.")  # fmt: skip
@click.option("--knows", default="", callback=comma_list,
              help="Comma-separated released DEMO fields the attacker knows (not the defaults).")  # fmt: skip
@click.option("--knows-items", default=None, help="drugs:M or reactions:M (M = 1, 2 or all) known.")
@click.option("--k", type=int, default=None, help="k of the below-k share [the release's].")
@click.option("--classes", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Value-class file (docs/formats.md) [bundled level_classes.csv].")  # fmt: skip
def risk_command(release: Path, output: Path, knows: tuple[str, ...], knows_items: str | None,
                 series: tuple[Path, ...], **options: Any) -> None:  # fmt: skip
    """What an attacker who knows X learns from RELEASE: re-identification, linkage, inference, composition.

    Example: faers-anon risk release-24Q1 --raw out/24Q1 --series release-23Q4 -o risk.json
    """
    from faers_anon.risk import RiskConfig
    from faers_anon.risk import parse_items as risk_items

    config = RiskConfig(
        knows=knows or None, knows_items=risk_items(knows_items), series=tuple(series), **options
    )
    click.echo(api.risk(release, output, config=config).summary())
