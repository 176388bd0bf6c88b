"""The release ledger and the composition-safe placement, on hand-built releases with worked answers.

Release 1 (k = 2) published six cases A–F (pseudonyms 1–6) in three QID-groups:
{A, B, C} region (Adult 25-44, 25, 45, F, -, -), {D, E} (Adult 45-64, 45, 65, M, -, -),
{F} alone would be below k, so F shares D/E's standard columns but differs in the extra QID
``fda_dt`` ("2024" vs "2023"): the verifier's and the ledger's groups use the whole tuple, so F is a
group of its own (group sizes 3, 2, 1).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from faers_anon.anonymize.pipeline import AnonymizeConfig
from faers_anon.errors import ConfigError, InputError
from faers_anon.keys import AgencyKey
from faers_anon.series.ledger import check_apart, history, ledger_entries, open_ledger, stage
from faers_anon.series.placement import over_theta, plan_series, pseudonym_ids
from faers_anon.series.state import state_from_entries
from faers_anon.series.step import exposed_probabilities
from faers_anon.series.units import intersection_pairs

KEY = AgencyKey.from_secret(bytes(range(32)))
OTHER = AgencyKey.from_secret(bytes(range(1, 33)))
ADULT, MIDDLE = ("Adult, 25-44 years", 25.0, 45.0), ("Middle Aged, 45-64 years", 45.0, 65.0)


def _release(folder: Path, rows: list[tuple[int, tuple[str, float, float], str, str, list[str]]]) -> Path:
    """A minimal release folder: DEMO (one report per case), REAC, and a manifest naming the QIDs."""
    (folder / "parquet").mkdir(parents=True)
    demo = pl.DataFrame(
        [(c * 1000 + 1, c, a[0], a[1], a[2], sex, None, None, dt) for c, a, sex, dt, _ in rows], orient="row",
        schema={"primaryid": pl.Int64, "caseid": pl.Int64, "age_group": pl.Utf8, "age_min": pl.Float64,
                "age_max": pl.Float64, "sex": pl.Utf8, "wt_min": pl.Float64, "wt_max": pl.Float64,
                "fda_dt": pl.Utf8},
    )  # fmt: skip
    demo.write_parquet(folder / "parquet" / "demo.parquet")
    reac = [(c * 1000 + 1, c, pt) for c, _, _, _, pts in rows for pt in pts]
    reac_frame = pl.DataFrame(reac, orient="row", schema=["primaryid", "caseid", "pt"])
    reac_frame.write_parquet(folder / "parquet" / "reac.parquet")
    qids = ["age_group", "age_min", "age_max", "sex", "wt_min", "wt_max", "fda_dt"]
    manifest = {"columns": {"demo": {"qid": qids}}, "parameters": {"k": 2}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


@pytest.fixture
def first(tmp_path: Path) -> Path:
    return _release(tmp_path / "r1", [
        (1, ADULT, "F", "2024", ["Pyrexia"]), (2, ADULT, "F", "2024", ["rash"]), (3, ADULT, "F", "2024", []),
        (4, MIDDLE, "M", "2024", ["Death"]), (5, MIDDLE, "M", "2024", []), (6, MIDDLE, "M", "2023", []),
    ])  # fmt: skip


def test_entries_group_on_the_whole_released_tuple(first: Path) -> None:
    entries = ledger_entries(first, 1)
    assert entries.select("caseid", "group_size").rows() == [(1, 3), (2, 3), (3, 3), (4, 2), (5, 2), (6, 1)]
    assert entries.get_column("group").n_unique() == 3
    assert entries.filter(pl.col("caseid") == 2).get_column("reactions").to_list() == [["RASH"]]  # value keys
    assert entries.get_column("reports").to_list()[0] == [1001]


def test_ledger_round_trip_and_refusals(first: Path, tmp_path: Path) -> None:
    folder = tmp_path / "ledger"
    ledger = open_ledger(folder, KEY)
    assert ledger.meta["releases"] == [] and ledger.state.height == 0
    staged = stage(ledger, first, tmp_path / "out", ["2024Q1"], KEY)
    assert not (folder / "ledger.json").exists()  # staged, not committed: still the empty ledger
    staged.commit()
    again = open_ledger(folder, KEY)
    assert again.quarters == ["2024Q1"] and again.state.height == 6 and again.read_entries().height == 6
    # F's tuple (Middle Aged, M, 2023) ranks before D/E's (…, 2024): group 1
    assert again.state.filter(pl.col("caseid") == 6).get_column("history").to_list() == ["1:1"]
    again.check_next(["2024Q2"])  # the next quarter is accepted
    with pytest.raises(InputError, match=r"ends at 2024Q1: release 2024Q2 first \(earlier quarter missing"):
        again.check_next(["2024Q3"])
    with pytest.raises(InputError, match="already lists 2024Q1"):
        again.check_next(["2024Q1"])
    with pytest.raises(InputError, match="another agency key"):
        open_ledger(folder, OTHER)
    for name in ("release-0001.parquet", "state-0001.parquet"):
        file = folder / name
        data = bytearray(file.read_bytes())
        data[100] ^= 1
        file.write_bytes(bytes(data))
    with pytest.raises(InputError, match="release-0001.parquet: SHA-256 mismatch: tampered or corrupt"):
        again.read_entries()  # the release files are checked when read
    with pytest.raises(InputError, match="state-0001.parquet: SHA-256 mismatch: tampered or corrupt"):
        open_ledger(folder, KEY)  # a release reads the last state file only


def test_a_changed_ledger_json_fails_its_mac(first: Path, tmp_path: Path) -> None:
    folder = tmp_path / "ledger"
    stage(open_ledger(folder, KEY), first, tmp_path / "out", ["2024Q1"], KEY).commit()
    meta = json.loads((folder / "ledger.json").read_text())
    meta["releases"][0]["withheld"] = 7
    (folder / "ledger.json").write_text(json.dumps(meta))
    with pytest.raises(InputError, match=r"checksum \(MAC\) mismatch"):
        open_ledger(folder, KEY)


def test_an_aborted_stage_leaves_the_ledger_as_it_was(first: Path, tmp_path: Path) -> None:
    folder = tmp_path / "ledger"
    stage(open_ledger(folder, KEY), first, tmp_path / "out", ["2024Q1"], KEY).commit()
    before = sorted(p.name for p in folder.iterdir())
    stage(open_ledger(folder, KEY), first, tmp_path / "out2", ["2024Q2"], KEY).abort()
    assert sorted(p.name for p in folder.iterdir()) == before
    assert open_ledger(folder, KEY).quarters == ["2024Q1"]


def test_the_ledger_is_never_inside_the_release(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="overlap: the ledger is never published"):
        check_apart(tmp_path / "release" / "ledger", tmp_path / "release")
    check_apart(tmp_path / "ledger", tmp_path / "release")


def _current(rows: list[tuple[int, float | None, str | None]]) -> pl.DataFrame:
    """Super-records (raw caseids) without values."""
    return pl.DataFrame(
        [(c, age, age, sex, None, None, [], [], []) for c, age, sex in rows], orient="row",
        schema={"caseid": pl.Int64, "age_min": pl.Float64, "age_max": pl.Float64, "sex": pl.Utf8,
                "wt_min": pl.Float64, "wt_max": pl.Float64, "indications": pl.List(pl.Utf8),
                "reactions": pl.List(pl.Utf8), "drug_keys": pl.List(pl.Utf8)},
    )  # fmt: skip


def test_placement_bundles_withholds_and_widens() -> None:
    # Raw caseids 11..17; the ledger is built on their pseudonyms under KEY.
    raw = pl.DataFrame({"caseid": [11, 12, 13, 14, 15, 16, 17]})
    p = dict(pseudonym_ids(raw, KEY.pseudonym_key).rows())
    entries = pl.DataFrame(
        [(1, p[11], 0, *ADULT, "F"), (1, p[12], 0, *ADULT, "F"), (1, p[13], 0, *ADULT, "F"),
         (1, p[14], 1, *MIDDLE, "M"), (1, p[15], 1, *MIDDLE, "M")], orient="row",
        schema={"release": pl.UInt32, "caseid": pl.Int64, "group": pl.UInt32, "age_group": pl.Utf8,
                "age_min": pl.Float64, "age_max": pl.Float64, "sex": pl.Utf8},
    ).with_columns(wt_min=pl.lit(None, pl.Float64), wt_max=pl.lit(None, pl.Float64))  # fmt: skip
    # Returning: 11 and 12 (same history: a bundle of 2 = k), 14 alone (withheld below k);
    # 12 is now 50 years old: outside [25, 45), so the bundle's age is widened to the root.
    # Fresh: 16, 17.
    cases = _current([(11, 30.0, "F"), (12, 50.0, "F"), (14, 50.0, "M"), (16, 20.0, "F"), (17, 70.0, "M")])
    none = pl.DataFrame(schema={"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})
    plan = plan_series(cases, entries, KEY.pseudonym_key, k=2, probabilities=lambda _: none, thetas={})
    assert plan.counts == {"fresh": 2, "returning": 3, "bundles": 1, "published_returning": 2,
                           "republished": 0, "withheld": 1, "withheld_small": 1, "withheld_theta": 0,
                           "widened": 2, "placed_k": 1, "placed_2k": 0, "placed_unit": 0,
                           "placed_part": 0, "withheld_earlier": 0}  # fmt: skip
    assert plan.withheld.to_list() == [14]
    frozen = plan.frozen.sort("caseid")
    assert frozen.select("caseid", "age_group", "age_min", "age_max", "sex").rows() == [
        (11, "*", 0.0, None, "F"), (12, "*", 0.0, None, "F")
    ]  # fmt: skip
    # The same bundle over θ: both cases carry DEATH (p = 1), conf = 1 > θ 0.6 → withheld too.
    death = pl.DataFrame({"caseid": [11, 12], "value": ["DEATH", "DEATH"], "p": [1.0, 1.0]})
    plan = plan_series(
        cases, entries, KEY.pseudonym_key, k=2, probabilities=lambda _: death, thetas={"DEATH": 0.6}
    )
    assert plan.counts["withheld_theta"] == 2 and sorted(plan.withheld.to_list()) == [11, 12, 14]
    assert plan.frozen.height == 0


def test_exposure_is_the_union_of_now_and_before() -> None:
    # Case 21 exposed RASH and outcome DE in an earlier release; now it reports only Pyrexia.
    raw = pl.DataFrame({"caseid": [21]})
    ids = pseudonym_ids(raw, KEY.pseudonym_key)
    pseudonym = ids.get_column("pseudonym")[0]
    empty: list[str] = []
    entries = pl.DataFrame(
        {"caseid": [pseudonym], "reactions": [["RASH"]], "indications": [empty], "drug_keys": [empty],
         "outcomes": [["DE"]]},
        schema_overrides={"indications": pl.List(pl.Utf8), "drug_keys": pl.List(pl.Utf8)},
    )  # fmt: skip
    lists = {"indications": pl.List(pl.Utf8), "drug_keys": pl.List(pl.Utf8)}
    now_lists = {"caseid": [21], "reactions": [["PYREXIA"]], "indications": [empty], "drug_keys": [empty]}
    cases = pl.DataFrame(now_lists, schema_overrides=lists)
    knowledge = pl.DataFrame(schema={"drug_key": pl.Utf8, "disease": pl.Utf8, "weight": pl.Float64})
    now = pl.DataFrame({"caseid": [21], "outc_cod": ["HO"]})
    p = exposed_probabilities(cases.join(ids, on="caseid"), entries, knowledge, AnonymizeConfig(), now)
    assert {v for v in p.get_column("value").to_list() if not v.startswith("class:")} == {
        "PYREXIA", "RASH", "outc:DE", "outc:HO"
    }  # fmt: skip
    assert p.get_column("p").to_list() == [1.0] * p.height


def test_a_returning_case_travels_with_its_stored_group_mates() -> None:
    # Release 1 group 0 = {11, 12, 13}. Only 11 returns now. k = 3: alone it is withheld; with the
    # store holding 12 and 13, its unit {11, 12, 13} is published and 12, 13 are republished; if 13
    # is on a DELETE list the unit has 2 < k members and 11 is withheld again.
    raw = pl.DataFrame({"caseid": [11, 12, 13]})
    p = dict(pseudonym_ids(raw, KEY.pseudonym_key).rows())
    entries = pl.DataFrame(
        [(1, p[c], 0, *ADULT, "F", None, None) for c in (11, 12, 13)], orient="row",
        schema={"release": pl.UInt32, "caseid": pl.Int64, "group": pl.UInt32, "age_group": pl.Utf8,
                "age_min": pl.Float64, "age_max": pl.Float64, "sex": pl.Utf8, "wt_min": pl.Float64,
                "wt_max": pl.Float64},
    )  # fmt: skip
    stored = _current([(12, 30.0, "F"), (13, 40.0, "F")]).with_columns(
        pl.Series("pseudonym", [p[12], p[13]]), pl.lit(1, pl.Int64).alias("store")
    )
    none = pl.DataFrame(schema={"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})
    cases = _current([(11, 31.0, "F")])
    alone = plan_series(cases, entries, KEY.pseudonym_key, k=3, probabilities=lambda _: none, thetas={})
    assert alone.withheld.to_list() == [11] and alone.counts["withheld_small"] == 1
    plan = plan_series(cases, entries, KEY.pseudonym_key, k=3, probabilities=lambda _: none, thetas={},
                       stored=stored)  # fmt: skip
    assert plan.withheld.is_empty() and (plan.counts["published_returning"], plan.counts["republished"]) == (
        1,
        2,
    )
    assert sorted(plan.republish.rows()) == [(12, 1), (13, 1)]
    assert plan.frozen.select("caseid", "age_group", "age_min", "age_max").sort("caseid").rows() == [
        (11, *ADULT),
        (12, *ADULT),
        (13, *ADULT),
    ]  # fmt: skip (the frozen region: every member's age lies in [25, 45))
    gone = pl.Series([p[13]])
    again = plan_series(cases, entries, KEY.pseudonym_key, k=3, probabilities=lambda _: none, thetas={},
                        stored=stored, deleted=gone)  # fmt: skip
    assert again.withheld.to_list() == [11] and again.republish.is_empty()


def test_intersections_follow_contained_histories_not_prefixes() -> None:
    members = pl.DataFrame({"unit": ["1:0"] * 4, "history": ["1:0", "1:0|2:3", "1:0|3:1", "1:0|2:3|3:1"]})
    pairs = {(d, e) for _, d, e in intersection_pairs(members).rows()}
    assert pairs == {
        ("1:0", "1:0"), ("1:0", "1:0|2:3"), ("1:0", "1:0|3:1"), ("1:0", "1:0|2:3|3:1"),
        ("1:0|2:3", "1:0|2:3"), ("1:0|2:3", "1:0|2:3|3:1"),
        ("1:0|3:1", "1:0|3:1"), ("1:0|3:1", "1:0|2:3|3:1"),  # contained, though not a prefix
        ("1:0|2:3|3:1", "1:0|2:3|3:1"),
    }  # fmt: skip


def test_theta_is_checked_on_every_members_intersection() -> None:
    # Unit 1:0 = A, B (history 1:0) and C, D (1:0|2:3). C and D both carry DEATH: conf over the unit
    # is 2/4 = 0.5 <= 0.6, but an attacker following C intersects to {C, D}: conf 1.0 > 0.6.
    members = pl.DataFrame({"caseid": [1, 2, 3, 4], "unit": ["1:0"] * 4,
                            "history": ["1:0", "1:0", "1:0|2:3", "1:0|2:3"]})  # fmt: skip
    death = pl.DataFrame({"caseid": [3, 4], "value": ["DEATH", "DEATH"], "p": [1.0, 1.0]})
    assert over_theta(members, death, {"DEATH": 0.6}) == frozenset({"1:0"})
    spread = pl.DataFrame({"caseid": [1, 3], "value": ["DEATH", "DEATH"], "p": [1.0, 1.0]})
    assert over_theta(members, spread, {"DEATH": 0.6}) == frozenset()  # conf 0.5 over I(A) and I(C)


def test_config_key_ledger_is_read_relative_to_the_file(tmp_path: Path) -> None:
    from faers_anon.release.config import build_release_config, load_toml

    (tmp_path / "release.toml").write_text('[release]\nledger = "private/ledger"\nk = 3\n')
    config = build_release_config(file_options=load_toml(tmp_path / "release.toml"))
    assert config.ledger == (tmp_path / "private" / "ledger").resolve() and config.anonymize.k == 3


def _entries(rows: list[tuple[int, int, int]], p: dict[int, int]) -> pl.DataFrame:
    """Ledger rows (release, raw caseid, group), all in the ADULT/F region."""
    return pl.DataFrame(
        [(r, p[c], g, *ADULT, "F", None, None) for r, c, g in rows], orient="row",
        schema={"release": pl.UInt32, "caseid": pl.Int64, "group": pl.UInt32, "age_group": pl.Utf8,
                "age_min": pl.Float64, "age_max": pl.Float64, "sex": pl.Utf8, "wt_min": pl.Float64,
                "wt_max": pl.Float64},
    )  # fmt: skip


def _stored(rows: list[tuple[int, int, list[str]]], p: dict[int, int]) -> pl.DataFrame:
    """Stored super-records (raw caseid, store, reactions), age 30, F."""
    return pl.DataFrame(
        [(p[c], c, s, 30.0, 30.0, "F", None, None, [], reac, []) for c, s, reac in rows], orient="row",
        schema={"pseudonym": pl.Int64, "caseid": pl.Int64, "store": pl.Int64, "age_min": pl.Float64,
                "age_max": pl.Float64, "sex": pl.Utf8, "wt_min": pl.Float64, "wt_max": pl.Float64,
                "indications": pl.List(pl.Utf8), "reactions": pl.List(pl.Utf8),
                "drug_keys": pl.List(pl.Utf8)},
    )  # fmt: skip


def test_a_bundle_republishes_only_what_each_history_needs() -> None:
    # Release 1 group 0 = 11..17; release 2 group 1 = {15, 16, 17}. Now 11 (history 1:0) and 15
    # (1:0|2:1) return, k = 3. Class 1:0|2:1 holds 1 returning case and needs 3 in its I: 16, 17.
    # Class 1:0 counts the 3 of 1:0|2:1 in its I (their pairs contain 1:0) plus 11: 4 >= 3, yet a
    # class is filled to k from its own returning count: sup_r(1:0) = 2 (11 and 15), so 1 companion
    # of history 1:0, the one with the fewest exposed values (12: none). Whole unit: 5 republished;
    # here 3 (12, 16, 17).
    p = dict(pseudonym_ids(pl.DataFrame({"caseid": list(range(11, 18))}), KEY.pseudonym_key).rows())
    entries = _entries([(1, c, 0) for c in range(11, 18)] + [(2, c, 1) for c in (15, 16, 17)], p)
    stored = _stored([(12, 1, []), (13, 1, ["RASH"]), (14, 1, ["RASH"]), (16, 2, []), (17, 2, [])], p)
    none = pl.DataFrame(schema={"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})
    cases = _current([(11, 30.0, "F"), (15, 30.0, "F")])
    plan = plan_series(cases, entries, KEY.pseudonym_key, k=3, probabilities=lambda _: none, thetas={},
                       stored=stored)  # fmt: skip
    assert plan.withheld.is_empty()
    assert sorted(plan.republish.rows()) == [(12, 1), (16, 2), (17, 2)]
    assert (plan.counts["placed_k"], plan.counts["republished"], plan.counts["bundles"]) == (1, 3, 1)


def test_a_bundle_over_theta_grows_before_the_case_is_withheld() -> None:
    # Release 1 group 0 = 11..18. 11 returns with DEATH (theta 0.5). The companions with the fewest
    # exposed values are 12 and 13, which carry DEATH too: {11, 12, 13} has conf 3/3 > 0.5. Filled
    # to 2k = 6: 12, 13 and three RASH-only cases: conf 3/6 = 0.5 <= 0.5, published. With theta 0.4
    # even the whole unit (3/8 = 0.375 <= 0.4) is needed; with theta 0.3 the case is withheld.
    p = dict(pseudonym_ids(pl.DataFrame({"caseid": list(range(11, 19))}), KEY.pseudonym_key).rows())
    entries = _entries([(1, c, 0) for c in range(11, 19)], p)
    rash = ["RASH", "PYREXIA"]
    stored = _stored([(12, 1, ["DEATH"]), (13, 1, ["DEATH"])] + [(c, 1, rash) for c in range(14, 19)], p)
    death = pl.DataFrame({"caseid": [11, 12, 13], "value": ["DEATH"] * 3, "p": [1.0] * 3})

    def probabilities(members: pl.DataFrame) -> pl.DataFrame:
        return death.join(members.select("caseid"), on="caseid", how="semi")

    cases = _current([(11, 30.0, "F")])
    plans = {theta: plan_series(cases, entries, KEY.pseudonym_key, k=3, probabilities=probabilities,
                                thetas={"DEATH": theta}, stored=stored)
             for theta in (0.5, 0.4, 0.3)}  # fmt: skip
    assert plans[0.5].counts["placed_2k"] == 1 and plans[0.5].counts["republished"] == 5
    assert {12, 13} <= set(plans[0.5].republish.get_column("caseid").to_list())
    assert plans[0.4].counts["placed_unit"] == 1 and plans[0.4].counts["republished"] == 7
    assert plans[0.3].withheld.to_list() == [11] and plans[0.3].counts["withheld_theta"] == 1


def test_the_state_is_the_history_last_region_and_values(first: Path, tmp_path: Path) -> None:
    # Release 2 publishes case 2 again (now Middle Aged, M, reaction DEATH) with a new case 7: its
    # tuple (Middle Aged, M, 2024) is group 0 of release 2 for both. State after release 2: case 2 has
    # history 1:0|2:0, the region of release 2 and reactions RASH (release 1) and DEATH (release 2);
    # case 1 (not in release 2) keeps 1:0 and its release-1 row; case 7 is new with 2:0. Rebuilding
    # from the release files (a ledger without state files) gives the same frame.
    second = _release(tmp_path / "r2", [(2, MIDDLE, "M", "2024", ["Death"]), (7, MIDDLE, "M", "2024", [])])
    folder = tmp_path / "ledger"
    stage(open_ledger(folder, KEY), first, tmp_path / "out1", ["2024Q1"], KEY).commit()
    stage(open_ledger(folder, KEY), second, tmp_path / "out2", ["2024Q2"], KEY).commit()
    ledger = open_ledger(folder, KEY)
    state = ledger.state.select("caseid", "history", "last", "age_group", "reactions")
    rows = {c: r for c, *r in state.rows()}
    assert rows[2] == ["1:0|2:0", 2, MIDDLE[0], ["DEATH", "RASH"]]
    assert rows[1] == ["1:0", 1, ADULT[0], ["PYREXIA"]] and rows[7] == ["2:0", 2, MIDDLE[0], []]
    assert ledger.state.height == 7 and ledger.read_entries().height == 8  # 6 + 2 rows, 7 cases
    assert state_from_entries(ledger.read_entries()).equals(ledger.state)
    assert history(ledger.state).equals(history(ledger.read_entries()).sort("caseid"))


def test_a_ledger_file_written_in_chunks_reads_back_the_same_rows(tmp_path: Path) -> None:
    """:func:`ledger._write` hands the writer chunks of 65,536 rows: more rows than that, with list columns
    and nulls, and fewer, read back equal."""
    from faers_anon.series.ledger import _CHUNK, _write

    n = 2 * _CHUNK + 123
    frame = pl.DataFrame({
        "caseid": pl.Series(range(n), dtype=pl.Int64),
        "history": [f"1:{i % 97}|3:{i % 13}" for i in range(n)],
        "reactions": [[f"R{i % 7}", f"R{i % 11 + 7}"] if i % 5 else [] for i in range(n)],
        "wt_min": [None if i % 3 == 0 else float(i % 90) for i in range(n)],
    })  # fmt: skip
    for rows in (frame, frame.head(100)):
        _write(rows, tmp_path / "f.parquet")
        back = pl.read_parquet(tmp_path / "f.parquet")
        assert back.height == rows.height and back.equals(rows)


def _unit(groups: dict[int, list[tuple[int, int]]]) -> tuple[dict[int, int], pl.DataFrame]:
    """Ledger entries for raw caseids (``caseid`` → [(release, group), …]), all of one Adult F region."""
    raw = pl.DataFrame({"caseid": sorted(groups)})
    p = dict(pseudonym_ids(raw, KEY.pseudonym_key).rows())
    rows = [(r, p[c], g, *ADULT, "F") for c, pairs in groups.items() for r, g in pairs]
    entries = pl.DataFrame(rows, orient="row", schema={
        "release": pl.UInt32, "caseid": pl.Int64, "group": pl.UInt32, "age_group": pl.Utf8,
        "age_min": pl.Float64, "age_max": pl.Float64, "sex": pl.Utf8,
    }).with_columns(wt_min=pl.lit(None, pl.Float64), wt_max=pl.lit(None, pl.Float64))  # fmt: skip
    return p, entries


def test_a_unit_less_its_class_below_k_is_published() -> None:
    """k = 3. Release 1 put G, A, B, C, D, E in group 5; release 2 put A–D in group 7 and E alone in
    group 8. All six return. The unit 1:5 has classes 1:5 {G}, 1:5|2:7 {A–D}, 1:5|2:8 {E}: I(E) = {E}
    is below k, so the unit whole fails; without E's class I(G) = {G, A–D} (5) and I(A) = {A–D} (4)
    hold k: G and A–D are published, E is withheld (below k)."""
    _, entries = _unit({21: [(1, 5)], 22: [(1, 5), (2, 7)], 23: [(1, 5), (2, 7)], 24: [(1, 5), (2, 7)],
                        25: [(1, 5), (2, 7)], 26: [(1, 5), (2, 8)]})  # fmt: skip
    cases = _current([(c, 30.0, "F") for c in range(21, 27)])
    none = pl.DataFrame(schema={"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})
    plan = plan_series(cases, entries, KEY.pseudonym_key, k=3, probabilities=lambda _: none, thetas={})
    assert sorted(plan.frozen.get_column("caseid").to_list()) == [21, 22, 23, 24, 25]
    assert plan.frozen.get_column("bundle").n_unique() == 1 and plan.withheld.to_list() == [26]
    levels = (plan.counts["placed_part"], plan.counts["placed_unit"], plan.counts["withheld_small"])
    assert levels == (1, 0, 1)
    assert plan.counts["published_returning"] == 5 and plan.counts["withheld_theta"] == 0


def test_classes_below_k_are_dropped_until_none_is_left() -> None:
    """k = 3, one unit 1:5: G, H, I (1:5), A, B (1:5|2:7), C (1:5|2:7|3:9). I(C) = {C}: dropped;
    then I(A) = {A, B}: dropped too (kept after one pass it would publish A and B with I of 2); then
    I(G) = {G, H, I} = 3 holds. With only G and H in 1:5, nothing is left: the whole unit is withheld."""
    groups = {31: [(1, 5)], 32: [(1, 5)], 33: [(1, 5)], 34: [(1, 5), (2, 7)], 35: [(1, 5), (2, 7)],
              36: [(1, 5), (2, 7), (3, 9)]}  # fmt: skip
    none = pl.DataFrame(schema={"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})
    _, entries = _unit(groups)
    cases = _current([(c, 30.0, "F") for c in groups])
    plan = plan_series(cases, entries, KEY.pseudonym_key, k=3, probabilities=lambda _: none, thetas={})
    assert sorted(plan.frozen.get_column("caseid").to_list()) == [31, 32, 33]
    assert sorted(plan.withheld.to_list()) == [34, 35, 36] and plan.counts["withheld_small"] == 3
    _, entries = _unit({c: pairs for c, pairs in groups.items() if c != 33})
    cases = cases.filter(pl.col("caseid") != 33)
    plan = plan_series(cases, entries, KEY.pseudonym_key, k=3, probabilities=lambda _: none, thetas={})
    assert plan.frozen.is_empty() and sorted(plan.withheld.to_list()) == [31, 32, 34, 35, 36]
    assert plan.counts["placed_part"] == 0 and plan.counts["withheld_small"] == 5


def test_a_unit_in_part_is_still_checked_against_theta() -> None:
    """The first test's unit less E, with G holding a protected value at P 1: conf(I(G) → s) = 1/5 ≤ 0.25
    passes; at θ 0.15 the part fails θ* and the whole unit is withheld (counted below k: the class that
    kept it from being placed whole is)."""
    _, entries = _unit({21: [(1, 5)], 22: [(1, 5), (2, 7)], 23: [(1, 5), (2, 7)], 24: [(1, 5), (2, 7)],
                        25: [(1, 5), (2, 7)], 26: [(1, 5), (2, 8)]})  # fmt: skip
    cases = _current([(c, 30.0, "F") for c in range(21, 27)])
    held = pl.DataFrame({"caseid": [21], "value": ["HIV"], "p": [1.0]})

    def probabilities(frame: pl.DataFrame) -> pl.DataFrame:
        return held.join(frame.select(pl.col("caseid").cast(pl.Int64)), on="caseid", how="semi")

    passed = plan_series(cases, entries, KEY.pseudonym_key, k=3, probabilities=probabilities,
                         thetas={"HIV": 0.25})  # fmt: skip
    assert sorted(passed.frozen.get_column("caseid").to_list()) == [21, 22, 23, 24, 25]
    failed = plan_series(cases, entries, KEY.pseudonym_key, k=3, probabilities=probabilities,
                         thetas={"HIV": 0.15})  # fmt: skip
    assert failed.frozen.is_empty() and failed.withheld.len() == 6 and failed.counts["placed_part"] == 0
