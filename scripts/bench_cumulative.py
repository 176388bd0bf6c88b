"""Cumulative ingest of N consecutive realistic quarters: wall, CPU and peak RSS per N (issue 14 item 1).

Usage:
    .venv/bin/python scripts/bench_cumulative.py --cases 400000 --quarters 1,2,4

The quarters are those of ``scripts/bench_corpus.py`` (``make_quarter(shape="realistic")``, seed =
position, half of each later quarter's follow-ups linked to cases of earlier quarters, so the
latest version of a case may lie in another quarter), made once under ``--work`` and reused. Per N,
one child process runs ``faers_anon.io.ingest.ingest_quarters(first N quarters, OUT)`` after
``faers_anon.configure()`` (as ``faers-anon ingest Q1 … QN`` does); its wall time, CPU time (user +
system) and peak RSS (``os.wait4``: that child alone) are printed with the load average, and the
reports read, the cases after dedup and the reports superseded by a later quarter, from its
``ingest_report.json``. Then the growth of peak RSS per added quarter and its log-log slope on N:
an ingest that holds one quarter plus the case index grows by the index (34 bytes per report) and
the super-records of the added cases, far less than a quarter's own peak.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

_CHILD = """
import sys
from pathlib import Path
import faers_anon
faers_anon.configure()
from faers_anon.io.ingest import ingest_quarters
ingest_quarters([Path(p) for p in sys.argv[2:]], Path(sys.argv[1]))
"""


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _timed(argv: list[str]) -> tuple[float, float, float]:
    """Wall s, CPU s and peak RSS MB of one child process."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, cwd=REPO)
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench_cumulative: {argv[:3]} failed")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


@click.command()
@click.option("--cases", type=int, default=400_000, show_default=True, help="Cases per quarter.")
@click.option(
    "--quarters", default="1,2,4", show_default=True, help="Numbers of quarters N, comma-separated."
)
@click.option("--linked", type=float, default=0.5, show_default=True, help="Share of follow-ups linked.")
@click.option(
    "--work",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("/tmp/bench_corpus"),
    show_default=True,
    help="Where the raw quarters are made (shared with bench_corpus.py).",
)
def main(cases: int, quarters: str, linked: float, work: Path) -> None:
    """Wall, CPU, peak RSS of a cumulative ingest per N; growth of peak RSS per quarter."""
    from bench_corpus import _prepare

    ns = sorted(int(x) for x in quarters.split(","))
    work.mkdir(parents=True, exist_ok=True)
    raws = _prepare(cases, ns[-1], "2021Q1", work, linked)
    click.echo(f"{'N':>3} {'wall s':>8} {'CPU s':>8} {'peak MB':>8} {'reports':>10} {'cases':>10} "
               f"{'by later q':>10}  load (1, 5, 15 min)")  # fmt: skip
    rows = []
    for n in ns:
        with tempfile.TemporaryDirectory(prefix="bench_cumulative_") as tmp:
            out = Path(tmp) / "out"
            wall, cpu, peak = _timed([sys.executable, "-c", _CHILD, str(out), *map(str, raws[:n])])
            report = json.loads((out / "ingest_report.json").read_text())
        later = sum(q["superseded_by_later_quarter"] for q in report["by_quarter"])
        rows.append((n, peak))
        click.echo(
            f"{n:>3} {wall:>8.1f} {cpu:>8.1f} {peak:>8.0f} {report['tables']['reports']['read']:>10,} "
            f"{report['cases']['cases']:>10,} {later:>10,}  {_load()}"
        )
    if len(rows) > 1:
        (n0, p0), (n1, p1) = rows[0], rows[-1]
        slope = float(np.polyfit(np.log([n for n, _ in rows]), np.log([p for _, p in rows]), 1)[0])
        click.echo(
            f"peak RSS grows {(p1 - p0) / (n1 - n0):.0f} MB per added quarter; log-log slope {slope:.2f}"
        )


if __name__ == "__main__":
    main()
