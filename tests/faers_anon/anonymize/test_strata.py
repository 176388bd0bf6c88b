"""Strata by sex and the engine's two threads (docs/engine.md, "Strata by sex"), hand-worked."""

from __future__ import annotations

import threading

import polars as pl
import pytest

from faers_anon.algorithms._encode import class_basis, class_cap
from faers_anon.algorithms.types import Partition
from faers_anon.anonymize.strata import Strata, seriousness_strata, split_by_sex, with_outcome_strata
from faers_anon.release.stages import STAGES_ENV

# serious: cases 1-12 (F 1-6, M 7-12); non-serious: 13-20 (F 13-16, M 17-20); NAUSEA on 1, 2, 3
SEX = ["F"] * 6 + ["M"] * 6 + ["F"] * 4 + ["M"] * 4
CASES = pl.DataFrame({"caseid": list(range(1, 21)), "sex": SEX})
DEMO = pl.DataFrame({"caseid": list(range(1, 21)), "outcome": ["OT"] * 12 + ["none"] * 8})
LABELLED = CASES.with_columns(pl.Series("stratum", [0] * 12 + [1] * 8))
P = pl.DataFrame({"caseid": [1, 2, 3], "value": ["NAUSEA"] * 3, "p": [1.0] * 3})


def _strata(frame: pl.DataFrame) -> list[int]:
    return frame.sort("caseid").get_column("stratum").to_list()


def test_a_stratum_is_split_by_sex_only_when_every_part_meets_k_and_theta() -> None:
    # serious: F 6, M 6 >= k 5, NAUSEA in F 3 / 6 = 0.5 <= 0.5 -> split; non-serious: 4 + 4 < k -> whole
    got = split_by_sex(LABELLED, P, {"NAUSEA": 0.5}, k=5, min_cases=10)
    assert _strata(got) == [0] * 6 + [1] * 6 + [2] * 8
    # θ 0.4: NAUSEA's share in the F part (0.5) is over it -> the serious stratum stays whole
    assert _strata(split_by_sex(LABELLED, P, {"NAUSEA": 0.4}, k=5, min_cases=10)) == [0] * 12 + [1] * 8
    # the whole stratum's share (3 / 12 = 0.25) would meet 0.4: the split is what breaks it
    assert _strata(split_by_sex(LABELLED, P, {"NAUSEA": 0.4}, k=5, min_cases=13)) == [0] * 12 + [1] * 8


def test_missing_sex_is_a_part_of_its_own_and_small_strata_stay_whole() -> None:
    nulls = LABELLED.with_columns(pl.when(pl.col("caseid") <= 5).then(None).otherwise("sex").alias("sex"))
    # serious: missing 1-5, F 6, M 7-12 -> F has 1 case < k: whole; below min_cases nothing is split
    assert _strata(split_by_sex(nulls, P, {}, k=1, min_cases=10)) == [0] * 5 + [1] + [2] * 6 + [3] * 8
    assert _strata(split_by_sex(nulls, P, {}, k=5, min_cases=10)) == [0] * 12 + [1] * 8
    assert _strata(split_by_sex(LABELLED, P, {}, k=1, min_cases=50_000)) == [0] * 12 + [1] * 8


def test_seriousness_strata_carry_the_size_of_the_stratum_each_part_was_cut_from() -> None:
    strata = seriousness_strata(CASES, DEMO, P, {"NAUSEA": 0.5}, k=5, split_min=10)
    assert isinstance(strata, Strata)
    assert [s.get_column("caseid").to_list() for s in strata] == [
        [1, 2, 3, 4, 5, 6],
        [7, 8, 9, 10, 11, 12],
        list(range(13, 21)),
    ]
    assert strata.basis == [12, 12, 8]
    assert strata[0].columns == ["caseid", "sex"]
    # the default minimum (20,000 cases): two strata, each its own basis
    assert [s.height for s in seriousness_strata(CASES, DEMO, P, {}, k=5)] == [12, 8]


def test_a_part_gets_its_share_of_its_strata_classes() -> None:
    assert class_cap(100_000) == 2684  # 2^28 // 100,000
    with class_basis(200_000):  # 2^28 // 200,000 = 1,342, times 100,000 / 200,000
        assert class_cap(100_000) == 671
        assert class_cap(1_000) == 256  # 1,342 * 1,000 // 200,000 = 6 -> the minimum
    assert class_cap(100_000) == 2684  # only within the block


@pytest.mark.parametrize("mode", ["concurrent", "sequential"])
def test_strata_run_on_two_workers_largest_first_within_their_basis(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STAGES_ENV, mode)
    seen: dict[int, tuple[str, int]] = {}

    def run(cases: pl.DataFrame) -> Partition:
        seen[int(cases["caseid"][0])] = (threading.current_thread().name, class_cap(cases.height * 1_000))
        frame = cases.select("caseid", pl.lit(0, pl.Int64).alias("group_id"))
        return Partition(frame=frame, groups=1, leftovers=0, forced=0, failed_groups=0, invalid_groups=0,
                         first_seed=0, merged_groups=0)  # fmt: skip

    frames = [CASES.slice(0, 3), CASES.slice(3, 9), CASES.slice(12, 8)]
    got = with_outcome_strata(Strata(frames, [12_000, 12_000, 8_000]), run)
    assert got.frame.get_column("group_id").to_list() == [0] * 3 + [1] * 9 + [2] * 8
    assert got.groups == 3
    # class caps: 2^28 // 12,000 = 22,369 -> * 3,000 // 12,000 = 5,592; * 9,000 // 12,000 = 16,776;
    # 2^28 // 8,000 = 33,554 (the whole stratum)
    assert {c: cap for c, (_, cap) in seen.items()} == {1: 5592, 4: 16776, 13: 33554}
    names = {name for name, _ in seen.values()}
    main = threading.main_thread().name
    assert names <= ({"faers-anon engine 0", "faers-anon engine 1"} if mode == "concurrent" else {main})


@pytest.mark.parametrize(("size", "parts"), [(20_000, 2), (19_999, 1)])
def test_the_default_minimum_cuts_a_stratum_from_20000_cases(size: int, parts: int) -> None:
    """20,000 (not 50,000): a 100k quarter's ~40k non-serious stratum and a ledgered release's fresh
    strata are cut too (docs/engine.md, "The threshold"); 19,999 cases stay one stratum."""
    half = size // 2
    labelled = pl.DataFrame(
        {"caseid": list(range(size)), "sex": ["F"] * half + ["M"] * (size - half), "stratum": [0] * size}
    )
    got = split_by_sex(labelled, P.clear(), {}, k=5)
    assert got.get_column("stratum").n_unique() == parts
    assert got.filter(pl.col("caseid") < half).get_column("stratum").unique().to_list() == [0]
