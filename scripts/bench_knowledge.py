"""Benchmark: P(s | case) for a 400,000-case quarter (target ≤ 10 s and ≤ 3 GB peak RSS).

Two sources of input (``--source``):

* ``synthetic`` (default): ``faers_anon.synthetic.make_quarter`` draws a FAERS quarter; the script
  keys its DRUG rows (``knowledge.drug_key_expr``), mines E from its INDI ⋈ DRUG
  (``knowledge.mine_from_indications``) and builds the cases frame of the cases.parquet shape
  (one row per caseid; unique sorted lists of indications, reactions, drug keys). Both steps are
  timed too.
* ``random``: a cases frame drawn directly (≈ 4 drug keys, 3 reactions and 1.5 indications per case
  from skewed vocabularies of 3,000 drugs and 7,000 terms: more distinct values than the synthetic
  quarter's hand-written vocabulary) and an E of 1,000 drugs with 1–5 diseases each.

The inputs are written to a temporary folder and a child process times
``knowledge.case_value_probabilities`` (all three attributes sensitive) and ``knowledge.confidence``
over consecutive groups of 5 cases, so its peak RSS is the linking's, not the generator's. Prints wall
and CPU seconds (CPU time shows the cost when other processes share the cores), rows and peak RSS.

Usage: .venv/bin/python scripts/bench_knowledge.py [--cases 400000] [--seed 0] [--source synthetic]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from knowledge import (
    case_value_probabilities,
    confidence,
    drug_key_expr,
    mine_from_indications,
    with_combinations,
    with_default_weights,
)

N_DRUGS, N_TERMS, N_E_DRUGS = 3_000, 7_000, 1_000


def _skewed(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """``n`` indices in [0, size) with a Zipf-like skew (a few very common terms, a long tail)."""
    return np.minimum(rng.zipf(1.3, n) - 1, size - 1)


def _lists(rng: np.random.Generator, caseid: np.ndarray, mean: float, prefix: str, size: int) -> pl.DataFrame:
    """Poisson(mean) terms per case (at least one drug) as a unique sorted list per caseid."""
    counts = rng.poisson(mean, caseid.size) + (1 if prefix == "DRUG" else 0)
    terms = pl.Series("term", _skewed(rng, int(counts.sum()), size)).cast(pl.Utf8)
    flat = pl.DataFrame({"caseid": np.repeat(caseid, counts), "term": terms})
    return flat.group_by("caseid").agg((pl.lit(f"{prefix} ") + pl.col("term")).unique().sort().alias("term"))


def random_inputs(n_cases: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The ``random`` source: cases frame and E (module docstring)."""
    rng = np.random.default_rng(seed)
    caseid = np.arange(1, n_cases + 1, dtype=np.int64) * 10
    cases = pl.DataFrame({"caseid": caseid})
    for column, mean, prefix, size in (
        ("drug_keys", 3.6, "DRUG", N_DRUGS),
        ("reactions", 3.0, "TERM", N_TERMS),
        ("indications", 1.5, "TERM", N_TERMS // 3),
    ):
        part = _lists(rng, caseid, mean, prefix, size).rename({"term": column})
        cases = cases.join(part, on="caseid", how="left").with_columns(pl.col(column).fill_null([]))
    drug_of_row = np.repeat(np.arange(N_E_DRUGS), rng.integers(1, 6, N_E_DRUGS))
    pairs = pl.DataFrame(
        {
            "drug_key": pl.Series(drug_of_row).cast(pl.Utf8),
            "disease": pl.Series(_skewed(rng, drug_of_row.size, N_TERMS // 3)).cast(pl.Utf8),
        }
    ).select(
        (pl.lit("DRUG ") + pl.col("drug_key")).alias("drug_key"),
        (pl.lit("term ") + pl.col("disease")).alias("disease"),  # lower case: values meet up to case
    )
    return cases.sort("caseid"), with_default_weights(pairs)


def synthetic_inputs(n_cases: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The ``synthetic`` source: a generated quarter, keyed, mined and merged per case."""
    from faers_anon.synthetic import make_quarter  # the script may use the application; knowledge may not

    start = time.perf_counter()
    tables = make_quarter(n_cases, seed=seed)
    print(f"make_quarter({n_cases:,}): {time.perf_counter() - start:.1f} s")
    ints = ("primaryid", "caseid", "drug_seq", "indi_drug_seq")
    drug, reac, indi = (
        tables[name].with_columns(pl.col(c).cast(pl.Int64) for c in ints if c in tables[name].columns)
        for name in ("DRUG", "REAC", "INDI")
    )
    start, cpu = time.perf_counter(), time.process_time()
    drug = drug.with_columns(drug_key=drug_key_expr(pl.col("prod_ai"), pl.col("drugname")))
    print(
        f"drug_key_expr on {drug.height:,} DRUG rows: {time.perf_counter() - start:.2f} s wall, "
        f"{time.process_time() - cpu:.2f} s CPU, {drug['drug_key'].n_unique():,} keys"
    )
    start, cpu = time.perf_counter(), time.process_time()
    mined = mine_from_indications(drug, indi)
    print(
        f"mine_from_indications on {indi.height:,} INDI rows: {time.perf_counter() - start:.2f} s wall, "
        f"{time.process_time() - cpu:.2f} s CPU, E {mined.height:,} rows, "
        f"{mined['drug_key'].n_unique():,} drugs"
    )
    lists = [
        indi.group_by("caseid").agg(pl.col("indi_pt").drop_nulls().unique().sort().alias("indications")),
        reac.group_by("caseid").agg(pl.col("pt").drop_nulls().unique().sort().alias("reactions")),
        drug.group_by("caseid").agg(pl.col("drug_key").drop_nulls().unique().sort().alias("drug_keys")),
    ]
    cases = tables["DEMO"].select(pl.col("caseid").cast(pl.Int64, strict=False)).drop_nulls().unique()
    for part in lists:
        cases = cases.join(part, on="caseid", how="left")
    cases = cases.with_columns(pl.col(c).fill_null([]) for c in ("indications", "reactions", "drug_keys"))
    table = with_combinations(mined.select("drug_key", "disease", "weight"), drug["drug_key"].drop_nulls())
    return cases.sort("caseid"), table


def _peak_rss_gb() -> float:
    """Peak RSS of this process in GB: ``VmHWM`` of /proc/self/status (the high-water mark of the
    address space since exec) on Linux, where ``getrusage``'s ``ru_maxrss`` of a child started by
    fork + exec still holds the parent's size at the fork; ``ru_maxrss`` elsewhere."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024**2
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def measure(folder: Path) -> None:
    """The child: read the inputs, time the linking and the group confidence, print the figures."""
    cases, table = pl.read_parquet(folder / "cases.parquet"), pl.read_parquet(folder / "e.parquet")
    sizes = cases.select(pl.col(c).list.len().mean() for c in ("drug_keys", "reactions", "indications"))
    print(
        f"cases {cases.height:,}: per case {sizes.item(0, 0):.2f} drugs, {sizes.item(0, 1):.2f} reactions, "
        f"{sizes.item(0, 2):.2f} indications; E {table.height:,} rows, {table['drug_key'].n_unique():,} drugs"
    )
    rss_before = _peak_rss_gb()
    start, cpu_start = time.perf_counter(), time.process_time()
    probs = case_value_probabilities(cases, table)
    linked, linked_cpu = time.perf_counter() - start, time.process_time() - cpu_start
    groups = pl.DataFrame({"caseid": cases["caseid"], "group_id": np.arange(cases.height) // 5})
    start = time.perf_counter()
    conf = confidence(groups, probs)
    grouped = time.perf_counter() - start
    peak = _peak_rss_gb()
    from_e = probs.filter(pl.col("p") < 1).height
    print(
        f"case_value_probabilities: {linked:.2f} s wall, {linked_cpu:.2f} s CPU, {probs.height:,} rows "
        f"({from_e:,} with p < 1 from E)"
    )
    print(f"confidence over {groups.height // 5:,} groups of 5: {grouped:.2f} s, {conf.height:,} rows")
    print(f"peak RSS: {peak:.2f} GB (after reading the input: {rss_before:.2f} GB)")
    verdict = "OK" if linked <= 10 and peak <= 3 else "OVER TARGET"
    print(f"target ≤ 10 s and ≤ 3 GB: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=400_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--source", choices=("synthetic", "random"), default="synthetic")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the child's entry point
    args = parser.parse_args()
    if args.measure is not None:
        measure(args.measure)
        return
    build = synthetic_inputs if args.source == "synthetic" else random_inputs
    cases, table = build(args.cases, args.seed)
    with tempfile.TemporaryDirectory(prefix="bench_knowledge_") as tmp:
        cases.write_parquet(Path(tmp) / "cases.parquet")
        table.write_parquet(Path(tmp) / "e.parquet")
        del cases, table
        subprocess.run([sys.executable, __file__, "--measure", tmp], check=True)


if __name__ == "__main__":
    main()
