"""Verifier (SPEC §5, §8): hand-built release folders with hand-worked answers."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faers_anon.errors import ConfigError, InputError
from faers_anon.release.writer import write_release
from faers_anon.verify.verifier import Verdict, verify_release

# A group tuple: (age_group, age_min, age_max, sex, wt_min, wt_max)
ADULT_F = ("Adult", 19.0, 45.0, "F", 50.0, 70.0)
AGED_M = ("Aged", 65.0, 80.0, "M", None, None)
MISSING = ("missing", None, None, None, None, None)
KNOWLEDGE = [("D", "Headache", 0.5), ("D", "Fever", 0.5)]  # E(D) = {Headache, Fever}, w = 1/|E(D)|
THRESHOLDS = [("HEADACHE", 0.6), ("FEVER", 0.6), ("NAUSEA", 0.6)]


def verify_rules(release: Path, **options: object) -> Verdict:
    """The privacy rules on a hand-built folder, which has no certificate, counts or ascii copy: the
    integrity rules are tested on the writer's releases (below, test_forgeries.py, test_certificate.py)."""
    return verify_release(release, check_hashes=False, **options)  # type: ignore[arg-type]


def make_release(
    root: Path,
    demo: list[tuple[int, int, tuple[object, ...]]],
    *,
    drug: list[tuple[int, str]] = (),  # type: ignore[assignment]
    reac: list[tuple[int, str]] = (),  # type: ignore[assignment]
    indi: list[tuple[int, str]] = (),  # type: ignore[assignment]
    knowledge: list[tuple[str, str, float]] = KNOWLEDGE,
    thresholds: list[tuple[str, float]] = THRESHOLDS,
    parameters: dict[str, object] | None = None,
    ascii_only: bool = False,
) -> Path:
    """A release folder written by hand: demo rows are (primaryid, caseid, QID tuple)."""
    root.mkdir(parents=True)
    schema = {"primaryid": pl.Int64, "caseid": pl.Int64, "age_group": pl.String, "age_min": pl.Float64,
              "age_max": pl.Float64, "sex": pl.String, "wt_min": pl.Float64,
              "wt_max": pl.Float64}  # fmt: skip
    tables = {
        "demo": pl.DataFrame([(p, c, *q) for p, c, q in demo], schema=schema, orient="row"),
        "drug": pl.DataFrame(list(drug), schema={"caseid": pl.Int64, "drug_key": pl.String}, orient="row"),
        "reac": pl.DataFrame(list(reac), schema={"caseid": pl.Int64, "pt": pl.String}, orient="row"),
        "indi": pl.DataFrame(list(indi), schema={"caseid": pl.Int64, "indi_pt": pl.String}, orient="row"),
    }
    for name, frame in tables.items():
        if ascii_only:
            (root / "ascii").mkdir(exist_ok=True)
            frame.write_csv(root / "ascii" / f"{name.upper()}24Q1.txt", separator="$", quote_style="never")
        else:
            (root / "parquet").mkdir(exist_ok=True)
            frame.write_parquet(root / "parquet" / f"{name}.parquet")
    pl.DataFrame(knowledge, schema=["drug_key", "disease", "weight"], orient="row").write_csv(
        root / "knowledge.csv"
    )
    pl.DataFrame(thresholds, schema=["value", "theta"], orient="row").write_csv(root / "thresholds.csv")
    manifest = {"parameters": parameters if parameters is not None else {"k": 2}}
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def worked_release(root: Path, **options: object) -> Path:
    """Group ADULT_F: case 1 takes D, case 2 has indication Headache → conf(HEADACHE) = (0.5 + 1) / 2 = 0.75.
    Group AGED_M: case 3 has reaction Nausea, case 4 nothing → conf(NAUSEA) = 0.5; conf(HEADACHE) = 0."""
    return make_release(
        root,
        [(11, 1, ADULT_F), (21, 2, ADULT_F), (22, 2, ADULT_F), (31, 3, AGED_M), (41, 4, AGED_M)],
        drug=[(1, "D")],
        indi=[(2, "Headache")],
        reac=[(3, "Nausea")],
        **options,  # type: ignore[arg-type]
    )


def test_worked_example_conf_above_theta_is_a_violation(tmp_path: Path) -> None:
    verdict = verify_rules(worked_release(tmp_path / "r"))
    assert not verdict.ok
    assert (verdict.k, verdict.n_cases, verdict.n_reports, verdict.n_groups) == (2, 4, 5, 2)
    assert verdict.violations.select("rule", "detail").rows() == [
        ("theta", "conf(HEADACHE) = 0.75 > theta 0.6")
    ]
    assert verdict.violations["qid"][0] == (
        "age_group=Adult, age_min=19.0, age_max=45.0, sex=F, wt_min=50.0, wt_max=70.0"
    )
    assert (verdict.n_dangerous, verdict.dr) == (1, 0.5)
    assert verdict.group_sizes.rows() == [(2, 2)]


def test_conf_equal_to_theta_passes_and_tolerance_is_tight(tmp_path: Path) -> None:
    exact = [("HEADACHE", 0.75), ("FEVER", 0.6), ("NAUSEA", 0.6)]
    assert verify_rules(worked_release(tmp_path / "a", thresholds=exact)).ok
    below = [("HEADACHE", 0.7499999), ("NAUSEA", 0.5), ("FEVER", 1.0)]
    verdict = verify_rules(worked_release(tmp_path / "b", thresholds=below))
    assert verdict.violations["rule"].to_list() == ["theta"]


def test_a_valid_release_is_accepted(tmp_path: Path) -> None:
    listed = [("HEADACHE", 0.8), ("NAUSEA", 0.5), ("FEVER", 1.0)]
    verdict = verify_rules(worked_release(tmp_path / "r", thresholds=listed))
    assert verdict.ok and verdict.violations.height == 0 and verdict.dr == 0.0
    assert "OK MS(k=2, θ*)-bounding" in verdict.summary()


def test_sensitive_attributes_follow_the_manifest(tmp_path: Path) -> None:
    only_reactions = {"k": 2, "sensitive": ["reactions"]}  # case 2's indication no longer counts: conf = 0.25
    assert verify_rules(worked_release(tmp_path / "a", parameters=only_reactions)).ok
    verdict = verify_rules(worked_release(tmp_path / "b"), sensitive=["indi_pt"])
    assert verdict.violations["detail"].to_list() == ["conf(HEADACHE) = 0.75 > theta 0.6"]


def test_a_group_below_k_is_a_violation(tmp_path: Path) -> None:
    release = worked_release(tmp_path / "r", thresholds=[("HEADACHE", 1.0), ("FEVER", 1.0), ("NAUSEA", 1.0)])
    verdict = verify_rules(release, k=3)
    assert verdict.violations.select("group", "rule", "detail").rows() == [
        (0, "k", "2 distinct cases < k = 3"),
        (1, "k", "2 distinct cases < k = 3"),
        (None, "stated", "k: the release says 2, the agency states 3"),  # the stated k wins, named
    ]
    assert verify_rules(release).ok  # the manifest's k = 2; the two reports of case 2 count once


def test_a_case_split_across_two_groups_is_a_violation(tmp_path: Path) -> None:
    release = make_release(
        tmp_path / "r",
        [(11, 1, ADULT_F), (12, 1, AGED_M), (21, 2, ADULT_F), (31, 3, AGED_M)],
        thresholds=[],
    )
    verdict = verify_rules(release)
    assert verdict.violations.select("group", "rule", "detail").rows() == [
        (0, "case_split", "caseid 1 has reports in groups 0, 1")
    ]


def test_missing_qids_form_their_own_group(tmp_path: Path) -> None:
    release = make_release(
        tmp_path / "r", [(11, 1, MISSING), (21, 2, MISSING), (31, 3, ADULT_F)], thresholds=[]
    )
    verdict = verify_rules(release)
    assert verdict.n_groups == 2
    assert verdict.violations.select("rule", "detail").rows() == [("k", "1 distinct cases < k = 2")]
    assert verdict.violations["qid"][0].startswith("age_group=Adult")
    assert verdict.group_sizes.rows() == [(1, 1), (2, 1)]


def test_terms_match_by_canonical_key(tmp_path: Path) -> None:
    release = make_release(
        tmp_path / "r",
        [(11, 1, ADULT_F), (21, 2, ADULT_F)],
        drug=[(1, " d ")],
        indi=[(2, "  head   ache ")],
        knowledge=[("D", "Head Ache", 1.0)],
        thresholds=[("HEAD ACHE", 0.9), ("head  ache", 0.95)],  # listed twice: the smaller θ holds
    )
    assert verify_rules(release).violations["detail"].to_list() == ["conf(HEAD ACHE) = 1.0 > theta 0.9"]


def test_ascii_only_release_gives_the_same_verdict(tmp_path: Path) -> None:
    from_parquet = verify_rules(worked_release(tmp_path / "p"))
    from_ascii = verify_rules(worked_release(tmp_path / "a", ascii_only=True))
    assert from_ascii.violations.select("group", "rule", "detail").equals(
        from_parquet.violations.select("group", "rule", "detail")
    )
    assert (from_ascii.dr, from_ascii.n_groups) == (from_parquet.dr, from_parquet.n_groups)


def test_without_k_anywhere_is_a_config_error(tmp_path: Path) -> None:
    release = worked_release(tmp_path / "r", parameters={})
    with pytest.raises(ConfigError, match="no k given"):
        verify_rules(release)
    assert verify_rules(release, k=2).k == 2
    with pytest.raises(ConfigError, match="unknown attribute"):
        verify_rules(release, k=2, sensitive=["drugs"])


def test_malformed_files_are_one_line_input_errors(tmp_path: Path) -> None:
    release = worked_release(tmp_path / "r")
    (release / "thresholds.csv").write_text("value,theta\nHEADACHE,0.6\nFEVER,high\n")
    with pytest.raises(InputError, match=r"^thresholds.csv:3: theta: 'high' is not a number in \[0, 1\]$"):
        verify_rules(release)
    (release / "parquet" / "reac.parquet").unlink()
    (release / "thresholds.csv").write_text("value,theta\n")
    with pytest.raises(InputError, match="missing table reac"):
        verify_rules(release)
    with pytest.raises(InputError, match="not a release folder"):
        verify_rules(tmp_path / "nowhere")


def _ingested(root: Path) -> Path:
    """The smallest ingested folder of the contract: cases 1–3, each with two versions (a group whose cases
    have different numbers of reports fails rule report_count, verify.versions)."""
    root.mkdir()
    keys = {"primaryid": [11, 12, 21, 22, 31, 32], "caseid": [1, 1, 2, 2, 3, 3], "quarter": ["2024Q1"] * 6}
    pl.DataFrame(
        {
            **keys,
            "sex": ["F", "F", "M", "M", None, None],
            "age_years": [30.0, 31.0, 40.0, 40.0, None, None],
            "is_latest": [0, 1, 0, 1, 0, 1],
        }
    ).with_columns(pl.col("is_latest").cast(pl.Boolean)).write_parquet(root / "reports.parquet")
    pl.DataFrame({**keys, "drug_key": ["D", "D", "X", "X", "X", "X"]}).write_parquet(root / "drug.parquet")
    pl.DataFrame({**keys, "pt": ["Fever", "Fever", "Rash", "Rash", "Rash", "Rash"]}).write_parquet(
        root / "reac.parquet"
    )
    pl.DataFrame({**keys, "indi_pt": ["Pain"] * 6}).write_parquet(root / "indi.parquet")
    for table in ("outc", "ther", "rpsr"):
        pl.DataFrame(keys).write_parquet(root / f"{table}.parquet")
    return root


def test_the_writers_release_verifies_and_tampering_is_caught(tmp_path: Path) -> None:
    partition = pl.DataFrame(
        {"caseid": [1, 2, 3], "group_id": [0, 0, 0], "age_group": ["Adult"] * 3, "age_min": [19.0] * 3,
         "age_max": [None] * 3, "sex": ["*"] * 3, "wt_min": [None] * 3, "wt_max": [None] * 3},
        schema_overrides={"age_max": pl.Float64, "wt_min": pl.Float64, "wt_max": pl.Float64},
    )  # fmt: skip
    written = write_release(
        _ingested(tmp_path / "in"),
        partition,
        tmp_path / "rel",
        knowledge=pl.DataFrame(
            {"drug_key": ["D", "D"], "disease": ["Headache", "Fever"], "weight": [0.5, 0.5]}
        ),
        thresholds=pl.DataFrame(
            {"value": ["FEVER", "HEADACHE", "PAIN", "RASH"], "theta": [0.6, 0.6, 1.0, 1.0]}
        ),
        parameters={"k": 3, "seed": 1, "sensitive": ["indications", "reactions"]},
    )
    verdict = verify_release(written.path)  # conf(FEVER) = 1/3, conf(HEADACHE) = 0.5/3
    assert verdict.ok, verdict.summary()
    assert (verdict.n_cases, verdict.n_reports, verdict.n_groups) == (3, 6, 1)
    demo = pl.read_parquet(written.path / "parquet" / "demo.parquet")
    third = dict(written.ids.cases().iter_rows())[3]  # case 3 by its pseudonym
    tampered = demo.with_columns(sex=pl.when(pl.col("caseid") == third).then(pl.lit("F")).otherwise("sex"))
    tampered.write_parquet(written.path / "parquet" / "demo.parquet")
    verdict = verify_release(written.path)  # the parquet copy now differs from the ascii copy, too
    assert sorted(set(verdict.violations["rule"])) == ["ascii", "integrity", "k"]
    assert (
        "parquet/demo.parquet: SHA-256 differs from manifest.json" in verdict.violations["detail"].to_list()
    )
    assert verify_release(written.path, check_hashes=False).violations["rule"].to_list() == ["k", "k"]


@st.composite
def _releases(draw: st.DrawFn) -> tuple[list[tuple[int, int]], dict[int, set[str]], dict[int, set[str]]]:
    n = draw(st.integers(1, 8))
    groups = [(c, draw(st.integers(0, 2))) for c in range(1, n + 1)]
    own = {c: draw(st.sets(st.sampled_from(["A", "B"]), max_size=2)) for c in range(1, n + 1)}
    drugs = {c: draw(st.sets(st.sampled_from(["D1", "D2"]), max_size=2)) for c in range(1, n + 1)}
    return groups, own, drugs


@settings(max_examples=30, deadline=None)
@given(_releases(), st.floats(0.05, 1.0), st.integers(1, 4))
def test_property_verdict_matches_a_direct_computation(
    drawn: tuple[list[tuple[int, int]], dict[int, set[str]], dict[int, set[str]]], theta: float, k: int
) -> None:
    groups, own, drugs = drawn
    weights = {("D1", "A"): 0.5, ("D1", "B"): 0.5, ("D2", "A"): 0.3}
    tuples = {0: ADULT_F, 1: AGED_M, 2: MISSING}
    members: dict[int, list[int]] = {}
    for case, g in groups:
        members.setdefault(g, []).append(case)
    dangerous = 0
    for cases in members.values():
        for value in ("A", "B"):
            total = 0.0
            for c in cases:
                reached = [w for (d, s), w in weights.items() if s == value and d in drugs[c]]
                total += 1.0 if value in own[c] else max(reached, default=0.0)
            if total / len(cases) > theta + 1e-9:
                dangerous += 1
                break
    small = sum(1 for cases in members.values() if len(cases) < k)
    with tempfile.TemporaryDirectory() as tmp:
        release = make_release(
            Path(tmp) / "r",
            [(c * 10, c, tuples[g]) for c, g in groups],
            drug=[(c, d) for c in drugs for d in sorted(drugs[c])],
            reac=[(c, v) for c in own for v in sorted(own[c]) if v == "A"],
            indi=[(c, v) for c in own for v in sorted(own[c]) if v == "B"],
            knowledge=[(d, s, w) for (d, s), w in weights.items()],
            thresholds=[("A", theta), ("B", theta)],
            parameters={"k": k},
        )
        verdict = verify_rules(release)
    assert verdict.n_groups == len(members)
    assert verdict.n_dangerous == dangerous
    assert verdict.dr == pytest.approx(dangerous / len(members))
    assert verdict.violations.filter(pl.col("rule") == "k").height == small
    assert verdict.ok == (dangerous == 0 and small == 0)
    assert sum(verdict.group_sizes["groups"]) == len(members)


def test_extra_qid_columns_recorded_by_the_writer_split_groups(tmp_path: Path) -> None:
    partition = pl.DataFrame(
        {"caseid": [1, 2, 3], "group_id": [0, 0, 1], "age_group": ["Adult"] * 3, "age_min": [19.0] * 3,
         "age_max": [None] * 3, "sex": ["*"] * 3, "wt_min": [None] * 3, "wt_max": [None] * 3,
         "occr_country": ["US", "US", "EU"]},
        schema_overrides={"age_max": pl.Float64, "wt_min": pl.Float64, "wt_max": pl.Float64},
    )  # fmt: skip
    written = write_release(
        _ingested(tmp_path / "in"),
        partition,
        tmp_path / "rel",
        knowledge=pl.DataFrame({"drug_key": ["D"], "disease": ["Headache"], "weight": [0.5]}),
        thresholds=pl.DataFrame({"value": ["FEVER", "HEADACHE", "PAIN", "RASH"], "theta": [1.0] * 4}),
        parameters={"k": 2},
    )
    demo = pl.read_parquet(written.path / "parquet" / "demo.parquet")
    case = dict(written.ids.cases().iter_rows())  # raw caseid → pseudonym
    by_case = dict(zip(demo["caseid"], demo["occr_country"], strict=False))
    assert by_case == {case[1]: "US", case[2]: "US", case[3]: "EU"}
    verdict = verify_release(written.path)
    assert verdict.n_groups == 2
    assert verdict.violations.select("rule", "detail").rows() == [("k", "1 distinct cases < k = 2")]
    assert "occr_country=EU" in verdict.violations["qid"][0]
    # without the extra QID: one group of 3 cases, but case 3 alone on all its released DEMO fields (issue 18)
    lone = verify_release(written.path, qids=[])
    assert lone.violations.select("rule").to_series().to_list() == ["demo_fields"]
    detail = f"1 case(s) share all 18 released DEMO fields of case {case[3]} (k = 2)"  # outcome, quarter
    assert lone.violations["detail"][0] == detail
