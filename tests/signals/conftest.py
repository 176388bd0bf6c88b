"""Hand-built case tables whose 2×2 counts the tests work out by hand."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from signals import CaseTables


@pytest.fixture
def eight_cases() -> CaseTables:
    """Eight cases. Role PS: X {1, 2, 3, 5}, Y {4, 6, 8}; NAUSEA {1, 2, 3, 7}, DEATH {2, 4}, RASH {5, 6}.

    Case 1 lists X twice (PS and SS) and nausea twice (two spellings); case 7 has no PS drug; case 8
    has no reaction. Both still count in N = 8.
    """
    cases = pl.DataFrame(
        {
            "caseid": [1, 2, 3, 4, 5, 6, 7, 8],
            "age_years": [10.0, 20.0, 30.0, 70.0, None, 50.0, 40.0, 66.0],
            "sex": ["F", "M", "F", "M", None, "F", "F", "M"],
        }
    )
    drugs = pl.DataFrame(
        {
            "caseid": [1, 1, 1, 2, 3, 4, 5, 6, 6, 7, 8],
            "drug_key": ["X", "Y", "X", "X", "X", "Y", "X", "Y", "Z", "Z", "Y"],
            "role_cod": ["PS", "C", "SS", "PS", "PS", "PS", "PS", "PS", "SS", "C", "PS"],
        }
    )
    events = pl.DataFrame(
        {
            "caseid": [1, 1, 2, 2, 3, 4, 5, 6, 7],
            "pt": ["Nausea", "NAUSEA", "nausea", "Death", "NAUSEA ", "Death", "Rash", "Rash", "Nausea"],
        }
    )
    return CaseTables(cases=cases, drugs=drugs, events=events)


def planted_tables(*, ranges: bool = False) -> CaseTables:
    """1,000 cases with drug D and event E disproportionate only among women aged 65 or more.

    Stratum S (F, age 70): 100 cases, 10 take D of which 8 report E; 9 of the 90 others report E.
    Outside S (M, age 40): 900 cases, 90 take D of which 5 report E; 90 of the 810 others report E.
    Overall: a = 13, b = 87, c = 99, d = 801, PRR = (13/100)/(99/900) = 1.18: no signal.
    In S: a = 8, b = 2, c = 9, d = 81, PRR = (8/10)/(9/90) = 8: a signal.
    Every case also takes the filler drug F (PS) and reports the filler event R.
    With ``ranges``: S cases are released as [65, ∞) and F, the others as [18, 45) and ``*``.
    """
    ids = np.arange(1000)
    in_s = ids < 100
    takes_d = (ids < 10) | ((ids >= 100) & (ids < 190))
    has_e = (
        (ids < 8) | ((ids >= 10) & (ids < 19)) | ((ids >= 100) & (ids < 105)) | ((ids >= 190) & (ids < 280))
    )
    if ranges:
        cases = pl.DataFrame(
            {
                "caseid": ids,
                "age_min": np.where(in_s, 65.0, 18.0),
                "age_max": pl.Series(np.where(in_s, np.nan, 45.0)).fill_nan(None),
                "sex": np.where(in_s, "F", "*"),
            }
        )
    else:
        cases = pl.DataFrame(
            {"caseid": ids, "age_years": np.where(in_s, 70.0, 40.0), "sex": np.where(in_s, "F", "M")}
        )
    drugs = pl.concat(
        [
            pl.DataFrame({"caseid": ids[takes_d], "drug_key": "D", "role_cod": "PS"}),
            pl.DataFrame({"caseid": ids, "drug_key": "F", "role_cod": "PS"}),
        ]
    )
    events = pl.concat(
        [pl.DataFrame({"caseid": ids[has_e], "pt": "E"}), pl.DataFrame({"caseid": ids, "pt": "R"})]
    )
    return CaseTables(cases=cases, drugs=drugs, events=events)


@pytest.fixture
def planted() -> CaseTables:
    """:func:`planted_tables` on exact values."""
    return planted_tables()


@pytest.fixture
def planted_release() -> CaseTables:
    """:func:`planted_tables` on released ranges."""
    return planted_tables(ranges=True)
