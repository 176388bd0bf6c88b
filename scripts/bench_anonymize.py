"""Benchmark the MS(k,θ*) anonymizer on synthetic quarters; Mondrian k-anonymity (anonypyx) as reference.

For each size: write a synthetic quarter (``faers_anon.synthetic``), ingest it, then run the anonymize
step (read cases, mine E, P(s|c), θ*, greedy clustering, NIL/DR) in a child process that reports its
wall time and peak RSS. The numba kernel is compiled once beforehand on a tiny quarter, so the timings
exclude compilation. The reference is a plain Mondrian k-anonymity over the same QIDs (age, sex,
weight; missing coded as a sentinel) from the PyPI package ``anonypyx`` — a benchmark-only dependency
(``pip install anonypyx``), skipped with a note when absent — run twice:

* as is: anonypyx splits a partition at the median with ``< median`` / ``>= median``, so a partition
  where one value (the missing-weight sentinel, a common age) holds half the cases cannot be split on
  that attribute. On FAERS-shaped QIDs it stops early, with a few hundred groups of hundreds to
  ~100,000 cases: fast, but it has not done the work of a k-anonymous partition into small groups.
* ties broken (``strict``): each numeric QID replaced by its ordinal rank (ties broken by row order),
  so every median split succeeds and Mondrian partitions down to groups of k..2k−1 cases, as strict
  Mondrian does. This is the like-for-like reference for the time of partitioning into groups of
  about k; it is slow (minutes at 400k cases), so ``--strict-max`` caps the sizes it runs on.

Growth: after the table, the slope of log(time) against log(cases) over the sizes (1 = linear) for the
wall time, the engine time and the CPU time (user + system, all threads) of the anonymize step. Wall
times move with the load of other processes on the machine, so the load average is printed before and
after; CPU time depends less on it.

Shapes (``--shapes``): ``small`` is the hand-written quarter (~150 PTs, ~150 drugs), ``realistic`` the
quarter fitted to real FAERS (7,300 PTs, 7,500 drugs, 2,000 indications; docs/synthetic.md). Each
row also gives ``read s``, polars reading the quarter's raw text files as strings (the fastest of two
runs, ``scan_csv(separator="$", infer_schema=False, quote_char=None)``), and the anonymize wall time
as a multiple of it (target ≤ 15× on the realistic 400k quarter).

Every run uses the bundled column policy, so the engine clusters on its field QIDs too (dates, sender,
countries, …; docs/engine.md); each row is followed by NIL per QID. ``--column-policy FILE`` runs another
policy, e.g. one keeping every field verbatim (the engine on the paper's QIDs: age, sex, weight and the
outcome set), the setting in which issue 16 set NIL ≤ 0.10.

Grid (``--grid``, on the largest size and each shape): k 10 and 20 at the run's θ, and θ 0.2 at the
run's k, the paper's grid (Lin et al. 2016, Figs. 3-4: MS(k,θ*)'s NIL "normally between 0.01 to 0.2"
at θ 0.4, larger at θ 0.2 and k 20, "very high" for quarters where one symptom reaches 17-20 %). The
paper divides Σ IL by the number of groups, we by cases (SPEC §8): compare orderings, not magnitudes.

Example: ``python scripts/bench_anonymize.py --sizes 50000,400000 --shapes small,realistic --grid``
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

# Time the compiled kernels at every size, as before: small inputs would otherwise run interpreted and
# the warm-up would compile nothing (faers_anon._numba_cache); the children inherit the setting.
os.environ.setdefault("FAERS_ANON_JIT", "compiled")

PAPER_NIL = "0.01-0.2 (θ 0.4); higher at θ 0.2"
_POLICY_ENV = "FAERS_ANON_BENCH_POLICY"
"""``--column-policy`` handed to the children (they inherit the environment)."""


def _prepare(n: int, work: Path, shape: str = "small") -> Path:
    """Synthetic quarter of n cases, ingested under work/[<shape>/]n<N>/ingested (reused when present)."""
    from faers_anon.io.ingest import ingest_quarters
    from faers_anon.synthetic import make_quarter, write_quarter

    folder = work / f"n{n}" if shape == "small" else work / shape / f"n{n}"
    ingested = folder / "ingested"
    if not (ingested / "cases.parquet").is_file():
        raw = write_quarter(make_quarter(n, seed=1, shape=shape), folder / "raw")
        ingest_quarters([raw], ingested)
    return ingested


def _child_read(raw: Path) -> dict[str, object]:
    """Polars reading every raw FAERS text file of the quarter as strings: the fastest of two runs."""
    import polars as pl

    files = sorted(p for p in raw.rglob("*.txt") if not p.name.upper().startswith("DELETE"))
    best = math.inf
    for _ in range(2):
        start = time.perf_counter()
        for path in files:
            pl.scan_csv(
                path, separator="$", infer_schema=False, quote_char=None, truncate_ragged_lines=True
            ).collect()
        best = min(best, time.perf_counter() - start)
    return {"seconds": best}


def _child_msk(ingested: Path, k: int, theta: float) -> dict[str, object]:
    from faers_anon.anonymize.pipeline import AnonymizeConfig, anonymize_folder

    start, cpu = time.perf_counter(), _cpu_seconds()
    policy = os.environ.get(_POLICY_ENV)
    config = AnonymizeConfig(k=k, theta=theta, on_infeasible="raise-theta", seed=0,
                             column_policy=Path(policy) if policy else None)  # fmt: skip
    result = anonymize_folder(ingested, None, config=config)
    partition = result.partition
    assert partition is not None, "the greedy engine always returns its partition"
    return {
        "seconds": time.perf_counter() - start,
        "cpu_seconds": _cpu_seconds() - cpu,
        "engine_seconds": result.seconds["anonymize"],
        "cases": result.cases,
        "groups": partition.groups,
        "nil": result.nil,
        "dr": result.dr,
        "raised": result.thresholds.count("raised"),
        "leftovers": partition.leftovers,
        "forced": partition.forced,
        "share_k": result.share_k,
        "nil_by_qid": result.nil_by_qid,
    }


def _child_mondrian(ingested: Path, k: int, strict: bool) -> dict[str, object]:
    import polars as pl

    try:
        from anonypyx import Anonymiser
    except ImportError:
        return {"error": "anonypyx not installed (pip install anonypyx)"}
    cases = pl.read_parquet(ingested / "cases.parquet")

    def numeric(column: str) -> pl.Expr:
        value = pl.col(column).fill_null(-1.0)
        return value.rank("ordinal").cast(pl.Float64) if strict else value

    frame = cases.select(
        numeric("age_max").alias("age"),
        pl.col("sex").fill_null("U").alias("sex"),
        numeric("wt_max").alias("weight"),
    ).to_pandas()
    frame["sex"] = frame["sex"].astype("category")
    start = time.perf_counter()
    released = Anonymiser(frame, k=k, feature_columns=["age", "sex", "weight"]).anonymise()
    seconds = time.perf_counter() - start
    sizes = released["count"]
    return {"seconds": seconds, "cases": len(frame), "groups": len(released), "largest": int(sizes.max())}


def _reference(ref: dict[str, object], *, wide: bool = False) -> str:
    """One reference run's columns: seconds, groups, largest group, peak MB (n/a on error)."""
    width = 9 if wide else 8
    if "seconds" not in ref:
        return f"{'n/a':>{width}} {'':>7} {'':>8} {'':>8}"
    return f"{ref['seconds']:>{width}.1f} {ref['groups']:>7} {ref['largest']:>8} {ref['peak_rss_mb']:>8.0f}"


def _cpu_seconds() -> float:
    """User + system CPU time of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _load() -> str:
    loadavg = Path("/proc/loadavg")
    return " ".join(loadavg.read_text().split()[:3]) if loadavg.is_file() else "?"


def _slope(sizes: list[int], seconds: list[float]) -> float:
    """Least-squares slope of log(seconds) on log(sizes): the growth exponent (nan for < 2 sizes)."""
    if len(sizes) < 2:
        return math.nan
    xs = [math.log(n) for n in sizes]
    ys = [math.log(max(t, 1e-9)) for t in seconds]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else math.nan


def _peak_rss_mb() -> float:
    """Peak RSS of this process in MB: VmHWM of /proc/self/status (per address space, so not inflated by
    the parent's memory at fork, as ``ru_maxrss`` is on Linux); ``ru_maxrss`` where /proc is absent."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text(encoding="utf-8").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _run_child(*args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@click.command()
@click.option("--sizes", default="50000,100000,200000,400000", show_default=True, help="Cases per quarter.")
@click.option(
    "--work",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("/tmp/bench_anonymize"),
    show_default=True,
    help="Folder for the synthetic quarters (reused).",
)
@click.option("--k", type=int, default=5, show_default=True)
@click.option("--theta", type=float, default=0.4, show_default=True)
@click.option("--mondrian/--no-mondrian", default=True, show_default=True, help="Run the anonypyx reference.")
@click.option(
    "--strict-max",
    type=int,
    default=400_000,
    show_default=True,
    help="Largest size at which the ties-broken Mondrian reference runs (0: never).",
)
@click.option(
    "--shapes", default="small,realistic", show_default=True, help="Synthetic shapes, comma-separated."
)
@click.option(
    "--grid/--no-grid", default=False, show_default=True, help="Also k 10, 20 and θ 0.2 at the largest size."
)
@click.option(
    "--column-policy", "policy", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
    help="A column-policy file instead of the bundled default (e.g. one that keeps the fields verbatim: "
    "the engine then clusters on the paper's QIDs only, age, sex and weight, with the outcome set).",
)  # fmt: skip
@click.option("--child", is_flag=True, hidden=True, help="Run one measurement (internal).")
@click.argument("child_args", nargs=-1)
def main(
    sizes: str,
    work: Path,
    k: int,
    theta: float,
    mondrian: bool,
    strict_max: int,
    shapes: str,
    grid: bool,
    policy: Path | None,
    child: bool,
    child_args: tuple[str, ...],
) -> None:
    """Time, peak memory, NIL and DR per quarter size."""
    if child:
        kind, path, *rest = child_args
        if kind == "read":
            out = _child_read(Path(path))
        elif kind == "msk":
            out = _child_msk(Path(path), int(rest[0]), float(rest[1]))
        else:
            out = _child_mondrian(Path(path), int(rest[0]), kind == "strict")
        out["peak_rss_mb"] = _peak_rss_mb()
        click.echo(json.dumps(out))
        return
    if policy is not None:
        os.environ[_POLICY_ENV] = str(policy.resolve())
    work.mkdir(parents=True, exist_ok=True)
    warm = _prepare(500, work)
    _run_child("msk", str(warm), str(k), str(theta))  # compile the numba kernel into its cache
    load_before = _load()
    ns = [int(x) for x in sizes.split(",")]
    for shape in shapes.split(","):
        click.echo(f"\n{shape} quarter, k {k}, θ {theta} (load {_load()})")
        click.echo(_HEADER)
        done: list[dict[str, object]] = []
        refs: list[tuple[int, dict[str, object], dict[str, object]]] = []
        for n in ns:
            ingested = _prepare(n, work, shape)
            read = _run_child("read", str(ingested.parent / "raw"))
            msk = _run_child("msk", str(ingested), str(k), str(theta))
            if "error" in msk:
                click.echo(f"{n:>8} MS(k,θ*) failed: {msk['error']}")
                continue
            click.echo(_row(msk, read))
            click.echo(_per_qid(msk))
            done.append(msk)
            if mondrian:
                plain = _run_child("mondrian", str(ingested), str(k))
                skipped: dict[str, object] = {"error": f"skipped (--strict-max {strict_max})"}
                strict = _run_child("strict", str(ingested), str(k)) if n <= strict_max else skipped
                refs.append((int(msk["cases"]), plain, strict))  # type: ignore[call-overload]
        _print_references(refs)
        _print_growth(done)
        if grid and done:
            ingested = _prepare(ns[-1], work, shape)
            read = _run_child("read", str(ingested.parent / "raw"))
            click.echo(f"grid at {ns[-1]:,} cases ({shape}); the paper's MS(k,θ*) NIL: {PAPER_NIL}")
            click.echo(f"{'k':>3} {'θ':>4} " + _HEADER)
            for gk, gtheta in ((10, theta), (20, theta), (k, 0.2)):
                msk = _run_child("msk", str(ingested), str(gk), str(gtheta))
                line = f"{n:>8} failed: {msk['error']}" if "error" in msk else _row(msk, read)
                click.echo(f"{gk:>3} {gtheta:>4} {line}")
    click.echo(f"load average: {load_before} before, {_load()} after (1, 5, 15 min)")


_HEADER = (
    f"{'cases':>8} {'groups':>7} {'seconds':>8} {'engine s':>8} {'CPU s':>7} {'read s':>6} {'×read':>6} "
    f"{'peak MB':>8} {'NIL':>7} {'DR':>7} {'raised':>6} {'left':>6} {'forced':>6} {'=k':>6}"
)


def _row(msk: dict[str, object], read: dict[str, object]) -> str:
    """One result line under ``_HEADER``."""
    read_s = float(read.get("seconds", math.nan))  # type: ignore[arg-type]
    return (
        f"{msk['cases']:>8} {msk['groups']:>7} {msk['seconds']:>8.1f} {msk['engine_seconds']:>8.1f} "
        f"{msk['cpu_seconds']:>7.1f} {read_s:>6.2f} {float(msk['seconds']) / read_s:>6.1f} "  # type: ignore[arg-type]
        f"{msk['peak_rss_mb']:>8.0f} {msk['nil']:>7.4f} {msk['dr']:>7.4f} "
        f"{msk['raised']:>6} {msk['leftovers']:>6} {msk['forced']:>6} {msk['share_k']:>6.1%}"
    )


def _per_qid(msk: dict[str, object]) -> str:
    """NIL per QID (SPEC §8's per-QID terms; age, sex, weight and the column policy's field QIDs)."""
    by_qid: dict[str, float] = msk.get("nil_by_qid", {})  # type: ignore[assignment]
    return "         NIL per QID: " + ", ".join(f"{q} {v:.3f}" for q, v in by_qid.items())


def _print_references(refs: list[tuple[int, dict[str, object], dict[str, object]]]) -> None:
    if not refs:
        return
    click.echo("reference: Mondrian k-anonymity (anonypyx) on the same QIDs; see the module docstring")
    click.echo(
        f"{'cases':>8} {'as-is s':>8} {'groups':>7} {'largest':>8} {'peak MB':>8} "
        f"{'strict s':>9} {'groups':>7} {'largest':>8} {'peak MB':>8}"
    )
    for cases, plain, strict in refs:
        click.echo(f"{cases:>8} {_reference(plain)} {_reference(strict, wide=True)}")
        for name, ref in (("as-is", plain), ("strict", strict)):
            if "error" in ref:
                click.echo(f"         {name}: {ref['error']}")


def _print_growth(done: list[dict[str, object]]) -> None:
    counts = [int(m["cases"]) for m in done]  # type: ignore[call-overload]
    growth = {
        key: _slope(counts, [float(m[key]) for m in done])  # type: ignore[arg-type]
        for key in ("seconds", "engine_seconds", "cpu_seconds")
    }
    click.echo(
        f"growth exponent (log-log slope, 1 = linear): wall {growth['seconds']:.2f}, "
        f"engine {growth['engine_seconds']:.2f}, CPU {growth['cpu_seconds']:.2f}"
    )


if __name__ == "__main__":
    main()
