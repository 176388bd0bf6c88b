"""A ledgered release is bounded against every release's E (E*), not only its own (docs/series.md §4).

The attacker holds every release and reads any case through E*_t(x, s) = max_{r ≤ t} E_r(x, s). A
ledgered release t bounds its groups (the engine, the step's checks) with E*_t = max(E_t, E*_{t−1})
and publishes it as its knowledge.csv; the raise check (rule 6) still reads E_t as mined.

* ``with_earlier`` and ``knowledge_table(earlier=)``: hand-worked maxima, rows of either side kept.
* The three-quarter generated series of test_release.py (300 cases a quarter, k 3), released with a
  ledger: every release's knowledge.csv holds every earlier release's pair at a weight at least as
  large, each release verifies with its own knowledge.csv and with E*_t stated apart, and the risk
  module's composition attack through every release's E finds 0 intersections over θ (on the code
  before: 4 after release 2, 8 after release 3, max 0.667).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.inputs import knowledge_table, with_earlier
from faers_anon.anonymize.pipeline import anonymize_release
from faers_anon.risk import RiskConfig, assess_risk
from faers_anon.verify.series import verify_series
from faers_anon.verify.verifier import verify_release
from knowledge import mine_from_indications
from tests.faers_anon.series import test_attempts, test_release

#: test_release.py's ledgered three-quarter series (k 3), and test_attempts.py's quarter 2 ingested.
series, quarter_two = test_release.series, test_attempts.quarter_two
_E = {"drug_key": pl.Utf8, "disease": pl.Utf8, "weight": pl.Float64}


def _e(path: Path) -> pl.DataFrame:
    return pl.read_csv(path / "knowledge.csv", infer_schema=False).with_columns(
        pl.col("weight").cast(pl.Float64)
    )


def test_the_max_keeps_each_pair_at_its_largest_weight_and_the_rows_of_either_side() -> None:
    own = pl.DataFrame([("D", "X", 0.5), ("D", "Y", 0.5), ("G", "Z", 0.2)], schema=_E, orient="row")
    earlier = pl.DataFrame([("D", "X", 0.75), ("F", "Z", 1.0), ("G", "Z", 0.1)], schema=_E, orient="row")
    star = with_earlier(own, earlier)
    assert star.rows() == [("D", "X", 0.75), ("D", "Y", 0.5), ("F", "Z", 1.0), ("G", "Z", 0.2)]
    assert with_earlier(own, None).equals(own)


def test_knowledge_table_with_an_earlier_e_is_the_max_over_the_mined_e(
    quarter_two: dict[str, Path], tmp_path: Path
) -> None:
    folder = quarter_two["ingested"]
    mined = mine_from_indications(
        pl.scan_parquet(folder / "drug.parquet"), pl.scan_parquet(folder / "indi.parquet")
    )
    first = mined.row(0, named=True)
    # an earlier weight above the mined one for one pair, and a pair the quarter does not mine
    earlier = pl.DataFrame(
        [(first["drug_key"], first["disease"], 1.0), ("NO SUCH DRUG", "NO SUCH DISEASE", 0.4)], schema=_E,
        orient="row",
    )  # fmt: skip
    path = tmp_path / "earlier.csv"
    earlier.write_csv(path)
    sensitive = ("indications", "reactions", "diseases")
    star = knowledge_table(folder, sensitive=sensitive, knowledge=None, earlier=path)
    alone = knowledge_table(folder, sensitive=sensitive, knowledge=None)
    assert star.height == alone.height + 1 and alone.height == mined.height
    weight = dict(zip(zip(star["drug_key"], star["disease"], strict=True), star["weight"], strict=True))
    assert weight[(first["drug_key"], first["disease"])] == 1.0 and first["weight"] < 1.0
    assert weight[("NO SUCH DRUG", "NO SUCH DISEASE")] == 0.4
    others = alone.filter((pl.col("drug_key") != first["drug_key"]) | (pl.col("disease") != first["disease"]))
    assert others.join(star, on=list(_E), how="anti").is_empty()


def test_every_ledgered_release_holds_every_earlier_weight(series: dict[str, Path]) -> None:
    releases = [series["rel0"], series["rel1"], series["rel2"]]
    tables = [_e(r) for r in releases]
    for t in range(1, len(tables)):
        for r in range(t):
            joined = tables[r].join(tables[t], on=["drug_key", "disease"], how="left", suffix="_t")
            lower = joined.filter(pl.col("weight_t").is_null() | (pl.col("weight_t") < pl.col("weight")))
            assert lower.is_empty(), (r, t, lower.head(3).rows())
    # the later releases add pairs of their own too (E*_t is not E_1 repeated)
    assert tables[2].height > tables[0].height
    # the earlier E is private to the step: never a manifest parameter
    for release in releases:
        parameters = json.loads((release / "manifest.json").read_text())["parameters"]
        assert "earlier_knowledge" not in parameters and "frozen" not in parameters


def test_each_ledgered_release_verifies_against_every_releases_e(
    series: dict[str, Path], tmp_path: Path
) -> None:
    # The verifier checks release t with E*_t stated apart (the largest weight over releases 1..t):
    # θ* through it, and the release's own knowledge.csv equal to it (rule ``stated``). On the code
    # before, release 2's knowledge.csv lacked release 1's weights and its groups went over θ with them.
    releases = [series["rel0"], series["rel1"], series["rel2"]]
    for t, release in enumerate(releases):
        star = (
            pl.concat([_e(r) for r in releases[: t + 1]])
            .group_by("drug_key", "disease")
            .agg(pl.col("weight").max())
        )
        stated = tmp_path / f"estar{t}.csv"
        star.sort("drug_key", "disease").write_csv(stated)
        verdict = verify_release(release, knowledge=stated)
        assert verdict.ok, verdict.violations.head(5).rows()
        assert verify_release(release).ok
    assert verify_series(releases).ok


def test_no_intersection_over_theta_through_every_releases_e(series: dict[str, Path]) -> None:
    # On the code before (each release bounded with its own E only): 4 intersections over θ after
    # release 2 and 8 after release 3, max conf 0.667 > θ 0.6, all at making.
    releases = [series["rel0"], series["rel1"], series["rel2"]]
    for t in (1, 2):
        found = assess_risk(releases[t], config=RiskConfig(series=tuple(releases[:t]))).figures["composition"]
        assert found["intersections_above_theta"] == 0, (t, found["max_conf"], found["max_conf_value"])
        assert found["max_conf"] <= 0.6 + 1e-9 and found["intersections_above_theta_own_e"] == 0


def test_the_anonymizer_mining_e_itself_publishes_the_max_with_the_earlier_e(
    quarter_two: dict[str, Path], tmp_path: Path
) -> None:
    # A ledgered release whose step changed nothing lets the anonymizer mine E from the folder
    # (SeriesStep.inputs None): with AnonymizeConfig.earlier_knowledge it bounds and publishes
    # max(E_t, E*_{t-1}), and the release verifies with it.
    folder = quarter_two["ingested"]
    alone = knowledge_table(folder, sensitive=("indications", "reactions", "diseases"), knowledge=None)
    top = alone.sort("weight").row(0, named=True)  # its lowest weight, raised to 1 by an earlier release
    earlier = pl.DataFrame(
        [(top["drug_key"], top["disease"], 1.0), ("NO SUCH DRUG", "NO SUCH DISEASE", 0.4)],
        schema=_E,
        orient="row",
    )
    path = tmp_path / "earlier.csv"
    earlier.write_csv(path)
    out = tmp_path / "release"
    config = AnonymizeConfig(k=3, earlier_knowledge=path)
    anonymize_release(folder, out, config=config, work=tmp_path)
    published = _e(out)
    assert published.sort("drug_key", "disease").equals(with_earlier(alone, earlier))
    assert published.height == alone.height + 1 and top["weight"] < 1.0
    assert "earlier_knowledge" not in json.loads((out / "manifest.json").read_text())["parameters"]
    assert verify_release(out).ok
