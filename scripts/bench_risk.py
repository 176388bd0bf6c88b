"""Benchmark ``faers-anon risk`` on a synthetic release: every default knowledge set, with and without raw.

Makes (or reuses) a synthetic quarter of N cases (``scripts/make_synthetic_quarter.py``) and its
release (``faers-anon release --keep-work``, k 5, θ 0.4), then runs :func:`faers_anon.risk.assess_risk`
in a child process, first on the release alone (prosecutor risk, inference), then with the raw
ingested folder (adds journalist risk and linkage), and prints the wall time, CPU time, the child's
peak RSS and the load average before and after (the machine is shared: a load above its 2 cores
makes the wall time an upper bound). ``--repeat N`` runs each N times and keeps the fastest;
``--profile`` prints the wall and CPU seconds of each step (reading, encoding, each knowledge set,
inference, linkage: ``RiskResult.timings`` and ``RiskResult.cpu``) of that fastest run. Target
(issue 15): a 400k-case release in at most 30 s.

Example: ``python scripts/bench_risk.py --cases 400000 --work /tmp/bench-risk --repeat 2 --profile``;
on a kept release: ``python scripts/bench_risk.py --release REL --raw WORK/ingested --threads 1 --profile``
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click

_CHILD = """
import json, resource, sys, time
from pathlib import Path
from faers_anon.risk import RiskConfig, assess_risk
release, raw = Path(sys.argv[1]), (Path(sys.argv[2]) if sys.argv[2] else None)
start, cpu = time.perf_counter(), time.process_time()
result = assess_risk(release, config=RiskConfig(raw=raw))
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
sets = result.figures["reidentification"]
print(json.dumps({"seconds": seconds, "cpu": cpu, "peak_mb": peak, "sets": len(sets),
                  "timings": result.timings, "cpu_steps": result.cpu,
                  "inexact": [r["knows"] or r["items"] for r in sets if not r.get("exact", True)],
                  "qids": next(r for r in sets if r["items"] is None)}))
"""


def _run(command: list[str], **env: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **env}, check=False)
    if done.returncode:
        raise click.ClickException(f"{' '.join(command[:3])} failed: {done.stderr.strip()[-800:]}")


def _prepare(cases: int, work: Path) -> tuple[Path, Path]:
    quarter, release, raw = work / "quarter", work / "release", work / "raw"
    bin_dir = Path(sys.executable).parent
    if not quarter.is_dir():
        click.echo(f"writing a synthetic quarter of {cases:,} cases to {quarter} …")
        _run([sys.executable, "scripts/make_synthetic_quarter.py", "--cases", str(cases), "-o", str(quarter)])
    if not (release.is_dir() and raw.is_dir()):
        click.echo(f"releasing it to {release} …")
        _run(
            [str(bin_dir / "faers-anon"), "release", str(quarter), "-o", str(release), "--k", "5",
             "--theta", "0.4", "--on-infeasible", "raise-theta", "--force", "--work", str(work / "w"),
             "--keep-work"],
            FAERS_ANON_KEY_FILE=str(work / "agency.key"),
        )  # fmt: skip
        ingested = next((work / "w").glob("*/ingested"))
        ingested.rename(raw)
    return release, raw


@click.command()
@click.option("--cases", default=400_000, show_default=True, help="Cases of the synthetic quarter.")
@click.option("--work", type=click.Path(file_okay=False, path_type=Path), default=Path("/tmp/bench-risk"),
              show_default=True, help="Folder for the quarter, release and raw tables (reused).")  # fmt: skip
@click.option("--repeat", default=1, show_default=True, help="Runs of each; the fastest is kept.")
@click.option("--profile", is_flag=True, help="Print the seconds of each step of the fastest run.")
@click.option("--release", "given", default=None,
              type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="Time this release instead (e.g. a kept realistic release); needs --raw.")  # fmt: skip
@click.option("--raw", "given_raw", default=None,
              type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="The ingested folder of --release (its --keep-work folder's ingested/).")  # fmt: skip
@click.option("--threads", type=int, default=None,
              help="POLARS_MAX_THREADS of the child: 1 gives the CPU seconds of the work itself (idle "
                   "polars threads spin on a loaded machine and inflate the CPU time).")  # fmt: skip
def main(
    cases: int, work: Path, repeat: int, profile: bool, given: Path | None, given_raw: Path | None,
    threads: int | None,
) -> None:  # fmt: skip
    """Time faers-anon risk on a synthetic release of CASES cases (or on --release with --raw)."""
    if (given is None) != (given_raw is None):
        raise click.UsageError("--release and --raw go together")
    if given is not None and given_raw is not None:
        release, raw = given, given_raw
    else:
        work.mkdir(parents=True, exist_ok=True)
        release, raw = _prepare(cases, work)
    env = {**os.environ, **({"POLARS_MAX_THREADS": str(threads)} if threads else {})}
    for label, raw_arg in (("release only", ""), ("with --raw", str(raw))):
        runs = []
        for _ in range(repeat):
            load = os.getloadavg()
            done = subprocess.run([sys.executable, "-c", _CHILD, str(release), raw_arg], capture_output=True,
                                  text=True, check=False, env=env)  # fmt: skip
            if done.returncode:
                raise click.ClickException(done.stderr.strip()[-800:])
            runs.append((json.loads(done.stdout.strip().splitlines()[-1]), load, os.getloadavg()))
        figures, load, after = min(runs, key=lambda run: run[0]["seconds"])
        times = [f"{run[0]['seconds']:.1f}" for run in runs]
        click.echo(
            f"{label}: {figures['seconds']:.1f} s wall, {figures['cpu']:.1f} s CPU, "
            f"peak {figures['peak_mb']:,.0f} MB; "
            f"{figures['sets']} knowledge sets; QIDs alone: unique {figures['qids']['unique']:.2%}, "
            f"below k {figures['qids']['below_k']:.2%}; sets counted as equal lists (lower bound): "
            f"{figures['inexact'] or 'none'}; load average {load[0]:.2f} before, {after[0]:.2f} after"
            + (f" (fastest of {repeat}: {', '.join(times)} s)" if repeat > 1 else "")
        )
        if profile:
            click.echo(f"    {'step':<60} {'wall':>8} {'CPU':>8}")
            for step, seconds in figures["timings"].items():
                cpu = figures["cpu_steps"].get(step, float("nan"))
                click.echo(f"    {step[:60]:<60} {seconds:6.2f} s {cpu:6.2f} s")


if __name__ == "__main__":
    main()
