"""Benchmark the whole release of a synthetic quarter: ``faers-anon release`` stage by stage.

Writes a synthetic quarter of N cases (``faers_anon.synthetic``; reused when present), compiles the
numba kernel once on a tiny quarter, then runs ``faers-anon release`` on the big one in a child
process and prints each stage's time (from the release's manifest ``timings``), the total wall time
and the child's peak RSS. Target (issue "faers-anon release"): 400,000 cases in at most 120 s and
6 GB on the 2-core reference machine.

Example: ``python scripts/bench_release.py --cases 400000 --work /tmp/bench-release``
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import click

# Time the compiled kernels at every size, as before: small inputs would otherwise run interpreted and
# the warm-up would compile nothing (faers_anon._numba_cache); the children inherit the setting.
os.environ.setdefault("FAERS_ANON_JIT", "compiled")

_CHILD = """
import json, sys, time
from pathlib import Path
from faers_anon.release import release
from faers_anon.release_config import build_release_config
source, out = Path(sys.argv[1]), Path(sys.argv[2])
config = build_release_config(flag_options={"k": 5, "theta": 0.4, "on_infeasible": "raise-theta",
                                            "seed": 0, "force": True,
                                            "key_file": out.parent / "bench-agency.key"})
start = time.perf_counter()
result = release([source], out, config=config)
seconds = time.perf_counter() - start
peak = 0.0
for line in Path("/proc/self/status").read_text().splitlines():
    if line.startswith("VmHWM:"):
        peak = int(line.split()[1]) / 1024
print(json.dumps({"seconds": seconds, "peak_mb": peak, "stages": result.seconds,
                  "cases": result.report["counts"]["cases"],
                  "reports": result.report["counts"]["reports_read"],
                  "groups": result.report["privacy"]["groups"],
                  "nil": result.report["utility"]["nil"], "dr": result.report["privacy"]["dr"],
                  "survival": result.report["signals"]["survival_overall"]}))
"""


def _quarter(n: int, work: Path) -> Path:
    from faers_anon.synthetic import make_quarter, write_quarter

    folder = work / f"quarter-{n}"
    if not (folder / "ASCII").is_dir():
        write_quarter(make_quarter(n, seed=1), folder)
    return folder


def _run(source: Path, out: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(source), str(out)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"release failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@click.command()
@click.option("--cases", "n_cases", type=int, default=400_000, show_default=True)
@click.option("--work", type=click.Path(file_okay=False, path_type=Path), default=Path("/tmp/bench-release"))
def main(n_cases: int, work: Path) -> None:
    """Time every stage of one release of a synthetic quarter of N cases."""
    work.mkdir(parents=True, exist_ok=True)
    clock = time.perf_counter()
    warm = _quarter(500, work)
    _run(warm, work / "release-warmup")  # compiles and caches the numba kernel
    source = _quarter(n_cases, work)
    print(f"prepared quarters in {time.perf_counter() - clock:.1f} s")
    figures = _run(source, work / "release")
    stages = dict(figures.pop("stages"))  # type: ignore[call-overload]
    print(f"release of {figures['cases']:,} cases ({figures['reports']:,} reports read)")
    for stage, seconds in stages.items():
        print(f"  {stage:<10} {seconds:7.1f} s")
    print(f"  total      {figures['seconds']:7.1f} s   (target <= 120 s)")
    print(f"  peak RSS   {figures['peak_mb'] / 1024:7.2f} GB  (target <= 6 GB)")
    print(
        f"  groups {figures['groups']:,}, NIL {figures['nil']:.4f}, DR {figures['dr']:.4f}, "
        f"signal survival {figures['survival']}"
    )
    shutil.rmtree(work / "release-warmup", ignore_errors=True)


if __name__ == "__main__":
    main()
