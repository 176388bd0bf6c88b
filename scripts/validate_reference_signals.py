"""Validation: the OMOP / EU-ADR / Harpaz reference pairs scored on FDA's real 2022Q3 quarter.

Data (read in place, never copied): ``../shared/data/faers_samples/pvlrt-faers22q3raw/ascii/22Q3``
(FDA's whole 2022Q3 quarter as packaged by pvLRT: 215,867 cases, their primary suspect drug names
and the reactions among 973 selected PTs; DRUG and REAC only, joined on caseid — PROVENANCE.md §10)
and ``../shared/data/reference_signals/`` (reference pairs and their outcome PT groups).

The quarter goes straight into the signals library (its case tables take caseid × drug and
caseid × PT): ingest rightly refuses a source without DEMO. Cases carry no demographics, so the
reference rows with an age/sex condition (the seven MedWatch rules) cannot be scored.

Drug names: ``as-is`` upper-cases the DRUG names (brand or generic, as reported); ``unii`` maps a
name that is a brand or official name in FDA's UNII list (``../shared/data/drug_names/
fda_unii_names_bn_of``) to its substance's display name (``VOLTAREN`` → ``DICLOFENAC SODIUM``),
which the reference matching reads by word prefix (``DICLOFENAC``).

A pair is *scorable* when its drug occurs in the quarter and at least one PT of its event (group)
is among the quarter's PTs; a scorable pair never reported together has a = 0 and ranks last.
ROC AUC (ties count one half, Mann–Whitney) is computed for each measure, higher = more signal
(for ``fisher_p``, lower), over all scorable pairs and over those reported together (a > 0).
``old rule`` recomputes PRR and ROR with the former zero-cell rule
(+0.5 on all cells when any is 0, a = 0 included) to show what ranking a = 0 last changes.

Criteria on the quarter (as-is names): pairs flagged by each criterion of signals.measures with its
count floor, ROR025 > 1 without its floor (and how many of those rest on a single case), Fisher's
Benjamini–Hochberg q < 0.05, and the pairs meeting all four criteria.

After anonymization: the quarter has no DEMO, so there is nothing to anonymize. ``--samples`` counts,
for every real sample with DEMO in ``../shared/data/faers_samples/`` (PROVENANCE.md), how many
reference pairs are scorable there and how many are reported together (a > 0), by primary suspect
and by any role: the figures that decide whether an AUC before/after anonymization means anything.

Usage: .venv/bin/python scripts/validate_reference_signals.py [--data DIR] [--reference DIR] [--json OUT]
       [--samples]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from scipy.stats import rankdata

from signals import CRITERIA, CaseTables, SignalConfig, load_reference_pairs, panel_table, signal_table

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
MEASURES = ("a", "prr", "prr_lo", "ror", "ror_lo", "ic", "ic025", "chi2", "ebgm", "eb05", "fisher_p")


def read_quarter(folder: Path, *, names: str, unii: Path) -> CaseTables:
    """caseid × drug and caseid × PT of the pvLRT quarter as signals case tables."""

    def read(name: str) -> pl.DataFrame:
        return pl.read_csv(folder / name, separator="$", infer_schema=False, quote_char=None)

    drugs = read("DRUG22Q3.txt").select(
        pl.col("caseid").cast(pl.Int64),
        pl.col("drugname").str.strip_chars().str.to_uppercase().alias("name"),
        "role_cod",
    )
    if names == "unii":
        table = pl.read_csv(unii, separator="\t", infer_schema=False, quote_char=None).select(
            pl.col("Name").alias("name"), pl.col("Display Name").alias("substance")
        )
        drugs = drugs.join(table.unique("name"), on="name", how="left").with_columns(
            pl.coalesce("substance", "name").alias("name")
        )
    drugs = drugs.select("caseid", pl.col("name").alias("drug_key"), "role_cod")
    events = read("REAC22Q3.txt").select(pl.col("caseid").cast(pl.Int64), "pt")
    cases = pl.concat([drugs.select("caseid"), events.select("caseid")]).unique().sort("caseid")
    return CaseTables(cases=cases, drugs=drugs, events=events)


def auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """ROC AUC by the Mann–Whitney statistic; ties count one half."""
    ranks = rankdata(scores)
    n1, n0 = int(positive.sum()), int((~positive).sum())
    return float((ranks[positive].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def _old_rule(frame: pl.DataFrame) -> pl.DataFrame:
    a, b, c, d = (pl.col(x) for x in "abcd")
    h = pl.when(pl.min_horizontal(a, b, c, d) < 0.5).then(0.5).otherwise(0.0)
    return frame.with_columns(
        prr_old=((a + h) / (a + b + 2 * h)) / ((c + h) / (c + d + 2 * h)),
        ror_old=(a + h) * (d + h) / ((b + h) * (c + h)),
    )


def unconditioned(panel: pl.DataFrame) -> pl.DataFrame:
    """The labelled reference rows without an age/sex condition, each pair once (7 rows repeat)."""
    return panel.filter(
        pl.col("condition").is_null() & pl.col("expected").is_in(["positive", "negative"])
    ).unique(["drug", "event", "event_group", "expected"], keep="first", maintain_order=True)


def with_scorable(scored: pl.DataFrame) -> pl.DataFrame:
    """``drug_seen`` (a + b > 0), ``event_seen`` (a + c > 0) and ``scorable`` (both)."""
    return scored.with_columns(
        drug_seen=(pl.col("a") + pl.col("b")) > 0, event_seen=(pl.col("a") + pl.col("c")) > 0
    ).with_columns(scorable=pl.col("drug_seen") & pl.col("event_seen"))


def score(tables: CaseTables, reference: Path, groups: Path) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Every unconditioned reference pair with its counts, measures and ``scorable`` flag."""
    started = time.perf_counter()
    table = signal_table(tables, config=SignalConfig(measures="all"))
    seconds = time.perf_counter() - started
    panel = load_reference_pairs(reference, outcome_groups=groups)
    scored = _old_rule(
        with_scorable(
            panel_table(
                tables, unconditioned(panel), config=SignalConfig(measures="all"), prior=table.ebgm_prior
            )
        )
    )
    info = {
        "cases": table.n_cases,
        "pairs_in_quarter": table.frame.height,
        "signals_seconds": round(seconds, 2),
        "load_average": [round(v, 2) for v in os.getloadavg()],
        "ebgm_prior": json.loads(table.ebgm_prior.to_json()) if table.ebgm_prior else None,
        "reference_rows": panel.height,
        "with_condition": panel.filter(pl.col("condition").is_not_null()).height,
        "criteria": criterion_counts(table.frame),
    }
    return scored, info


def criterion_counts(table: pl.DataFrame) -> dict[str, int]:
    """Pairs flagged per criterion (with its count floor), ROR025 > 1 without the floor, BH q < 0.05."""
    flags = {name: int(table.get_column(column).sum()) for name, column in CRITERIA.items()}
    bare = table.filter(pl.col("ror_lo") > 1)
    return {
        "pairs": table.height,
        **flags,
        "ror025_no_floor": bare.height,
        "ror025_no_floor_a1": bare.filter(pl.col("a") == 1).height,
        "fisher_q_below_0.05": int((table.get_column("fisher_q") < 0.05).sum()),
        "all_four": int(table.select(pl.all_horizontal(list(CRITERIA.values()))).to_series().sum()),
    }


def figures(scored: pl.DataFrame) -> dict[str, Any]:
    """Coverage and AUCs of one scoring."""
    ok = scored.filter("scorable")
    positive = (ok.get_column("expected") == "positive").to_numpy()
    reported = ok.filter(pl.col("a") > 0)
    positive_reported = (reported.get_column("expected") == "positive").to_numpy()
    aucs, aucs_reported = {}, {}
    for measure in (*MEASURES, "prr_old", "ror_old"):
        sign = -1.0 if measure == "fisher_p" else 1.0
        aucs[measure] = round(auc(sign * ok.get_column(measure).to_numpy(), positive), 3)
        values = sign * reported.get_column(measure).to_numpy()
        aucs_reported[measure] = round(auc(values, positive_reported), 3)
    return {
        "unconditioned_pairs": scored.height,
        "scorable": ok.height,
        "positive": int(positive.sum()),
        "negative": int((~positive).sum()),
        "not_scorable": {
            "drug_absent": int((~scored.get_column("drug_seen")).sum()),
            "event_absent_only": int(
                (scored.get_column("drug_seen") & ~scored.get_column("event_seen")).sum()
            ),
        },
        "reported_together": int((ok.get_column("a") > 0).sum()),
        "negatives_with_a0": int(((ok.get_column("a") == 0) & ~pl.Series(positive)).sum()),
        "reported_positive": int(positive_reported.sum()),
        "auc": aucs,
        "auc_reported_only": aucs_reported,
    }


SAMPLES = {  # the real samples with DEMO (PROVENANCE.md): folder under faers_samples, quarter folders
    "nico8270-2025q4": ("ascii", ("25Q4",)),
    "stutterk1d-2024q1": ("ascii", ("24Q1",)),
    "yunuuuu-faers": ("ascii", ("17Q2",)),
    "diana-package": ("ascii", None),  # 1,000 cleaned cases over 72 quarters, pooled
}


def _read_ascii(folder: Path, table: str, quarters: list[str]) -> pl.DataFrame:
    frames = [
        pl.read_csv(folder / q / f"{table}{q}.txt", separator="$", infer_schema=False, quote_char=None)
        for q in quarters
        if (folder / q / f"{table}{q}.txt").exists()
    ]
    columns = sorted(set.intersection(*(set(f.columns) for f in frames)))
    return pl.concat([f.select(columns) for f in frames])


def read_sample(folder: Path, quarters: tuple[str, ...] | None) -> CaseTables:
    """caseid × drug name (upper-cased, as reported) and caseid × PT of a sample in FAERS layout."""
    chosen = list(quarters) if quarters else sorted(p.name for p in folder.iterdir() if p.is_dir())
    caseid = pl.col("caseid").cast(pl.Int64)
    drugs = _read_ascii(folder, "DRUG", chosen).select(
        caseid, pl.col("drugname").str.strip_chars().str.to_uppercase().alias("drug_key"), "role_cod"
    )
    events = _read_ascii(folder, "REAC", chosen).select(caseid, "pt")
    cases = _read_ascii(folder, "DEMO", chosen).select(caseid).unique()
    return CaseTables(cases=cases, drugs=drugs, events=events)


def read_openfda(folder: Path) -> CaseTables:
    """The openFDA sample (converted/): reports keyed by their openFDA id; suspect drugs count as PS."""

    def read(name: str) -> pl.DataFrame:
        return pl.read_csv(folder / name, separator="$", infer_schema=False, quote_char=None)

    key = "openfda_safetyreportid"
    ids = read("DEMO.txt").select(key).unique(maintain_order=True).with_row_index("caseid")
    ids = ids.with_columns(pl.col("caseid").cast(pl.Int64))
    role = pl.when(pl.col("openfda_drugcharacterization") == "1").then(pl.lit("PS")).otherwise(pl.lit("C"))
    drugs = read("DRUG.txt").drop("caseid").join(ids, on=key)
    drugs = drugs.select(
        "caseid", pl.col("drugname").str.to_uppercase().alias("drug_key"), role.alias("role_cod")
    )
    events = read("REAC.txt").drop("caseid").join(ids, on=key).select("caseid", "pt")
    return CaseTables(cases=ids.select("caseid"), drugs=drugs, events=events)


def sample_coverage(tables: CaseTables, rules: pl.DataFrame) -> dict[str, Any]:
    """Per role (ps, any): scorable reference pairs, positives, pairs with a > 0 and with a >= 3."""
    out: dict[str, Any] = {"cases": tables.cases.height}
    for role in ("ps", "any"):
        ok = with_scorable(panel_table(tables, rules, config=SignalConfig(role=role))).filter("scorable")
        reported = ok.filter(pl.col("a") > 0)
        out[role] = {
            "scorable": ok.height,
            "positive": ok.filter(pl.col("expected") == "positive").height,
            "a_above_0": reported.height,
            "a_above_0_positive": reported.filter(pl.col("expected") == "positive").height,
            "a_at_least_3": ok.filter(pl.col("a") >= 3).height,
        }
    return out


def samples(root: Path, reference: Path) -> dict[str, Any]:
    """:func:`sample_coverage` of every real sample with DEMO, and of the openFDA sample."""
    rules = unconditioned(
        load_reference_pairs(
            reference / "reference_pairs.csv", outcome_groups=reference / "outcome_pt_groups.csv"
        )
    )
    out = {
        name: sample_coverage(read_sample(root / name / sub, q), rules) for name, (sub, q) in SAMPLES.items()
    }
    out["openfda-mirune0014"] = sample_coverage(
        read_openfda(root / "openfda-mirune0014" / "converted"), rules
    )
    for name, f in out.items():
        print(
            f"{name}: {f['cases']:,} cases; "
            + "; ".join(
                f"role {r}: {f[r]['scorable']} scorable ({f[r]['positive']} positive), "
                f"{f[r]['a_above_0']} with a > 0 ({f[r]['a_above_0_positive']} positive), "
                f"{f[r]['a_at_least_3']} with a >= 3"
                for r in ("ps", "any")
            )
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=SHARED / "faers_samples/pvlrt-faers22q3raw/ascii/22Q3")
    parser.add_argument("--reference", type=Path, default=SHARED / "reference_signals")
    parser.add_argument(
        "--unii", type=Path, default=SHARED / "drug_names/fda_unii_names_bn_of/unii_names_bn_of.tsv"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the figures here too")
    parser.add_argument("--samples", action="store_true", help="also count coverage in the DEMO samples")
    args = parser.parse_args(argv)
    out: dict[str, Any] = {}
    for names in ("as-is", "unii"):
        tables = read_quarter(args.data, names=names, unii=args.unii)
        scored, info = score(
            tables, args.reference / "reference_pairs.csv", args.reference / "outcome_pt_groups.csv"
        )
        out[names] = {**info, **figures(scored)}
        f = out[names]
        print(
            f"drug names {names}: {f['cases']:,} cases, {f['pairs_in_quarter']:,} pairs, all measures in "
            f"{f['signals_seconds']} s (load {f['load_average']}); prior {f['ebgm_prior']}"
        )
        print(
            f"  {f['scorable']} of {f['unconditioned_pairs']} unconditioned reference pairs scorable "
            f"({f['positive']} positive, {f['negative']} negative); not scorable: {f['not_scorable']}; "
            f"{f['reported_together']} reported together, {f['negatives_with_a0']} negatives a = 0"
        )
        print("  AUC: " + ", ".join(f"{k} {v:.3f}" for k, v in f["auc"].items()))
        print(
            f"  AUC among the {f['reported_together']} pairs with a > 0 ({f['reported_positive']} positive): "
            + ", ".join(f"{k} {v:.3f}" for k, v in f["auc_reported_only"].items())
        )
        print("  criteria: " + ", ".join(f"{k} {v:,}" for k, v in f["criteria"].items()))
    if args.samples:
        out["samples"] = samples(SHARED / "faers_samples", args.reference)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
