"""Regenerate the bundled demo quarter ``faers_anon/data/demo/`` (zip + README.md) deterministically.

Run ``python scripts/make_demo_quarter.py`` after changing ``faers_anon.synthetic``; the test
``tests/faers_anon/synthetic/test_synthetic.py`` fails while the bundled files differ from what this writes.
It prints the planted signals' 2×2 counts, PRR and χ² on the demo.
"""

from __future__ import annotations

from pathlib import Path

import click
import polars as pl

from faers_anon.synthetic import (
    DEMO_CASES,
    DEMO_QUARTER,
    DEMO_SEED,
    check_signals,
    demo_readme,
    make_quarter,
    write_quarter,
)

DEMO_DIR = Path(__file__).resolve().parents[1] / "faers_anon" / "data" / "demo"


@click.command()
@click.option(
    "-o",
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEMO_DIR,
    show_default=True,
    help="Folder for the zip and its README.md.",
)
def main(out_dir: Path) -> None:
    """Write the demo zip and its README, and print the planted signals."""
    tables = make_quarter(DEMO_CASES, seed=DEMO_SEED, quarter=DEMO_QUARTER)
    target = write_quarter(tables, out_dir, zip=True, quarter=DEMO_QUARTER)
    readme = demo_readme(tables, cases=DEMO_CASES, seed=DEMO_SEED, quarter=DEMO_QUARTER)
    (out_dir / "README.md").write_text(readme, encoding="utf-8")
    rows = ", ".join(f"{name} {frame.height:,}" for name, frame in tables.items())
    click.echo(f"{target} ({target.stat().st_size:,} bytes): {rows}")
    with pl.Config(tbl_rows=40, tbl_cols=12, tbl_width_chars=160, fmt_str_lengths=42):
        click.echo(check_signals(tables))


if __name__ == "__main__":
    main()
