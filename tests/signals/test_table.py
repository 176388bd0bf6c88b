"""The signal table over strata and readings; a planted stratified signal (signals.table; SPEC §9)."""

from __future__ import annotations

import polars as pl
import pytest

from signals import CaseTables, SignalConfig, SignalsError, signal_table


def _row(
    frame: pl.DataFrame, stratum: str, reading: str = "exact", drug: str = "D", event: str = "E"
) -> dict:
    rows = frame.filter(
        (pl.col("stratum") == stratum) & (pl.col("reading") == reading) & (pl.col("drug") == drug)
        & (pl.col("event") == event)
    )  # fmt: skip
    assert rows.height == 1, (stratum, reading, rows)
    return rows.row(0, named=True)


def test_planted_signal_is_invisible_overall_and_visible_in_its_stratum(planted: CaseTables) -> None:
    config = SignalConfig(stratify=("age", "sex"), conditions=("sex=F&age>=65",), age_bands=(18.0, 65.0))
    frame = signal_table(planted, config=config).frame
    overall = _row(frame, "all")
    assert (overall["a"], overall["b"], overall["c"], overall["d"]) == (13, 87, 99, 801)
    assert overall["prr"] == pytest.approx((13 / 100) / (99 / 900))  # 1.18
    assert not (overall["signal_evans"] or overall["signal_ic"])
    for stratum in ("sex=F&age>=65", "age=[65,inf)&sex=F"):
        inside = _row(frame, stratum)
        assert (inside["a"], inside["b"], inside["c"], inside["d"]) == (8, 2, 9, 81)
        assert inside["prr"] == pytest.approx(8.0)  # (8/10) / (9/90)
        assert inside["signal_evans"] and inside["signal_ror"] and inside["signal_ic"]
    outside = _row(frame, "age=[18,65)&sex=M")
    assert (outside["a"], outside["b"], outside["c"], outside["d"]) == (5, 85, 90, 720)
    assert not outside["signal_evans"]


def test_stratum_columns(planted: CaseTables) -> None:
    config = SignalConfig(stratify=("sex",), conditions=("age>=65",))
    frame = signal_table(planted, config=config).frame
    assert frame.columns[:5] == ["stratum", "reading", "sex", "condition", "drug"]
    labels = frame.select("stratum", "sex", "condition").unique(maintain_order=True).rows()
    assert labels == [
        ("all", None, None),
        ("sex=F", "F", None),
        ("sex=M", "M", None),
        ("age>=65", None, "age>=65"),
    ]


def test_release_reports_three_readings(planted_release: CaseTables) -> None:
    config = SignalConfig(conditions=("sex=F&age>=65", "sex=F"))
    table = signal_table(planted_release, config=config)
    assert table.ranges
    frame = table.frame
    assert frame.filter(pl.col("stratum") == "all").get_column("reading").unique().to_list() == ["exact"]
    for reading in (
        "certain",
        "possible",
        "expected",
    ):  # S is released as [65, inf) and F: all readings agree
        row = _row(frame, "sex=F&age>=65", reading)
        assert (row["a"], row["b"], row["c"], row["d"]) == (8, 2, 9, 81)
    # sex=F: certain = the 100 F cases; possible adds the 900 '*' cases; expected counts them half
    certain, possible, expected = (_row(frame, "sex=F", r) for r in ("certain", "possible", "expected"))
    assert (certain["a"], certain["b"], certain["c"], certain["d"]) == (8, 2, 9, 81)
    assert (possible["a"], possible["b"], possible["c"], possible["d"]) == (13, 87, 99, 801)
    assert (expected["a"], expected["b"], expected["c"], expected["d"]) == (10.5, 44.5, 54, 441)


def test_summary_counts_signals(planted: CaseTables) -> None:
    table = signal_table(planted, config=SignalConfig(conditions=("sex=F&age>=65",)))
    text = table.summary()
    assert text.startswith("1,000 cases (exact values), role ps, min a 1: ")
    assert "overall: 4 rows" in text and "strata: 4 rows; signals: evans 1" in text
    assert table.signals("evans").select("stratum", "drug", "event").rows() == [("sex=F&age>=65", "D", "E")]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"stratify": ("age", "weight")}, "stratify: unknown variable 'weight'"),
        ({"stratify": ("sex", "sex")}, "stratify: a variable is repeated"),
        ({"conditions": ("age>>18",)}, "is not a number"),
        ({"min_a": 0}, "min_a must be a number > 0; got 0"),
        ({"age_bands": (45.0, 18.0)}, "age_bands must be increasing"),
        ({"overall": False}, "nothing to count"),
    ],
)
def test_bad_options(options: dict, message: str) -> None:
    with pytest.raises(SignalsError, match=message):
        SignalConfig(**options)


def test_condition_on_a_missing_column(eight_cases: CaseTables) -> None:
    with pytest.raises(SignalsError, match="cases: column 'weight_kg' is needed for weight strata"):
        signal_table(eight_cases, config=SignalConfig(conditions=("weight>=100",)))
