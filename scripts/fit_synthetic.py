"""Fit the realistic synthetic quarter to real FAERS: print the figures ``faers_anon.synthetic`` uses.

Reads ``../shared/data/faers_samples`` (``--data``) and prints one table, real figure beside the
generator's constant (``faers_anon.synthetic._shape.REALISTIC``):

* **Whole quarter, 2022Q3** (``pvlrt-faers22q3raw``: every case × PS drug, every case × PT of 973
  selected PTs): Zipf exponents of drugs and PTs overall (rank of the row count) and per case (rank of
  the number of cases listing the value), and the top PT's share.
* **FDA's 2022Q4 statistics** (the ``DEMO22Q4.pdf`` … frequency and null-count reports inside
  ``faersquarterlydata/original/ascii_files/faers_ascii_2022Q4.zip``, decoded here; 483,643 reports):
  rows per report, follow-up share, sex, age and weight missingness, report type, outcome codes.
* **Modern quarters** (``nico8270-2025q4``, ``stutterk1d-2024q1``, ``ubesp-faers.db`` 2020Q3,
  ``extractFAERS`` 2015, ``diana-package`` 2014-2023): drugs, reactions and indications per report,
  senders, countries, distinct filing days, caseversion, and the sample's distinct values (from
  which the vocabulary sizes are solved, see ``vocabulary``).

Zipf exponent: the maximum-likelihood ``s`` of ``P(rank r) = r^-s / H(V, s)`` over the observed
counts (``V`` = distinct values seen), found by bounded scalar minimisation. Vocabulary of a whole
quarter: the ``V`` for which a Zipf(``s``) vocabulary drawn ``n`` times (the pooled sample's rows)
shows as many distinct values as the sample, ``E[distinct] = Σ_r 1 - (1 - p_r)^n``.

Example: ``python scripts/fit_synthetic.py --data ../shared/data``
"""

from __future__ import annotations

import re
import zipfile
import zlib
from pathlib import Path

import click
import numpy as np
import polars as pl

from faers_anon.synthetic import make_quarter
from faers_anon.synthetic._figures import quarter_figures, zipf_mandelbrot
from faers_anon.synthetic._shape import REALISTIC

SAMPLES = "faers_samples"
MODERN = {  # folder/ascii/yyQq: tables present for the whole sampled reports
    "nico8270-2025q4/ascii/25Q4": "25Q4",
    "stutterk1d-2024q1/ascii/24Q1": "24Q1",
}
_STATS_ZIP = "faersquarterlydata/original/ascii_files/faers_ascii_2022Q4.zip"


def heaps_exponent(values: pl.Series, seed: int = 0) -> float:
    """Slope β of log(distinct values) on log(rows) over the second half of a shuffled column."""
    shuffled = values.sample(fraction=1.0, shuffle=True, seed=seed)
    distinct = np.cumsum(shuffled.is_first_distinct().to_numpy())
    rows = np.arange(1, distinct.size + 1)
    half = rows >= rows.size // 2
    return float(np.polyfit(np.log(rows[half]), np.log(distinct[half]), 1)[0])


def fda_statistics(root: Path) -> dict[str, float]:
    """Rows of FDA's 2022Q4 statistics PDFs (``name: count`` and ``name: total|missing``).

    The PDFs draw text as glyph ids of an embedded font whose ids are the character code minus 29;
    each text object sets its position with ``1 0 0 1 x y Tm``. Lines are the objects sharing y.
    """
    out: dict[str, float] = {}
    with zipfile.ZipFile(root / _STATS_ZIP) as zf:
        for member in sorted(n for n in zf.namelist() if re.search(r"/[A-Z]{4}22Q4\.pdf$", n)):
            table = member.split("/")[-1][:4]
            for line in _pdf_lines(zf.read(member)):
                cells = [c.strip() for c in line]
                if len(cells) >= 2 and cells[1].isdigit():
                    out[f"{table} {cells[0]}"] = float(cells[1])
                    if len(cells) >= 3 and cells[2].isdigit():
                        out[f"{table} {cells[0]} missing"] = float(cells[2])
                    if len(cells) >= 4 and cells[3].isdigit():
                        out[f"{table} {cells[0]} rows"] = float(cells[3])
    return out


def _pdf_lines(data: bytes) -> list[list[str]]:
    """Text lines of a PDF made of FlateDecode content streams (see ``fda_statistics``)."""
    lines: dict[tuple[int, int], list[tuple[float, str]]] = {}
    for page, stream in enumerate(re.finditer(rb"stream\r?\n(.*?)\r?\nendstream", data, re.S)):
        try:
            text = zlib.decompress(stream.group(1))
        except zlib.error:
            continue
        for block in re.findall(rb"BT(.*?)ET", text, re.S):
            pos = re.search(rb"1 0 0 1 ([\d.]+) ([\d.]+) Tm", block)
            hexes = re.findall(rb"<([0-9A-F]+)>", block)
            word = "".join(chr(int(h[i : i + 4], 16) + 29) for h in hexes for i in range(0, len(h), 4))
            if pos:
                lines.setdefault((page, -round(float(pos.group(2)))), []).append((float(pos.group(1)), word))
    return [[w for _, w in sorted(cells)] for _, cells in sorted(lines.items())]


def read(path: Path) -> pl.DataFrame:
    """One ``$``-delimited FAERS table, every column Utf8."""
    return pl.read_csv(path, separator="$", infer_schema=False, quote_char=None, encoding="utf8-lossy")


def _law(out: dict[str, float], name: str, counts: np.ndarray) -> None:
    """Record a value column's distinct count, top share and Zipf–Mandelbrot (s, q)."""
    out[f"{name} distinct"] = counts.size
    out[f"{name} top share"] = counts.max() / counts.sum()
    out[f"{name} zipf s"], out[f"{name} zipf q"] = zipf_mandelbrot(counts)


def whole_quarter(root: Path) -> dict[str, float]:
    """2022Q3, all cases: laws of PS drugs and PTs per case, cases listing the top PT, Heaps β of drugs."""
    folder = root / SAMPLES / "pvlrt-faers22q3raw/ascii/22Q3"
    out: dict[str, float] = {}
    for name, table, col in (("drug", "DRUG22Q3.txt", "drugname"), ("pt", "REAC22Q3.txt", "pt")):
        frame = read(folder / table).select("caseid", pl.col(col).str.to_lowercase().alias("v"))
        frame = frame.unique(maintain_order=True)
        per_value = frame.group_by("v").len()["len"].to_numpy()
        out[f"{name} cases"] = frame["caseid"].n_unique()
        _law(out, f"{name} per case", per_value)
        out[f"{name} share of cases with the top value"] = per_value.max() / out[f"{name} cases"]
        if name == "drug":
            out["drug heaps beta"] = heaps_exponent(frame["v"])
    return out


def _modern_tables(root: Path) -> dict[str, pl.DataFrame]:
    """The pooled modern case-complete samples, table name → frame (column ``q`` = quarter)."""
    tables: dict[str, list[pl.DataFrame]] = {}
    for folder, suffix in MODERN.items():
        for table in ("DEMO", "DRUG", "REAC", "INDI"):
            path = root / SAMPLES / folder / f"{table}{suffix}.txt"
            if path.exists():
                tables.setdefault(table, []).append(read(path).with_columns(pl.lit(suffix).alias("q")))
    return {name: pl.concat(frames, how="diagonal") for name, frames in tables.items()}


def modern(root: Path) -> dict[str, float]:
    """Per-report counts, laws of values, senders, countries and dates of the pooled modern samples."""
    tables = _modern_tables(root)
    demo = tables["DEMO"]
    out: dict[str, float] = {"reports": demo.height}
    for table, col in (("DRUG", "drugname"), ("REAC", "pt"), ("INDI", "indi_pt")):
        rows = tables[table]
        counts = rows.group_by("primaryid").len()["len"]
        name = table.lower()
        reports = demo.filter(pl.col("q").is_in(rows["q"].unique().implode())).height
        out[f"{name} per report"] = rows.height / reports
        out[f"{name} share of reports with 1"] = float((counts == 1).sum()) / reports
        out[f"{name} p90 per report"] = float(counts.quantile(0.9) or 0)
        out[f"{name} max per report"] = float(counts.max() or 0)  # type: ignore[arg-type]
        out[f"{name} rows"] = rows.height
        _law(out, name, rows.group_by(pl.col(col).str.to_lowercase()).len()["len"].to_numpy())
    nico = demo.filter(pl.col("q") == "25Q4")  # a random 1,000 reports of one quarter
    _law(out, "senders (25Q4)", nico.group_by("mfr_sndr").len()["len"].to_numpy())
    _law(out, "countries (25Q4)", nico.group_by("reporter_country").len()["len"].to_numpy())
    out["countries (20Q3 head, 9,999 reports) distinct"] = read(
        root / SAMPLES / "ubesp-faers.db/ascii/20Q3/DEMO20Q3.txt"
    )["reporter_country"].n_unique()
    fda_dt = nico["fda_dt"].str.to_date("%Y%m%d")
    out["fda_dt distinct days (25Q4)"] = fda_dt.n_unique()
    out["fda_dt Mon-Fri share (25Q4)"] = float((fda_dt.dt.weekday() <= 5).mean() or 0)  # type: ignore[arg-type]
    out["follow-up share (25Q4)"] = float((nico["i_f_code"] == "F").mean() or 0)  # type: ignore[arg-type]
    out["age missing (25Q4)"] = float(nico["age"].is_null().mean() or 0)  # type: ignore[arg-type]
    out["weight missing (25Q4)"] = float(nico["wt"].is_null().mean() or 0)  # type: ignore[arg-type]
    return out


def fda_shares(stats: dict[str, float]) -> dict[str, float]:
    """Per-report figures from FDA's 2022Q4 statistics."""
    reports = stats["DEMO CASE"]
    outcomes = sum(v for k, v in stats.items() if k.startswith("OUTC ") and len(k.split()) == 2)
    return {
        "reports": reports,
        "drug rows": stats["DRUG DRUGNAME"],
        "reac rows": stats["REAC PT"],
        "indi rows": stats["INDI INDICATION rows"],
        "drug per report": stats["DRUG DRUGNAME"] / reports,
        "reac per report": stats["REAC PT"] / reports,
        "indi per report": stats["INDI INDICATION rows"] / reports,
        "follow-up share": stats["DEMO I_F_COD: FOLLOWUP"] / reports,
        "age missing": stats["DEMO AGE missing"] / reports,
        "weight missing": stats["DEMO WT missing"] / reports,
        "sex F": stats["DEMO SEX: F"] / reports,
        "sex M": stats["DEMO SEX: M"] / reports,
        "sex UNK or null": (stats["DEMO SEX: UNK"] + stats["DEMO SEX: NULL"]) / reports,
        "occr_country missing": stats["DEMO OCCR_COUNTRY missing"] / reports,
        "rept DIR": stats["DEMO REPT_COD: DIR"] / reports,
        "rept EXP": stats["DEMO REPT_COD: EXP"] / reports,
        "rept PER": stats["DEMO REPT_COD: PER"] / reports,
        "outcome rows per report": outcomes / reports,
        "death (DE) per report": stats["OUTC DE"] / reports,
        "PS share of drug rows": stats["DRUG ROLE_COD: PS"] / stats["DRUG DRUGNAME"],
    }


def vocabularies(whole: dict[str, float], fda: dict[str, float], mod: dict[str, float]) -> dict[str, int]:
    """Distinct values of a whole quarter: the sample's count grown by Heaps' law to the quarter's rows.

    ``V = D_sample · (N_quarter / n_sample)^β`` with β of the 2022Q3 PS-drug column (the only
    whole-quarter column with an open vocabulary), rows N from FDA's 2022Q4 statistics; senders grow
    with reports.
    """
    beta = whole["drug heaps beta"]
    out = {
        name: int(mod[f"{name} distinct"] * (fda[f"{name} rows"] / mod[f"{name} rows"]) ** beta)
        for name in ("drug", "reac", "indi")
    }
    out["senders"] = int(mod["senders (25Q4) distinct"] * (fda["reports"] / 1000) ** beta)
    return out


@click.command()
@click.option(
    "--data", type=click.Path(exists=True, file_okay=False, path_type=Path), default="../shared/data"
)
@click.option(
    "--cases",
    type=click.IntRange(min=10),
    default=50_000,
    show_default=True,
    help="Cases of the realistic draw measured beside the real figures.",
)
def main(data: Path, cases: int) -> None:
    """Print the real figures, the solved vocabularies and the realistic generator's constants."""
    whole = whole_quarter(data)
    fda = fda_shares(fda_statistics(data / SAMPLES))
    mod = modern(data)
    click.echo("| source | figure | real |\n|---|---|---|")
    for source, figures in (
        ("2022Q3 whole quarter", whole),
        ("FDA 2022Q4 statistics", fda),
        ("modern samples", mod),
    ):
        for name, value in figures.items():
            click.echo(f"| {source} | {name} | {value:,.4g} |")
    click.echo("\nVocabulary of a whole quarter (Heaps β = {:.3f}):".format(whole["drug heaps beta"]))
    for name, size in vocabularies(whole, fda, mod).items():
        click.echo(f"  {name}: {size:,}")
    click.echo(f"\nGenerator constants (faers_anon.synthetic._shape.REALISTIC):\n{REALISTIC}")
    drawn = quarter_figures(make_quarter(cases, seed=0, shape="realistic"))
    click.echo(f"\nA realistic draw of {cases:,} cases (same definitions, faers_anon.synthetic._figures):")
    click.echo("| figure | generated |\n|---|---|")
    for name, value in drawn.items():
        click.echo(f"| {name} | {value:,.4g} |")


if __name__ == "__main__":
    main()
