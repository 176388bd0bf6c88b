"""Corpus scale: ingest, cross-quarter dedup and all-pairs signals over N consecutive realistic quarters.

Input: N realistic synthetic quarters (``make_quarter(shape="realistic")``, quarter labels from
``--first``, seed = position), made once under ``--work`` and reused. A real corpus links quarters:
a follow-up in quarter i repeats a case first seen earlier. Here, in every quarter after the first,
each case whose version 1 lies before the quarter takes, with probability ``--linked`` (0.5), the
caseid of a random case of an earlier quarter, with its versions moved above that case's latest
(primaryids follow), so the dedup has real work.

Pipeline per N, in one child process (its wall, CPU and peak RSS are what is printed), streaming:

1. ingest each quarter alone (``faers_anon.io.ingest.ingest_quarters``) into its own folder;
2. case index: (caseid, quarter, latest version) of every quarter's cases; per caseid the latest
   version wins (a later quarter on ties); a caseid on any quarter's DELETE list is dropped;
3. all pairs: per quarter, the winning cases' drug × reaction pairs counted by case and added to
   running totals; then a, b, c, d, PRR and ROR for every pair (a = cases with drug and event).

Memory is one quarter's ingest plus the case index and the pair counts; nothing else is kept.
Printed per N: wall and CPU seconds (child alone), peak RSS, cases after dedup, pairs, load average;
then the growth exponent (log-log slope of wall, CPU and peak RSS on N) and the projection to 90
quarters from the largest N: time × (90/N)^max(slope, 1), peak RSS × (90/N)^max(slope, 0).

Example: ``python scripts/bench_corpus.py --cases 400000 --quarters 4,8,16 --work /tmp/corpus``
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import click
import numpy as np
import polars as pl

PROJECT_QUARTERS = 90


def _label(first: str, i: int) -> str:
    """The i-th quarter label after ``first`` (``2021Q1``, 1 → ``2021Q2``)."""
    year, q = int(first[:4]), int(first[5]) - 1 + i
    return f"{year + q // 4}Q{q % 4 + 1}"


def _link(
    tables: dict[str, pl.DataFrame], seen: pl.DataFrame, share: float, seed: int
) -> dict[str, pl.DataFrame]:
    """Give a ``share`` of the quarter's follow-up cases the caseid of a case in ``seen``.

    ``seen`` holds (caseid, version) of the earlier quarters; a linked case's versions move above it.
    """
    rng = np.random.default_rng(seed)
    demo = tables["DEMO"]
    old = demo.filter(pl.col("init_fda_dt") < pl.col("fda_dt").min()).get_column("caseid").unique().sort()
    chosen = old.filter(pl.Series(rng.random(old.len()) < share))
    if chosen.is_empty() or seen.is_empty():
        return tables
    chosen = chosen.head(seen.height)  # each earlier case is linked at most once
    target = seen.sample(n=chosen.len(), with_replacement=False, seed=seed)
    mapping = pl.DataFrame({"caseid": chosen, "new_caseid": target["caseid"], "offset": target["version"]})
    keys = demo.select("primaryid", "caseid", "caseversion").join(mapping, on="caseid", how="inner")
    keys = keys.with_columns(
        (pl.col("caseversion").cast(pl.Int64) + pl.col("offset")).cast(pl.Utf8).alias("new_version")
    ).with_columns(pl.concat_str("new_caseid", "new_version").alias("new_primaryid"))
    from faers_anon.series.generate import relink_reports

    return relink_reports(tables, keys)


def _prepare(n_cases: int, quarters: int, first: str, work: Path, linked: float) -> list[Path]:
    """Raw quarters 0..quarters-1 under work (made once; the case index of earlier ones links them)."""
    from faers_anon.synthetic import make_quarter, write_quarter

    paths, seen = [], pl.DataFrame(schema={"caseid": pl.Utf8, "version": pl.Int64})
    for i in range(quarters):
        folder = work / f"raw_{n_cases}_{i:02d}"
        label = _label(first, i)
        if not (folder / "done").is_file():
            tables = make_quarter(n_cases, seed=i, quarter=label, shape="realistic", malformed=False)
            tables = _link(tables, seen, linked, seed=1000 + i) if i else tables
            write_quarter(tables, folder, quarter=label)
            (folder / "done").write_text("ok")
        demo = pl.scan_csv(
            sorted(folder.rglob("DEMO*.txt"))[0], separator="$", infer_schema=False, quote_char=None
        )
        latest = demo.group_by("caseid").agg(pl.col("caseversion").cast(pl.Int64).max().alias("version"))
        seen = pl.concat([seen, latest.collect()]).group_by("caseid").agg(pl.col("version").max())
        paths.append(folder)
    return paths


def _pipeline(raws: list[Path], out: Path) -> dict[str, float]:
    """Ingest every quarter alone, dedup across quarters, count all drug–event pairs; return sizes."""
    from faers_anon.io.ingest import ingest_quarters

    folders, index, deleted = [], [], []
    for i, raw in enumerate(raws):
        folder = out / f"q{i:02d}"
        ingest_quarters([raw], folder)
        folders.append(folder)
        cases = pl.scan_parquet(folder / "cases.parquet")
        index.append(
            cases.select(
                "caseid",
                pl.col("caseversions").list.max().cast(pl.Int64).alias("version"),
                pl.lit(i).alias("q"),
            ).collect()
        )
        for path in raw.rglob("DELETE*.txt"):
            deleted.append(
                pl.read_csv(
                    path, has_header=False, new_columns=["caseid"], schema_overrides={"caseid": pl.Utf8}
                )
            )
    gone = (
        pl.concat(deleted)["caseid"].str.strip_chars().unique() if deleted else pl.Series([], dtype=pl.Utf8)
    )
    winners = (
        pl.concat(index)
        .with_columns(pl.col("caseid").cast(pl.Utf8))
        .filter(~pl.col("caseid").is_in(gone.implode()))
        .sort("version", "q")
        .group_by("caseid")
        .agg(pl.col("q").last())
    )
    pairs = None
    drugs = events = None
    for i, folder in enumerate(folders):
        keep = winners.filter(pl.col("q") == i).select("caseid")
        table = (
            pl.scan_parquet(folder / "cases.parquet")
            .select(pl.col("caseid").cast(pl.Utf8), "drug_keys", "reactions")
            .join(keep.lazy(), on="caseid", how="semi")
            .collect()
        )
        # values as categoricals (one global dictionary): the running pair counts hold two u32 per pair
        d = table.select("caseid", pl.col("drug_keys").alias("drug")).explode("drug").drop_nulls().unique()
        e = table.select("caseid", pl.col("reactions").alias("event")).explode("event").drop_nulls().unique()
        d, e = (
            d.with_columns(pl.col("drug").cast(pl.Categorical)),
            e.with_columns(pl.col("event").cast(pl.Categorical)),
        )
        step = d.join(e, on="caseid").group_by("drug", "event").len("a")
        pairs = (
            step
            if pairs is None
            else pl.concat([pairs, step]).group_by("drug", "event").agg(pl.col("a").sum())
        )
        dn, en = d.group_by("drug").len("n_drug"), e.group_by("event").len("n_event")
        drugs = dn if drugs is None else pl.concat([drugs, dn]).group_by("drug").agg(pl.col("n_drug").sum())
        events = (
            en if events is None else pl.concat([events, en]).group_by("event").agg(pl.col("n_event").sum())
        )
    assert pairs is not None and drugs is not None and events is not None
    total = winners.height
    table = (
        pairs.join(drugs, on="drug")
        .join(events, on="event")
        .with_columns(b=pl.col("n_drug") - pl.col("a"), c=pl.col("n_event") - pl.col("a"))
        .with_columns(d=total - pl.col("a") - pl.col("b") - pl.col("c"))
    )
    table = table.with_columns(
        prr=(pl.col("a") / (pl.col("a") + pl.col("b"))) / (pl.col("c") / (pl.col("c") + pl.col("d"))),
        ror=(pl.col("a") * pl.col("d")) / (pl.col("b") * pl.col("c")),
    )
    linked = sum(x.height for x in index) - total
    return {
        "cases": total,
        "pairs": table.height,
        "dropped_by_dedup": linked,
        "signals_prr2_a3": table.filter((pl.col("prr") >= 2) & (pl.col("a") >= 3)).height,
    }


def _usage() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return math.nan


def _project(value: float, scale: float, slope: float, floor: float) -> float:
    """``value × scale^max(slope, floor)``: the largest N's figure grown to the projected corpus."""
    return value * scale ** max(slope, floor)


def _slope(xs: list[float], ys: list[float]) -> float:
    lx, ly = np.log(xs), np.log(ys)
    return float(np.polyfit(lx, ly, 1)[0]) if len(xs) > 1 else math.nan


@click.command()
@click.option("--cases", type=int, default=400_000, show_default=True, help="Cases per quarter.")
@click.option("--quarters", default="4,8,16", show_default=True, help="Corpus sizes N, comma-separated.")
@click.option("--first", default="2021Q1", show_default=True, help="Label of the first quarter.")
@click.option(
    "--linked",
    type=float,
    default=0.5,
    show_default=True,
    help="Share of follow-ups linked to earlier quarters.",
)
@click.option(
    "--work",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("/tmp/bench_corpus"),
    show_default=True,
)
@click.option("--child", type=int, default=0, hidden=True)
def main(cases: int, quarters: str, first: str, linked: float, work: Path, child: int) -> None:
    """Wall, CPU, peak RSS per N; growth exponent; projection to 90 quarters."""
    work.mkdir(parents=True, exist_ok=True)
    ns = sorted(int(x) for x in quarters.split(","))
    if child:
        raws = _prepare(cases, child, first, work, linked)
        out = work / f"out_{cases}_{child}"
        subprocess.run(["rm", "-rf", str(out)], check=True)
        start, cpu = time.perf_counter(), _usage()
        sizes = _pipeline(raws, out)
        sizes.update(wall=time.perf_counter() - start, cpu=_usage() - cpu, peak_mb=_peak_mb())
        subprocess.run(["rm", "-rf", str(out)], check=True)
        click.echo(json.dumps(sizes))
        return
    start = time.perf_counter()
    _prepare(cases, ns[-1], first, work, linked)
    click.echo(
        f"made {ns[-1]} realistic quarters of {cases:,} cases in {time.perf_counter() - start:.0f} s "
        "(reused later)"
    )
    click.echo(
        f"{'N':>3} {'wall s':>8} {'CPU s':>8} {'peak MB':>8} {'cases':>10} {'linked':>8} {'pairs':>10} "
        f"{'PRR≥2,a≥3':>10}  load"
    )
    rows = []
    for n in ns:
        argv = [
            sys.executable,
            __file__,
            "--cases",
            str(cases),
            "--first",
            first,
            "--linked",
            str(linked),
            "--work",
            str(work),
            "--child",
            str(n),
        ]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            click.echo(f"{n:>3} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
            continue
        r = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append((n, r))
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        click.echo(
            f"{n:>3} {r['wall']:>8.1f} {r['cpu']:>8.1f} {r['peak_mb']:>8.0f} {r['cases']:>10,} "
            f"{r['dropped_by_dedup']:>8,} "
            f"{r['pairs']:>10,} {r['signals_prr2_a3']:>10,}  {load}"
        )
    if len(rows) < 2:
        return
    xs = [float(n) for n, _ in rows]
    slope = {k: _slope(xs, [r[k] for _, r in rows]) for k in ("wall", "cpu", "peak_mb")}
    n_max, r_max = rows[-1]
    scale = PROJECT_QUARTERS / n_max
    click.echo(
        f"growth exponent (log-log on N): wall {slope['wall']:.2f}, CPU {slope['cpu']:.2f}, "
        f"peak RSS {slope['peak_mb']:.2f}"
    )
    click.echo(
        f"projection to {PROJECT_QUARTERS} quarters of {cases:,} cases (time at least linear): "
        f"wall {_project(r_max['wall'], scale, slope['wall'], 1.0) / 60:.1f} min, "
        f"CPU {_project(r_max['cpu'], scale, slope['cpu'], 1.0) / 60:.1f} min, "
        f"peak RSS {_project(r_max['peak_mb'], scale, slope['peak_mb'], 0.0) / 1024:.2f} GB"
    )


if __name__ == "__main__":
    main()
