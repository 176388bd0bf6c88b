"""The signal driver: reading ingested and release folders, writing tables and comparisons."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from faers_anon import api
from faers_anon.analysis.signals import COMPARE_FILES, read_case_tables, run_compare, run_signals
from faers_anon.errors import InputError
from faers_anon.synthetic import demo_zip
from signals import SignalConfig


def _tiny_ingested(folder: Path) -> Path:
    """Case 1 has two versions: the old one (11) lists X and Nausea, the latest (12) Y and Death."""
    folder.mkdir(parents=True)
    pl.DataFrame(
        {
            "primaryid": [11, 12, 21, 31],
            "caseid": [1, 1, 2, 3],
            "caseversion": [1, 2, 1, 1],
            "is_latest": [False, True, True, True],
            "age_years": [50.0, 51.0, 20.0, None],
            "sex": ["F", "F", "M", None],
            "weight_kg": [None, 70.0, None, None],
        }
    ).write_parquet(folder / "reports.parquet")
    pl.DataFrame(
        {
            "primaryid": [11, 12, 21, 31],
            "caseid": [1, 1, 2, 3],
            "role_cod": ["PS", "PS", "PS", "PS"],
            "drug_key": ["X", "Y", "X", "Y"],
        }
    ).write_parquet(folder / "drug.parquet")
    pl.DataFrame(
        {"primaryid": [11, 12, 21, 31], "caseid": [1, 1, 2, 3], "pt": ["Nausea", "Death", "Nausea", "Rash"]}
    ).write_parquet(folder / "reac.parquet")
    return folder


def test_reads_the_latest_version_of_each_case(tmp_path: Path) -> None:
    tables = read_case_tables(_tiny_ingested(tmp_path / "ingested"))
    assert tables.cases.sort("caseid").rows() == [
        (1, 51.0, "F", 70.0),
        (2, 20.0, "M", None),
        (3, None, None, None),
    ]
    assert sorted(tables.drugs.rows()) == [(1, "Y", "PS"), (2, "X", "PS"), (3, "Y", "PS")]
    assert sorted(tables.events.rows()) == [(1, "Death"), (2, "Nausea"), (3, "Rash")]
    run = run_signals(tmp_path / "ingested", tmp_path / "out" / "signals.csv")
    frame = pl.read_csv(tmp_path / "out" / "signals.csv")
    # X: case 2 only (the old version of case 1 is not read); N = 3
    assert frame.filter(pl.col("drug") == "X").select("event", "a", "b", "c", "d").rows() == [
        ("NAUSEA", 1.0, 0.0, 0.0, 2.0)
    ]
    assert run.summary().endswith(f"written: {tmp_path / 'out' / 'signals.csv'}")


def test_folder_faults_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="neither an ingested folder"):
        read_case_tables(tmp_path)
    folder = _tiny_ingested(tmp_path / "ingested")
    pl.read_parquet(folder / "drug.parquet").drop("role_cod").write_parquet(folder / "drug.parquet")
    with pytest.raises(InputError, match=r"drug.parquet: role_cod: missing column"):
        read_case_tables(folder)


def _fake_release(ingested: Path, out: Path) -> Path:
    """A release-shaped folder: ages in decades [10k, 10k+10), the oldest open; men released as '*'."""
    (out / "parquet").mkdir(parents=True)
    reports = pl.read_parquet(ingested / "reports.parquet")
    low = (pl.col("age_years") // 10) * 10
    reports.select(
        "primaryid",
        "caseid",
        "is_latest",
        low.alias("age_min"),
        pl.when(low < 80).then(low + 10).alias("age_max"),
        pl.when(pl.col("sex") == "M").then(pl.lit("*")).otherwise(pl.col("sex")).alias("sex"),
    ).write_parquet(out / "parquet" / "demo.parquet")
    pl.read_parquet(ingested / "drug.parquet").write_parquet(out / "parquet" / "drug.parquet")
    pl.read_parquet(ingested / "reac.parquet").write_parquet(out / "parquet" / "reac.parquet")
    return out


@pytest.fixture(scope="module")
def demo_folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("demo")
    api.ingest([demo_zip()], root / "ingested")
    return root / "ingested", _fake_release(root / "ingested", root / "release")


def test_signals_of_the_ingested_demo_quarter(demo_folders: tuple[Path, Path], tmp_path: Path) -> None:
    ingested, _ = demo_folders
    config = SignalConfig(conditions=("age>=18",))
    run = api.signals(ingested, tmp_path / "signals.parquet", config=config)
    frame = pl.read_parquet(tmp_path / "signals.parquet")
    latest = pl.read_parquet(ingested / "reports.parquet").filter(pl.col("is_latest")).height
    n = frame.group_by("stratum").agg(
        (pl.col("a") + pl.col("b") + pl.col("c") + pl.col("d")).unique().alias("n")
    )
    sizes = dict(zip(n.get_column("stratum"), n.get_column("n").to_list(), strict=True))
    assert sizes["all"] == [latest]  # every row of a stratum shares N: cases are counted, not rows
    assert len(sizes["age>=18"]) == 1 and sizes["age>=18"][0] < latest
    assert run.table.n_cases == latest
    # the generator plants AVANDIA (rosiglitazone) with cerebrovascular accident among adults
    planted = frame.filter(
        (pl.col("stratum") == "age>=18") & pl.col("drug").is_in(["ROSIGLITAZONE", "ROSIGLITAZONE MALEATE"])
        & (pl.col("event") == "CEREBROVASCULAR ACCIDENT")
    )  # fmt: skip
    assert planted.height == 1 and planted.item(0, "signal_evans")


def test_compare_writes_tidy_files(demo_folders: tuple[Path, Path], tmp_path: Path) -> None:
    ingested, release = demo_folders
    run = run_compare(ingested, release, tmp_path / "compare")
    assert sorted(p.name for p in (tmp_path / "compare").iterdir()) == sorted(COMPARE_FILES)
    summary = json.loads((tmp_path / "compare" / "summary.json").read_text(encoding="utf-8"))
    assert summary["cases"]["raw"] == summary["cases"]["release"] == run.comparison.raw.n_cases
    assert summary["overall"]["evans"]["share_survived"] == 1.0  # the release keeps every report
    assert set(summary["strata"]) == {"certain", "possible", "expected"}
    panel = pl.read_csv(tmp_path / "compare" / "panel.csv")
    assert panel.height == 7 * 3
    assert set(panel.get_column("survived")) <= {"yes", "no", "n/a"}
    survival = pl.read_csv(tmp_path / "compare" / "survival.csv")
    assert survival.columns == [
        "stratum", "reading", "criterion", "n_raw", "n_survived", "share_survived", "n_release", "n_new",
    ]  # fmt: skip
    assert "raw signals survive" in run.summary()


def test_all_measures_on_the_demo_quarter_find_its_planted_component(
    demo_folders: tuple[Path, Path], tmp_path: Path
) -> None:
    # the demo quarter's planted pairs report ~11 times their expectation; openEBGM's three usual
    # starts end in a prior with no such component (log-likelihood 6 units lower): the fit must not
    ingested, _ = demo_folders
    run = api.signals(ingested, tmp_path / "s.parquet", config=SignalConfig(measures="all"))
    prior = run.table.ebgm_prior
    assert prior is not None
    components = [(prior.alpha1 / prior.beta1, prior.p), (prior.alpha2 / prior.beta2, 1 - prior.p)]
    strong = max(components)
    assert 8.0 < strong[0] < 15.0 and strong[1] < 0.01
    stored = json.loads(pl.read_parquet_metadata(tmp_path / "s.parquet")["ebgm_prior"])
    assert stored["alpha1"] == pytest.approx(prior.alpha1) and stored["p"] == pytest.approx(prior.p)
