"""A ledgered series end to end: three generated quarters with follow-ups, released with --ledger.

The series (``faers_anon.series.generate``: 300 cases a quarter, 30 % of a later quarter's cases follow
up an earlier case) is released quarter by quarter with one ledger at k = 3. Checked: the verifier's
composition check (``verify --series``) and the risk module's intersection attack find 0 cases
below k; the same second quarter released without the ledger composes to cases below k; the
ledger refuses a missing quarter and another key with one Error line and leaves no release; the
release and the ledger are written both or neither; cumulative signals over the releases count each
case pseudonym once.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from faers_anon import api
from faers_anon.analysis.signals import read_case_tables
from faers_anon.cli import cli
from faers_anon.errors import InputError
from faers_anon.keys import load_key
from faers_anon.risk import RiskConfig, assess_risk
from faers_anon.series.generate import make_series
from faers_anon.series.units import pseudonym_ids
from faers_anon.verify.series import verify_series

K = 3


def _release(raw: Path, out: Path, ledger: Path | None, *, republish: bool = True) -> Path:
    flags: dict[str, object] = {"k": K} | ({"ledger": ledger} if ledger is not None else {})
    flags |= {"republish": True} if republish and ledger is not None else {}
    api.release([raw], out, config=api.release_config(None, flags))
    return out


@pytest.fixture(scope="module")
def series(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("series")
    raws = make_series(300, root / "raw", quarters=3, follow=0.3, seed=3)
    ledger = root / "ledger"
    made = {f"raw{i}": raw for i, raw in enumerate(raws)}
    for i, raw in enumerate(raws):
        made[f"rel{i}"] = _release(raw, root / f"rel{i}", ledger)
    made["ledger"] = ledger
    made["root"] = root
    return made


def test_no_case_below_k_across_the_ledgered_releases(series: dict[str, Path]) -> None:
    releases = [series["rel0"], series["rel1"], series["rel2"]]
    verdict = verify_series(releases)
    assert verdict.k == K and verdict.ok and verdict.violations.height == 0
    result = CliRunner().invoke(cli, ["verify", "--series", *map(str, releases)])
    assert result.exit_code == 0, result.output
    assert f"series of 3 releases: OK (series_k, k = {K})" in result.output
    risk = assess_risk(releases[2], config=RiskConfig(series=tuple(releases[:2])))
    assert risk.figures["composition"]["below_k"] == 0.0 and risk.figures["composition"]["unique"] == 0.0
    # attribute composition too, read through the E of the releases holding each case (through every
    # release's E: test_estar.py, each release bounded with E*_t; histories a raise lifts: raised.py)
    assert risk.figures["composition"]["intersections_above_theta_own_e"] == 0
    meta = json.loads((series["ledger"] / "ledger.json").read_text())
    assert [r["quarters"] for r in meta["releases"]] == [["2024Q1"], ["2024Q2"], ["2024Q3"]]
    # every returning case of quarters 2 and 3 is either published in a frozen group or withheld
    assert sum(r["withheld"] for r in meta["releases"]) > 0
    # the ledger is the agency's: nothing of it inside a release
    assert not any(p.name.startswith("release-0") for r in releases for p in r.rglob("*"))


def test_without_the_ledger_follow_ups_compose_below_k(series: dict[str, Path], tmp_path: Path) -> None:
    alone = _release(series["raw1"], tmp_path / "alone1", None)
    verdict = verify_series([series["rel0"], alone])
    assert verdict.in_several > 0 and not verdict.ok
    result = CliRunner().invoke(cli, ["verify", "--series", str(series["rel0"]), str(alone)])
    assert result.exit_code == 1 and result.output.splitlines()[-1].startswith("Error: series: ")
    assert verdict.violations.get_column("intersection").max() < K  # type: ignore[operator]


def test_the_ledger_refuses_a_missing_quarter_and_another_key(
    series: dict[str, Path], tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    shutil.copytree(series["ledger"], ledger)
    meta = json.loads((ledger / "ledger.json").read_text())
    meta_file = (ledger / "ledger.json").read_bytes()
    # a ledger that ends at 2024Q1 (its first release) refuses 2024Q3: 2024Q2 is missing
    first = tmp_path / "first"
    _release(series["raw0"], tmp_path / "r0", first)
    args = ["release", str(series["raw2"]), "-o", str(tmp_path / "r2"), "--k", str(K), "--republish",
            "--ledger"]
    result = CliRunner().invoke(cli, [*args, str(first)])
    assert result.exit_code == 1
    assert result.output.splitlines()[-1].startswith("Error: ")
    assert "ends at 2024Q1: release 2024Q2 first" in result.output
    assert not (tmp_path / "r2").exists()
    # a series keeps one setting: the first release was made with republish, this one is not
    args = ["release", str(series["raw1"]), "-o", str(tmp_path / "r1"), "--k", str(K), "--ledger", str(first)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1 and result.output.splitlines()[-1].startswith("Error: ")
    assert "release 1 of this series was made with republish; this release asks without" in result.output
    assert not (tmp_path / "r1").exists()
    other = tmp_path / "other.key"
    args = ["release", str(series["raw2"]), "-o", str(tmp_path / "r3"), "--k", str(K), "--republish",
            "--ledger"]
    result = CliRunner().invoke(cli, [*args, str(ledger), "--key-file", str(other)])
    assert result.exit_code == 1 and "another agency key" in result.output
    assert not (tmp_path / "r3").exists() and (ledger / "ledger.json").read_bytes() == meta_file
    assert len(meta["releases"]) == 3


def test_release_and_ledger_both_or_neither(
    series: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = tmp_path / "ledger"
    _release(series["raw0"], tmp_path / "r0", ledger)
    before = sorted(p.name for p in ledger.iterdir())
    from faers_anon.release import pipeline as release_module

    def fail(*_: object, **__: object) -> None:
        raise InputError("simulated: cannot publish")

    monkeypatch.setattr(release_module, "_publish", fail)
    with pytest.raises(InputError, match="simulated"):
        _release(series["raw1"], tmp_path / "r1", ledger)
    assert sorted(p.name for p in ledger.iterdir()) == before  # neither
    monkeypatch.undo()
    _release(series["raw1"], tmp_path / "r1", ledger)  # the same quarter again: now both
    assert json.loads((ledger / "ledger.json").read_text())["releases"][-1]["quarters"] == ["2024Q2"]


def test_cumulative_signals_count_each_case_pseudonym_once(series: dict[str, Path]) -> None:
    releases = [series["rel0"], series["rel1"], series["rel2"]]
    tables = read_case_tables(releases)
    demos = pl.concat([pl.read_parquet(r / "parquet" / "demo.parquet", columns=["caseid"]) for r in releases])
    assert tables.cases.height == demos.get_column("caseid").n_unique()
    assert tables.cases.get_column("caseid").is_unique().all()


def test_every_withheld_and_republished_report_is_accounted_for(series: dict[str, Path]) -> None:
    # report.json counts the quarter's reports; the ledger's record says how many the series step
    # withheld (follow-ups not placeable), republished (stored mates) and retried (withheld by the
    # release before, offered again): published = kept + retried - withheld + republished, and the
    # DEMO rows of the release are exactly that many.
    meta = json.loads((series["ledger"] / "ledger.json").read_text())
    names = ("returning", "published_returning", "withheld", "withheld_reports", "republished",
             "republished_reports", "retried", "retried_reports", "pending_waiting", "left_out_links",
             "left_out_indi_rows")
    for index in (1, 2):
        counts = json.loads((series[f"rel{index}"] / "report.json").read_text())["counts"]
        placed = meta["releases"][index]["series"]
        kept = counts["tables"]["reports"]["kept"]
        demo = pl.read_parquet(series[f"rel{index}"] / "parquet" / "demo.parquet")
        assert placed["withheld"] > 0 and placed["withheld_reports"] >= placed["withheld"]
        retried, withheld = placed["retried_reports"], placed["withheld_reports"]
        left = counts["reports_superseded_left_out"]  # past the count of the case's group (versions)
        assert demo.height == kept + retried - withheld + placed["republished_reports"] - left
        assert placed["returning"] == placed["published_returning"] + placed["withheld"]
        public = json.loads((series[f"rel{index}"] / "report.json").read_text())["series"]
        assert public == {"release": index + 1, "republish": True, **{name: placed[name] for name in names}}
    assert meta["releases"][2]["series"]["retried_reports"] > 0  # quarter 3 offers quarter 2's withheld


def test_a_ledgered_release_is_measured_against_the_cases_it_publishes(series: dict[str, Path]) -> None:
    # The raw side of signals, risk and the plots is the raw data of the released cases: the quarter's
    # reports less the withheld ones, with the retried and the republished ones (release/pipeline.py).
    # Overall drug-event counts do not read the generalized fields, so every raw signal survives and none
    # is new, as in a stand-alone release; against the quarter alone the republished cases' pairs read as
    # new and some of the quarter's as lost (the 400k quarter 4: Evans 5,539 of 8,988, 7,020 new).
    meta = json.loads((series["ledger"] / "ledger.json").read_text())
    for index in (1, 2):
        report = json.loads((series[f"rel{index}"] / "report.json").read_text())
        placed = meta["releases"][index]["series"]
        assert placed["republished"] > 0
        kept = report["counts"]["tables"]["reports"]["kept"]
        own = kept + placed["retried_reports"] - placed["withheld_reports"] + placed["republished_reports"]
        assert report["risk"]["linkage"]["raw_rows"] == own  # not the quarter's `kept`
        html = (series[f"rel{index}"] / "report.html").read_text()
        assert f"This is release {index + 1} of a series" in html
        assert f"beside {placed['republished']:,} earlier cases" in html
        assert f"{placed['republished_reports']:,} reports of earlier cases published again" in html
        assert f"{placed['withheld']:,} cases ({placed['withheld_reports']:,} reports) are withheld" in html
    alone = json.loads((series["rel0"] / "report.json").read_text())
    assert "This release in a series" in (series["rel0"] / "report.html").read_text()  # release 1 of 3
    assert alone["series"]["release"] == 1 and alone["series"]["republished"] == 0


def test_a_ledgered_release_keeps_every_overall_signal_of_the_cases_it_publishes(tmp_path: Path) -> None:
    # Two generated quarters of 2,000 cases (the realistic shape, k 5): quarter 2's release republishes
    # ~900 earlier cases. Overall counts read no generalized field, so every raw signal of the released
    # cases survives and none is new; measured against quarter 2 alone (the raw side before), Evans read
    # 7 of 9 raw signals surviving and 8 new, ROR 9 of 10 and 12 new.
    raws = make_series(2000, tmp_path / "raw", quarters=2, seed=0, shape="realistic")
    ledger = tmp_path / "ledger"
    flags: dict[str, object] = {"k": 5, "ledger": ledger, "republish": True}
    for i, raw in enumerate(raws):
        api.release([raw], tmp_path / f"rel{i}", config=api.release_config(None, flags))
    report = json.loads((tmp_path / "rel1" / "report.json").read_text())
    assert report["series"]["republished"] > 500
    by_criterion = report["signals"]["by_criterion"]
    assert by_criterion["evans"]["overall"]["n_raw"] >= 5 and by_criterion["ror"]["overall"]["n_raw"] >= 5
    for criterion, figures in by_criterion.items():
        overall = figures["overall"]
        assert (overall["n_survived"], overall["n_new"]) == (overall["n_raw"], 0), criterion


def test_withheld_follow_ups_are_offered_again_next_quarter(series: dict[str, Path]) -> None:
    # Quarter 2's withheld cases are kept (store-0002/pending/, every table) and offered to quarter 3:
    # each is retried, unless quarter 3 brought a newer version of the case (superseded) or deleted it.
    # A retried case that is published carries its quarter-2 reports into release 3; one withheld
    # again is pending once more (store-0003/pending/).
    ledger, key = series["ledger"], load_key(None)
    meta = json.loads((ledger / "ledger.json").read_text())
    q2, q3 = meta["releases"][1]["series"], meta["releases"][2]["series"]
    pending2 = pl.read_parquet(ledger / "store-0002" / "pending" / "cases.parquet", columns=["caseid"])
    assert pending2.height == q2["withheld"] > 0
    assert q3["retried"] + q3["pending_superseded"] + q3["pending_deleted"] == q2["withheld"]
    ids = pseudonym_ids(pending2, key.pseudonym_key)
    demo = {i: pl.read_parquet(series[f"rel{i}"] / "parquet" / "demo.parquet", columns=["caseid"])
            for i in (1, 2)}  # fmt: skip
    assert ids.join(demo[1], left_on="pseudonym", right_on="caseid", how="semi").is_empty()  # withheld in 2
    reports2 = pl.read_parquet(ledger / "store-0002" / "pending" / "reports.parquet", columns=["caseid"])
    assert reports2.height == q2["withheld_reports"]
    pending3 = pl.read_parquet(ledger / "store-0003" / "pending" / "cases.parquet", columns=["caseid"])
    assert pending3.height == q3["withheld"]
    # superseded: quarter 3 brought a version of the case itself (no DELETE lists in this series)
    demo3 = next((series["raw2"] / "ASCII").glob("DEMO*.txt"))
    raw3 = pl.read_csv(demo3, separator="$", columns=["caseid"], infer_schema=False, quote_char=None)
    superseded = pending2.join(raw3.select(pl.col("caseid").cast(pl.Int64)).unique(), on="caseid", how="semi")
    assert (q3["pending_superseded"], q3["pending_deleted"]) == (superseded.height, 0)
    retried = pending2.join(superseded, on="caseid", how="anti")
    again = retried.join(pending3, on="caseid", how="semi")  # retried and withheld again
    published = pseudonym_ids(retried.join(again, on="caseid", how="anti"), key.pseudonym_key)
    assert q3["retried_published"] == published.height == q3["retried"] - again.height
    in3 = published.join(demo[2], left_on="pseudonym", right_on="caseid", how="semi")
    assert in3.height == published.height  # the published retried cases are in release 3
    out3 = pseudonym_ids(again, key.pseudonym_key)
    assert out3.join(demo[2], left_on="pseudonym", right_on="caseid", how="semi").is_empty()  # withheld again


def test_the_engines_cases_of_a_ledgered_release_keep_the_outcome_strata(series: dict[str, Path]) -> None:
    # Outcome strata (docs/outcomes.md) hold for the cases the engine places in a ledgered release too:
    # the first release has no bundle, so no case is released `*`; in the second, a `*` outcome can only
    # be a frozen bundle's region widened to the root (a returning case's seriousness changed), so every
    # case released `*` was in the first release. (Before, a ledgered release ran the engine without
    # strata: 219 of 337 cases of this first release were `*`.)
    columns = ["caseid", "outcome"]
    demo = {i: series[f"rel{i}"] / "parquet" / "demo.parquet" for i in (0, 1)}
    outcome = {i: pl.read_parquet(path, columns=columns) for i, path in demo.items()}
    assert outcome[0].filter(pl.col("outcome") == "*").is_empty()
    assert set(outcome[0].get_column("outcome")) == {"serious", "other serious", "non-serious"}
    starred = outcome[1].filter(pl.col("outcome") == "*").get_column("caseid")
    assert starred.len() < outcome[1].height / 4
    assert set(starred.to_list()) <= set(outcome[0].get_column("caseid").to_list())


@pytest.fixture(scope="module")
def returning_only(series: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same three quarters released with a ledger and the default setting (no republish)."""
    root = tmp_path_factory.mktemp("returning_only")
    made = {"ledger": root / "ledger"}
    for i in range(3):
        made[f"rel{i}"] = _release(series[f"raw{i}"], root / f"rel{i}", made["ledger"], republish=False)
    return made


def test_knowing_when_reports_came_in_tells_a_follow_up_from_republished_mates(
    series: dict[str, Path], returning_only: dict[str, Path]
) -> None:
    # republish: I(c) >= k by the member sets, but a follow-up is the one member of its bundle with a new
    # report, and its republished mates the ones without (docs/series.md §4)
    mates = [series[f"rel{i}"] for i in range(3)]
    found = assess_risk(mates[2], config=RiskConfig(series=tuple(mates[:2]))).figures["composition"]
    assert found["below_k"] == 0.0 and found["below_k_by_receipt"] > 0.2
    assert found["cases_with_a_new_report"] > 0 and found["new_report_below_k_by_receipt"] > 0.5
    # the default: a follow-up is published only beside k - 1 follow-ups of its own unit
    result = CliRunner().invoke(cli, ["verify", "--series", *map(str, mates)])
    assert result.exit_code == 0 and "knowing when reports came in (counted only: made with republish)" in (
        result.output)  # fmt: skip
    alone = [returning_only[f"rel{i}"] for i in range(3)]
    result = CliRunner().invoke(cli, ["verify", "--series", *map(str, alone)])
    assert result.exit_code == 0, result.output
    assert "knowing when reports came in (series_receipt): 0 of " in result.output
    found = assess_risk(alone[2], config=RiskConfig(series=tuple(alone[:2]))).figures["composition"]
    assert found["cases_with_a_new_report"] > 0
    assert found["below_k"] == found["below_k_by_receipt"] == found["unique_by_receipt"] == 0.0
    assert found["intersections_above_theta"] == 0


def test_the_default_republishes_nothing_and_accounts_for_every_follow_up(
    returning_only: dict[str, Path],
) -> None:
    meta = json.loads((returning_only["ledger"] / "ledger.json").read_text())
    assert [r["republish"] for r in meta["releases"]] == [False, False, False]
    for index in (1, 2):
        placed = meta["releases"][index]["series"]
        assert placed["republished"] == placed["republished_reports"] == 0
        assert placed["returning"] == placed["published_returning"] + placed["withheld"]
        assert placed["withheld"] > 0  # most follow-ups wait for k of their group
        public = json.loads((returning_only[f"rel{index}"] / "report.json").read_text())["series"]
        assert public["republish"] is False and public["withheld"] == placed["withheld"]
        html = (returning_only[f"rel{index}"] / "report.html").read_text()
        assert "no earlier case is published again" in html
    # every case withheld at quarter 2 is offered again at quarter 3, superseded, deleted, or waits for
    # a follow-up of its own unit (the only way its unit's check could pass)
    again = meta["releases"][2]["series"]
    assert again["retried"] > 0 and again["pending_waiting"] > 0
    parts = ("retried", "pending_superseded", "pending_deleted", "pending_waiting")
    assert sum(again[name] for name in parts) == meta["releases"][1]["series"]["withheld"]

