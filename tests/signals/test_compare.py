"""Raw-versus-release comparison: survival, new signals, rank correlation, the panel (signals.compare)."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest

from signals import CaseTables, CompareConfig, SignalConfig, SignalsError, compare


def _survival(result_survival: pl.DataFrame, stratum: str, reading: str, criterion: str = "evans") -> tuple:
    row = result_survival.filter(
        (pl.col("stratum") == stratum) & (pl.col("reading") == reading) & (pl.col("criterion") == criterion)
    ).row(0, named=True)
    return row["n_raw"], row["n_survived"], row["share_survived"], row["n_release"], row["n_new"]


def test_survival_of_a_planted_signal(planted: CaseTables, planted_release: CaseTables) -> None:
    config = CompareConfig(signals=SignalConfig(conditions=("sex=F&age>=65", "sex=F"), min_a=3))
    result = compare(planted, planted_release, config=config)
    survival = result.survival
    assert _survival(survival, "all", "exact") == (0, 0, None, 0, 0)  # PRR 1.18 overall, on both sides
    for reading in ("certain", "possible", "expected"):  # S is released exactly
        assert _survival(survival, "sex=F&age>=65", reading) == (1, 1, 1.0, 1, 0)
    # sex=F: the 900 men become '*': certain keeps the 100 women, possible takes everyone (PRR 1.18),
    # expected counts the '*' half: PRR = (10.5/55)/(54/495) = 1.75
    assert _survival(survival, "sex=F", "certain") == (1, 1, 1.0, 1, 0)
    assert _survival(survival, "sex=F", "possible") == (1, 0, 0.0, 0, 0)
    assert _survival(survival, "sex=F", "expected") == (1, 0, 0.0, 0, 0)
    assert result.new_signals.height == 0
    pair = result.pairs.filter(
        (pl.col("stratum") == "sex=F") & (pl.col("reading") == "expected") & (pl.col("drug") == "D")
        & (pl.col("event") == "E")
    ).row(0, named=True)  # fmt: skip
    assert pair["a_raw"] == 8 and pair["a_release"] == 10.5
    assert pair["prr_release"] == pytest.approx((10.5 / 55) / (54 / 495))
    summary = result.as_dict()
    assert summary["overall"]["evans"]["share_survived"] is None
    assert summary["strata"]["possible"]["evans"] == {
        "n_raw": 2, "n_survived": 1, "share_survived": 0.5, "n_release": 1, "n_new": 0,
    }  # fmt: skip
    json.dumps(summary, allow_nan=False)
    assert "strata, possible: 1 of 2 raw signals survive (50.0%), 0 new" in result.summary()
    # the stratum whose raw signals survive least, per criterion and reading: sex=F loses its one
    # signal under expected; under certain both strata keep theirs and the label breaks the tie
    assert summary["worst_stratum"]["evans"]["expected"] == {
        "stratum": "sex=F", "n_raw": 1, "n_survived": 0, "share_survived": 0.0, "n_new": 0,
    }  # fmt: skip
    assert summary["worst_stratum"]["evans"]["certain"]["stratum"] == "sex=F"
    lines = result.summary().splitlines()
    assert (
        "  evans (PRR >= 2, chi2 >= 4, a >= 3; Evans et al. 2001): overall 0 of 0 raw signals survive "
        "(n/a), 0 new; strata (expected) 1 of 2 (50.0%); worst sex=F: 0 of 1 (0.0%)"
    ) in lines
    assert [line.split(" (")[0].strip() for line in lines[1:4]] == ["evans", "ror", "ic"]  # basic measures
    headline_ic = compare(
        planted, planted_release, config=CompareConfig(signals=config.signals, criterion="ic")
    )
    assert headline_ic.summary().splitlines()[1].startswith("  ic (IC025 > 0;")  # the headline comes first


def test_new_signal_on_the_release(planted: CaseTables, planted_release: CaseTables) -> None:
    # swapped: what signals in the exact 'sex=F' stratum appears only in the release's certain reading
    men_as_women = CaseTables(
        planted.cases.with_columns(sex=pl.lit("M")), planted.drugs, planted.events
    )  # no woman left on the raw side
    result = compare(
        men_as_women, planted_release, config=CompareConfig(signals=SignalConfig(conditions=("sex=F",)))
    )
    assert _survival(result.survival, "sex=F", "certain") == (0, 0, None, 1, 1)
    new = result.new_signals.filter(pl.col("criterion") == "evans")
    assert new.select("stratum", "reading", "drug", "event", "a_raw", "a_release").rows() == [
        ("sex=F", "certain", "D", "E", None, 8.0)
    ]


def test_rank_correlation_of_prr(planted: CaseTables, planted_release: CaseTables) -> None:
    result = compare(
        planted, planted_release, config=CompareConfig(signals=SignalConfig(conditions=("sex=F",)))
    )
    correlation = result.correlation
    overall = correlation.filter(pl.col("stratum") == "all").row(0, named=True)
    assert overall["n_common"] == 4 and overall["prr_spearman"] == pytest.approx(
        1.0
    )  # same reports, same PRRs
    certain = correlation.filter((pl.col("stratum") == "sex=F") & (pl.col("reading") == "certain")).row(
        0, named=True
    )
    assert certain["prr_spearman"] == pytest.approx(1.0)
    tiny = compare(
        planted, planted_release, config=CompareConfig(signals=SignalConfig(conditions=("sex=F",), min_a=95))
    )
    rows = tiny.correlation.filter(pl.col("stratum") == "sex=F").rows(named=True)
    assert [r["n_common"] for r in rows] == [1, 1, 1]  # only F-R has a >= 95 on both sides
    assert all(r["prr_spearman"] is None for r in rows)  # fewer than 3 pairs: no correlation


def _warfarin(ranges: bool) -> CaseTables:
    """40 cases aged 70 (20 on warfarin, 10 of them with MI; 1 MI among the 20 others), 160 aged 30 (4 MI)."""
    old = 40
    ids = list(range(200))
    if ranges:  # the old are released as [45, inf): 60/75 = 0.8 of it lies at or above 60
        cases = pl.DataFrame(
            {
                "caseid": ids,
                "age_min": [45.0] * old + [18.0] * 160,
                "age_max": [None] * old + [45.0] * 160,
                "sex": "*",
            }
        )
    else:
        cases = pl.DataFrame({"caseid": ids, "age_years": [70.0] * old + [30.0] * 160, "sex": "F"})
    drugs = pl.DataFrame(
        {"caseid": ids, "drug_key": ["WARFARIN SODIUM"] * 20 + ["OTHER"] * 180, "role_cod": "PS"}
    )
    mi = list(range(10)) + [20] + list(range(100, 104))
    events = pl.DataFrame({"caseid": mi, "pt": "MYOCARDIAL INFARCTION"})
    return CaseTables(cases, drugs, events)


def test_panel_change_and_survival() -> None:
    result = compare(_warfarin(False), _warfarin(True), config=CompareConfig(signals=SignalConfig()))
    panel = result.panel.filter(pl.col("drug") == "WARFARIN")
    assert panel.get_column("reading").to_list() == ["certain", "possible", "expected"]
    raw = panel.row(0, named=True)
    # raw, age >= 60: a=10, b=10, c=1, d=19: PRR = 10, Yates chi2 = 40 (180 - 20)^2 / (20 20 11 29) = 8.03
    assert (raw["a_raw"], raw["b_raw"], raw["c_raw"], raw["d_raw"]) == (10, 10, 1, 19)
    assert raw["prr_raw"] == pytest.approx(10.0) and raw["signal_raw"]
    assert panel.get_column("survived").to_list() == ["no", "yes", "yes"]  # nobody is certainly >= 60
    expected = panel.row(2, named=True)
    assert (expected["a_release"], expected["c_release"]) == pytest.approx((8.0, 0.8))
    assert expected["prr_change"] == pytest.approx(0.0, abs=1e-12)  # every cell scaled by 0.8
    assert expected["ror_change"] == pytest.approx(0.0, abs=1e-12)
    # IC: raw E = 20 x 11 / 40 = 5.5, release E = 16 x 8.8 / 32 = 4.4
    assert expected["ic_change"] == pytest.approx((8.5 / 4.9) / (10.5 / 6.0) - 1)
    others = result.panel.filter(pl.col("drug") != "WARFARIN").get_column("survived").unique().to_list()
    assert others == ["n/a"]
    assert result.as_dict()["panel"]["survived"]["expected"] == {"yes": 1, "no": 0}
    # rules never reported on the raw side (PRR 0) have no relative change: null, never inf or NaN
    changes = result.panel.select("a_raw", "prr_change")
    assert changes.filter(pl.col("a_raw") == 0).get_column("prr_change").is_null().all()
    assert all(math.isfinite(v) for v in changes.filter(pl.col("a_raw") > 0).get_column("prr_change"))


def test_raw_with_ranges_is_refused(planted_release: CaseTables) -> None:
    with pytest.raises(SignalsError, match="raw: holds ranges"):
        compare(planted_release, planted_release)
    with pytest.raises(SignalsError, match="criterion must be one of evans, ror, ic, eb; got 'prr'"):
        CompareConfig(criterion="prr")


def test_every_criterion_survives_and_the_panel_has_the_adjusted_ror() -> None:
    assert CompareConfig().signals.measures == "all"  # compare runs the whole battery by default
    config = CompareConfig(signals=SignalConfig(stratify=("age", "sex"), min_a=3, measures="all"))
    result = compare(_warfarin(False), _warfarin(True), config=config)
    assert result.criteria == ("evans", "ror", "ic", "eb")
    assert set(result.survival.get_column("criterion")) == {"evans", "ror", "ic", "eb"}
    overview = result.as_dict()
    assert set(overview["overall"]) == {"evans", "ror", "ic", "eb"}
    assert overview["criteria"]["ror"] == {
        "rule": "ROR025 > 1, a >= 3", "min_a": 3, "source": "EMA/849944/2016 (EudraVigilance screening)"
    }  # fmt: skip
    assert set(overview["ebgm_prior"]["raw"]) == {"alpha1", "beta1", "alpha2", "beta2", "p"}
    json.dumps(overview, allow_nan=False)
    warfarin = result.panel.filter(pl.col("drug") == "WARFARIN").row(0, named=True)
    # age >= 60 holds the 40 women aged 70, one band: MH = that table's OR = 10*19 / (10*1) = 19
    assert warfarin["ror_mh_raw"] == pytest.approx(19.0) and warfarin["ror_raw"] == pytest.approx(19.0)
    assert warfarin["ror_mh_lo_raw"] < 19.0 < warfarin["ror_mh_hi_raw"]
    assert {f"survived_{c}" for c in result.criteria} <= set(result.panel.columns)
    assert warfarin["survived_evans"] == warfarin["survived"]  # the headline criterion is evans
    # per criterion and reading, the panel rules that signal on the raw data and do / do not survive
    by_criterion = overview["panel"]["by_criterion"]
    assert by_criterion["evans"] == {
        r: {"yes": c["yes"], "no": c["no"]}
        for r, c in overview["panel"]["survived"].items()
        if c["yes"] + c["no"]
    }
    assert set(by_criterion) <= {"evans", "ror", "ic", "eb"}


def test_eb_criterion_needs_all_measures() -> None:
    with pytest.raises(SignalsError, match="criterion eb needs measures 'all'"):
        CompareConfig(criterion="eb", signals=SignalConfig())
