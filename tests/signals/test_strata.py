"""Strata and readings on exact values and on released ranges (signals.strata; SPEC §9)."""

from __future__ import annotations

import math

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signals import SignalsError, band_strata, memberships, parse_condition
from signals.strata import Interval, SexIs

# Released ranges (age max exclusive, null max = open) and sex with '*'
RELEASE = pl.DataFrame(
    {
        "caseid": [1, 2, 3, 4, 5, 6],
        "age_min": [0.0, 18.0, 25.0, 65.0, None, 0.0],
        "age_max": [18.0, 45.0, 45.0, None, None, None],
        "sex": ["F", "*", "F", "M", None, "*"],
    }
)


def _weights(cases: pl.DataFrame, condition: str, reading: str) -> dict[int, float]:
    members = memberships(cases, [parse_condition(condition)], reading=reading)
    return dict(zip(members.get_column("caseid").to_list(), members.get_column("w").to_list(), strict=True))


def test_parse_condition() -> None:
    assert parse_condition("age >= 18").label == "age>=18"
    assert parse_condition("age>=18").predicates == (Interval("age", lo=18.0, lo_closed=True),)
    assert parse_condition("age<18").predicates == (Interval("age", hi=18.0, hi_closed=False),)
    both = parse_condition("sex=f & age>=60")
    assert both.label == "sex=F&age>=60"
    assert both.predicates == (SexIs("F"), Interval("age", lo=60.0))
    assert both.columns == (("condition", "sex=F&age>=60"),)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("height>2", "cannot read 'height>2'"),
        ("sex=X", "sex takes =F or =M"),
        ("age=18", "age takes >=, >, <= or <"),
        ("age>=old", "'old' is not a number"),
    ],
)
def test_bad_conditions(text: str, message: str) -> None:
    with pytest.raises(SignalsError, match=message):
        parse_condition(text)


def test_three_readings_of_age_at_least_18() -> None:
    # [0,18) no; [18,45) inside; [25,45) inside; [65,inf) inside; missing never; [0,inf) overlaps
    assert _weights(RELEASE, "age>=18", "certain") == {2: 1.0, 3: 1.0, 4: 1.0}
    assert _weights(RELEASE, "age>=18", "possible") == {2: 1.0, 3: 1.0, 4: 1.0, 6: 1.0}
    # [0, inf) is read as [0, 120): share 102/120 = 0.85
    assert _weights(RELEASE, "age>=18", "expected") == pytest.approx({2: 1.0, 3: 1.0, 4: 1.0, 6: 0.85})


def test_three_readings_of_age_below_30() -> None:
    assert _weights(RELEASE, "age<30", "certain") == {1: 1.0}
    assert _weights(RELEASE, "age<30", "possible") == {1: 1.0, 2: 1.0, 3: 1.0, 6: 1.0}
    # [18,45): 12/27; [25,45): 5/20; [0,120): 30/120
    assert _weights(RELEASE, "age<30", "expected") == pytest.approx({1: 1.0, 2: 12 / 27, 3: 0.25, 6: 0.25})


def test_exclusive_upper_bound_is_inside_a_strict_condition() -> None:
    # [0,18) has max exclusive, so every value is < 18 and <= 17.999
    assert _weights(RELEASE, "age<18", "certain") == {1: 1.0}
    assert 1 not in _weights(RELEASE, "age<=17", "certain")
    assert _weights(RELEASE, "age>45", "possible") == {4: 1.0, 6: 1.0}  # [18,45) never exceeds 45


def test_three_readings_of_sex() -> None:
    assert _weights(RELEASE, "sex=F", "certain") == {1: 1.0, 3: 1.0}
    assert _weights(RELEASE, "sex=F", "possible") == {1: 1.0, 2: 1.0, 3: 1.0, 6: 1.0}
    assert _weights(RELEASE, "sex=F", "expected") == {1: 1.0, 2: 0.5, 3: 1.0, 6: 0.5}


def test_conjunction_multiplies() -> None:
    # case 6: [0,inf) and '*': 0.85 * 0.5
    assert _weights(RELEASE, "sex=F&age>=18", "expected") == pytest.approx({2: 0.5, 3: 1.0, 6: 0.425})


def test_exact_values() -> None:
    raw = pl.DataFrame(
        {"caseid": [1, 2, 3, 4], "age_years": [17.9, 18.0, None, 60.0], "sex": ["F", "M", "F", None]}
    )
    assert _weights(raw, "age>=18", "exact") == {2: 1.0, 4: 1.0}
    assert _weights(raw, "age>18", "exact") == {4: 1.0}
    assert _weights(raw, "sex=F&age<18", "exact") == {1: 1.0}
    with pytest.raises(SignalsError, match="reading 'certain' does not apply"):
        _weights(raw, "age>=18", "certain")
    with pytest.raises(SignalsError, match="column 'weight_kg' is needed for weight strata"):
        _weights(raw, "weight>=100", "exact")


def test_weight_ranges_have_an_inclusive_maximum() -> None:
    cases = pl.DataFrame({"caseid": [1, 2], "wt_min": [60.0, 100.0], "wt_max": [100.0, 100.0]})
    assert _weights(cases, "weight<100", "certain") == {}  # [60, 100] holds 100
    assert _weights(cases, "weight<100", "expected") == pytest.approx({1: 1.0})  # point 100 is outside
    assert _weights(cases, "weight>=100", "possible") == {1: 1.0, 2: 1.0}


def test_band_labels() -> None:
    strata = band_strata(["age", "sex"], age_bands=[18, 65])
    assert [s.label for s in strata[:4]] == [
        "age=[0,18)&sex=F",
        "age=[0,18)&sex=M",
        "age=[0,18)&sex=missing",
        "age=[18,65)&sex=F",
    ]
    assert strata[-1].columns == (("age_band", "missing"), ("sex", "missing"))
    assert len(strata) == 4 * 3


ages = st.one_of(st.none(), st.floats(min_value=0, max_value=110))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            ages,
            st.floats(min_value=0.5, max_value=40),
            st.booleans(),
            st.sampled_from(["F", "M", "*", None]),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_band_weights_partition_each_case(rows: list[tuple[float | None, float, bool, str | None]]) -> None:
    cases = pl.DataFrame(
        {
            "caseid": list(range(len(rows))),
            "age_min": [lo for lo, _, _, _ in rows],
            "age_max": [None if (lo is None or open_) else lo + width for lo, width, open_, _ in rows],
            "sex": [s for _, _, _, s in rows],
        }
    )
    strata = band_strata(["age", "sex"], age_bands=[18, 45, 65])
    total = memberships(cases, strata, reading="expected").group_by("caseid").agg(pl.col("w").sum())
    assert total.height == len(rows)
    assert all(math.isclose(w, 1.0) for w in total.get_column("w"))  # expected shares sum to 1
    certain = memberships(cases, strata, reading="certain").group_by("caseid").len()
    assert certain.get_column("len").max() in (None, 1)  # at most one certain stratum per case
    possible = memberships(cases, strata, reading="possible").group_by("caseid").len()
    assert possible.height == len(rows)  # every case is possible somewhere
