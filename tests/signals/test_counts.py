"""2×2 counts: cases not rows, role filter, event keys, margins (signals.counts; SPEC §9)."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signals import CaseTables, SignalConfig, SignalsError, signal_table


def _cells(tables: CaseTables, *, role: str = "ps") -> dict[tuple[str, str], tuple[float, ...]]:
    frame = signal_table(tables, config=SignalConfig(role=role)).frame
    return {(r["drug"], r["event"]): (r["a"], r["b"], r["c"], r["d"]) for r in frame.iter_rows(named=True)}


def test_hand_worked_counts_primary_suspect(eight_cases: CaseTables) -> None:
    # N = 8; X = {1,2,3,5}, Y = {4,6,8}; NAUSEA = {1,2,3,7}, DEATH = {2,4}, RASH = {5,6}
    assert _cells(eight_cases) == {
        ("X", "NAUSEA"): (3, 1, 1, 3),  # a: 1,2,3  b: 5  c: 7  d: 4,6,8
        ("X", "DEATH"): (1, 3, 1, 3),
        ("X", "RASH"): (1, 3, 1, 3),
        ("Y", "DEATH"): (1, 2, 1, 4),
        ("Y", "RASH"): (1, 2, 1, 4),
    }


def test_role_filter(eight_cases: CaseTables) -> None:
    suspect = _cells(eight_cases, role="suspect")
    assert suspect[("Z", "RASH")] == (1, 0, 1, 6)  # Z is SS in case 6
    assert ("Y", "NAUSEA") not in suspect
    every = _cells(eight_cases, role="any")
    assert every[("Y", "NAUSEA")] == (1, 3, 3, 1)  # Y = {1,4,6,8} with the concomitant row of case 1
    assert every[("Z", "NAUSEA")] == (1, 1, 3, 3)  # Z = {6,7}


def test_counts_cases_not_rows(eight_cases: CaseTables) -> None:
    # case 1 lists X twice and nausea in two spellings: it adds 1 to a, not 4
    doubled = CaseTables(
        cases=eight_cases.cases,
        drugs=pl.concat([eight_cases.drugs, eight_cases.drugs]),
        events=pl.concat([eight_cases.events, eight_cases.events]),
    )
    assert _cells(doubled) == _cells(eight_cases)


def test_cases_outside_the_case_frame_are_ignored(eight_cases: CaseTables) -> None:
    extra = CaseTables(
        cases=eight_cases.cases,
        drugs=pl.concat(
            [eight_cases.drugs, pl.DataFrame({"caseid": [99], "drug_key": ["X"], "role_cod": ["PS"]})]
        ),
        events=pl.concat([eight_cases.events, pl.DataFrame({"caseid": [99], "pt": ["Nausea"]})]),
    )
    assert _cells(extra) == _cells(eight_cases)


def test_min_a_trims(eight_cases: CaseTables) -> None:
    frame = signal_table(eight_cases, config=SignalConfig(min_a=2)).frame
    assert frame.select("drug", "event").rows() == [("X", "NAUSEA")]


def test_output_columns(eight_cases: CaseTables) -> None:
    frame = signal_table(eight_cases).frame
    assert frame.columns == [
        "stratum", "reading", "drug", "event", "a", "b", "c", "d",
        "prr", "prr_lo", "prr_hi", "ror", "ror_lo", "ror_hi", "ic", "ic025", "ic975", "chi2",
        "zero_cell", "signal_evans", "signal_ror", "signal_ic",
    ]  # fmt: skip
    assert frame.get_column("stratum").unique().to_list() == ["all"]


def test_input_faults_are_signals_errors(eight_cases: CaseTables) -> None:
    repeated = CaseTables(
        pl.concat([eight_cases.cases, eight_cases.cases]), eight_cases.drugs, eight_cases.events
    )
    with pytest.raises(SignalsError, match="cases: 8 repeated caseid"):
        signal_table(repeated)
    with pytest.raises(SignalsError, match="drugs: missing column 'role_cod'"):
        signal_table(CaseTables(eight_cases.cases, eight_cases.drugs.drop("role_cod"), eight_cases.events))
    with pytest.raises(SignalsError, match="events: missing column 'pt'"):
        signal_table(
            CaseTables(eight_cases.cases, eight_cases.drugs, eight_cases.events.rename({"pt": "term"}))
        )
    with pytest.raises(SignalsError, match="role must be ps, suspect or any; got 'primary'"):
        SignalConfig(role="primary")


case_ids = st.integers(min_value=1, max_value=12)


@settings(max_examples=40, deadline=None)
@given(
    drug_rows=st.lists(
        st.tuples(case_ids, st.sampled_from("PQR"), st.sampled_from(["PS", "SS", "C"])), max_size=30
    ),
    event_rows=st.lists(st.tuples(case_ids, st.sampled_from(["e1", "E1", "e2", "e3"])), max_size=30),
)
def test_counts_match_sets_of_cases(
    drug_rows: list[tuple[int, str, str]], event_rows: list[tuple[int, str]]
) -> None:
    cases = pl.DataFrame({"caseid": list(range(1, 13))})
    drugs = pl.DataFrame(
        drug_rows, schema={"caseid": pl.Int64, "drug_key": pl.Utf8, "role_cod": pl.Utf8}, orient="row"
    )
    events = pl.DataFrame(event_rows, schema={"caseid": pl.Int64, "pt": pl.Utf8}, orient="row")
    got = _cells(CaseTables(cases, drugs, events), role="suspect")
    with_drug = {d: {c for c, dd, r in drug_rows if dd == d and r != "C"} for d in "PQR"}
    with_event = {e: {c for c, ee in event_rows if ee.upper() == e} for e in ("E1", "E2", "E3")}
    expected = {}
    for d, dc in with_drug.items():
        for e, ec in with_event.items():
            a = len(dc & ec)
            if a:
                expected[(d, e)] = (a, len(dc - ec), len(ec - dc), 12 - len(dc | ec))
    assert got == expected
