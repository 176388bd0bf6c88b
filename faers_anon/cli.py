"""The ``faers-anon`` command line: parse options, call one function of :mod:`faers_anon.api`, print.

No polars and no arithmetic here. User errors are caught once, in :class:`FaersAnonGroup`, and
printed as one ``Error: ...`` line with exit code 1; bugs keep their traceback.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from faers_anon import __version__, api, configure
from faers_anon.anonymize.config import RELEASE_METHODS, AnonymizeConfig
from faers_anon.anonymize.items import ITEM_STRATEGIES
from faers_anon.errors import FaersAnonError, Interrupted, VerificationError
from faers_anon.evaluate.command import evaluate_command
from faers_anon.io.fetch import FDA_BASE_URL, FetchConfig
from faers_anon.io.ingest import IngestConfig
from faers_anon.io.targets import check_outputs
from faers_anon.io.workspace import signals_raise
from faers_anon.keys import load_key, read_public_key
from faers_anon.models import MODELS
from faers_anon.risk import RiskConfig
from faers_anon.risk import parse_items as risk_items
from faers_anon.verify.series import verify_series
from faers_anon.verify.verifier import VerifyConfig
from hierarchies.errors import HierarchyError
from knowledge.errors import KnowledgeError
from signals import CompareConfig, GammaMixture, SignalConfig
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


def _sensitive(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    return tuple(v.strip().lower() for v in value.split(",") if v.strip())


def model_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Options of the privacy model and θ*, shared by ``anonymize`` and ``release``."""
    for option in reversed(_MODEL_OPTIONS):
        command = option(command)
    return command


_MODEL_OPTIONS = [
    click.option(
        "--model", default="ms-k-theta", show_default=True, help=f"Privacy model ({', '.join(MODELS)})."
    ),
    click.option(
        "--method",
        default=None,
        help=f"Release with a comparison method instead of a model ({', '.join(RELEASE_METHODS)}).",
    ),
    click.option("--k", type=int, default=5, show_default=True, help="Group size (cases/rows/l by model)."),
    click.option(
        "--theta",
        type=float,
        default=0.6,
        show_default=True,
        help="θ: uniform; frequency base; level default.",
    ),
    click.option(
        "--theta-rule",
        type=click.Choice(["uniform", "level", "frequency"]),
        default=None,
        help="θ* setting [default: level with --theta-file, else uniform].",
    ),
    click.option(
        "--theta-file",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        default=None,
        help="Level-wise CSV: value,class,theta (docs/formats.md).",
    ),
    click.option(
        "--theta-slope",
        "frequency_slope",
        type=float,
        default=1.0,
        show_default=True,
        help="Frequency rule: θ_s = min(1, θ + slope·P(s)).",
    ),
    click.option(
        "--sensitive",
        default="indications,reactions,diseases",
        show_default=True,
        callback=_sensitive,
        help="Sensitive attributes, comma-separated.",
    ),
    click.option(
        "--knowledge",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        default=None,
        help="Drug→disease table E, CSV or TSV (docs/formats.md) [default: mined from INDI and DRUG].",
    ),
    click.option(
        "--on-infeasible",
        type=click.Choice(["error", "raise-theta", "suppress"]),
        default="error",
        show_default=True,
        help="What to do with values whose θ_s is below their share P(s).",
    ),
    click.option(
        "--seed", type=int, default=0, show_default=True, help="Seed of the run's random generator."
    ),
    click.option(
        "--key-file",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Agency key for the pseudonymous ids and the certificate (created 0600 on first use; "
        "docs/keys.md) [default: $FAERS_ANON_KEY_FILE].",
    ),
    click.option(
        "--column-policy",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        default=None,
        help="Column-policy file (TOML or CSV) overriding the bundled default (docs/formats.md).",
    ),
    click.option(
        "--classes",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        default=None,
        help="Value-class file (docs/formats.md): classes bounded by θ [default: bundled cancers, HIV, "
        "mental health, pregnancy, substance use].",
    ),
    click.option("--items-m", type=int, default=0, show_default=True,
                 help="k^m-anonymity of the drug and reaction sets in each group: an attacker knowing the "
                 "QIDs and M items finds >= k cases (0 off, 1, 2; docs/items.md)."),  # fmt: skip
    click.option("--items-strategy", type=click.Choice(ITEM_STRATEGIES), default="suppress",
                 show_default=True, help="How --items-m is met (docs/items.md)."),  # fmt: skip
]


@cli.command()
@click.argument("ingested", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Release folder to write.",
)
@model_options
@click.option("--force", is_flag=True, help="Replace an existing release folder.")
def anonymize(ingested: Path, out: Path, theta_rule: str | None, **options: Any) -> None:
    """Anonymize an ingested folder under MS(k,θ*)-bounding and write the release.

    Example: faers-anon anonymize out/2024Q1 -o out/release-24Q1 --k 5 --theta 0.4 --on-infeasible raise-theta
    """
    rule = theta_rule or ("level" if options["theta_file"] is not None else "uniform")
    click.echo(api.anonymize(ingested, out, config=AnonymizeConfig(theta_rule=rule, **options)).summary())


@cli.command()
@click.argument(
    "release", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option("--series", is_flag=True, help="RELEASE... are a series: every case in several releases "
              "must share its group with >= k cases in all of them (names each one below).")  # fmt: skip
@click.option("--k", type=int, default=None, help="Minimum distinct cases per group [default: manifest's].")
@click.option("--no-hashes", is_flag=True,
              help="Skip the integrity checks (certificate, SHA-256, counts, ascii = parquet).")
@click.option("--public-key", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="The agency's published public key (.pub); the certificate must verify under it.")
@click.option("--key-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="The agency key file: its public key is trusted [$FAERS_ANON_KEY_FILE].")
@click.option("--thresholds", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="The θ* the agency states (as thresholds.csv, docs/formats.md), not the release's.")
@click.option("--knowledge", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="The E the agency states (as knowledge.csv, docs/formats.md), not the release's.")
@click.option("--policy", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="The column policy the agency states (JSON as manifest.json's, docs/formats.md).")
def verify(
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
            below = composed.violations.height
            failed.append(f"series: {below} case(s) below k {composed.k} across releases")
    if failed:
        raise VerificationError("; ".join(failed))


def _names(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(v.strip() for v in value.split(",") if v.strip())


def _numbers(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[float, ...] | None:
    if value is None:
        return None
    try:
        return tuple(float(v) for v in value.split(","))
    except ValueError:
        raise click.BadParameter(f"expected comma-separated numbers, e.g. 18,45,65; got {value!r}") from None


def _prior(ctx: click.Context, param: click.Parameter, value: str | None) -> GammaMixture | None:
    if value is None:
        return None
    return GammaMixture.parse(value)  # a SignalsError: the group prints it as one Error line


def signal_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by ``signals`` and ``compare``; unset ones keep the command's defaults."""
    options = [
        click.option("--stratify", callback=_names, help="age, sex or age,sex (crossed strata)."),
        click.option(
            "--condition",
            "conditions",
            multiple=True,
            help='A stratum of its own, e.g. "age>=18", "sex=F", "sex=F&age>=60" (repeatable).',
        ),
        click.option(
            "--min-a", type=float, default=None, help="Keep drug-event rows with a >= this [1; compare 3]."
        ),
        click.option(
            "--role", type=click.Choice(["ps", "suspect", "any"]), default=None, help="Drug roles [ps]."
        ),
        click.option("--age-bands", callback=_numbers, help="Inner age-band edges in years [18,45,65]."),
        click.option(
            "--measures",
            type=click.Choice(["basic", "all"]),
            default=None,
            help="basic: PRR, ROR, IC, chi2; all: also EBGM/EB05/EB95, Fisher p + BH q, and with "
            "--stratify the Mantel-Haenszel ROR and Breslow-Day [signals basic; compare all].",
        ),
        click.option(
            "--ebgm-prior",
            callback=_prior,
            help="Fix the MGPS prior alpha1,beta1,alpha2,beta2,p instead of fitting it (--measures all).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _signal_config(base: SignalConfig, options: dict[str, Any]) -> SignalConfig:
    given = {k: v for k, v in options.items() if v is not None and v != ()}
    return dataclasses.replace(base, **given)


@cli.command(name="signals")
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


@cli.command(name="compare")
@click.argument("raw", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("release", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "-o", "--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Output folder."
)
@signal_options
@click.option(
    "--criterion",
    type=click.Choice(["evans", "ror", "ic", "eb"]),
    default="evans",
    show_default=True,
    help="Headline criterion: evans (PRR>=2, chi2>=4, a>=3), ror (ROR025>1, a>=3), ic (IC025>0), "
    "eb (EB05>=2).",
)
@click.option(
    "--reference",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Extra reference pairs CSV (docs/formats.md; e.g. reference_signals/reference_pairs.csv).",
)
@click.option(
    "--outcome-groups",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Outcome-group CSV for --reference (docs/formats.md; e.g. outcome_pt_groups.csv).",
)
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


@cli.command(name="release")
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
@click.option("--demo", is_flag=True, help="Release the bundled demo quarter (with or without SOURCES).")
@click.option(
    "--drug-names",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Brand -> ingredient lookup for drug_key (docs/formats.md; e.g. FDA's unii_names_bn_of.tsv).",
)
@model_options
@signal_options
@click.option("--criterion", type=click.Choice(["evans", "ror", "ic"]), default="evans", show_default=True,
              help="Signal criterion of the survival figures.")  # fmt: skip
@click.option(
    "--reference",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Extra reference pairs CSV besides the bundled MedWatch panel (docs/formats.md).",
)
@click.option("--force", is_flag=True, help="Replace an existing release folder.")
@click.option(
    "--work-dir",
    "--work",
    "work",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Parent of the private (0700) work folder holding the raw intermediate tables, removed at the "
    "end [default: the system temp folder, $TMPDIR].",
)
@click.option("--keep-work", is_flag=True, help="Keep the intermediate (raw) tables after the run.")
@click.option("--ledger", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The agency's private release ledger of a series (docs/series.md): returning cases "
              "stay composition-safe; updated with the release (never published).")  # fmt: skip
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


@cli.command(name="risk")
@click.argument("release", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="risk.json to write.")  # fmt: skip
@click.option("--raw", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="The ingested raw folder: adds linkage and journalist risk.")  # fmt: skip
@click.option("--series", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Another release of these cases (repeatable): composition by intersection.")  # fmt: skip
@click.option("--knows", default="", callback=_sensitive,
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
    config = RiskConfig(
        knows=knows or None, knows_items=risk_items(knows_items), series=tuple(series), **options
    )
    click.echo(api.risk(release, output, config=config).summary())


cli.add_command(evaluate_command)


def main() -> None:
    """Console-script entry point: process settings first (faers_anon.configure), then the command."""
    configure(progress=click.echo)
    cli()
