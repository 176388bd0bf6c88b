"""Corpus scale: ingest, cross-quarter dedup and all-pairs signals over N consecutive realistic quarters.

Input: N realistic synthetic quarters (``make_quarter(shape="realistic")``, quarter labels from
``--first``, seed = position), made once under ``--work`` and reused. A real corpus links quarters:
a follow-up in quarter i repeats a case first seen earlier. Here, in every quarter after the first,
each case whose version 1 lies before the quarter takes, with probability ``--linked`` (0.5), the
caseid of a random case of an earlier quarter, with its versions moved above that case's latest
(primaryids follow), so the dedup has real work.

Pipeline per N, in one child process (``faers_anon.configure()`` first, as the command does), streaming:

1. cumulative ingest of the N quarters into one folder (``faers_anon.io.ingest.ingest_quarters``,
   :func:`faers_anon.io.cumulative.ingest_series`): one quarter at a time, latest first, every
   table appended to one file; the case index (34 bytes a report) decides each case's latest version
   across the quarters and the DELETE lists of every quarter apply to all;
2. all pairs (:func:`faers_anon.analysis.cumulative.series_pair_counts`, ``--role``): per quarter,
   its counted cases' drug × event pairs (cases, not rows) added to running totals, then a, b, c, d
   for every pair; the PRR ≥ 2 with a ≥ 3 are counted.

Memory is one quarter's ingest plus the case index and the pair counts. Printed per N: wall, CPU
(user + system, all threads) and peak RSS of the child, the same for each stage (the peak is reset
between them), reports read, cases after dedup, reports superseded by a later quarter, pairs,
signals, and the load average before and after; then the growth exponent (log-log slope of wall,
CPU and peak RSS on N) and the projection to 90 quarters from the largest N:
time × (90/N)^max(slope, 1), peak RSS × (90/N)^max(slope, 0).

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


def _reset_peak() -> None:
    """Start a new peak RSS (VmHWM) for the next stage (Linux: ``5`` to ``/proc/self/clear_refs``)."""
    Path("/proc/self/clear_refs").write_text("5")


def _stage(timings: dict[str, float], name: str, start: float, cpu: float) -> None:
    timings.update({f"{name}_wall": time.perf_counter() - start, f"{name}_cpu": _usage() - cpu,
                    f"{name}_peak_mb": _peak_mb()})  # fmt: skip


def _pipeline(raws: list[Path], out: Path, role: str) -> dict[str, float]:
    """Cumulative ingest of ``raws`` into ``out``, then the streaming pair counts; sizes and stage times."""
    from faers_anon.analysis.cumulative import series_pair_counts
    from faers_anon.io.ingest import ingest_quarters

    timings: dict[str, float] = {}
    start, cpu = time.perf_counter(), _usage()
    report = ingest_quarters(raws, out).report
    _stage(timings, "ingest", start, cpu)
    _reset_peak()
    start, cpu = time.perf_counter(), _usage()
    counts = series_pair_counts([out], role=role)
    a, b, c, d = (pl.col(x) for x in "abcd")
    signals = counts.table.filter((a / (a + b)) / (c / (c + d)) >= 2, a >= 3).height  # PRR ≥ 2, a ≥ 3
    _stage(timings, "pairs", start, cpu)
    return timings | {
        "reports": report["tables"]["reports"]["read"],
        "cases": counts.cases,
        "superseded_later": sum(q["superseded_by_later_quarter"] for q in report["by_quarter"]),
        "pairs": counts.table.height,
        "signals_prr2_a3": signals,
        "parts": counts.parts,
    }


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


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
@click.option(
    "--role",
    type=click.Choice(["ps", "suspect", "any"]),
    default="any",
    show_default=True,
    help="Drug rows counted (signals.counts.ROLES); any = every pair of the corpus.",
)
@click.option("--child", type=int, default=0, hidden=True)
def main(cases: int, quarters: str, first: str, linked: float, work: Path, role: str, child: int) -> None:
    """Wall, CPU, peak RSS per N; growth exponent; projection to 90 quarters."""
    work.mkdir(parents=True, exist_ok=True)
    ns = sorted(int(x) for x in quarters.split(","))
    if child:
        import faers_anon

        faers_anon.configure()  # as the faers-anon command does (faers_anon/_runtime.py)
        raws = _prepare(cases, child, first, work, linked)
        out = work / f"out_{cases}_{child}"
        subprocess.run(["rm", "-rf", str(out)], check=True)
        sizes = _pipeline(raws, out, role)
        sizes.update(
            wall=sizes["ingest_wall"] + sizes["pairs_wall"],
            cpu=sizes["ingest_cpu"] + sizes["pairs_cpu"],
            peak_mb=max(sizes["ingest_peak_mb"], sizes["pairs_peak_mb"]),
        )
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
        f"{'N':>3} {'wall s':>7} {'CPU s':>7} {'peak MB':>7} | {'ingest CPU':>10} {'peak MB':>7} | "
        f"{'pairs CPU':>9} {'peak MB':>7} | {'reports':>10} {'cases':>10} {'by later q':>10} {'pairs':>10} "
        f"{'PRR≥2,a≥3':>9}  load before → after (1, 5, 15 min)"
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
            "--role",
            role,
            "--child",
            str(n),
        ]
        before = _load()
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            click.echo(f"{n:>3} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
            continue
        r = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append((n, r))
        click.echo(
            f"{n:>3} {r['wall']:>7.1f} {r['cpu']:>7.1f} {r['peak_mb']:>7.0f} | {r['ingest_cpu']:>10.1f} "
            f"{r['ingest_peak_mb']:>7.0f} | {r['pairs_cpu']:>9.1f} {r['pairs_peak_mb']:>7.0f} | "
            f"{r['reports']:>10,} {r['cases']:>10,} {r['superseded_later']:>10,} {r['pairs']:>10,} "
            f"{r['signals_prr2_a3']:>9,}  {before} → {_load()}",
            nl=True,
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
