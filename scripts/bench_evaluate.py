"""Benchmark ``faers-anon evaluate`` on synthetic quarters: wall time, peak memory, time per model.

For each size: write a synthetic quarter (``faers_anon.synthetic``), ingest it (reused when present),
then run the whole evaluation (every model, optional methods, the k × θ × setting grid, signals) in a
child process that reports its wall time and peak RSS (VmHWM). The numba kernel is compiled once
beforehand on a tiny quarter, so the timings exclude compilation. Per model: number of distinct
partitions computed, engine seconds and signal seconds (summed over those partitions).

Example: ``python scripts/bench_evaluate.py --sizes 20000,100000 --k 5,10,15,20 --methods ra,mews``
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import click

# Time the compiled kernels at every size, as before: small inputs would otherwise run interpreted and
# the warm-up would compile nothing (faers_anon._numba_cache); the children inherit the setting.
os.environ.setdefault("FAERS_ANON_JIT", "compiled")


def _prepare(n: int, work: Path) -> Path:
    """Synthetic quarter of n cases, ingested under work/n<N>/ingested (reused when present)."""
    from faers_anon.io.ingest import ingest_quarters
    from faers_anon.synthetic import make_quarter, write_quarter

    folder = work / f"n{n}"
    ingested = folder / "ingested"
    if not (ingested / "cases.parquet").is_file():
        raw = write_quarter(make_quarter(n, seed=1), folder / "raw")
        ingest_quarters([raw], ingested)
    return ingested


def _peak_rss_mb() -> float:
    """Peak RSS of this process in MB (VmHWM; ``ru_maxrss`` where /proc is absent)."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text(encoding="utf-8").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(ingested: Path, out: Path, ks: str, thetas: str, methods: str, signals: bool) -> dict[str, object]:
    import polars as pl

    from faers_anon.evaluate.pipeline import EvaluateConfig, evaluate_sources

    config = EvaluateConfig(
        ks=tuple(int(k) for k in ks.split(",")),
        thetas=tuple(float(t) for t in thetas.split(",")),
        methods=tuple(m for m in methods.split(",") if m),
        signals=signals,
    )
    start = time.perf_counter()
    result = evaluate_sources([ingested], out, config=config)
    seconds = time.perf_counter() - start
    # A partition serves several rows; count it once: distinct (model, k, seconds) stand for one run.
    runs = (
        result.rows.unique(["model", "k", "seconds"])
        .group_by("model")
        .agg(
            pl.len().alias("runs"),
            pl.col("seconds").sum().alias("engine_s"),
            pl.col("signal_seconds").sum().alias("signal_s"),
        )
    )
    return {
        "seconds": seconds,
        "rows": result.rows.height,
        "per_model": runs.sort("model").to_dicts(),
    }


def _run_child(*args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@click.command()
@click.option("--sizes", default="20000,100000", show_default=True, help="Cases per quarter.")
@click.option("--work", type=click.Path(file_okay=False, path_type=Path), default=Path("/tmp/bench_evaluate"),
              show_default=True, help="Folder for the synthetic quarters and outputs (reused).")  # fmt: skip
@click.option("--k", "ks", default="5,10,15,20", show_default=True)
@click.option("--theta", "thetas", default="0.2,0.4", show_default=True)
@click.option("--methods", default="", show_default=True, help="Comma-separated methods (default none).")
@click.option("--signals/--no-signals", default=True, show_default=True)
@click.option("--child", is_flag=True, hidden=True, help="Run one measurement (internal).")
@click.argument("child_args", nargs=-1)
def main(
    sizes: str,
    work: Path,
    ks: str,
    thetas: str,
    methods: str,
    signals: bool,
    child: bool,
    child_args: tuple[str, ...],
) -> None:
    """Wall time, peak memory and per-model time of one evaluation per quarter size."""
    if child:
        path, out, c_ks, c_thetas, c_methods, c_signals = child_args
        result = _child(Path(path), Path(out), c_ks, c_thetas, c_methods, c_signals == "1")
        result["peak_rss_mb"] = _peak_rss_mb()
        click.echo(json.dumps(result))
        return
    work.mkdir(parents=True, exist_ok=True)
    warm = _prepare(500, work)
    _run_child(str(warm), str(work / "warm-out"), "5", "0.4", "", "0")  # compile the numba kernels
    for n in (int(s) for s in sizes.split(",")):
        ingested = _prepare(n, work)
        got = _run_child(str(ingested), str(work / f"out-{n}"), ks, thetas, methods, "1" if signals else "0")
        if "error" in got:
            click.echo(f"{n:>8} cases: failed: {got['error']}")
            continue
        click.echo(
            f"{n:>8} cases: {got['rows']} rows, {got['seconds']:.1f} s, peak {got['peak_rss_mb']:.0f} MB"
        )
        click.echo(f"{'model':>20} {'runs':>5} {'engine s':>9} {'signal s':>9}")
        for row in got["per_model"]:  # type: ignore[attr-defined]
            signal = row["signal_s"] if row["signal_s"] is not None else float("nan")
            click.echo(f"{row['model']:>20} {row['runs']:>5} {row['engine_s']:>9.1f} {signal:>9.1f}")


if __name__ == "__main__":
    main()
