"""P(s | c) of a whole composition as the series' array pass (:func:`composition_probabilities`).

The step computes P(s | c) and θ* of its compositions through ``sensitive_thresholds(computed=...)``;
the frame, and so θ*, must be the anonymizer's (``case_value_probabilities`` + ``with_classes_and_outcomes``)
row for row: on the bundled demo quarter with its OUTC codes and drug names, for each choice of sensitive
attributes, and on a hand-built case whose P is worked out below.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.inputs import knowledge_table, sensitive_thresholds
from faers_anon.anonymize.value_classes import read_classes, read_outcomes
from faers_anon.series.composition import composition_probabilities


@pytest.mark.parametrize(
    "sensitive",
    [("indications", "reactions", "diseases"), ("reactions",), ("indications", "diseases"), ("diseases",)],
)
@pytest.mark.parametrize("protect_outcomes", [True, False])
def test_the_array_pass_gives_the_anonymizers_p_and_theta(
    demo: Path, sensitive: tuple[str, ...], protect_outcomes: bool
) -> None:
    config = AnonymizeConfig(k=3, sensitive=sensitive, protect_outcomes=protect_outcomes)
    cases = pl.read_parquet(demo / "cases.parquet")
    knowledge = knowledge_table(demo, sensitive=config.sensitive, knowledge=None)
    outcomes = read_outcomes(demo) if protect_outcomes else None
    common = dict(config=config, classes=read_classes(config.classes), outcomes=outcomes, ingested=demo)
    want_p, want = sensitive_thresholds(cases, knowledge, **common)  # type: ignore[arg-type]
    computed = partial(composition_probabilities, config=config, outcomes=outcomes)
    got_p, got = sensitive_thresholds(cases, knowledge, computed=computed, **common)  # type: ignore[arg-type]
    assert want_p.height > cases.height  # the demo's cases reach values, classes and codes
    assert_frame_equal(got_p, want_p)
    assert got.thetas == want.thetas
    assert_frame_equal(got.frame, want.frame)


def test_a_hand_built_case() -> None:
    config = AnonymizeConfig(k=3, sensitive=("indications", "reactions", "diseases"))
    cases = pl.DataFrame(
        {
            "caseid": [7, 9],
            "indications": [["Product used for unknown indication", "migraine"], None],
            "reactions": [["Nausea"], []],
            "drug_keys": [["DRUGA", "DRUGB"], ["DRUGB"]],
        }
    )
    knowledge = pl.DataFrame(
        {
            "drug_key": ["DRUGA", "DRUGB", "DRUGB"],
            "disease": ["MIGRAINE", "EPILEPSY", "MIGRAINE"],
            "weight": [0.25, 0.5, 0.75],
        }
    )
    outcomes = pl.DataFrame({"caseid": [9], "outc_cod": ["HO"]})
    got = composition_probabilities(cases, knowledge, config=config, outcomes=outcomes)
    rows = {(c, v): p for c, v, p in got.filter(~pl.col("value").str.starts_with("class:")).iter_rows()}
    # case 7: its own MIGRAINE and NAUSEA (p 1; the filler term none), EPILEPSY through DRUGB (0.5);
    # case 9: EPILEPSY 0.5 and MIGRAINE 0.75 through DRUGB, its OUTC code HO (p 1)
    assert rows == {
        (7, "EPILEPSY"): 0.5, (7, "MIGRAINE"): 1.0, (7, "NAUSEA"): 1.0,
        (9, "EPILEPSY"): 0.5, (9, "MIGRAINE"): 0.75, (9, "outc:HO"): 1.0,
    }  # fmt: skip
    assert got.get_column("caseid").is_sorted()
