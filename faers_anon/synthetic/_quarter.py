"""Assemble a synthetic quarter: cases → reports → items → planted signals → tables → malformed rows."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl

from faers_anon.synthetic._cases import AGE_UNITS, Cases, Reports, make_cases, make_reports
from faers_anon.synthetic._children import drug_tables, outc_frame, reac_frame, rpsr_frame
from faers_anon.synthetic._demo import demo_frame
from faers_anon.synthetic._items import DRUG_INDEX, Items, draw_drugs, draw_reactions
from faers_anon.synthetic._malformed import add_malformed
from faers_anon.synthetic._plan import PLANTED_SIGNALS, PlantedSignal, Quarter
from faers_anon.synthetic._shape import Shape, shape_named
from faers_anon.synthetic._signals import plant

__all__ = ["make_quarter", "TABLES"]

TABLES = ("DEMO", "DRUG", "REAC", "OUTC", "RPSR", "THER", "INDI", "DELETE")
_IMPLAUSIBLE_EVERY = 2500  # one age of 150 YR and one weight of 900 KG per this many reports (at least one)


def make_quarter(
    n_cases: int,
    *,
    seed: int = 0,
    quarter: str = "2025Q1",
    malformed: bool = True,
    signals: tuple[PlantedSignal, ...] = PLANTED_SIGNALS,
    shape: str | Shape = "small",
) -> dict[str, pl.DataFrame]:
    """Generate a synthetic FAERS quarter in memory.

    Args:
        n_cases: number of cases (distinct caseids), at least 10; reports are ~1.17 × as many.
        seed: seed of the one ``numpy.random.default_rng`` the whole quarter is drawn from.
        quarter: the quarter label, ``YYYYQn`` (2014Q3 or later); fixes fda_dt and file names.
        malformed: append the malformed rows of ``MALFORMED_KINDS`` (one of each).
        signals: the drug–event pairs to plant (default ``PLANTED_SIGNALS``).
        shape: ``"small"`` (hand-written vocabularies, fast tests, the demo) or ``"realistic"`` (fitted
            to real FAERS, see ``_shape`` and docs/synthetic.md), or a ``Shape``.

    Returns:
        ``{"DEMO", "DRUG", "REAC", "OUTC", "RPSR", "THER", "INDI", "DELETE"}`` → DataFrame with the FAERS
        2014Q3+ columns in file order, every column Utf8, null for an empty field. ``DELETE`` has one
        column ``caseid``. The same arguments give the same frames.

    Raises:
        ValueError: for fewer than 10 cases, a malformed quarter label or an unknown shape.
    """
    if n_cases < 10:
        raise ValueError(f"n_cases must be at least 10; got {n_cases!r}")
    q = Quarter.parse(quarter)
    sh = shape_named(shape)
    rng = np.random.default_rng(seed)
    cases = make_cases(n_cases, rng, q, sh)
    reports = make_reports(cases, rng, q, sh)
    drugs = draw_drugs(cases, rng, sh)
    reactions = plant(draw_reactions(cases, rng, sh), drugs, reports, signals, rng, sh)
    quiet = _quiet_cases(drugs, signals, cases.n)
    reports = _implausible(reports, quiet, rng)
    demo = demo_frame(cases, reports, rng, sh)
    keys = demo.select("primaryid", "caseid")
    tables = {"DEMO": demo, **drug_tables(drugs, cases, reports, keys, rng, sh)}
    tables["REAC"], death = reac_frame(reactions, cases, reports, keys, rng, sh)
    tables["OUTC"] = outc_frame(reports, death, keys, rng)
    tables["RPSR"] = rpsr_frame(cases, reports, keys, rng)
    tables["DELETE"] = _deleted(cases, quiet, rng)
    if malformed:
        tables = add_malformed(tables, next_caseid=int(cases.caseid[-1]) + 1)
    return {name: tables[name] for name in TABLES}


def _quiet_cases(drugs: Items, signals: tuple[PlantedSignal, ...], n_cases: int) -> np.ndarray:
    """Cases taking none of the planted drugs: the only ones altered after planting (deleted, implausible)."""
    quiet = np.ones(n_cases, dtype=bool)
    for drug in {s.drug for s in signals if s.drug in DRUG_INDEX}:
        quiet &= ~drugs.has(DRUG_INDEX[drug], n_cases)
    return quiet


def _implausible(reports: Reports, quiet: np.ndarray, rng: np.random.Generator) -> Reports:
    """Give a few reports of quiet cases an age of 150 YR and a few others a weight of 900 KG."""
    k = max(1, reports.n // _IMPLAUSIBLE_EVERY)
    pool = np.flatnonzero(quiet[reports.case])
    chosen = rng.choice(pool, size=min(2 * k, pool.size), replace=False)
    old, heavy = chosen[:k], chosen[k:]
    age_value, age_unit, age_years = (
        reports.age_value.copy(),
        reports.age_unit.copy(),
        reports.age_years.copy(),
    )
    age_value[old], age_unit[old], age_years[old] = 150.0, [u for u, _ in AGE_UNITS].index("YR"), np.nan
    wt_value, wt_lbs, wt_decimals = reports.wt_value.copy(), reports.wt_lbs.copy(), reports.wt_decimals.copy()
    wt_value[heavy], wt_lbs[heavy], wt_decimals[heavy] = 900.0, False, 0
    return dataclasses.replace(
        reports,
        age_value=age_value,
        age_unit=age_unit,
        age_years=age_years,
        wt_value=wt_value,
        wt_lbs=wt_lbs,
        wt_decimals=wt_decimals,
    )


def _deleted(cases: Cases, quiet: np.ndarray, rng: np.random.Generator) -> pl.DataFrame:
    """DELETE list: ~1 in 1,000 quiet cases of the quarter (at least 3) plus one caseid not in it, sorted."""
    pool = np.flatnonzero(quiet)
    k = min(pool.size, max(3, cases.n // 1000))
    listed = cases.caseid[rng.choice(pool, size=k, replace=False)]
    absent = cases.caseid[0] - 1 - int(rng.integers(0, 50))
    ids = np.sort(np.r_[listed, absent])
    return pl.DataFrame({"caseid": ids.astype(str)})
