"""2×2 sums over the cases' QID profiles (signals.profiles) against the per-case counts (signals.counts)."""

from __future__ import annotations

from fractions import Fraction

import polars as pl

from signals.counts import co_reports, count_2x2
from signals.profiles import count_profiles, incidence, profiles, strata_variables, weights
from signals.strata import OVERALL, band_strata, memberships, parse_condition, weight_columns

_CAPS = {"age": 120.0, "weight": 650.0}


def _release() -> pl.DataFrame:
    # cases 1 and 2 share one profile; case 4 tells nothing
    return pl.DataFrame(
        {
            "caseid": [1, 2, 3, 4],
            "age_min": [10.0, 10.0, 30.0, None],
            "age_max": [20.0, 20.0, 40.0, None],
            "sex": ["F", "F", "M", None],
        }
    )


def _co():  # type: ignore[no-untyped-def]
    drugs = pl.DataFrame({"caseid": [1, 2, 3], "drug": ["D", "D", "D"]})
    events = pl.DataFrame({"caseid": [1, 3], "event": ["E", "E"]})
    return co_reports(drugs, events)


def test_profiles_are_the_distinct_values_the_strata_read() -> None:
    strata = [parse_condition("age<18")]
    assert strata_variables(strata) == {"age"}
    found = profiles(_release(), strata_variables(strata))
    assert found.frame.height == 3  # [10,20), [30,40), missing
    assert found.sizes.tolist() == [2.0, 1.0, 1.0]
    assert found.ranges


def test_hand_worked_expected_counts_at_age_below_18() -> None:
    # cases 1, 2: share of [10,20) below 18 = 0.8; case 3 and the missing case: 0
    # a(D,E) = 0.8 (case 1), nd(D) = 1.6, ne(E) = 0.8, N = 1.6 → b = 0.8, c = 0, d = 0
    strata = [parse_condition("age<18")]
    found = profiles(_release(), strata_variables(strata))
    w = weights(found, strata, reading="expected", caps=_CAPS)
    counted = count_profiles(_co(), incidence(_co(), found), w, min_a=0.0)
    assert counted.rows(named=True) == [
        {"stratum_id": 0, "drug": "D", "event": "E", "a": 0.8, "b": 0.8, "c": 0.0, "d": 0.0}
    ]


def test_whole_readings_equal_the_per_case_counts() -> None:
    # weights 0 or 1: every sum is a whole number, the same whichever way it is added
    strata = band_strata(("age", "sex"), age_bands=(18.0, 45.0, 65.0))
    cases = _release()
    found = profiles(cases, strata_variables(strata))
    co = _co()
    counted = incidence(co, found)
    for reading in ("certain", "possible"):
        by_case = count_2x2(co, memberships(cases, strata, reading=reading, first_id=5), min_a=1.0)
        w = weights(found, strata, reading=reading, caps=_CAPS)
        assert count_profiles(co, counted, w, first_id=5, min_a=1.0).equals(by_case)
        assert by_case.height > 0


def test_wanted_pairs_are_reported_in_every_stratum_with_members() -> None:
    strata = [parse_condition("age<18"), parse_condition("age>=60")]  # nobody is 60 or over
    found = profiles(_release(), strata_variables(strata))
    co = _co()
    wanted = pl.DataFrame({"drug": ["D", "D"], "event": ["E", "NOT THERE"]})
    w = weights(found, strata, reading="certain", caps=_CAPS)
    got = count_profiles(co, incidence(co, found), w, min_a=0.0, wanted=wanted)
    by_case = count_2x2(co, memberships(_release(), strata, reading="certain"), min_a=0.0, wanted=wanted)
    assert got.equals(by_case)
    assert got.height == 0  # [10,20) is not certainly below 18, nobody is certainly 60 or over
    w = weights(found, strata, reading="possible", caps=_CAPS)
    got = count_profiles(co, incidence(co, found), w, min_a=0.0, wanted=wanted)
    assert got.select("stratum_id", "drug", "event", "a").rows() == [(0, "D", "E", 1.0)]


def test_a_stratum_total_is_the_exact_sum_of_its_weights() -> None:
    # 1,000 cases aged [15,25): each weighs 3/10 (as a double) in age<18; N is that double times
    # 1,000, summed exactly and rounded to the nearest double, then to 9 decimals
    n = 1000
    cases = pl.DataFrame({"caseid": list(range(n)), "age_min": [15.0] * n, "age_max": [25.0] * n})
    strata = [parse_condition("age<18")]
    found = profiles(cases, strata_variables(strata))
    drugs = pl.DataFrame({"caseid": [0], "drug": ["D"]})
    events = pl.DataFrame({"caseid": [0], "event": ["E"]})
    co = co_reports(drugs, events)
    w = weights(found, strata, reading="expected", caps=_CAPS)
    row = count_profiles(co, incidence(co, found), w, min_a=0.0).row(0, named=True)
    exact = float(round(Fraction(3 / 10) * n, 9))
    assert row["a"] + row["b"] + row["c"] + row["d"] == exact
    assert row["a"] == 0.3


def test_weight_columns_are_the_memberships_with_zeros_kept() -> None:
    strata = [OVERALL, parse_condition("age<18"), parse_condition("sex=F")]
    cases = _release()
    columns = weight_columns(cases, strata, reading="expected")
    assert columns.columns == ["w0", "w1", "w2"]
    # all: 1 for every case (a constant, one row per case); age<18: 0.8, 0.8, 0, 0; sex=F: 1, 1, 0, 0
    assert columns.rows() == [(1.0, 0.8, 1.0), (1.0, 0.8, 1.0), (1.0, 0.0, 0.0), (1.0, 0.0, 0.0)]
    members = memberships(cases, strata, reading="expected")
    kept = [
        (c, s, w)
        for c, row in zip(cases["caseid"], columns.rows(), strict=True)
        for s, w in enumerate(row)
        if w > 0
    ]
    assert sorted(members.rows()) == sorted(kept)


def test_several_strata_come_stratum_by_stratum_those_without_members_left_out() -> None:
    # possible reading: stratum 7 (age >= 60) has no member; 8 (age < 18) = cases 1, 2; 9 (age >= 25) =
    # case 3 (case 4's missing age is in neither). Wanted (D, E): a = 1 in both (case 1; case 3)
    strata = [parse_condition("age>=60"), parse_condition("age<18"), parse_condition("age>=25")]
    found = profiles(_release(), strata_variables(strata))
    co = _co()
    wanted = pl.DataFrame({"drug": ["D"], "event": ["E"]})
    w = weights(found, strata, reading="possible", caps=_CAPS)
    got = count_profiles(co, incidence(co, found), w, first_id=7, min_a=0.0, wanted=wanted)
    # stratum 8: nd = 2 (cases 1, 2), ne = 1, N = 2 -> b = 1, c = 0, d = 0; stratum 9: nd = ne = N = 1
    rows = got.select("stratum_id", "drug", "event", "a", "b", "c", "d").rows()
    assert rows == [(8, "D", "E", 1.0, 1.0, 0.0, 0.0), (9, "D", "E", 1.0, 0.0, 0.0, 0.0)]
    members = memberships(_release(), strata, reading="possible", first_id=7)
    assert got.equals(count_2x2(co, members, min_a=0.0, wanted=wanted))
    above = count_profiles(co, incidence(co, found), w, first_id=7, min_a=1.0)  # no wanted: a >= min_a
    assert above.select("stratum_id", "a").rows() == [(8, 1.0), (9, 1.0)]
    assert above.equals(count_2x2(co, members, min_a=1.0))
