"""The raw side computed ahead of the release (signals.sides) gives compare's figures unchanged."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from signals import CaseTables, CompareConfig, SignalConfig, SignalsError, compare, prepare, raw_side


def test_a_precomputed_raw_side_gives_the_same_comparison(
    planted: CaseTables, planted_release: CaseTables
) -> None:
    config = CompareConfig(signals=SignalConfig(conditions=("sex=F&age>=65", "sex=F"), min_a=3))
    whole = compare(planted, planted_release, config=config)
    side = raw_side(planted, config=config)
    ahead = compare(side, planted_release, config=config)
    assert ahead.summary() == whole.summary()
    assert ahead.as_dict() == whole.as_dict()
    for name in ("pairs", "survival", "correlation", "new_signals", "panel"):
        assert_frame_equal(getattr(ahead, name), getattr(whole, name))
    assert_frame_equal(ahead.raw.frame, whole.raw.frame)
    evans = ahead.survival.filter((pl.col("stratum") == "sex=F&age>=65") & (pl.col("criterion") == "evans"))
    assert evans["n_survived"].to_list() == [1, 1, 1]  # certain, possible, expected (test_compare)


def test_a_raw_side_of_other_options_is_refused(planted: CaseTables, planted_release: CaseTables) -> None:
    config = CompareConfig(signals=SignalConfig(conditions=("sex=F",), min_a=3))
    side = raw_side(planted, config=config)
    with pytest.raises(SignalsError, match="other options"):
        compare(side, planted_release, config=CompareConfig(signals=SignalConfig(min_a=5)))
    with pytest.raises(SignalsError, match="other options"):
        compare(side, planted_release, config=config, bounds=False)


def test_a_raw_side_refuses_ranges(planted_release: CaseTables) -> None:
    with pytest.raises(SignalsError, match="holds ranges"):
        raw_side(planted_release, config=CompareConfig())


def test_role_filter_reads_each_role_code_once_as_before() -> None:
    """PS, ' ps ' and 'Ps' are primary suspects; SS, C and a null role are not (role ps)."""
    tables = CaseTables(
        cases=pl.DataFrame({"caseid": [1, 2, 3, 4, 5, 6]}),
        drugs=pl.DataFrame(
            {
                "caseid": [1, 2, 3, 4, 5, 6],
                "drug_key": list("ABCDEF"),
                "role_cod": ["PS", " ps ", "Ps", "SS", "C", None],
            }
        ),  # fmt: skip
        events=pl.DataFrame({"caseid": [1], "pt": ["X"]}),
    )
    _, ps, _ = prepare(tables, role="ps")
    assert ps.sort("caseid")["drug"].to_list() == ["A", "B", "C"]
    _, suspect, _ = prepare(tables, role="suspect")
    assert suspect.sort("caseid")["drug"].to_list() == ["A", "B", "C", "D"]
