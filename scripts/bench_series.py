"""Benchmark of a series: cumulative ingest, ledgered releases, cumulative signals, composition.

Input: ``--quarters`` consecutive generated quarters of ``--cases`` cases (``faers_anon.series.generate``,
``--shape`` realistic by default; ``--follow`` of a later quarter's cases follow up an earlier case),
made under ``--work``.

Steps, each a ``faers-anon`` child process (wall seconds and the child's peak RSS printed):

1. cumulative ingest of all quarters (``faers-anon ingest Q1 … Qn``);
2. each quarter released on its own (``release Qi``), and released with one ledger
   (``release Qi --ledger``), one after the other so both see the same load: the ratio ledgered /
   stand-alone per quarter, and the ledger's placement counts (returning, published, republished and
   withheld cases and reports);
3. cumulative signals over the ledgered releases (``faers-anon signals R1 … Rn``);
4. ``faers-anon verify --series`` and the risk module's composition attack, on both series.

Every step prints the 1-minute load average when it ends (the machine is shared).

Example: ``python scripts/bench_series.py --cases 20000 --quarters 4 --work /tmp/bench_series``
(the issue asks for 400k quarters: ``--cases 400000``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import click

from faers_anon.series.generate import make_series

_CLI = [sys.executable, "-m", "faers_anon"]


def _run(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run ``faers-anon args``; return (wall s, peak RSS MB of this child, stdout)."""
    start = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M", *_CLI, *args], capture_output=True, text=True, env=env
    )
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"faers-anon {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    rss = float(done.stderr.strip().splitlines()[-1]) / 1024
    return wall, rss, done.stdout


def _composition(releases: list[Path], env: dict[str, str], out: Path) -> dict[str, object]:
    args = [
        "risk",
        str(releases[-1]),
        *[a for r in releases[:-1] for a in ("--series", str(r))],
        "-o",
        str(out),
    ]
    _run(args, env)
    return dict(json.loads(out.read_text())["composition"])


@click.command()
@click.option("--cases", type=int, default=20000, show_default=True, help="Cases per quarter.")
@click.option("--quarters", type=int, default=4, show_default=True)
@click.option(
    "--follow", type=float, default=0.2, show_default=True, help="Follow-up share of later quarters."
)
@click.option("--k", type=int, default=5, show_default=True)
@click.option("--shape", type=click.Choice(["small", "realistic"]), default="realistic", show_default=True)
@click.option("--work", type=click.Path(file_okay=False, path_type=Path), required=True)
def main(cases: int, quarters: int, follow: float, k: int, shape: str, work: Path) -> None:
    """Time a ledgered series against stand-alone releases and measure its composition."""
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "FAERS_ANON_KEY_FILE": str(work / "agency.key")}
    raws = make_series(cases, work / "raw", quarters=quarters, follow=follow, seed=0, shape=shape)
    rows: list[tuple[str, float, float, float]] = []
    wall, rss, _ = _run(["ingest", *map(str, raws), "-o", str(work / "ingested")], env)
    rows.append(("cumulative ingest", wall, rss, os.getloadavg()[0]))
    alone, ledgered = [], []
    for i, raw in enumerate(raws):
        out_a, out_l = work / f"alone{i}", work / f"ledgered{i}"
        wall_a, rss_a, _ = _run(["release", str(raw), "-o", str(out_a), "--k", str(k), "--force"], env)
        args = ["release", str(raw), "-o", str(out_l), "--k", str(k), "--ledger", str(work / "ledger")]
        wall_l, rss_l, text = _run(args, env)
        series_line = next((line for line in text.splitlines() if line.startswith("[series]")), "")
        load = os.getloadavg()[0]
        rows += [
            (f"release {raw.name} alone", wall_a, rss_a, load),
            (f"release {raw.name} ledgered", wall_l, rss_l, load),
        ]
        print(f"{raw.name}: ledgered / alone = {wall_l / wall_a:.2f}  {series_line}", flush=True)
        alone.append(out_a)
        ledgered.append(out_l)
    wall, rss, _ = _run(["signals", *map(str, ledgered), "-o", str(work / "signals.parquet")], env)
    rows.append(("cumulative signals", wall, rss, os.getloadavg()[0]))
    for name, wall, rss, load in rows:
        print(f"{name:<28} {wall:8.1f} s  peak RSS {rss:8.0f} MB  load {load:4.1f}")
    for record in json.loads((work / "ledger" / "ledger.json").read_text())["releases"]:
        print(f"ledger {', '.join(record['quarters'])}: {json.dumps(record.get('series', {}))}")
    for label, series in (("alone", alone), ("ledgered", ledgered)):
        _, _, text = _run(["verify", "--series", *map(str, series)], env)
        verdict = next(line for line in text.splitlines() if line.startswith("series of"))
        print(f"{label}: {verdict}")
        print(
            f"{label}: risk composition {json.dumps(_composition(series, env, work / f'risk_{label}.json'))}"
        )
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
