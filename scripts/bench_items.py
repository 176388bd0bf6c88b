"""Measure ``--items-m`` (issue 18): Evans-signal survival and attacker figures per strategy and m.

For an ingested folder (the demo, or a synthetic quarter ingested with ``faers-anon ingest``) this
anonymizes once per (m, strategy) at k 5, θ 0.4 (``raise-theta``), then measures on each release:

* the share of (case, item) pairs suppressed (``counts.items`` of the manifest) and the write time;
* Evans-signal survival, overall, raw vs release (:func:`signals.compare`, the release pipeline's
  signal stage with its default options: suspect drugs, the whole battery);
* ``faers-anon risk``'s "QIDs + 1/2 drugs/reactions" below-k shares (SPEC §11 classes, prosecutor);
* the verifier's verdict (rule ``items_km`` included).

With ``--group-sizes`` it measures instead the item step alone (m 1 and 2, k 5, raw QIDs): cases
sorted by sex, age and weight and cut into groups of n, Evans survival of the suppressed tables.

Prints one line per run and the load average before and after (2 shared cores: a load above 2
makes the times upper bounds).

Example: ``python scripts/bench_items.py /tmp/ingested-50k --work /tmp/bench-items``
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import click
import polars as pl

from faers_anon.analysis.signals import read_case_tables
from faers_anon.anonymize.items import ItemProtection, protect_items
from faers_anon.anonymize.pipeline import AnonymizeConfig, anonymize_folder
from faers_anon.risk import RiskConfig, assess_risk
from faers_anon.verify.verifier import verify_release
from signals import CaseTables, CompareConfig, compare

RUNS = ((0, "suppress"), (1, "suppress"), (1, "disassociate"), (2, "suppress"), (2, "disassociate"))


def _below_k(release: Path) -> dict[str, float]:
    """below_k of the QIDs + 1/2 drugs/reactions knowledge sets (risk's defaults)."""
    figures = assess_risk(release, config=RiskConfig()).figures
    return {
        f"{kind}:{count}": row["below_k"]
        for row in figures["reidentification"]
        if row["items"] is not None and row["knows"]
        for kind, count in row["items"].items()
    }


def _group_sizes(ingested: Path, sizes: tuple[int, ...]) -> None:
    """Evans survival of item suppression alone when the groups hold n cases (module docstring)."""
    raw = read_case_tables(ingested)
    order = raw.cases.sort("sex", "age_years", "weight_kg", "caseid", nulls_last=True).with_row_index("r")
    for n in sizes:
        groups = order.select("caseid", (pl.col("r") // n).cast(pl.Int64).alias("group_id"))
        for m in (1, 2):
            done = protect_items({"drug": raw.drugs, "reac": raw.events}, groups,
                                 protection=ItemProtection(k=5, m=m))  # fmt: skip
            kept = CaseTables(cases=raw.cases, drugs=done.tables["drug"].drop_nulls("drug_key"),
                              events=done.tables["reac"].drop_nulls("pt"))  # fmt: skip
            evans = compare(raw, kept, config=CompareConfig()).overview["overall"]["evans"]
            share = done.counts["case_items_suppressed"] / max(done.counts["case_items"], 1)
            click.echo(f"n {n} m {m}: {share:.1%} of (case, item) suppressed; Evans "
                       f"{evans['n_survived']} of {evans['n_raw']} survive")  # fmt: skip


@click.command()
@click.argument("ingested", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--work", type=click.Path(file_okay=False, path_type=Path), default=Path("/tmp/bench-items"),
              show_default=True, help="Folder for the releases.")  # fmt: skip
@click.option("--k", default=5, show_default=True)
@click.option("--json-out", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option("--group-sizes", default=None, help="Comma-separated n: the item step alone on groups of n.")
def main(ingested: Path, work: Path, k: int, json_out: Path | None, group_sizes: str | None) -> None:
    """Anonymize INGESTED once per (m, strategy) and print survival, suppression and risk."""
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("FAERS_ANON_KEY_FILE", str(work / "agency.key"))
    click.echo(f"load average before: {os.getloadavg()}")
    if group_sizes:
        _group_sizes(ingested, tuple(int(n) for n in group_sizes.split(",")))
        click.echo(f"load average after: {os.getloadavg()}")
        return
    raw = read_case_tables(ingested)
    results = []
    for m, strategy in RUNS:
        out = work / f"m{m}-{strategy}"
        config = AnonymizeConfig(k=k, theta=0.4, on_infeasible="raise-theta", items_m=m,
                                 items_strategy=strategy, force=True)  # fmt: skip
        start = time.perf_counter()
        result = anonymize_folder(ingested, out, config=config)
        seconds = time.perf_counter() - start
        survival = compare(raw, read_case_tables(out), config=CompareConfig()).overview
        overall = survival["overall"]["evans"]
        verdict = verify_release(out)
        items = result.items or {}
        row = {
            "m": m,
            "strategy": strategy,
            "anonymize_s": round(seconds, 1),
            "write_s": round(result.seconds.get("write", 0.0), 1),
            "case_items": items.get("case_items"),
            "suppressed_share": (items["case_items_suppressed"] / items["case_items"])
            if items.get("case_items")
            else 0.0,
            "evans_raw": overall["n_raw"],
            "evans_survived": overall["n_survived"],
            "below_k": _below_k(out),
            "verified": verdict.ok,
        }
        results.append(row)
        click.echo(json.dumps(row))
    click.echo(f"load average after: {os.getloadavg()}")
    if json_out is not None:
        json_out.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
