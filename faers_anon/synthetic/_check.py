"""A self-check of the generator: the planted pairs' 2×2 counts, PRR and χ², from the string tables.

This reads the tables the way an analyst would (latest version per case, DELETE list applied, rows
that cannot be parsed left out) with plain polars; it is the generator's own acceptance check, not
the project's signal engine (``signals``).
"""

from __future__ import annotations

import polars as pl

from faers_anon.synthetic._cases import AGE_UNITS
from faers_anon.synthetic._plan import PLANTED_SIGNALS, PlantedSignal
from faers_anon.synthetic._vocab import DRUGS

__all__ = ["latest_cases", "check_signals"]


def latest_cases(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """One row per kept case: caseid, primaryid of its latest version, sex (F/M/null), age_years.

    Kept: numeric primaryid, first of duplicated primaryids, known age unit, caseid not on DELETE.
    Latest = highest caseversion, then latest fda_dt. Ages above 120 years are missing.
    """
    years = {unit: per for unit, per in AGE_UNITS}
    deleted = tables["DELETE"].get_column("caseid")
    return (
        tables["DEMO"]
        .lazy()
        .filter(pl.col("primaryid").str.contains(r"^\d+$"))
        .unique("primaryid", keep="first", maintain_order=True)
        .filter(pl.col("age_cod").is_null() | pl.col("age_cod").is_in(list(years)))
        .filter(~pl.col("caseid").is_in(deleted.implode()))
        .sort(pl.col("caseversion").cast(pl.Int64), "fda_dt", nulls_last=False)
        .group_by("caseid", maintain_order=True)
        .last()
        .select(
            "caseid",
            "primaryid",
            pl.when(pl.col("sex").is_in(["F", "M"])).then(pl.col("sex")).alias("sex"),
            (pl.col("age").cast(pl.Float64) * pl.col("age_cod").replace_strict(years, default=None)).alias(
                "age_years"
            ),
        )
        .with_columns(pl.when(pl.col("age_years") <= 120).then(pl.col("age_years")).alias("age_years"))
        .collect()
    )


def _drug_key() -> pl.Expr:
    """Upper-case drug name without dose text in parentheses and trailing punctuation."""
    return (
        pl.col("drugname")
        .str.to_uppercase()
        .str.replace_all(r"\([^)]*\)", "")
        .str.replace_all(r"\s+", " ")
        .str.strip_chars(" .,;:")
    )


def check_signals(
    tables: dict[str, pl.DataFrame], signals: tuple[PlantedSignal, ...] = PLANTED_SIGNALS
) -> pl.DataFrame:
    """2×2 counts, PRR and Yates χ² of each planted pair, inside its stratum and over all cases.

    A case takes the drug when one of its latest version's DRUG rows names the brand or ingredient
    (``drugname`` after removing dose text) or has the ingredient as ``prod_ai``; it has the event when
    its latest version's REAC lists the PT (case-blind). Cases missing a stratum value are outside it.

    PRR = [a/(a+b)] / [c/(c+d)]; χ² = N(|ad − bc| − N/2)² / ((a+b)(c+d)(a+c)(b+d)) (Yates).
    Edge cases: PRR is +inf when c = 0 < a, 0 when a = 0, null when a + b = 0 or c + d = 0 (no
    comparison possible); χ² is null when a margin is 0.

    Returns:
        One row per signal and scope (``stratum``, ``all``): drug, event, stratum, scope, a, b, c, d,
        prr, chi2.
    """
    cases = latest_cases(tables)
    keys = cases.select("caseid", "primaryid")
    drug = (
        tables["DRUG"]
        .join(keys, on=["caseid", "primaryid"])
        .with_columns(_drug_key().alias("name"), pl.col("prod_ai").str.to_uppercase().alias("ai"))
    )
    reac = tables["REAC"].join(keys, on=["caseid", "primaryid"]).with_columns(pl.col("pt").str.to_lowercase())
    ingredient = {d.name: d.prod_ai for d in DRUGS}
    rows = []
    for signal in signals:
        ai = ingredient.get(signal.drug, signal.drug)
        takers = drug.filter(pl.col("name").is_in([signal.drug, ai]) | (pl.col("ai") == ai)).get_column(
            "caseid"
        )
        events = reac.filter(pl.col("pt") == signal.event.lower()).get_column("caseid")
        inside = pl.lit(True)
        if signal.sex is not None:
            inside &= pl.col("sex") == signal.sex
        if signal.age_min is not None:
            inside &= pl.col("age_years") >= signal.age_min
        if signal.age_max is not None:
            inside &= pl.col("age_years") < signal.age_max
        flags = cases.select(
            pl.col("caseid").is_in(takers.implode()).alias("drug"),
            pl.col("caseid").is_in(events.implode()).alias("event"),
            inside.fill_null(False).alias("inside"),
        )
        for scope, frame in (("stratum", flags.filter("inside")), ("all", flags)):
            counts = frame.select(
                (pl.col("drug") & pl.col("event")).sum().alias("a"),
                (pl.col("drug") & ~pl.col("event")).sum().alias("b"),
                (~pl.col("drug") & pl.col("event")).sum().alias("c"),
                (~pl.col("drug") & ~pl.col("event")).sum().alias("d"),
            ).row(0)
            rows.append((signal.drug, signal.event, signal.stratum, scope, *counts))
    table = pl.DataFrame(rows, schema=["drug", "event", "stratum", "scope", "a", "b", "c", "d"], orient="row")
    a, b, c, d = (pl.col(x).cast(pl.Float64) for x in "abcd")
    n = a + b + c + d
    prr = (
        pl.when((a + b == 0) | (c + d == 0))
        .then(None)
        .when(a == 0)
        .then(0.0)
        .when(c == 0)
        .then(float("inf"))
        .otherwise((a / (a + b)) / (c / (c + d)))
    )
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    chi2 = (
        pl.when(margins == 0)
        .then(None)
        .otherwise(n * ((a * d - b * c).abs() - n / 2).clip(lower_bound=0) ** 2 / margins)
    )
    return table.with_columns(prr.alias("prr"), chi2.alias("chi2"))
