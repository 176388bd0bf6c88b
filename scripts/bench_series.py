"""Benchmark of a series: cumulative ingest, ledgered releases, cumulative signals, composition.

Input: ``--quarters`` consecutive generated quarters of ``--cases`` cases (``faers_anon.series.generate``,
``--shape`` realistic by default; ``--follow`` of a later quarter's cases follow up an earlier case, as
the same patient's updated report by default, ``--followups unrelated`` for the stress model where a
follow-up is another patient under the earlier caseid), made under ``--work``.

Steps, each a ``faers-anon`` child process (wall seconds, the child's CPU seconds (user + system) and
peak RSS printed, each as it ends):

0. warm-up releases of a small two-quarter series with one ledger, the kernels forced compiled
   (numba's cache is then warm, the engine's and the series step's, so no timed release pays the
   ~30 s compile);
1. cumulative ingest of all quarters (``faers-anon ingest Q1 … Qn``);
2. each quarter released on its own (``release Qi``), and released with one ledger (``release Qi
   --ledger``, with ``--republish`` when given), one after the other so both see the same load: the ratio
   ledgered / stand-alone per quarter (wall, CPU and peak RSS). With ``--repeat N`` each quarter makes N
   such pairs, interleaved, each ledgered run on a copy of the ledger before the quarter (the releases are
   deterministic: the last copy becomes the ledger), and prints the medians of the N runs and the median of
   the N pairs' ratios: one run's CPU seconds on a shared machine moved by ±10 % for the same code
   (docs/series.md §6), so one pair is not a figure to trust. Then the ledger's placement counts
   (returning, published, republished and withheld cases and reports; pending cases retried, published,
   superseded), the ledgered release's CPU split into its series step (the child the ``[series]`` line
   names), its ledger update at publication (``[ledger]``) and the rest, and the ledger read the next
   quarter makes: ``open_ledger`` (the last state file) against reading every release file and building the
   histories (the read before the state file), in this process;
3. cumulative signals over the ledgered releases (``faers-anon signals R1 … Rn``);
4. ``faers-anon verify --series`` and the risk module's composition attack, on both series.

Every step prints the 1-minute load average when it ends (the machine is shared).

Example: ``python scripts/bench_series.py --cases 20000 --quarters 4 --work /tmp/bench_series``
(the issue asks for 400k quarters: ``--cases 400000``). The quarters under ``WORK/raw`` are reused
when present (same ``--cases``: the folder is per run). ``--no-risk`` skips the risk module's attack
(``verify --series`` still runs). ``--keep-ledgers`` keeps a copy of the ledger after each quarter
(``WORK/ledger-after-Qi``), for timing one quarter's release again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import click

from faers_anon.keys import load_key
from faers_anon.series.generate import FOLLOWUPS, make_series, quarter_labels
from faers_anon.series.ledger import history, open_ledger

_CLI = [sys.executable, "-m", "faers_anon"]


#: CPU seconds (user + system) of the last child run by :func:`_run` (the machine is shared: CPU is
#: the figure to compare under load).
_CPU: list[float] = [0.0]


def _run(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run ``faers-anon args``; return (wall s, peak RSS MB of this child, stdout); its CPU in ``_CPU``."""
    start = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M %U %S", *_CLI, *args], capture_output=True, text=True, env=env
    )
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"faers-anon {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    rss, user, system = (float(x) for x in done.stderr.strip().splitlines()[-1].split())
    _CPU[0] = user + system
    return wall, rss / 1024, done.stdout


def _ledger_read(ledger: Path, key_file: Path) -> str:
    """Seconds to open the ledger as the next release does (state file), and the read before it."""
    key = load_key(key_file)
    start = time.perf_counter()
    opened = open_ledger(ledger, key)
    state_s = time.perf_counter() - start
    start = time.perf_counter()
    full = history(opened.read_entries())
    full_s = time.perf_counter() - start
    size = sum(f.stat().st_size for f in ledger.glob("*.parquet")) / 2**20
    return (f"ledger read for the next quarter: state {state_s:.2f} s ({opened.state.height:,} cases); "
            f"every release file + histories {full_s:.2f} s ({full.height:,} cases); "
            f"ledger parquet files {size:.0f} MB")  # fmt: skip


def _series_counts(ledger: Path) -> None:
    """Per release: withheld share of returning cases, retried pending cases and what became of them."""
    for record in json.loads((ledger / "ledger.json").read_text())["releases"]:
        c = record.get("series", {})
        returning = c.get("returning", 0)
        share = c.get("withheld", 0) / returning if returning else 0.0
        print(f"ledger {', '.join(record['quarters'])}: withheld {c.get('withheld', 0):,} of {returning:,} "
              f"returning ({share:.1%}); retried {c.get('retried', 0):,}, published "
              f"{c.get('retried_published', 0):,}, superseded {c.get('pending_superseded', 0):,}, "
              f"deleted {c.get('pending_deleted', 0):,}; {json.dumps(c)}", flush=True)  # fmt: skip


def _split(parts: tuple[float, float] | None, cpu: float, alone: float) -> str:
    """A ledgered release's CPU seconds split: its series step's child and the ledger's update at
    publication (``parts``: :func:`_parts`), and the rest, against the stand-alone release."""
    if parts is None:
        return "CPU split: not printed by this version"
    s, led = parts
    rest = cpu - s - led
    return (
        f"CPU split: series step {s:.1f} s, ledger update {led:.1f} s, the rest {rest:.1f} s "
        f"({rest / alone:.2f} x alone; without the step {(cpu - s) / alone:.2f} x)"
    )


def _row(name: str, wall: float, rss: float) -> None:
    print(f"{name:<28} {wall:8.1f} s  CPU {_CPU[0]:7.1f} s  peak RSS {rss:8.0f} MB  "
          f"load {os.getloadavg()[0]:4.1f}", flush=True)  # fmt: skip


def _warm_up(work: Path, env: dict[str, str], k: int) -> None:
    """Compile the kernels once (numba's cache) on a small two-quarter series, so no timed release pays
    it: the engine's in the first quarter's release, the series step's (P(s | c), rule 6's sums) in the
    second quarter's, released with the same ledger (its returning cases reach them)."""
    raws = make_series(3000, work / "warm", quarters=2, seed=99, shape="small")
    compiled = {**env, "FAERS_ANON_JIT": "compiled"}
    ledger = work / "warm_ledger"
    shutil.rmtree(ledger, ignore_errors=True)
    for i, raw in enumerate(raws):
        args = ["release", str(raw), "-o", str(work / f"warm_release{i}"), "--k", str(k), "--force"]
        wall, rss, _ = _run([*args, "--ledger", str(ledger), "--republish"], compiled)  # every kernel
        _row(f"warm-up {i + 1} (compile)", wall, rss)


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


def _quarter(
    raw: Path, out_a: Path, out_l: Path, ledger: Path, env: dict[str, str], k: int, repeat: int,
    republish: bool,
) -> None:  # fmt: skip
    """Release quarter ``raw`` alone and with ``ledger``, ``repeat`` pairs interleaved (each ledgered run
    on a copy of the ledger before the quarter; the last copy becomes the ledger); print each run, the
    pair's ratio and CPU split, and with several pairs the medians."""
    base = ["release", str(raw), "--k", str(k), "--force"]
    runs: dict[str, list[float]] = {n: [] for n in ("cpu_a", "cpu_l", "wall_a", "wall_l", "rss_a", "rss_l")}
    splits: list[tuple[float, float]] = []
    for r in range(repeat):
        tag = f" ({r + 1}/{repeat})" if repeat > 1 else ""
        wall_a, rss_a, _ = _run([*base, "-o", str(out_a)], env)
        _row(f"release {raw.name} alone{tag}", wall_a, rss_a)
        cpu_a = _CPU[0]
        trial = ledger.with_name(ledger.name + ".trial")
        shutil.rmtree(trial, ignore_errors=True)
        if ledger.exists():
            shutil.copytree(ledger, trial)
        rule = ["--republish"] if republish else []
        wall_l, rss_l, text = _run([*base, "-o", str(out_l), "--ledger", str(trial), *rule], env)
        _row(f"release {raw.name} ledgered{tag}", wall_l, rss_l)
        series_line = next((line for line in text.splitlines() if line.startswith("[series]")), "")
        print(f"{raw.name}: ledgered / alone = {wall_l / wall_a:.2f} wall, {_CPU[0] / cpu_a:.2f} CPU, "
              f"{rss_l / rss_a:.2f} peak RSS  {series_line}", flush=True)  # fmt: skip
        parts = _parts(text)
        print(f"{raw.name}: {_split(parts, _CPU[0], cpu_a)}", flush=True)
        for name, value in zip(runs, (cpu_a, _CPU[0], wall_a, wall_l, rss_a, rss_l), strict=True):
            runs[name].append(value)
        if parts is not None:
            splits.append(parts)
        if r == repeat - 1:
            shutil.rmtree(ledger, ignore_errors=True)
            trial.rename(ledger)
    if repeat > 1:
        _medians(raw.name, runs, splits)


def _parts(text: str) -> tuple[float, float] | None:
    """The step's child and the ledger update, CPU seconds, from a ledgered release's output."""
    step = re.search(r"step process ([0-9.]+) CPU-s", text)
    ledger = re.search(r"^\[ledger\] .* ([0-9.]+) CPU-s\)$", text, re.MULTILINE)
    return None if step is None or ledger is None else (float(step.group(1)), float(ledger.group(1)))


def _medians(name: str, runs: dict[str, list[float]], splits: list[tuple[float, float]]) -> None:
    """The medians of a quarter's pairs: each figure's, and the pairs' ratios'."""
    med = {n: statistics.median(v) for n, v in runs.items()}
    ratios = [lv / av for lv, av in zip(runs["cpu_l"], runs["cpu_a"], strict=True)]
    cpus = ", ".join(f"{a:.1f}/{b:.1f}" for a, b in zip(runs["cpu_a"], runs["cpu_l"], strict=True))
    print(f"{name}: MEDIAN of {len(ratios)} pairs: alone {med['cpu_a']:.1f} CPU-s {med['wall_a']:.1f} s "
          f"{med['rss_a']:.0f} MB; ledgered {med['cpu_l']:.1f} CPU-s {med['wall_l']:.1f} s "
          f"{med['rss_l']:.0f} MB; ratio CPU {med['cpu_l'] / med['cpu_a']:.2f} (median of the pairs' "
          f"{statistics.median(ratios):.2f}), wall {med['wall_l'] / med['wall_a']:.2f}, peak RSS "
          f"{med['rss_l'] / med['rss_a']:.2f}; pairs (alone/ledgered CPU-s) {cpus}", flush=True)  # fmt: skip
    if splits:
        step = statistics.median(s for s, _ in splits)
        led = statistics.median(u for _, u in splits)
        rest = statistics.median(c - s - u for c, (s, u) in zip(runs["cpu_l"], splits, strict=True))
        print(f"{name}: MEDIAN split: series step {step:.1f} CPU-s, ledger update {led:.1f}, the rest "
              f"{rest:.1f} ({rest / med['cpu_a']:.2f} x alone)", flush=True)  # fmt: skip


@click.command()
@click.option("--cases", type=int, default=20000, show_default=True, help="Cases per quarter.")
@click.option("--quarters", type=int, default=4, show_default=True)
@click.option(
    "--follow", type=float, default=0.2, show_default=True, help="Follow-up share of later quarters."
)
@click.option("--k", type=int, default=5, show_default=True)
@click.option("--shape", type=click.Choice(["small", "realistic"]), default="realistic", show_default=True)
@click.option("--work", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--no-risk", is_flag=True, help="Skip the risk module's composition attack.")
@click.option(
    "--followups", type=click.Choice(FOLLOWUPS), default="same-patient", show_default=True,
    help="What a follow-up says: the same patient's report updated (calibrated on real FAERS), or another.",
)  # fmt: skip
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Pairs of releases (alone, ledgered) per quarter, interleaved; medians printed.",
)
@click.option("--keep-ledgers", is_flag=True, help="Keep a copy of the ledger after each quarter.")
@click.option(
    "--republish", is_flag=True,
    help="Ledgered releases with republished group-mates (the rule before the default; docs/series.md §4).",
)  # fmt: skip
def main(cases: int, quarters: int, follow: float, k: int, shape: str, work: Path, no_risk: bool,
         followups: str, repeat: int, keep_ledgers: bool, republish: bool) -> None:  # fmt: skip
    """Time a ledgered series against stand-alone releases and measure its composition."""
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "FAERS_ANON_KEY_FILE": str(work / "agency.key")}
    print(f"load average at start {os.getloadavg()}; republish: {republish}; follow-ups: {followups} "
          f"(reused quarters under "
          f"{work / 'raw'} keep the model they were made with)", flush=True)  # fmt: skip
    _warm_up(work, env, k)
    labels = quarter_labels("2024Q1", quarters)
    raws = [work / "raw" / label for label in labels]
    if not all(r.is_dir() for r in raws):
        raws = make_series(cases, work / "raw", quarters=quarters, follow=follow, seed=0, shape=shape,
                           followups=followups)  # fmt: skip
    shutil.rmtree(work / "ledger", ignore_errors=True)  # a series starts with an empty ledger
    wall, rss, _ = _run(["ingest", *map(str, raws), "-o", str(work / "ingested")], env)
    _row("cumulative ingest", wall, rss)
    alone, ledgered = [], []
    for i, raw in enumerate(raws):
        out_a, out_l = work / f"alone{i}", work / f"ledgered{i}"
        _quarter(raw, out_a, out_l, work / "ledger", env, k, repeat, republish)
        print(f"{raw.name}: {_ledger_read(work / 'ledger', work / 'agency.key')}", flush=True)
        if keep_ledgers:
            kept = work / f"ledger-after-{raw.name}"
            shutil.rmtree(kept, ignore_errors=True)
            shutil.copytree(work / "ledger", kept)
        alone.append(out_a)
        ledgered.append(out_l)
    wall, rss, _ = _run(["signals", *map(str, ledgered), "-o", str(work / "signals.parquet")], env)
    _row("cumulative signals", wall, rss)
    _series_counts(work / "ledger")
    for label, series in (("alone", alone), ("ledgered", ledgered)):
        wall, rss, text = _run(["verify", "--series", *map(str, series)], env)
        verdict = next(line for line in text.splitlines() if line.startswith("series of"))
        print(f"{label}: {verdict}  ({wall:.1f} s, {rss:.0f} MB)", flush=True)
        if not no_risk:
            found = _composition(series, env, work / f"risk_{label}.json")
            print(f"{label}: risk composition {json.dumps(found)}", flush=True)
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
