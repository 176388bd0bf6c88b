"""Benchmark: every measure for every drug–event pair of a 400,000-case quarter; the same counts in vigipy.

Target (issue 19, item 1): all measures (``--measures all``: PRR, ROR, IC, χ², EBGM/EB05/EB95 with
the prior fitted on all pairs, Fisher p + BH q) for all pairs of a 400,000-case quarter in at most
20 s and 4 GB; vigipy's GPS (``vigipy.gps``, its own prior fit and EBGM) on the same pair counts is
the reference to beat. The machine's load average is printed with the figures.

Sources of the quarter:

* ``synthetic`` (default): ``faers_anon.synthetic.make_quarter`` written as FDA files, then
  ``faers-anon ingest`` (cached in ``--workdir``); its vocabulary has ~150 drugs and ~150 PTs.
* ``zipf``: an ingested-shaped folder drawn with numpy, FAERS-like sizes (~4.5 drug rows and ~3.4
  reactions per case) over a realistic vocabulary (20,000 drug keys, 8,000 PTs, Zipf-like), so the
  group-by meets about a million distinct pairs as a real quarter does.

Each measured step runs in a fresh process (spawn), which reports its wall time, its CPU time and
its peak RSS (``VmHWM``, interpreter and imports included). vigipy (a benchmark-only extra, ``pip
install vigipy``) gets the same co-reported pairs as a (drug, event, count of cases) table, built by
polars from the same case tables and timed apart, since vigipy cannot count cases itself; its
``convert`` builds a dense drugs × events table, so it is skipped when that table would exceed
``--vigipy-max-gb``. vigipy takes its margins from the pair counts (its N is the number of pairs), we
count cases, so the two PRRs and EBGMs differ by design; the comparison here is one of time only.
vigipy's GPS fits its prior by Nelder–Mead over every pair of its table with a ≥ 1 (``min_events=1``,
truncated at 1 as ours), then scores them; we report its time apart from its PRR/ROR.

Usage: .venv/bin/python scripts/bench_signals.py [--cases 400000] [--source synthetic|zipf] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

TARGET_SECONDS = 20.0
TARGET_GB = 4.0


def prepare_synthetic(n_cases: int, workdir: Path) -> Path:
    """Ingested folder of a synthetic quarter (made and ingested once, then reused)."""
    from faers_anon import api
    from faers_anon.synthetic import make_quarter, write_quarter

    ingested = workdir / f"synthetic-{n_cases}" / "ingested"
    if (ingested / "reports.parquet").is_file():
        return ingested
    started = time.perf_counter()
    tables = make_quarter(n_cases, seed=1)
    source = write_quarter(tables, workdir / f"synthetic-{n_cases}" / "ascii", zip=True)
    del tables
    api.ingest([source], ingested)
    print(f"prepared synthetic quarter in {time.perf_counter() - started:.1f} s: {ingested}")
    return ingested


def _zipf(rng: np.random.Generator, size: int, vocabulary: int) -> np.ndarray:
    weights = 1.0 / (np.arange(vocabulary) + 10.0) ** 1.1
    return rng.choice(vocabulary, size=size, p=weights / weights.sum())


def prepare_zipf(n_cases: int, workdir: Path, *, seed: int = 1) -> Path:
    """An ingested-shaped folder (reports, drug, reac Parquet) drawn with numpy, written once."""
    folder = workdir / f"zipf-{n_cases}"
    if (folder / "reac.parquet").is_file():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    ids = np.arange(1, n_cases + 1, dtype=np.int64)
    ages = np.where(rng.random(n_cases) < 0.33, np.nan, rng.gamma(4.0, 14.0, n_cases).clip(0, 110))
    sexes = rng.choice(np.array(["F", "M", ""]), size=n_cases, p=[0.55, 0.35, 0.10])
    pl.DataFrame(
        {
            "primaryid": ids,
            "caseid": ids,
            "is_latest": np.ones(n_cases, dtype=bool),
            "age_years": ages,
            "sex": sexes,
            "weight_kg": np.full(n_cases, np.nan),
        }
    ).with_columns(
        pl.col("age_years").fill_nan(None),
        pl.col("weight_kg").fill_nan(None),
        pl.col("sex").replace("", None),
    ).write_parquet(folder / "reports.parquet")
    n_drugs = 1 + rng.poisson(3.5, n_cases)
    drug_case = np.repeat(ids, n_drugs)
    first = np.r_[True, drug_case[1:] != drug_case[:-1]]
    roles = np.where(
        first, "PS", rng.choice(np.array(["SS", "C", "I"]), size=drug_case.size, p=[0.4, 0.55, 0.05])
    )
    drug_key = np.char.add("DRUG", _zipf(rng, drug_case.size, 20_000).astype(str))
    pl.DataFrame(
        {"primaryid": drug_case, "caseid": drug_case, "drug_key": drug_key, "role_cod": roles}
    ).write_parquet(folder / "drug.parquet")
    n_events = 1 + rng.poisson(2.4, n_cases)
    event_case = np.repeat(ids, n_events)
    pt = np.char.add("Event term ", _zipf(rng, event_case.size, 8_000).astype(str))
    pl.DataFrame({"primaryid": event_case, "caseid": event_case, "pt": pt}).write_parquet(
        folder / "reac.parquet"
    )
    return folder


def _peak_gb() -> float:
    """Peak RSS of this process: VmHWM (reset by exec, unlike ru_maxrss, which a spawned child inherits)."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024**2  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # Linux: KiB


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _signals_step(folder: str, options: dict[str, Any], queue: Any) -> None:
    from faers_anon.analysis.signals import read_case_tables
    from signals import SignalConfig, signal_table

    started = time.perf_counter()
    tables = read_case_tables(Path(folder))
    read, cpu = time.perf_counter(), _cpu_s()
    table = signal_table(tables, config=SignalConfig(**options))
    done = time.perf_counter()
    frame = table.frame
    queue.put(
        {
            "read_s": read - started,
            "signals_s": done - read,
            "signals_cpu_s": _cpu_s() - cpu,
            "peak_gb": _peak_gb(),
            "cases": table.n_cases,
            "drug_rows": tables.drugs.height,
            "event_rows": tables.events.height,
            "rows": frame.height,
            "evans": int(frame.get_column("signal_evans").sum()),
            "eb": int(frame.get_column("signal_eb").sum()) if "signal_eb" in frame.columns else None,
            "prior": None if table.ebgm_prior is None else str(table.ebgm_prior),
        }
    )


def _vigipy_step(folder: str, role: str, max_gb: float, queue: Any) -> None:
    from faers_anon.analysis.signals import read_case_tables
    from signals import co_reports, prepare

    tables = read_case_tables(Path(folder))
    prep = time.perf_counter()
    _, case_drugs, case_events = prepare(tables, role=role)
    co = co_reports(case_drugs, case_events)
    counts = (
        co.pairs.group_by("drug_id", "event_id")
        .len("count")
        .join(co.drug_names, on="drug_id")
        .join(co.event_names, on="event_id")
        .select(pl.col("drug").alias("name"), pl.col("event").alias("AE"), "count")
    )
    prep_s = time.perf_counter() - prep
    dense_gb = co.drug_names.height * co.event_names.height * 8 / 1024**3
    if dense_gb > max_gb:
        queue.put({"skipped": f"its dense table would need {dense_gb:.1f} GB (> --vigipy-max-gb {max_gb:g})"})
        return
    try:
        import vigipy
    except ImportError:
        queue.put({"skipped": "vigipy is not installed (pip install vigipy)"})
        return
    frame = counts.to_pandas()
    started, cpu = time.perf_counter(), _cpu_s()
    container = vigipy.convert(frame)
    vigipy.prr(container, min_events=1, decision_metric="signals", decision_thres=2.0, ranking_statistic="CI")
    vigipy.ror(container, min_events=1, decision_metric="signals", decision_thres=2.0, ranking_statistic="CI")
    done = time.perf_counter()
    gps_cpu = _cpu_s()
    vigipy.gps(
        container, min_events=1, decision_metric="rank", decision_thres=1.0, ranking_statistic="quantile"
    )
    gps_s, gps_cpu = time.perf_counter() - done, _cpu_s() - gps_cpu
    queue.put(
        {
            "vigipy_s": done - started,
            "gps_s": gps_s,
            "gps_cpu_s": gps_cpu,
            "prep_s": prep_s,
            "vigipy_cpu_s": _cpu_s() - cpu,
            "peak_gb": _peak_gb(),
            "pairs": counts.height,
            "version": vigipy.__version__,
        }
    )


def _run(target: Any, *args: Any) -> dict[str, Any]:
    context = mp.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=target, args=(*args, queue))
    process.start()
    result: dict[str, Any] = queue.get()
    process.join()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=400_000)
    parser.add_argument("--source", choices=["synthetic", "zipf"], default="synthetic")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/faers_anon_bench_signals"))
    parser.add_argument("--role", choices=["ps", "suspect", "any"], default="any", help="any: every drug row")
    parser.add_argument("--stratify", default="", help="e.g. age,sex (default: overall only)")
    parser.add_argument("--condition", action="append", default=[], help='e.g. "age>=18" (repeatable)')
    parser.add_argument("--measures", choices=["basic", "all"], default="all")
    parser.add_argument("--no-vigipy", action="store_true")
    parser.add_argument("--vigipy-max-gb", type=float, default=1.0)
    args = parser.parse_args(argv)

    args.workdir.mkdir(parents=True, exist_ok=True)
    prepare = prepare_synthetic if args.source == "synthetic" else prepare_zipf
    folder = prepare(args.cases, args.workdir)
    options: dict[str, Any] = {"role": args.role, "stratify": tuple(v for v in args.stratify.split(",") if v)}
    options["conditions"] = tuple(args.condition)
    options["measures"] = args.measures

    ours = _run(_signals_step, str(folder), options)
    total = ours["read_s"] + ours["signals_s"]
    print(
        f"source {args.source}: {ours['cases']:,} cases, {ours['drug_rows']:,} drug rows (latest versions), "
        f"{ours['event_rows']:,} reaction rows; role {args.role}"
    )
    print(
        f"faers-anon signals: read {ours['read_s']:.2f} s + signals {ours['signals_s']:.2f} s"
        f" = {total:.2f} s (signals CPU {ours['signals_cpu_s']:.2f} s), peak RSS {ours['peak_gb']:.2f} GB;"
        f" {ours['rows']:,} drug-event rows, {ours['evans']:,} Evans signals"
        + ("" if ours["eb"] is None else f", {ours['eb']:,} EB05 >= 2; prior {ours['prior']}")
    )
    ok = total <= TARGET_SECONDS and ours["peak_gb"] <= TARGET_GB
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(
        f"target <= {TARGET_SECONDS:g} s and <= {TARGET_GB:g} GB: {'met' if ok else 'NOT met'}"
        f" (load average {load})"
    )
    if not args.no_vigipy:
        theirs = _run(_vigipy_step, str(folder), args.role, args.vigipy_max_gb)
        if "skipped" in theirs:
            print(f"vigipy: skipped, {theirs['skipped']}")
        else:
            ratio = theirs["vigipy_s"] / ours["signals_s"]
            with_prep = (theirs["vigipy_s"] + theirs["prep_s"]) / ours["signals_s"]
            print(
                f"vigipy {theirs['version']} convert + prr + ror on {theirs['pairs']:,} pair counts: "
                f"{theirs['vigipy_s']:.2f} s (CPU {theirs['vigipy_cpu_s']:.2f} s),"
                f" peak RSS {theirs['peak_gb']:.2f} GB; "
                f"vigipy / faers-anon signals time = {ratio:.2f}"
                f" ({with_prep:.2f} counting the {theirs['prep_s']:.2f} s polars step building its input)"
            )
            print(
                f"vigipy gps (prior fit + EBGM) on the same counts: {theirs['gps_s']:.2f} s"
                f" (CPU {theirs['gps_cpu_s']:.2f} s); faers-anon signals with every measure: "
                f"{ours['signals_s']:.2f} s, {theirs['gps_s'] / ours['signals_s']:.2f}x faster"
                f" (load average {', '.join(f'{v:.1f}' for v in os.getloadavg())})"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
