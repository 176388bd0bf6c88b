"""Benchmark: every method of ``faers_anon.methods.METHODS`` on a synthetic quarter's cases.

Usage:
    .venv/bin/python scripts/bench_methods.py --cases 100000
    .venv/bin/python scripts/bench_methods.py --cases-file OUT/cases.parquet     # existing ingested cases
    .venv/bin/python scripts/bench_methods.py --cases 20000 --method ra --method mews

The cases come from ``faers_anon.synthetic.make_quarter(N, seed=...)`` written as FDA files and read by
``faers_anon.api.ingest`` (so ``cases.parquet`` is the real super-record contract, ~1.17 reports per
case, missing ages and weights as FAERS has them). Each method then runs in its own child process with
its default configuration and ``numpy.random.default_rng(seed)``; the child prints one JSON line.

Per method the script prints: seconds of the method call (``MethodResult.seconds``), the child's wall
seconds (start-up, imports, numba cache loading and reading the cases included), the child's peak RSS
(``os.wait4`` rusage of that child alone) and the RSS after reading the cases (so the method's own
share is the difference), the number of QID-groups and the method's privacy figures. Target (issue 8,
item 5): every method within 300 s on 100,000 cases; the script exits non-zero when one is slower.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

REPO = Path(__file__).resolve().parents[1]
LIMIT_SECONDS = 300.0


def _child(name: str, cases_path: Path, seed: int) -> None:
    """Run one method on the cases and print a JSON line (the child process's whole job)."""
    import numpy as np
    import polars as pl

    from faers_anon.methods import METHODS

    cases = pl.read_parquet(cases_path)
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = METHODS[name](cases, rng=np.random.default_rng(seed))
    print(
        json.dumps(
            {
                "method": name,
                "seconds": result.seconds,
                "rss_after_load_mb": loaded,
                "groups": result.release["group_id"].n_unique(),
                "cases": result.release.height,
                "privacy": dict(result.privacy),
            }
        )
    )


def _make_cases_child(n_cases: int, seed: int, work: Path) -> None:
    """Synthetic quarter → FDA text files → ingest → ``work/ingested/cases.parquet`` (a child's job)."""
    from faers_anon import api
    from faers_anon.synthetic import make_quarter, write_quarter

    folder = write_quarter(make_quarter(n_cases, seed=seed), work / "quarter")
    api.ingest([folder], work / "ingested")


def _list_child() -> None:
    from faers_anon.methods import METHODS

    print(json.dumps(list(METHODS)))


def _python(*args: str) -> str:
    """Run this script in a child process with ``args``; return its stdout (exit on failure).

    Children keep the parent small: on Linux a child's peak RSS (``ru_maxrss``) starts from its parent's
    resident size at fork, so the parent neither makes the quarter nor imports the package.
    """
    done = subprocess.run([sys.executable, __file__, *args], cwd=REPO, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench_methods: child {args[:2]} failed with exit code {done.returncode}")
    return done.stdout


@dataclass(frozen=True, slots=True)
class Record:
    """One method's measurements (see the module docstring)."""

    seconds: float
    wall_seconds: float
    peak_rss_mb: float
    rss_after_load_mb: float
    groups: int
    privacy: dict[str, Any]


def _run(name: str, cases_path: Path, seed: int) -> Record:
    start = time.perf_counter()
    command = [sys.executable, __file__, "--child", name, "--cases-file", str(cases_path)]
    child = subprocess.Popen([*command, "--seed", str(seed)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    out = child.stdout.read() if child.stdout is not None else ""
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench_methods: {name} failed with exit code {os.waitstatus_to_exitcode(status)}")
    data = json.loads(out.strip().splitlines()[-1])
    return Record(
        seconds=float(data["seconds"]),
        wall_seconds=time.perf_counter() - start,
        peak_rss_mb=usage.ru_maxrss / 1024,  # KiB on Linux
        rss_after_load_mb=float(data["rss_after_load_mb"]),
        groups=int(data["groups"]),
        privacy=dict(data["privacy"]),
    )


def _scalars(privacy: dict[str, Any]) -> str:
    return ", ".join(
        f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
        for k, v in privacy.items()
        if isinstance(v, int | float)
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=100_000, help="synthetic cases to make (default 100000)")
    parser.add_argument("--cases-file", type=Path, help="use this cases.parquet instead of making one")
    parser.add_argument("--method", action="append", help="run only this method (repeatable)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--make-cases-in", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--list", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.cases_file, args.seed)
        return
    if args.make_cases_in:
        _make_cases_child(args.cases, args.seed, args.make_cases_in)
        return
    if args.list:
        _list_child()
        return

    registry = json.loads(_python("--list"))
    names = args.method or registry
    unknown = sorted(set(names) - set(registry))
    if unknown:
        raise SystemExit(f"bench_methods: unknown method(s) {unknown} (expected some of {registry})")
    with tempfile.TemporaryDirectory(prefix="bench_methods_") as tmp:
        path = args.cases_file
        if path is None:
            start = time.perf_counter()
            _python("--make-cases-in", tmp, "--cases", str(args.cases), "--seed", str(args.seed))
            path = Path(tmp) / "ingested" / "cases.parquet"
            made = time.perf_counter() - start
            print(f"cases: {args.cases} synthetic cases ingested in {made:.1f} s -> {path}")
        slow = []
        print(
            f"{'method':<14} {'seconds':>8} {'wall':>7} {'peak MB':>8} {'load MB':>8} {'groups':>8}  privacy"
        )
        for name in names:
            r = _run(name, path, args.seed)
            print(
                f"{name:<14} {r.seconds:8.1f} {r.wall_seconds:7.1f} {r.peak_rss_mb:8.0f} "
                f"{r.rss_after_load_mb:8.0f} {r.groups:>8}  {_scalars(r.privacy)}",
                flush=True,
            )
            if r.seconds > LIMIT_SECONDS:
                slow.append(name)
        if "disassociation" in names:
            disassociation_figures(path, args.seed)
    if slow:
        raise SystemExit(f"bench_methods: slower than {LIMIT_SECONDS:.0f} s: {', '.join(slow)}")


# --- disassociation (issue 8, item 3): released form, reconstruction, ARE on frequent pairs ---------------


def disassociation_figures(cases_path: Path, seed: int) -> None:
    """Print the disassociation figures the generic line lacks (Loukides et al. 2014, Section 6.1).

    With the default configuration (k = 5, m = 2): where the (case, item) incidences went (record
    chunks and shared chunks keep them exactly, item chunks hide their counts), the seconds of the k^m
    check, of one reconstruction and of writing the tables, and ARE (Definition 2) of one reconstructed
    dataset on workload W1 restricted to drug–reaction pairs: every pair held by at least 0.1 % and 1 %
    of the cases, with the item chunk supports drawn as ``one`` (default) and ``uniform``.
    """
    import numpy as np
    import polars as pl

    from faers_anon.methods.disassociation import (
        DisassociationConfig,
        average_relative_error,
        case_items,
        check_km,
        disassociate,
        pair_workload,
        reconstruct,
        split_items,
        write_released,
    )

    cases = pl.read_parquet(cases_path)
    original = case_items(cases)
    start = time.perf_counter()
    released = disassociate(cases, config=DisassociationConfig(), rng=np.random.default_rng(seed))
    run_s = time.perf_counter() - start
    start = time.perf_counter()
    report = check_km(released)
    check_s = time.perf_counter() - start
    exact = released.record_chunks.height + released.shared_chunks.height
    mean_size = cases.height / max(released.clusters.height, 1)
    print(
        f"disassociation: {cases.height} cases, {original.height} (case, item) pairs; "
        f"{released.clusters.height} clusters (mean size {mean_size:.1f}), "
        f"{released.record_chunks.select('cluster_id', 'chunk_id').n_unique()} record chunks, "
        f"{released.shared_clusters['shared_id'].n_unique()} shared chunks; run {run_s:.1f} s"
    )
    print(
        f"  pairs in record chunks {released.record_chunks.height / original.height:.1%}, "
        f"shared chunks {released.shared_chunks.height / original.height:.1%}, "
        f"item chunks {(original.height - exact) / original.height:.1%} "
        f"({released.item_chunk.height} item chunk entries)"
    )
    print(
        f"  k^m check: ok={report.ok}, {report.chunks} chunks, {report.combinations} itemsets, "
        f"{report.violations} violations, min support {report.min_support}, {check_s:.1f} s"
    )
    with tempfile.TemporaryDirectory(prefix="bench_dis_") as tmp:
        start = time.perf_counter()
        paths = write_released(released, Path(tmp))
        size = sum(p.stat().st_size for p in paths)
        took = time.perf_counter() - start
        print(f"  written: {len(paths)} files, {size / 1e6:.1f} MB Parquet, {took:.1f} s")
    supports: tuple[Literal["one", "uniform"], ...] = ("one", "uniform")
    for support in supports:
        start = time.perf_counter()
        rebuilt = reconstruct(released, rng=np.random.default_rng(seed + 1), item_support=support)
        rebuild_s = time.perf_counter() - start
        lists = split_items(rebuilt)
        figures = []
        for share in (0.001, 0.01):
            workload = pair_workload(original, min_support=max(1, round(share * cases.height)))
            are = average_relative_error(original, rebuilt, workload)
            figures.append(f"ARE {are:.3f} on {workload['query_id'].n_unique()} pairs >= {share:.1%}")
        print(
            f"  reconstruction ({support}): {rebuild_s:.1f} s, {lists['drug_key'].height} (caseid, drug_key) "
            f"and {lists['pt'].height} (caseid, pt) rows; " + "; ".join(figures)
        )


if __name__ == "__main__":
    main()
