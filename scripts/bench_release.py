"""Benchmark the whole release of a synthetic quarter: ``faers-anon release`` stage by stage.

Writes a synthetic quarter of N cases (``faers_anon.synthetic``; reused when present), compiles the
numba kernels once on a tiny quarter and the bundled demo, then runs ``faers-anon release`` on the big
one in a child process and prints each stage's time (from the release's manifest ``timings``), the total
wall time and the child's peak RSS. Target (issue 18, item 6): 400,000 cases in at most 60 s and 6 GB on
the 2-core reference machine. ``--stages both`` releases it with the stages one after the other and then
beside each other (``FAERS_ANON_STAGES``, :mod:`faers_anon.release.stages`), back to back.

With ``--compare-policy`` (issue 18) the quarter is released twice, with the new defaults (column
policy, value classes, OUTC codes under θ) and without them (the old policy as a user override, no
classes, OUTC unbounded), and each release prints NIL per QID, Evans-signal survival and the attacks
of ``faers-anon risk`` (cases below k knowing the QIDs plus every released DEMO field; class and OUTC
pairs above θ), with the load average.

``process`` is the child's whole wall time, start-up and imports included (the issue's figure for the
command), beside its CPU seconds over every thread; ``--source`` releases an existing quarter.

Example: ``python scripts/bench_release.py --cases 400000 --work /tmp/bench-release``
(the realistic quarter: ``--source /tmp/q/r400k``)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click

from faers_anon.release.stages import STAGES_ENV

# Time the compiled kernels at every size, as before: small inputs would otherwise run interpreted and
# the warm-up would compile nothing (faers_anon._numba_cache); the children inherit the setting.
os.environ.setdefault("FAERS_ANON_JIT", "compiled")

_CHILD = """
import json, resource, sys, time
from pathlib import Path
import faers_anon
faers_anon.configure()  # as the faers-anon command does: the allocator, the kernels' cache
from faers_anon.release.pipeline import release
from faers_anon.release.config import build_release_config
source, out = Path(sys.argv[1]), Path(sys.argv[2])
extra = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
config = build_release_config(flag_options={"k": 5, "theta": 0.4, "on_infeasible": "raise-theta",
                                            "seed": 0, "force": True,
                                            "key_file": out.parent / "bench-agency.key", **extra})
start = time.perf_counter()
result = release([source], out, config=config)
seconds = time.perf_counter() - start
peak = 0.0
for line in Path("/proc/self/status").read_text().splitlines():
    if line.startswith("VmHWM:"):
        peak = int(line.split()[1]) / 1024
used = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": seconds, "peak_mb": peak, "stages": result.seconds,
                  "cpu": used.ru_utime + used.ru_stime,
                  "cases": result.report["counts"]["cases"],
                  "reports": result.report["counts"]["reports_read"],
                  "groups": result.report["privacy"]["groups"],
                  "nil": result.report["utility"]["nil"], "dr": result.report["privacy"]["dr"],
                  "nil_by_qid": {k: v for k, v in result.report["utility"].items() if k.startswith("nil_")},
                  "survival": result.report["signals"]["survival_overall"]}))
"""


def _quarter(n: int, work: Path, shape: str = "small") -> Path:
    from faers_anon.synthetic import make_quarter, write_quarter

    folder = work / (f"quarter-{n}" if shape == "small" else f"quarter-{shape}-{n}")
    if not (folder / "ASCII").is_dir():
        write_quarter(make_quarter(n, seed=1, shape=shape), folder)
    return folder


def _run(
    source: Path, out: Path, extra: dict[str, object] | None = None, stages: str = "concurrent"
) -> dict[str, Any]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(source), str(out), json.dumps(extra or {})],
        capture_output=True, text=True, check=False, env={**os.environ, STAGES_ENV: stages},
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"release failed:\n{done.stderr[-3000:]}")
    figures = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    figures["process_wall"] = time.perf_counter() - start  # start-up and imports included
    return figures


@click.command()
@click.option("--cases", "n_cases", type=int, default=400_000, show_default=True)
@click.option("--work", type=click.Path(file_okay=False, path_type=Path), default=Path("/tmp/bench-release"))
@click.option("--compare-policy", is_flag=True, help="Also release without issue 18's defaults; print both.")
@click.option(
    "--shape", type=click.Choice(["small", "realistic"]), default="small", show_default=True,
    help="The synthetic generator: small vocabularies, or fitted to real FAERS (docs/synthetic.md).",
)  # fmt: skip
@click.option(
    "--source", type=click.Path(exists=True, path_type=Path), default=None,
    help="An existing quarter (FDA zip or folder, e.g. /tmp/q/r400k) instead of a synthetic one.",
)  # fmt: skip
@click.option(
    "--stages", "modes", type=click.Choice(["concurrent", "sequential", "both"]), default="concurrent",
    show_default=True, help="How the release runs its stages (FAERS_ANON_STAGES); both: one after the other.",
)  # fmt: skip
def main(n_cases: int, work: Path, compare_policy: bool, shape: str, source: Path | None, modes: str) -> None:
    """Time every stage of one release of a synthetic quarter of N cases."""
    work.mkdir(parents=True, exist_ok=True)
    clock = time.perf_counter()
    from faers_anon.io.ingest import demo_source

    # compiles and caches the numba kernels: a tiny quarter, then the demo, whose groups need the
    # repair's merge kernels too (a 500-case quarter has none to merge, so the first timed release
    # on a fresh checkout compiled them: 4 kernels, 63.5 s against 44.9-52.3 s for the runs after)
    _run(_quarter(500, work), work / "release-warmup")
    _run(demo_source(), work / "release-warmup")
    source = source or _quarter(n_cases, work, shape)
    print(f"prepared quarters in {time.perf_counter() - clock:.1f} s")
    for mode in ("sequential", "concurrent") if modes == "both" else (modes,):
        print(f"stages {mode}; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        figures = _run(source, work / "release", stages=mode)
        stages = dict(figures.pop("stages"))  # type: ignore[call-overload]
        print(f"release of {figures['cases']:,} cases ({figures['reports']:,} reports read)")
        for stage, seconds in stages.items():  # overlapping stages: each its own wall time
            print(f"  {stage:<11} {seconds:7.1f} s")
        print(f"  wall        {figures['seconds']:7.1f} s   (release(): ingest to publication)")
        print(
            f"  process     {figures['process_wall']:7.1f} s   (target <= 60 s: start-up and imports too), "
            f"{figures['cpu']:.1f} CPU-s (every thread)"
        )
        print(f"  peak RSS    {figures['peak_mb'] / 1024:7.2f} GB  (target <= 6 GB)")
        print(
            f"  groups {figures['groups']:,}, NIL {figures['nil']:.4f}, DR {figures['dr']:.4f}, "
            f"signal survival {figures['survival']}"
        )
    shutil.rmtree(work / "release-warmup", ignore_errors=True)
    if compare_policy:
        _compare(source, work)


LEGACY_POLICY = """table,column,role,why
demo,fda_dt,keep,old default
demo,init_fda_dt,keep,old default
demo,mfr_sndr,keep,old default
demo,caseversion,keep,old default
demo,i_f_code,keep,old default
demo,rept_cod,keep,old default
demo,e_sub,keep,old default
demo,to_mfr,keep,old default
demo,occp_cod,keep,old default
demo,reporter_country,drop,old default
demo,occr_country,drop,old default
drug,drugname,keep,old default
drug,prod_ai,keep,old default
drug,nda_num,keep,old default
reac,drug_rec_act,keep,old default
rpsr,rpsr_cod,keep,old default
"""


def _attacks(release: Path) -> dict[str, float]:
    from faers_anon.anonymize.value_classes import DEFAULT_CLASSES
    from faers_anon.risk import RiskConfig, assess_risk

    figures = assess_risk(release, config=RiskConfig(classes=DEFAULT_CLASSES)).figures
    demo = tuple(f for f in figures["fields"] if f != "outc_cod")
    every = assess_risk(release, config=RiskConfig(knows=demo)).figures["reidentification"][0]
    inference = figures["inference"]
    return {
        "below_k_all_demo_fields": every["below_k"],
        "worst_below_k_one_demo_field": max(
            r["below_k"]
            for r in figures["reidentification"]
            if r["items"] is None and "outc_cod" not in r["knows"]
        ),
        "class_max_conf": inference["classes"]["max_conf"],
        "class_pairs_above_theta": inference["classes"]["pairs_above_theta"],
        "outcome_max_conf": inference["outcomes"]["max_conf"],
        "outcome_pairs_above_theta": inference["outcomes"]["pairs_above_theta"],
    }


def _variant(ingested: Path, work: Path, name: str, options: dict[str, Any]) -> dict[str, Any]:
    """anonymize, signal comparison and risk attacks of one variant (not verified: the old policy fails)."""
    import polars as pl

    from faers_anon import api
    from faers_anon.anonymize.pipeline import AnonymizeConfig

    release = work / f"variant-{name}"
    config = AnonymizeConfig(k=5, theta=0.4, on_infeasible="raise-theta", force=True,
                             key_file=work / "bench-agency.key", **options)  # fmt: skip
    clock = time.perf_counter()
    result = api.anonymize(ingested, release, config=config)
    seconds = time.perf_counter() - clock
    shutil.rmtree(work / f"compare-{name}", ignore_errors=True)
    survival = api.compare(ingested, release, work / f"compare-{name}").comparison.survival
    evans = survival.filter((pl.col("stratum") == "all") & (pl.col("criterion") == "evans")).row(
        0, named=True
    )
    return {"anonymize_s": seconds, "nil": result.nil, "nil_by_qid": result.nil_by_qid,
            "evans": f"{evans['n_survived']}/{evans['n_raw']} ({evans['share_survived']:.1%})",
            "attacks": _attacks(release)}  # fmt: skip


def _compare(source: Path, work: Path) -> None:
    """The quarter with and without issue 18's defaults (module docstring)."""
    from faers_anon import api
    from faers_anon.io.ingest import IngestConfig

    (work / "legacy_policy.csv").write_text(LEGACY_POLICY, encoding="utf-8")
    (work / "no_classes.csv").write_text("value,class,theta\n", encoding="utf-8")
    ingested = work / "ingested"
    if not (ingested / "cases.parquet").is_file():
        api.ingest([source], ingested, config=IngestConfig())
    old = {
        "column_policy": work / "legacy_policy.csv",
        "classes": work / "no_classes.csv",
        "protect_outcomes": False,
    }
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}, cores {os.cpu_count()}")
    for name, options in (("new defaults", {}), ("without", old)):
        figures = _variant(ingested, work, name.split()[0], options)
        print(f"{name}: anonymize {figures['anonymize_s']:.1f} s, NIL {figures['nil']:.4f}, "
              f"Evans signals surviving {figures['evans']}")  # fmt: skip
        print("  NIL per QID: " + ", ".join(f"{k} {v:.4f}" for k, v in figures["nil_by_qid"].items()))
        print("  attacks: " + ", ".join(f"{k} {v:.4g}" for k, v in figures["attacks"].items()))


if __name__ == "__main__":
    main()
