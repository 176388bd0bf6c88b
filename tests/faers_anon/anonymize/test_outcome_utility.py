"""Outcome utility options (issue 18, docs/outcomes.md): θ_o = min(1, θ + P(o)) and the short
outcome hierarchies ``seriousness`` and ``death``, with hand-worked answers."""

from __future__ import annotations

import threading
from dataclasses import replace

import polars as pl
import pytest

from faers_anon import api
from faers_anon.algorithms.types import Partition
from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.strata import seriousness_strata, with_outcome_strata
from faers_anon.anonymize.thresholds import build_thresholds, outcome_thetas
from faers_anon.errors import ConfigError, InfeasibleThetaError
from faers_anon.io.column_policy import DEFAULT_POLICY, ColumnPolicy
from faers_anon.io.ingest import demo_source, ingest_quarters
from faers_anon.io.qid_fields import OUTCOME_FIELD, certain_codes, field_codes, generalize_fields
from faers_anon.release.stages import STAGES_ENV
from faers_anon.verify.verifier import verify_release

# 100 cases: OT on cases 0-33 (P = 0.34), HO on 0-28 (0.29), DE on 0-4 (0.05), reaction NAUSEA on 0-9
N = 100
PROBABILITIES = pl.DataFrame(
    {
        "caseid": [*range(34), *range(29), *range(5), *range(10)],
        "value": ["outc:OT"] * 34 + ["outc:HO"] * 29 + ["outc:DE"] * 5 + ["NAUSEA"] * 10,
        "p": [1.0] * 78,
    }
)


def _thetas(**options: object) -> dict[str, float]:
    frame = build_thresholds(PROBABILITIES, N, **options).frame  # type: ignore[arg-type]
    return dict(frame.select("value", "theta").iter_rows())


def test_frequency_outcome_theta_is_theta_plus_the_code_share() -> None:
    # θ 0.4: OT 0.4 + 0.34 = 0.74, HO 0.4 + 0.29 = 0.69, DE 0.4 + 0.05 = 0.45; NAUSEA keeps θ 0.4
    got = _thetas(rule="uniform", theta=0.4, outcome_rule="frequency")
    assert got == pytest.approx({"outc:OT": 0.74, "outc:HO": 0.69, "outc:DE": 0.45, "NAUSEA": 0.4})
    # "same": every value under the run's rule, as before the option
    assert _thetas(rule="uniform", theta=0.4) == pytest.approx(dict.fromkeys(got, 0.4))
    # θ 0.7: OT 1.04 -> 1 (unprotected), the others below 1
    high = build_thresholds(PROBABILITIES, N, theta=0.7, outcome_rule="frequency").frame
    assert dict(high.select("value", "action").iter_rows())["outc:OT"] == "unprotected"
    assert dict(high.select("value", "theta").iter_rows())["outc:OT"] == 1.0


def test_frequency_outcome_theta_is_feasible_where_the_uniform_theta_is_not() -> None:
    # θ 0.3 < P(OT) 0.34: the uniform rule cannot be met; θ_OT = 0.3 + 0.34 = 0.64 can
    with pytest.raises(InfeasibleThetaError, match="outc:OT"):
        build_thresholds(PROBABILITIES, N, theta=0.3)
    got = _thetas(theta=0.3, outcome_rule="frequency")
    assert got["outc:OT"] == pytest.approx(0.64) and got["NAUSEA"] == pytest.approx(0.3)


def test_frequency_outcome_theta_overrides_the_level_rule_for_codes_only() -> None:
    table = pl.DataFrame({"value": ["outc:DE", "NAUSEA"], "theta": [0.1, 0.2], "share": [0.05, 0.1]})
    got = outcome_thetas(table, theta=0.4)
    assert got["theta"].to_list() == pytest.approx([0.45, 0.2])


def test_unknown_outcome_rule_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="outcome theta: unknown 'x'"):
        build_thresholds(PROBABILITIES, N, outcome_rule="x")
    with pytest.raises(ConfigError, match="outcome theta: unknown 'x'"):
        AnonymizeConfig(outcome_theta="x")


def test_the_manifest_records_the_outcome_rule_only_when_not_same() -> None:
    assert "outcome_theta" not in AnonymizeConfig(outcome_theta="same").parameters()
    assert AnonymizeConfig().parameters()["outcome_theta"] == "frequency"  # the default (docs/outcomes.md)


# case outcome sets (DEMO rows, one per case): 1 DE,HO; 2 HO,OT; 3 OT; 4 none; 5 DE; 6 none
DEMO = pl.DataFrame(
    {
        "primaryid": [11, 21, 31, 41, 51, 61],
        "caseid": [1, 2, 3, 4, 5, 6],
        OUTCOME_FIELD: ["DE,HO", "HO,OT", "OT", "none", "DE", "none"],
    }
)


def _policy(hierarchy: str) -> ColumnPolicy:
    """Only ``outcome`` as a field qid (besides age, sex, weight), with ``hierarchy``."""
    demo = {
        c: a for c, a in DEFAULT_POLICY.columns["demo"].items() if a != "qid" or c in ("age", "sex", "wt")
    }
    return ColumnPolicy(
        columns={**DEFAULT_POLICY.columns, "demo": demo | {OUTCOME_FIELD: "qid"}},
        qids={**DEFAULT_POLICY.qids, OUTCOME_FIELD: hierarchy},
        trees=DEFAULT_POLICY.trees,
    )


@pytest.mark.parametrize(
    ("hierarchy", "groups", "released", "nil"),
    [
        # seriousness (height 1): {1, 2, 3} serious (loss 0), {4, 6} non-serious (0), {5} serious (0)
        ("seriousness", [0, 0, 0, 1, 2, 1], ["serious"] * 3 + ["non-serious", "serious", "non-serious"], 0.0),
        # {1, 4} and {5, 6}: serious and non-serious -> * (loss 1, 4 cases); {2, 3}: serious (0)
        ("seriousness", [0, 1, 1, 0, 2, 2], ["*", "serious", "serious", "*", "*", "*"], 4 / 6),
        # death (height 2): {2, 3} other serious (level 0, loss 0); {1, 5} death (0); {4, 6} non-serious
        (
            "death",
            [0, 1, 1, 2, 0, 2],
            ["death", "other serious", "other serious", "non-serious", "death", "non-serious"],
            0.0,
        ),  # fmt: skip
        # {1, 2}: death and other serious -> serious (level 1 of 2: loss 1/2 each); {3, 4, 5, 6} -> *
        ("death", [0, 0, 1, 1, 1, 1], ["serious", "serious", "*", "*", "*", "*"], (2 * 0.5 + 4 * 1.0) / 6),
    ],
)
def test_a_group_releases_its_lowest_common_level(
    hierarchy: str, groups: list[int], released: list[str], nil: float
) -> None:
    partition = pl.DataFrame({"caseid": [1, 2, 3, 4, 5, 6], "group_id": groups})
    out, losses = generalize_fields(partition, DEMO, _policy(hierarchy))
    assert out[OUTCOME_FIELD].to_list() == released
    assert losses[OUTCOME_FIELD] == pytest.approx(nil)


def test_engine_codes_of_the_short_hierarchies() -> None:
    codes, specs = field_codes(DEMO, _policy("seriousness"))
    assert [(s.name, s.height) for s in specs] == [(OUTCOME_FIELD, 1)]
    # dense ranks from 1: non-serious < serious
    assert dict(codes.select("caseid", OUTCOME_FIELD).iter_rows()) == {
        1: [2], 2: [2], 3: [2], 4: [1], 5: [2], 6: [1]
    }  # fmt: skip
    codes, specs = field_codes(DEMO, _policy("death"))
    assert [(s.name, s.height) for s in specs] == [(OUTCOME_FIELD, 2)]
    # level 0: death < non-serious < other serious; level 1: non-serious < serious
    assert dict(codes.select("caseid", OUTCOME_FIELD).iter_rows()) == {
        1: [1, 2], 2: [3, 2], 3: [3, 2], 4: [2, 1], 5: [1, 2], 6: [2, 1]
    }  # fmt: skip


def test_a_death_group_makes_de_certain_and_other_serious_makes_nothing_certain() -> None:
    texts = pl.Series(["death", "other serious", "serious", "non-serious", "*"])
    got = texts.to_frame("t").select(certain_codes(pl.col("t"))).to_series().to_list()
    assert got == [["DE"], [], [], [], []]


@pytest.mark.parametrize("hierarchy", ["seriousness", "death"])
def test_the_outcome_hierarchies_are_for_the_outcome_column_only(hierarchy: str) -> None:
    with pytest.raises(ConfigError, match=f"hierarchy {hierarchy} is for the derived column outcome only"):
        ColumnPolicy(
            columns={**DEFAULT_POLICY.columns},
            qids={**DEFAULT_POLICY.qids, "fda_dt": hierarchy},
            trees=DEFAULT_POLICY.trees,
        )
    with pytest.raises(ConfigError, match="the derived column outcome takes hierarchy outcome, seriousness"):
        ColumnPolicy(
            columns={**DEFAULT_POLICY.columns},
            qids={**DEFAULT_POLICY.qids, OUTCOME_FIELD: "value"},
            trees=DEFAULT_POLICY.trees,
        )


def test_the_demo_release_with_death_and_frequency_shows_more_outcomes_and_verifies(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Demo, k 5, θ 0.4 (docs/outcomes.md, measured 93.9% -> 63.8% released ``*``): the ``death``
    hierarchy with θ_o = θ + P(o) releases fewer cases at ``*``, only values of its vocabulary, OUTC
    θ_o as ``outcomes.csv`` says, and the release verifies (outcome_set, outcome_theta included)."""
    root = tmp_path_factory.mktemp("outcome-utility")
    ingested = ingest_quarters([demo_source()], root / "ingested").out
    policy = root / "outcome.toml"  # the full hierarchy: the default before docs/outcomes.md
    policy.write_text('[demo]\noutcome = { role = "qid", hierarchy = "outcome", why = "the OUTC set" }\n')
    shares = {}
    base = AnonymizeConfig(k=5, theta=0.4, seed=0, outcome_strata=False)  # death + frequency: the defaults
    configs = {"default": replace(base, outcome_theta="same", column_policy=policy), "death": base}
    for name, config in configs.items():
        api.anonymize(ingested, root / name, config=config)
        latest = pl.read_parquet(root / name / "parquet" / "demo.parquet").filter(pl.col("is_latest"))
        shares[name] = latest.get_column("outcome").value_counts(normalize=True)
        assert verify_release(root / name).ok
    star = {n: s.filter(pl.col("outcome") == "*").get_column("proportion").item() for n, s in shares.items()}
    assert star["death"] < star["default"] - 0.2
    assert set(shares["death"].get_column("outcome")) <= {"*", "serious", "non-serious", "other serious"}
    thetas = pl.read_csv(root / "death" / "outcomes.csv")
    # θ_OT = 0.4 + P(OT): above 0.4 and below 1 (P(OT) ≈ 0.3 on the demo)
    assert 0.6 < thetas.filter(pl.col("outc_cod") == "OT").get_column("theta").item() < 0.8


# strata: cases 1-6 serious (OT on 1, 2; HO on 3), 7-12 non-serious, k = 5
STRATA_CASES = pl.DataFrame({"caseid": list(range(1, 13))})
STRATA_DEMO = pl.DataFrame(
    {"caseid": list(range(1, 13)), "outcome": ["OT", "OT", "HO", "DE", "LT", "RI"] + ["none"] * 6}
)
STRATA_P = pl.DataFrame({"caseid": [1, 2, 3], "value": ["outc:OT", "outc:OT", "outc:HO"], "p": [1.0] * 3})


def test_cases_split_by_seriousness_when_each_stratum_can_meet_k_and_theta() -> None:
    strata = seriousness_strata(STRATA_CASES, STRATA_DEMO, STRATA_P, {"outc:OT": 0.4, "outc:HO": 0.4}, k=5)
    assert [s.get_column("caseid").to_list() for s in strata] == [[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]]
    # OT inside the serious stratum: 2 / 6 = 0.333; with θ_OT 0.3 no grouping there could meet it
    assert len(seriousness_strata(STRATA_CASES, STRATA_DEMO, STRATA_P, {"outc:OT": 0.3}, k=5)) == 1
    # k = 7: a stratum of 6 cases cannot form a group
    assert len(seriousness_strata(STRATA_CASES, STRATA_DEMO, STRATA_P, {}, k=7)) == 1
    # a missing outcome is a stratum of its own (case 12: null) -> 6 / 5 / 1 < k: one stratum
    nulls = STRATA_DEMO.with_columns(
        pl.when(pl.col("caseid") == 12).then(None).otherwise(pl.col("outcome")).alias("outcome")
    )
    assert len(seriousness_strata(STRATA_CASES, nulls, STRATA_P, {}, k=5)) == 1


def test_the_engine_runs_per_stratum_and_the_group_ids_follow_each_other() -> None:
    def run(cases: pl.DataFrame) -> Partition:  # two groups per stratum: first three cases, the rest
        ids = pl.int_range(pl.len()).ge(3).cast(pl.Int64)
        frame = cases.select("caseid", ids.alias("group_id"))
        return Partition(frame=frame, groups=2, leftovers=1, forced=0, failed_groups=0, invalid_groups=0,
                         first_seed=int(cases["caseid"][0]), merged_groups=1)  # fmt: skip

    strata = seriousness_strata(STRATA_CASES, STRATA_DEMO, STRATA_P, {}, k=5)
    got = with_outcome_strata(strata, run)
    assert got.frame.get_column("group_id").to_list() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert (got.groups, got.leftovers, got.merged_groups, got.first_seed) == (4, 2, 2, 1)


@pytest.mark.parametrize("mode", ["concurrent", "sequential"])
def test_strata_run_on_engine_threads_unless_sequential(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STAGES_ENV, mode)
    threads: dict[int, str] = {}

    def run(cases: pl.DataFrame) -> Partition:
        threads[int(cases["caseid"][0])] = threading.current_thread().name
        frame = cases.select("caseid", pl.lit(0, pl.Int64).alias("group_id"))
        return Partition(frame=frame, groups=1, leftovers=0, forced=0, failed_groups=0, invalid_groups=0,
                         first_seed=0, merged_groups=0)  # fmt: skip

    got = with_outcome_strata(seriousness_strata(STRATA_CASES, STRATA_DEMO, STRATA_P, {}, k=5), run)
    assert got.frame.get_column("group_id").to_list() == [0] * 6 + [1] * 6  # the same partition either way
    main = threading.main_thread().name
    # concurrent: two worker threads take the strata, largest first (strata.with_outcome_strata)
    workers = {"faers-anon engine 0", "faers-anon engine 1"}
    assert set(threads) == {1, 7}
    assert set(threads.values()) <= (workers if mode == "concurrent" else {main})


def test_outcome_strata_need_case_groups_and_are_recorded_only_when_on() -> None:
    assert AnonymizeConfig().parameters()["outcome_strata"] is True  # the default (docs/outcomes.md)
    assert "outcome_strata" not in AnonymizeConfig(outcome_strata=False).parameters()
    # a report-unit model or a method has no case groups to stratify: the run is whole, and says so
    assert AnonymizeConfig(outcome_strata=True, model="k-anonymity").outcome_strata is False
    assert "outcome_strata" not in AnonymizeConfig(method="ra").parameters()


def test_the_demo_release_with_outcome_strata_never_releases_star(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Demo, k 5, θ 0.4, the defaults (``death`` + frequency + strata): every group is serious or not,
    and it verifies."""
    root = tmp_path_factory.mktemp("outcome-strata")
    ingested = ingest_quarters([demo_source()], root / "ingested").out
    config = AnonymizeConfig(k=5, theta=0.4)
    api.anonymize(ingested, root / "release", config=config)
    outcome = pl.read_parquet(root / "release" / "parquet" / "demo.parquet").get_column("outcome")
    assert set(outcome.unique()) <= {"serious", "non-serious", "other serious"}
    assert verify_release(root / "release").ok
