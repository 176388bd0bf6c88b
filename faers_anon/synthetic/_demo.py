"""The DEMO table: one row per report, the 25 columns of the 2014Q3+ layout, all strings.

Codes are drawn as integer arrays and turned into strings by gathering from small vocabularies
(``pick``), so no per-row Python and no wide numpy string arrays.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon.synthetic._cases import AGE_GROUPS, AGE_UNITS, REPT_CODES, Cases, Reports
from faers_anon.synthetic._shape import SMALL, Shape, vocabulary

__all__ = ["DEMO_COLUMNS", "demo_frame", "pick", "dates", "partial_dates"]

DEMO_COLUMNS = (
    "primaryid",
    "caseid",
    "caseversion",
    "i_f_code",
    "event_dt",
    "mfr_dt",
    "init_fda_dt",
    "fda_dt",
    "rept_cod",
    "auth_num",
    "mfr_num",
    "mfr_sndr",
    "lit_ref",
    "age",
    "age_cod",
    "age_grp",
    "sex",
    "e_sub",
    "wt",
    "wt_cod",
    "rept_dt",
    "to_mfr",
    "occp_cod",
    "reporter_country",
    "occr_country",
)
_AGENCIES = {
    "GB": "MHRA",
    "DE": "BFARM",
    "FR": "AFSSAPS",
    "CA": "MHPD",
    "SE": "MPA",
    "IT": "MINISAL02",
    "ES": "AEMPS",
    "NL": "LRB",
    "JP": "PMDA",
    "AU": "TGA",
    "BR": "ANVISA",
    "PL": "URPL",
}
_OCCUPATIONS = ("MD", "HP", "CN", "PH", "LW", "")
_OCCUPATION_P = (0.25, 0.25, 0.35, 0.05, 0.03, 0.07)
_SURNAMES = (
    "Smith",
    "Garcia",
    "Muller",
    "Rossi",
    "Tanaka",
    "Dubois",
    "Kowalski",
    "Silva",
    "Jensen",
    "Chen",
    "Novak",
    "Ahmed",
    "Brown",
    "Moreau",
    "Lopez",
    "Sato",
    "Fischer",
    "Kumar",
    "Wilson",
    "Costa",
)
_INITIALS = tuple("ABCDEFGHJKLMNPRST")
_TITLES = (
    "A case report",
    "Adverse drug reaction in a patient on long-term therapy",
    "An unusual presentation after a change of treatment",
    "Drug-induced injury: case series",
    "Safety of biologic therapy in clinical practice",
)
_JOURNALS = (
    "J Clin Pharm Ther",
    "BMJ Case Rep",
    "Drug Saf",
    "Eur J Clin Pharmacol",
    "Ann Pharmacother",
    "Clin Case Rep",
    "Int J Clin Pharm",
)


def pick(vocab: Sequence[str], index: NDArray[np.integer], name: str) -> pl.Series:
    """``vocab[index]`` as a Utf8 series; null where ``index`` is negative or the entry is empty."""
    words = pl.Series(name, list(vocab), dtype=pl.Utf8)
    words = pl.select(pl.when(words != "").then(words).alias(name)).to_series()
    idx = pl.Series(index.astype(np.int64))
    return words.gather(pl.select(pl.when(idx >= 0).then(idx)).to_series()).alias(name)


def dates(days: NDArray[np.datetime64], name: str) -> pl.Series:
    """YYYYMMDD strings of day dates."""
    return pl.Series(name, days.astype("datetime64[D]")).dt.strftime("%Y%m%d")


def partial_dates(full: pl.Series, kind: NDArray[np.int64]) -> pl.Series:
    """FAERS partial dates: kind 0 keeps YYYYMMDD, 1 → YYYYMM, 2 → YYYY, -1 → missing."""
    k = pl.lit(pl.Series(kind))
    expr = (
        pl.when(k == 0)
        .then(full)
        .when(k == 1)
        .then(full.str.slice(0, 6))
        .when(k == 2)
        .then(full.str.slice(0, 4))
    )
    return pl.select(expr.alias(full.name)).to_series()


def _draw(rng: np.random.Generator, p: Sequence[float] | NDArray[np.float64], n: int) -> NDArray[np.int64]:
    """Draw ``n`` category codes with weights ``p`` (normalized here)."""
    weights = np.asarray(p, dtype=np.float64)
    return rng.choice(weights.size, size=n, p=weights / weights.sum()).astype(np.int64)


def _case_columns(cases: Cases, rng: np.random.Generator, shape: Shape) -> pl.DataFrame:
    """Per-case DEMO fields shared by all versions: sender, numbers, countries, occupation, event date."""
    vocab = vocabulary(shape)
    COUNTRIES, COMPANIES = vocab.countries, vocab.companies  # noqa: N806
    n = cases.n
    direct = cases.rept == REPT_CODES.index("DIR")
    codes = [code for code, _ in COUNTRIES]
    country = np.where(direct, codes.index("US"), _draw(rng, [p for _, p in COUNTRIES], n))
    u = rng.random(n)
    occr = np.where(u < 0.75, country, np.where(u < 0.97, -1, rng.integers(0, 6, n)))
    company = _draw(rng, vocab.company_weight, n)
    agency = np.array([codes.index(cc) if cc in codes else -1 for cc in _AGENCIES])
    agency_of_country = np.full(len(codes), -1)
    agency_of_country[agency[agency >= 0]] = np.flatnonzero(agency >= 0)
    has_auth = (agency_of_country[country] >= 0) & ~direct & (rng.random(n) < 0.12)
    cited = ~direct & (rng.random(n) < 0.025)
    occp = np.where(direct, 2, _draw(rng, _OCCUPATION_P, n))
    event_dt = cases.init_dt - np.minimum(rng.exponential(150.0, n), 3000.0).astype(np.int64)
    event_kind = np.where(rng.random(n) < 0.6, _draw(rng, (0.84, 0.10, 0.06), n), -1)
    page = rng.integers(1, 900, n)
    frame = pl.DataFrame(
        [
            pl.Series("caseid", cases.caseid).cast(pl.Utf8),
            pick(REPT_CODES, cases.rept, "rept_cod"),
            pl.Series("direct", direct),
            pick(codes, country, "reporter_country"),
            pick(codes, occr, "occr_country"),
            pick([name for name, _ in COMPANIES], company, "company"),
            pick([code for _, code in COMPANIES], company, "code"),
            pl.Series("year", cases.init_dt.astype("datetime64[Y]").astype(np.int64) + 1970).cast(pl.Utf8),
            pl.Series("digits", rng.integers(0, 1_000_000, n)).cast(pl.Utf8).str.zfill(6),
            pick(list(_AGENCIES.values()), np.where(has_auth, agency_of_country[country], -1), "agency"),
            pl.Series("auth_digits", rng.integers(0, 10**8, n)).cast(pl.Utf8).str.zfill(8),
            pick(_OCCUPATIONS, occp, "occp_cod"),
            partial_dates(dates(event_dt, "event_dt"), event_kind.astype(np.int64)),
            dates(cases.init_dt, "init_fda_dt"),
            pick(_SURNAMES, rng.integers(0, len(_SURNAMES), n), "s1"),
            pick(_INITIALS, rng.integers(0, len(_INITIALS), n), "i1"),
            pick(_SURNAMES, rng.integers(0, len(_SURNAMES), n), "s2"),
            pick(_INITIALS, rng.integers(0, len(_INITIALS), n), "i2"),
            pick(_TITLES, rng.integers(0, len(_TITLES), n), "title"),
            pick(_JOURNALS, rng.integers(0, len(_JOURNALS), n), "journal"),
            pl.Series("vol", rng.integers(1, 60, n)),
            pl.Series("issue", rng.integers(1, 13, n)),
            pl.Series("p1", page),
            pl.Series("p2", page + rng.integers(2, 12, n)),
            pl.Series("cited", cited),
        ]
    )
    return frame.select(
        "caseid",
        "rept_cod",
        "direct",
        "reporter_country",
        "occr_country",
        "occp_cod",
        "event_dt",
        "init_fda_dt",
        pl.format("{}-{}-{}", "reporter_country", "agency", "auth_digits").alias("auth_num"),
        pl.when("direct")
        .then(None)
        .when(pl.col("code") == "NOVARTIS")
        .then(pl.format("PHHY{}{}{}", "year", "reporter_country", "digits"))
        .otherwise(pl.format("{}-{}-{}{}", "reporter_country", "code", "year", "digits"))
        .alias("mfr_num"),
        pl.when("direct").then(pl.lit("FDA-CTU")).otherwise("company").alias("mfr_sndr"),
        pl.when("cited")
        .then(
            pl.format(
                "{} {}, {} {}. {}. {}. {};{}({}):{}-{}",
                "s1",
                "i1",
                "s2",
                "i2",
                "title",
                "journal",
                "year",
                "vol",
                "issue",
                "p1",
                "p2",
            )
        )
        .alias("lit_ref"),
    )


def demo_frame(
    cases: Cases, reports: Reports, rng: np.random.Generator, shape: Shape = SMALL
) -> pl.DataFrame:
    """Build DEMO (FAERS column order, Utf8, null = empty field) for the reports of ``cases``."""
    per_case = _case_columns(cases, rng, shape)[reports.case]
    fda = reports.fda_dt
    mfr_dt = dates(fda - rng.integers(0, 21, reports.n), "mfr_dt")
    rept_dt = dates(fda - np.where(rng.random(reports.n) < 0.85, 0, rng.integers(1, 6, reports.n)), "rept_dt")
    direct = per_case.get_column("direct").to_numpy()
    report_cols = pl.DataFrame(
        [
            pl.Series("caseversion", reports.version).cast(pl.Utf8),
            pick(("I", "F"), (reports.version > 1).astype(np.int64), "i_f_code"),
            mfr_dt,
            dates(fda, "fda_dt"),
            pl.Series("age", reports.age_value, nan_to_null=True).cast(pl.Int64).cast(pl.Utf8),
            pick([u for u, _ in AGE_UNITS], reports.age_unit, "age_cod"),
            pick(AGE_GROUPS, reports.age_grp, "age_grp"),
            pick(("F", "M", "UNK", ""), reports.sex, "sex"),
            pl.Series("wt", reports.wt_value, nan_to_null=True)
            .round(3)
            .cast(pl.Utf8)
            .str.replace(r"\.0$", ""),
            pick(
                ("KG", "LBS"),
                np.where(np.isnan(reports.wt_value), -1, reports.wt_lbs.astype(np.int64)),
                "wt_cod",
            ),
            rept_dt,
            pick(("N", "Y"), np.where(direct, (rng.random(reports.n) < 0.1).astype(np.int64), -1), "to_mfr"),
            pick(("Y", "N"), direct.astype(np.int64), "e_sub"),
        ]
    )
    return pl.concat([per_case, report_cols], how="horizontal").select(
        pl.concat_str("caseid", "caseversion").alias("primaryid"),
        "caseid",
        "caseversion",
        "i_f_code",
        "event_dt",
        pl.when("direct").then(None).otherwise("mfr_dt").alias("mfr_dt"),
        "init_fda_dt",
        "fda_dt",
        "rept_cod",
        "auth_num",
        "mfr_num",
        "mfr_sndr",
        "lit_ref",
        "age",
        "age_cod",
        "age_grp",
        "sex",
        "e_sub",
        "wt",
        "wt_cod",
        "rept_dt",
        "to_mfr",
        "occp_cod",
        "reporter_country",
        "occr_country",
    )
