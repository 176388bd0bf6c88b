"""The README shipped beside the demo zip, rendered from the demo's own tables (so it cannot go stale)."""

from __future__ import annotations

import polars as pl

from faers_anon.synthetic._check import check_signals
from faers_anon.synthetic._plan import MALFORMED_KINDS, Quarter
from faers_anon.synthetic._vocab import DRUGS
from faers_anon.synthetic._write import zip_name

__all__ = ["demo_readme"]


def _share(frame: pl.DataFrame, expr: pl.Expr) -> str:
    return f"{100 * float(frame.select(expr.mean()).item()):.0f} %"


def demo_readme(tables: dict[str, pl.DataFrame], *, cases: int, seed: int, quarter: str) -> str:
    """Markdown describing the demo quarter: provenance, layout, sizes, missingness, planted signals."""
    demo = tables["DEMO"].filter(pl.col("primaryid").str.contains(r"^\d+$"))
    suffix = Quarter.parse(quarter).suffix
    rows = ", ".join(
        f"{tables[t].height:,} {t}" for t in ("DEMO", "DRUG", "REAC", "INDI", "THER", "OUTC", "RPSR")
    )
    deleted = tables["DELETE"].get_column("caseid")
    extra = tables["DEMO"].get_column("caseid").n_unique() - cases
    present = int(deleted.is_in(tables["DEMO"].get_column("caseid").implode()).sum())
    ingredient = {d.name: d.prod_ai.lower() for d in DRUGS}
    missing_wt = _share(demo, pl.col("wt").is_null())
    missing_age = _share(demo, pl.col("age").is_null())
    missing_sex = _share(demo, pl.col("sex").is_null() | (pl.col("sex") == "UNK"))
    check = check_signals(tables)
    signal_rows = []
    for drug, event, stratum in (
        check.select("drug", "event", "stratum").unique(maintain_order=True).iter_rows()
    ):
        both = check.filter((pl.col("drug") == drug) & (pl.col("event") == event))
        inside = both.row(by_predicate=pl.col("scope") == "stratum", named=True)
        overall = both.row(by_predicate=pl.col("scope") == "all", named=True)
        signal_rows.append(
            f"| {drug} ({ingredient.get(drug, '?')}) | {event} | {stratum} | {inside['a']} | "
            f"{inside['prr']:.1f} | {inside['chi2']:.1f} | {overall['prr']:.1f} |"
        )
    malformed = "\n".join(f"- `{kind}`: {text}" for kind, text in MALFORMED_KINDS.items())
    return f"""# Demo quarter (synthetic)

`{zip_name(quarter)}` is a **synthetic** FAERS quarter: no row comes from FDA
data and no patient exists. It was drawn by
`faers_anon.synthetic.make_quarter({cases}, seed={seed}, quarter="{quarter}")` and written, with this
README, by `scripts/make_demo_quarter.py`. Rerunning the script gives the same bytes; a test fails
when the bundled files and the generator disagree. Drug names, indications and reaction terms come
from a hand-written table of textbook facts (`faers_anon/synthetic/_vocab.py`).

## Layout

As FDA's modern (2014Q3+) quarterly extract: `ASCII/DEMO{suffix}.txt`, `DRUG`, `REAC`, `OUTC`, `RPSR`,
`THER`, `INDI` (`$`-delimited, header line, no quoting, CRLF line ends, primaryid = caseid ‖
caseversion) and `Deleted/DELETE{suffix}.txt` (no header, first line a single space, one caseid per
line).

## Size and shape

{cases:,} cases ({extra} more caseids belong to malformed rows).
Rows: {rows}.
The DELETE list names {deleted.len()} caseids: {present} of this quarter and one that is absent.
Missing in DEMO (share of reports): weight {missing_wt}, age {missing_age}, sex UNK or blank {missing_sex}.
Ages come in YR, MON, WK, DY, HR and DEC, weights in KG and LBS; a few reports have age 150 YR or
weight 900 KG.

## Planted signals

Stratum = the latest version's reported sex and age. a, PRR and χ² (Yates) in the stratum and PRR
over all cases, one row per case (latest version), DELETE applied:

| drug | event | stratum | a | PRR | χ² | PRR all cases |
|---|---|---|---|---|---|---|
{chr(10).join(signal_rows)}

The first seven are the MedWatch rules of Lin et al. 2016, Table 5. The last is visible only in its
stratum: AMBIEN users outside it never report Fall, so over all cases its PRR stays below 2.

## Malformed rows (at the end of their files)

{malformed}
"""
