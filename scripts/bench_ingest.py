"""Benchmark: ingest of a synthetic FAERS quarter against polars reading the same files as strings.

Usage:
    .venv/bin/python scripts/bench_ingest.py --cases 400000
    .venv/bin/python scripts/bench_ingest.py --data DIR     # an existing quarter folder or zip
    .venv/bin/python scripts/bench_ingest.py --shape realistic --ratio 3 --profile 25

The quarter is made by ``scripts/make_synthetic_quarter.py --cases N --shape S -o DIR`` (unless
``--data`` is given; ``--shape realistic`` is the quarter fitted to real FAERS, docs/synthetic.md).
Two child processes are timed, wall clock, each from its start to its exit:

* baseline — ``polars.scan_csv(separator="$", infer_schema=False, quote_char=None)`` of every FAERS
  text file, collected (the least any reader of these files must do); after one warm-up read, the
  fastest of three runs, so a busy machine flatters the ratio as little as possible;
* ingest — ``faers_anon.io.ingest.ingest_quarters([DIR], OUT)``, the library call behind
  ``faers-anon ingest``, after ``faers_anon.configure()`` as the command makes it (start-up and its
  imports count; the imports of unrelated CLI commands do not),
  run ``--runs`` times (default 3, each into a new folder); the median counts.

Peak memory is the ingest child's own maximum resident set size (``os.wait4`` returns the rusage of
that one child, so the generator and the baseline do not mix in); the largest of the runs counts.
``--profile N`` adds one more ingest run whose tasks run one after the other (each when submitted)
and prints the N costliest stages in CPU seconds (``faers_anon.io.ingest``'s steps, wrapped with
timers from outside, by table): where the time goes. (With one worker thread instead, the main
thread's DEMO work would be counted in the child table read beside it.) The io package is not
edited for this; nested stages overlap in the list.
Targets (issue "ingest" item 6): ingest ≤ 4 × baseline and ≤ 3 GB peak RSS. The script prints both
times, the ratio and the peak, and exits non-zero when a target is missed. On a shared machine the
wall-clock ratio moves with the load of others, so it also prints the load average and each child's
CPU time (user + system), whose ratio depends less on the load.
``--base DIR`` compares this tree with another checkout (``git clone -q REPO DIR``, then check out the
commit to compare with): each ingest run is paired with one of DIR's, run right before it in even
pairs and right after it in odd ones (the second run of a pair tended to cost less: 5 pairs in 6, by
up to 2 CPU-s at load 8), from a folder outside both trees with ``PYTHONPATH=DIR`` (the child checks
which ``faers_anon`` it imported), and the script prints each pair's CPU and wall seconds, both medians
and the median per-pair differences: on a shared machine only runs made side by side compare.
``--pause S`` waits S seconds before each timed child. Runs made back to back reuse the memory the
previous child freed while the VM still backs it (its free memory is reported to the host after ≈ 2 s,
``page_reporting_order=11``), which flatters huge pages (numpy's ``MADV_HUGEPAGE``); a one-shot ingest
after a pause of 5 s meets memory the host must back afresh (docs/scale.md, twelfth round).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
_BASELINE = """
import sys, polars as pl
for path in sys.argv[1:]:
    pl.scan_csv(
        path, separator="$", infer_schema=False, quote_char=None, truncate_ragged_lines=True
    ).collect()
"""
_INGEST = """
import os, sys
from pathlib import Path
import faers_anon
if os.environ.get("BENCH_INGEST_TREE"):  # --base: the checkout this child must run
    tree = Path(os.environ["BENCH_INGEST_TREE"]).resolve()
    assert Path(faers_anon.__file__).resolve().is_relative_to(tree), (faers_anon.__file__, str(tree))
faers_anon.configure()  # as the faers-anon command does before polars is imported (allocator)
from faers_anon.io.ingest import ingest_quarters
result = ingest_quarters([Path(sys.argv[1])], Path(sys.argv[2]))
if sys.argv[3:] == ["--summary"]:
    print(result.summary())
import gc
gc.freeze()  # as the faers-anon command does before it exits (faers_anon.cli)
"""
_PROFILE = """
import faers_anon
faers_anon.configure()
import collections, sys, time
from concurrent.futures import Future
from pathlib import Path
from faers_anon.io import ingest
spent = collections.defaultdict(float)
def timed(name, fn):
    def wrapper(*args, **kwargs):
        label = name + (f" {args[0]}" if args and isinstance(args[0], str) else "")
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] += time.process_time() - start
    return wrapper
for name in ("typed_rows", "annotated_children", "write_split", "table_report", "term_lists",
             "_report_status", "_finish_reports", "combine", "write_table", "kept_columns",
             "version_summary", "normalization_counts", "materialize", "deleted_lists",
             "quarter_accounting", "_cases"):
    if hasattr(ingest, name):
        setattr(ingest, name, timed(name, getattr(ingest, name)))
_collect = ingest.pl.LazyFrame.collect
def collect(self, *args, **kwargs):
    start = time.process_time()
    try:
        return _collect(self, *args, **kwargs)
    finally:
        spent["(every LazyFrame.collect)"] += time.process_time() - start
ingest.pl.LazyFrame.collect = collect
class Sequential:  # each task runs when submitted: stages one after the other, CPU time each its own
    def __init__(self, max_workers=1): pass
    def __enter__(self): return self
    def __exit__(self, *exc): return False
    def submit(self, fn, *args, **kwargs):
        future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future
ingest.ThreadPoolExecutor = Sequential
start = time.process_time()
ingest.ingest_quarters([Path(sys.argv[1])], Path(sys.argv[2]))
total = time.process_time() - start
print(f"--- ingest stages, CPU s, run one after the other (total {total:.2f} s; nested stages overlap) ---")
for label, seconds in sorted(spent.items(), key=lambda kv: -kv[1])[: int(sys.argv[3])]:
    print(f"{seconds:8.2f} s {seconds / total:6.1%}  {label}")
"""
_TEXT_TABLES = ("DEMO", "DRUG", "REAC", "INDI", "OUTC", "THER", "RPSR")


class Run(NamedTuple):
    """One timed child process."""

    wall: float  # seconds, from start to exit
    peak: float  # maximum resident set size, GB
    cpu: float  # user + system seconds of the child


_PAUSE = [0.0]  # --pause: seconds slept before each timed child


def _timed(command: list[str], *, tree: Path | None = None) -> Run:
    """Run a child process; return its wall time, peak RSS and CPU time (that child alone).

    ``tree``: run the package of that checkout instead of this one (from its parent folder, so that
    neither this tree nor ``tree`` itself is the child's first path entry).
    """
    time.sleep(_PAUSE[0])
    env = None
    if tree is not None:
        env = os.environ | {"PYTHONPATH": str(tree), "BENCH_INGEST_TREE": str(tree)}
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=REPO if tree is None else tree.parent, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"bench_ingest: {command[:3]} failed with exit code {child.returncode}")
    # ru_maxrss is in KiB on Linux
    return Run(wall=elapsed, peak=usage.ru_maxrss / 1024**2, cpu=usage.ru_utime + usage.ru_stime)


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"


def _text_files(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.rglob("*") if p.is_file() and p.name[:4].upper() in _TEXT_TABLES)


def main() -> None:
    """Parse arguments, make or find the quarter, time baseline and ingest, print and check."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=400_000, help="cases in the synthetic quarter")
    parser.add_argument("--data", type=Path, help="use this quarter folder instead of generating one")
    parser.add_argument("--ratio", type=float, default=4.0, help="target: ingest / baseline time")
    parser.add_argument("--memory-gb", type=float, default=3.0, help="target: ingest peak RSS")
    parser.add_argument("--runs", type=int, default=3, help="ingest runs; the median counts")
    parser.add_argument("--shape", choices=("small", "realistic"), default="small", help="synthetic shape")
    parser.add_argument("--profile", type=int, default=0, help="print the N costliest functions of one run")
    parser.add_argument("--base", type=Path, help="another checkout: each ingest run paired with one of it")
    parser.add_argument("--pause", type=float, default=0.0, help="seconds to wait before each timed child")
    args = parser.parse_args()
    if args.base is not None:
        args.base = args.base.resolve()  # the base's runs start elsewhere: no relative paths
        if not (args.base / "faers_anon" / "__init__.py").is_file():
            raise SystemExit(f"bench_ingest: --base {args.base}: not a faers-anon checkout")
    _PAUSE[0] = args.pause
    load_before = _load()
    with tempfile.TemporaryDirectory(prefix="bench_ingest_") as tmp:
        work = Path(tmp)
        data = args.data.resolve() if args.data is not None else None
        if data is None:
            data = work / "quarter"
            script = REPO / "scripts" / "make_synthetic_quarter.py"
            command = [sys.executable, str(script), "--cases", str(args.cases), "--shape", args.shape]
            made = _timed([*command, "-o", str(data)])
            print(f"generated {args.cases:,} cases ({args.shape}) in {made.wall:.1f} s")
        files = _text_files(data)
        if not files:
            raise SystemExit(f"bench_ingest: no FAERS text files under {data}")
        size = sum(Path(f).stat().st_size for f in files) / 1024**2
        _timed([sys.executable, "-c", _BASELINE, *files])  # warm the page cache for both contenders
        base = min(
            (_timed([sys.executable, "-c", _BASELINE, *files]) for _ in range(3)), key=lambda r: r.wall
        )
        runs, based = [], []
        for i in range(max(args.runs, 1)):
            if args.base is not None and i % 2 == 0:  # ABBA: the second run of a pair tends to cost less
                based.append(
                    _timed([sys.executable, "-c", _INGEST, str(data), str(work / f"base{i}")], tree=args.base)
                )
            runs.append(
                _timed(
                    [
                        sys.executable,
                        "-c",
                        _INGEST,
                        str(data),
                        str(work / f"out{i}"),
                        *(["--summary"] * (i == 0)),
                    ]
                )
            )
            if args.base is not None and i % 2 == 1:
                based.append(
                    _timed([sys.executable, "-c", _INGEST, str(data), str(work / f"base{i}")], tree=args.base)
                )
        if args.profile:
            _timed([sys.executable, "-c", _PROFILE, str(data), str(work / "profiled"), str(args.profile)])
    ingest = statistics.median(r.wall for r in runs)
    cpu = statistics.median(r.cpu for r in runs)
    peak = max(r.peak for r in runs)
    ratio = ingest / base.wall
    each = ", ".join(f"{r.wall:.2f}" for r in runs)
    print(f"files:    {len(files)} text files, {size:,.0f} MiB")
    print(f"baseline: {base.wall:6.2f} s  (polars scan_csv as strings, best of 3; peak {base.peak:.2f} GB)")
    print(f"ingest:   {ingest:6.2f} s  (faers_anon.io.ingest.ingest_quarters, median of {len(runs)}: {each})")
    print(f"ratio:    {ratio:6.2f} x  (target <= {args.ratio:g})")
    print(f"peak RSS: {peak:6.2f} GB (target <= {args.memory_gb:g})")
    print(f"cpu:      baseline {base.cpu:.2f} s, ingest {cpu:.2f} s ({cpu / base.cpu:.2f} x)")
    if based:
        pairs = ", ".join(f"{r.cpu:.2f}/{b.cpu:.2f}" for r, b in zip(runs, based, strict=True))
        change = statistics.median(r.cpu - b.cpu for r, b in zip(runs, based, strict=True))
        print(f"base:     {args.base}: CPU s this tree/base by pair {pairs}")
        base_cpu, base_peak = statistics.median(b.cpu for b in based), max(b.peak for b in based)
        print(f"          medians {cpu:.2f} / {base_cpu:.2f} s, per pair {change:+.2f} s", end="")
        print(f" (base peak {base_peak:.2f} GB)")
        walls = ", ".join(f"{r.wall:.2f}/{b.wall:.2f}" for r, b in zip(runs, based, strict=True))
        wall_change = statistics.median(r.wall - b.wall for r, b in zip(runs, based, strict=True))
        base_wall = statistics.median(b.wall for b in based)
        print(f"          wall s by pair {walls}", end="")
        print(f"; medians {ingest:.2f} / {base_wall:.2f} s, per pair {wall_change:+.2f} s")
    print(f"load:     {load_before} before, {_load()} after (1, 5, 15 min averages)")
    if ratio > args.ratio or peak > args.memory_gb:
        raise SystemExit("bench_ingest: target missed")


if __name__ == "__main__":
    main()
