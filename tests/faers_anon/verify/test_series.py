"""``verify --series``: the composition check on two hand-built releases, worked answers.

Release 1: {1, 2, 3} share tuple A, {4, 5} tuple B. Release 2: {1, 2, 6} tuple C, {3, 4} tuple D.
k = 2 (the manifests'). Cases in both releases: 1, 2, 3, 4.
I(1) = I(2) = {1,2,3} ∩ {1,2,6} = {1, 2} (size 2, not below k); I(3) = {1,2,3} ∩ {3,4} = {3} and
I(4) = {4,5} ∩ {3,4} = {4} (size 1: violations). When release 2 also publishes the extra QID
``fda_dt`` (listed in its manifest) and case 2's differs from 1's and 6's, C splits into {1, 6} and
{2}: then I(1) = {1} and I(2) = {2} too.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from click.testing import CliRunner

from faers_anon.cli import cli
from faers_anon.verify.series import verify_series

A, B, C, D = (("A", 20.0), ("B", 40.0), ("C", 60.0), ("D", 80.0))


def _release(folder: Path, rows: list[tuple[int, tuple[str, float], str]], *, extra: bool) -> Path:
    (folder / "parquet").mkdir(parents=True)
    demo = pl.DataFrame(
        [(c * 1000 + 1, c, g, lo, lo + 20.0, "F", None, None, dt) for c, (g, lo), dt in rows],
        orient="row",
        schema={"primaryid": pl.Int64, "caseid": pl.Int64, "age_group": pl.Utf8, "age_min": pl.Float64,
                "age_max": pl.Float64, "sex": pl.Utf8, "wt_min": pl.Float64, "wt_max": pl.Float64,
                "fda_dt": pl.Utf8},
    )  # fmt: skip
    demo.write_parquet(folder / "parquet" / "demo.parquet")
    qids = ["age_group", "age_min", "age_max", "sex", "wt_min", "wt_max", *(["fda_dt"] if extra else [])]
    manifest = {"columns": {"demo": {"qid": qids}}, "parameters": {"k": 2}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def _pair(root: Path, *, extra: bool) -> list[Path]:
    one = _release(root / "r1", [(1, A, "2024"), (2, A, "2024"), (3, A, "2024"), (4, B, "2024"),
                                 (5, B, "2024")], extra=False)  # fmt: skip
    two = _release(root / "r2", [(1, C, "2024"), (2, C, "2023"), (6, C, "2024"), (3, D, "2024"),
                                 (4, D, "2024")], extra=extra)  # fmt: skip
    return [one, two]


def test_cases_below_k_across_releases_are_named(tmp_path: Path) -> None:
    verdict = verify_series(_pair(tmp_path, extra=False))
    assert (verdict.k, verdict.cases, verdict.in_several) == (2, 6, 4)
    assert verdict.violations.rows() == [(3, [1, 2], 1), (4, [1, 2], 1)]
    assert "case 3: 1 case(s) share its group in every release where it appears" in verdict.summary()


def test_extra_published_qids_split_groups(tmp_path: Path) -> None:
    verdict = verify_series(_pair(tmp_path, extra=True))
    assert verdict.violations.get_column("caseid").to_list() == [1, 2, 3, 4]
    assert verify_series(_pair(tmp_path / "k1", extra=True), k=1).ok


def test_cli_verify_several_releases_needs_series(tmp_path: Path) -> None:
    one, two = _pair(tmp_path, extra=False)
    result = CliRunner().invoke(cli, ["verify", "--no-hashes", str(one), str(two)])
    assert result.exit_code != 0 and "several releases need --series" in result.output


def _followed(root: Path, *, republish: bool) -> list[Path]:
    """Release 1: {1, 2, 3} tuple A. Release 2: {1, 2, 3} tuple C, case 1 with a new report (1002),
    cases 2 and 3 with the report they showed before (republished)."""
    one = _release(root / "r1", [(1, A, "2024"), (2, A, "2024"), (3, A, "2024")], extra=False)
    two = _release(root / "r2", [(1, C, "2024"), (2, C, "2024"), (3, C, "2024")], extra=False)
    demo = pl.read_parquet(two / "parquet" / "demo.parquet")
    demo.with_columns(pl.when(pl.col("caseid") == 1).then(1002).otherwise(pl.col("primaryid"))
                      .alias("primaryid")).write_parquet(two / "parquet" / "demo.parquet")  # fmt: skip
    manifest = json.loads((two / "manifest.json").read_text())
    manifest["parameters"]["republish"] = republish
    (two / "manifest.json").write_text(json.dumps(manifest))
    return [one, two]


def test_knowing_when_reports_came_in_the_follow_up_is_alone(tmp_path: Path) -> None:
    # I(c) = {1, 2, 3} for all three (k = 2: none below). Knowing the receipts: I_R(1) = {1} (the only
    # new report), I_R(2) = I_R(3) = {2, 3}: case 1 fails series_receipt
    verdict = verify_series(_followed(tmp_path / "a", republish=False))
    assert verdict.violations.height == 0 and not verdict.ok
    assert verdict.receipt.rows() == [(1, [1, 2], 1)]
    assert "knowing when reports came in (series_receipt): 1 of 3 cases in several releases below k" in (
        verdict.summary())  # fmt: skip
    # a series made with republish states it: counted, not a failure
    stated = verify_series(_followed(tmp_path / "c", republish=True))
    assert stated.ok and stated.republished and stated.receipt.height == 1
    assert "(counted only: made with republish): 1 of 3" in stated.summary()

