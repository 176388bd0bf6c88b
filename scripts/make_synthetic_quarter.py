"""Write a synthetic FAERS quarter of N cases in the FDA layout (see ``faers_anon.synthetic``).

Example: ``python scripts/make_synthetic_quarter.py --cases 400000 --shape realistic -o /tmp/q400k --zip``
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from faers_anon.synthetic import make_quarter, write_quarter


@click.command()
@click.option("--cases", "n_cases", type=click.IntRange(min=10), required=True, help="Number of cases.")
@click.option(
    "-o",
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder to write ASCII/ and Deleted/ (or the zip) into.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random generator.")
@click.option(
    "--quarter", default="2025Q1", show_default=True, help="Quarter label YYYYQn (2014Q3 or later)."
)
@click.option(
    "--zip/--no-zip",
    "as_zip",
    default=False,
    show_default=True,
    help="Write one faers_ascii_<year>q<n>.zip instead of folders.",
)
@click.option(
    "--malformed/--no-malformed",
    default=True,
    show_default=True,
    help="Append the documented malformed rows.",
)
@click.option(
    "--shape",
    type=click.Choice(["small", "realistic"]),
    default="small",
    show_default=True,
    help="small: hand-written vocabularies (fast tests); realistic: fitted to FAERS (docs/synthetic.md).",
)
def main(
    n_cases: int, out_dir: Path, seed: int, quarter: str, as_zip: bool, malformed: bool, shape: str
) -> None:
    """Generate a synthetic quarter of N cases and write it under OUT."""
    start = time.perf_counter()
    try:
        tables = make_quarter(n_cases, seed=seed, quarter=quarter, malformed=malformed, shape=shape)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc
    made = time.perf_counter()
    target = write_quarter(tables, out_dir, zip=as_zip, quarter=quarter)
    done = time.perf_counter()
    rows = ", ".join(f"{name} {frame.height:,}" for name, frame in tables.items())
    click.echo(f"{target}: {rows}")
    click.echo(f"generated in {made - start:.1f} s, written in {done - made:.1f} s")


if __name__ == "__main__":
    main()
