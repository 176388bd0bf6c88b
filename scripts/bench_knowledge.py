"""Benchmark: P(s | case) for a 400,000-case quarter (target ≤ 10 s and ≤ 3 GB peak RSS).

Builds a synthetic cases frame of the cases.parquet shape (≈ 4 drug keys, 3 reactions and 1.5
indications per case, drawn from skewed vocabularies as in FAERS) and an E of 1,000 drugs with 1–5
diseases each, then times ``knowledge.case_value_probabilities`` (all three attributes sensitive)
and ``knowledge.confidence`` over consecutive groups of 5 cases. Prints wall and CPU seconds (CPU
time shows the cost when other processes share the cores), rows and peak RSS.

Usage: .venv/bin/python scripts/bench_knowledge.py [--cases 400000] [--seed 0]
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import polars as pl

from knowledge import case_value_probabilities, confidence, with_default_weights

N_DRUGS, N_REACTIONS, N_INDICATIONS, N_E_DRUGS = 3_000, 5_000, 2_000, 1_000


def _skewed(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """``n`` indices in [0, size) with a Zipf-like skew (a few very common terms, a long tail)."""
    return np.minimum(rng.zipf(1.3, n) - 1, size - 1)


def _lists(rng: np.random.Generator, caseid: np.ndarray, mean: float, size: int, prefix: str) -> pl.DataFrame:
    """One list column: Poisson(mean) terms per case (at least one for drugs), named ``prefix n``."""
    counts = rng.poisson(mean, caseid.size) + (1 if prefix == "DRUG" else 0)
    owner = np.repeat(caseid, counts)
    terms = pl.Series("term", _skewed(rng, int(counts.sum()), size)).cast(pl.Utf8)
    flat = pl.DataFrame({"caseid": owner, "term": terms}).with_columns(
        term=pl.lit(f"{prefix} ") + pl.col("term")
    )
    return flat.group_by("caseid").agg(pl.col("term").unique().sort())


def build(n_cases: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The synthetic cases frame and E (drug keys DRUG i, diseases shared with indications)."""
    rng = np.random.default_rng(seed)
    caseid = np.arange(1, n_cases + 1, dtype=np.int64) * 10
    cases = pl.DataFrame({"caseid": caseid})
    for column, mean, size, prefix in (
        ("drug_keys", 3.6, N_DRUGS, "DRUG"),
        ("reactions", 3.0, N_REACTIONS, "TERM"),
        ("indications", 1.5, N_INDICATIONS, "TERM"),
    ):
        part = _lists(rng, caseid, mean, size, prefix).rename({"term": column})
        cases = cases.join(part, on="caseid", how="left").with_columns(pl.col(column).fill_null([]))
    per_drug = rng.integers(1, 6, N_E_DRUGS)
    drug_of_row = np.repeat(np.arange(N_E_DRUGS), per_drug)
    pairs = pl.DataFrame(
        {
            "drug_key": pl.Series(drug_of_row).cast(pl.Utf8),
            "disease": pl.Series(_skewed(rng, drug_of_row.size, N_INDICATIONS)).cast(pl.Utf8),
        }
    ).select(
        (pl.lit("DRUG ") + pl.col("drug_key")).alias("drug_key"),
        (pl.lit("term ") + pl.col("disease")).alias("disease"),  # lower case: values meet up to case
    )
    return cases.sort("caseid"), with_default_weights(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=400_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    cases, table = build(args.cases, args.seed)
    sizes = cases.select(pl.col(c).list.len().mean() for c in ("drug_keys", "reactions", "indications"))
    print(
        f"cases {cases.height:,}: per case {sizes.item(0, 0):.2f} drugs, {sizes.item(0, 1):.2f} reactions, "
        f"{sizes.item(0, 2):.2f} indications; E {table.height:,} rows, {table['drug_key'].n_unique():,} drugs"
    )
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    start, cpu_start = time.perf_counter(), time.process_time()
    probs = case_value_probabilities(cases, table)
    linked, linked_cpu = time.perf_counter() - start, time.process_time() - cpu_start
    groups = pl.DataFrame({"caseid": cases["caseid"], "group_id": np.arange(cases.height) // 5})
    start = time.perf_counter()
    conf = confidence(groups, probs)
    grouped = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    from_e = probs.filter(pl.col("p") < 1).height
    print(
        f"case_value_probabilities: {linked:.2f} s wall, {linked_cpu:.2f} s CPU, {probs.height:,} rows "
        f"({from_e:,} with p < 1 from E)"
    )
    print(f"confidence over {groups.height // 5:,} groups of 5: {grouped:.2f} s, {conf.height:,} rows")
    print(f"peak RSS: {peak:.2f} GB (after building the input: {rss_before:.2f} GB)")
    verdict = "OK" if linked <= 10 and peak <= 3 else "OVER TARGET"
    print(f"target ≤ 10 s and ≤ 3 GB: {verdict}")


if __name__ == "__main__":
    main()
