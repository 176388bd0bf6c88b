"""Cases, their versions inside the quarter, and what each version reports about the patient.

Everything is drawn per case (true patient values, how many versions fall in the quarter) and then
per report (which values that version states, in which unit). Arrays are numpy; one row per case
or per report, never a Python loop over them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from faers_anon.synthetic._plan import Quarter
from faers_anon.synthetic._shape import SMALL, Shape

__all__ = ["Cases", "Reports", "AGE_UNITS", "AGE_GROUPS", "make_cases", "make_reports", "quarter_days"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
BOOL = NDArray[np.bool_]
DAYS = NDArray[np.datetime64]

# FAERS age units and the years in one unit (DEC counts decades).
AGE_UNITS: tuple[tuple[str, float], ...] = (
    ("YR", 1.0),
    ("DEC", 10.0),
    ("MON", 1 / 12),
    ("WK", 7 / 365.25),
    ("DY", 1 / 365.25),
    ("HR", 1 / 8766),
)
AGE_GROUPS = (
    "N",
    "I",
    "C",
    "T",
    "A",
    "E",
)  # neonate <28 d, infant <2 y, child <12, adolescent <18, adult <65
_AGE_GROUP_EDGES = np.array([28 / 365.25, 2.0, 12.0, 18.0, 65.0])
REPT_CODES = ("EXP", "PER", "DIR", "30DAY", "5DAY")
_CASEIDS_PER_DAY = 3700  # FDA hands out ~1.35 M case numbers a year; 10,000,000 was reached early 2014
_CASEID_ANCHOR = np.datetime64("2014-01-01")


def quarter_days(quarter: Quarter) -> tuple[np.datetime64, np.datetime64]:
    """First and last day of the quarter."""
    start = np.datetime64(f"{quarter.year}-{3 * quarter.q - 2:02d}-01")
    end = (start.astype("datetime64[M]") + 3).astype("datetime64[D]") - 1
    return start, end


@dataclass(frozen=True, slots=True)
class Cases:
    """One entry per case, sorted by caseid (and so by the date FDA first received the case).

    Attributes:
        caseid: FAERS case numbers (7–8 digits), strictly increasing.
        n_q: number of the case's versions inside the quarter (1–3).
        v_latest: the highest version in the quarter; the versions are ``v_latest - n_q + 1 .. v_latest``.
        init_dt: ``init_fda_dt`` (date of version 1).
        new: version 1 falls inside the quarter.
        female: true sex.
        age: true age in years.
        weight: true weight in kg.
        rept: index into ``REPT_CODES``.
        stratum: drug-choice stratum, ``3 * male + (0 if age < 18, 1 if < 60, else 2)``.
    """

    caseid: I64
    n_q: I64
    v_latest: I64
    init_dt: DAYS
    new: BOOL
    female: BOOL
    age: F64
    weight: F64
    rept: I64
    stratum: I64

    @property
    def n(self) -> int:
        """Number of cases."""
        return int(self.caseid.size)


@dataclass(frozen=True, slots=True)
class Reports:
    """One entry per report (primaryid), grouped by case in caseid order, versions ascending.

    Missing values are NaN (numbers) or -1 (codes). ``age_years`` is the reported age converted to
    years (what a reader computes from ``age`` and ``age_cod``).
    """

    case: I64
    version: I64
    latest: BOOL
    fda_dt: DAYS
    age_value: F64
    age_unit: I64
    age_years: F64
    age_grp: I64
    sex: I64  # 0 F, 1 M, 2 UNK, 3 blank
    wt_value: F64
    wt_lbs: BOOL
    wt_decimals: I64

    @property
    def n(self) -> int:
        """Number of reports."""
        return int(self.case.size)


def weekday(days: DAYS, last: np.datetime64) -> DAYS:
    """Saturdays and Sundays moved to the next Monday (the previous Friday when that passes ``last``).

    Monotone and idempotent, so version dates stay ordered and a weekday stays put.
    """
    dow = (days.astype("datetime64[D]").astype(np.int64) + 3) % 7  # 0 = Monday (1970-01-01 was a Thursday)
    ahead = np.where(dow >= 5, 7 - dow, 0)
    back = np.where(dow >= 5, dow - 4, 0)
    return np.where(days + ahead <= last, days + ahead, days - back).astype("datetime64[D]")


def make_cases(n_cases: int, rng: np.random.Generator, quarter: Quarter, shape: Shape = SMALL) -> Cases:
    """Draw ``n_cases`` cases: versions in the quarter, first-receipt date, caseid, true demographics."""
    qstart, qend = quarter_days(quarter)
    ndays = int((qend - qstart).astype(int)) + 1
    n_q = rng.choice(np.array([1, 2, 3]), size=n_cases, p=list(shape.versions)).astype(np.int64)
    extra = np.where(rng.random(n_cases) < shape.new_case, 0, rng.geometric(0.3, n_cases)).astype(np.int64)
    new = extra == 0
    back = np.minimum(rng.exponential(700.0, n_cases), 6000.0).astype(np.int64) + 1
    init = np.where(new, qstart + rng.integers(0, ndays, n_cases), qstart - back).astype("datetime64[D]")
    if shape.weekdays:
        init = weekday(init, qend)
    order = np.argsort(init, kind="stable")
    n_q, extra, new, init = n_q[order], extra[order], new[order], init[order]
    base = 10_000_000 + (init - _CASEID_ANCHOR).astype(np.int64) * _CASEIDS_PER_DAY
    base = np.maximum(base, 3_000_000) + rng.integers(0, _CASEIDS_PER_DAY, n_cases)
    caseid = np.maximum.accumulate(base) + np.arange(n_cases, dtype=np.int64)

    band = rng.choice(4, size=n_cases, p=[0.025, 0.05, 0.555, 0.37])
    age = np.select(
        [band == 0, band == 1, band == 2],
        [
            2.0 * rng.beta(0.5, 1.5, n_cases),
            rng.uniform(2.0, 18.0, n_cases),
            np.clip(rng.normal(47.0, 12.0, n_cases), 18.0, 64.99),
        ],
        65.0 + np.minimum(rng.exponential(9.0, n_cases), 39.0),
    )
    female = rng.random(n_cases) < np.where(age < 18, 0.48, 0.6)
    adult_wt = np.where(female, rng.normal(72.0, 16.0, n_cases), rng.normal(86.0, 17.0, n_cases))
    child_wt = np.where(age < 2, 3.3 + 5.0 * age, 12.0 + 3.0 * (age - 2.0)) * rng.lognormal(
        0.0, 0.12, n_cases
    )
    weight = np.clip(np.where(age < 18, child_wt, adult_wt), 0.5, 230.0)
    rept = rng.choice(len(REPT_CODES), size=n_cases, p=list(shape.rept)).astype(np.int64)
    direct = REPT_CODES.index("DIR")
    rept[(rept == direct) & ~(new & (n_q == 1))] = REPT_CODES.index(
        "EXP"
    )  # direct reports are not followed up
    stratum = 3 * (~female).astype(np.int64) + np.digitize(age, [18.0, 60.0]).astype(np.int64)
    return Cases(
        caseid=caseid,
        n_q=n_q,
        v_latest=n_q + extra,
        init_dt=init,
        new=new,
        female=female,
        age=age,
        weight=weight,
        rept=rept,
        stratum=stratum,
    )


def make_reports(cases: Cases, rng: np.random.Generator, quarter: Quarter, shape: Shape = SMALL) -> Reports:
    """Expand cases into their versions in the quarter and draw what each version states.

    Shapes (FAERS-like): age missing in about a third of reports (less for children), weight missing in
    about three quarters, sex UNK or blank in about a tenth. Earlier versions of a case may lack an age
    the follow-up states, carry a weight the follow-up corrects (pounds entered as kg), or say UNK sex.
    """
    qstart, qend = quarter_days(quarter)
    n_reports = int(cases.n_q.sum())
    case = np.repeat(np.arange(cases.n, dtype=np.int64), cases.n_q)
    first = np.cumsum(cases.n_q) - cases.n_q
    pos = np.arange(n_reports, dtype=np.int64) - first[case]
    version = cases.v_latest[case] - cases.n_q[case] + 1 + pos
    latest = pos == cases.n_q[case] - 1
    lo = np.where(cases.new[case], cases.init_dt[case], qstart)
    u = rng.random(n_reports)
    u[cases.new[case] & (pos == 0)] = 0.0
    u = u[np.lexsort((u, case))]
    span = (qend - lo).astype(np.int64) + 1
    fda_dt = (lo + np.floor(u * span).astype(np.int64)).astype("datetime64[D]")
    if shape.weekdays:
        fda_dt = weekday(fda_dt, qend)

    age = cases.age
    child = age < 18
    age_known_case = rng.random(cases.n) < np.where(child, *shape.age_known)
    age_known = age_known_case[case] & (latest | (rng.random(n_reports) > 0.35))
    unit_case = _age_units(age, cases.rept == REPT_CODES.index("DIR"), rng)
    per_year = 1.0 / np.array([y for _, y in AGE_UNITS])
    value_case = np.floor(age * per_year[unit_case] + 1e-9)
    years_case = value_case / per_year[unit_case]
    age_value = np.where(age_known, value_case[case], np.nan)
    age_unit = np.where(age_known, unit_case[case], -1)
    age_years = np.where(age_known, years_case[case], np.nan)
    true_group = np.digitize(age, _AGE_GROUP_EDGES)
    grp_filled = rng.random(n_reports) < np.where(age_known, 0.09, 0.05)
    age_grp = np.where(grp_filled, true_group[case], -1)

    sex_case = np.where(cases.female, 0, 1)
    draw = rng.random(cases.n)
    sex_case = np.where(draw < shape.sex_unknown[0], 2, np.where(draw < shape.sex_unknown[1], 3, sex_case))
    blur = (~latest) & (sex_case[case] < 2) & (rng.random(n_reports) < 0.08)
    sex = np.where(blur, rng.integers(2, 4, n_reports), sex_case[case])

    wt_known_case = rng.random(cases.n) < np.where(child, *shape.weight_known)
    wt_known = wt_known_case[case] & (latest | (rng.random(n_reports) > 0.3))
    wt_lbs_case = rng.random(cases.n) < 0.12
    decimals_case = rng.choice(np.array([0, 1, 3]), size=cases.n, p=[0.55, 0.25, 0.2])
    kg = cases.weight[case] * np.where((~latest) & (rng.random(n_reports) < 0.3), 2.20462, 1.0)
    lbs = wt_lbs_case[case]
    scale = 10.0 ** decimals_case[case]
    wt_value = np.where(lbs, np.round(kg / 0.45359237), np.round(kg * scale) / scale)
    wt_value = np.where(wt_known, np.maximum(wt_value, 1.0), np.nan)
    return Reports(
        case=case,
        version=version,
        latest=latest,
        fda_dt=fda_dt,
        age_value=age_value,
        age_unit=age_unit.astype(np.int64),
        age_years=age_years,
        age_grp=age_grp.astype(np.int64),
        sex=sex.astype(np.int64),
        wt_value=wt_value,
        wt_lbs=lbs,
        wt_decimals=np.where(lbs, 0, decimals_case[case]).astype(np.int64),
    )


def _age_units(age: F64, direct: BOOL, rng: np.random.Generator) -> I64:
    """The unit each case's age is given in.

    YR for most; MON/WK/DY/HR for infants; a few adults in DEC or DY; most adults of direct (DIR)
    reports in DY, as FDA's direct reports are (FAQ 6: "30 y → 10 950 DY").
    """
    n = age.size
    u = rng.random(n)
    yr, dec, mon, wk, dy, hr = range(len(AGE_UNITS))
    infant = np.select([u < 0.55, u < 0.65, u < 0.95], [mon, wk, dy], yr)
    infant = np.where(age < 3 / 365.25, np.where(u < 0.5, hr, dy), infant)
    child = np.where(u < 0.07, mon, yr)
    adult = np.select([direct & (u < 0.7), u < 0.02, u < 0.03], [dy, dec, dy], yr)
    return np.select([age < 2, age < 18], [infant, child], adult).astype(np.int64)
