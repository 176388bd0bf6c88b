"""The realistic synthetic quarter reproduces the shapes fitted to real FAERS (docs/synthetic.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from faers_anon.synthetic import make_quarter
from faers_anon.synthetic._cases import weekday
from faers_anon.synthetic._figures import UNKNOWN_SHARE_KEY, quarter_figures, zipf_mandelbrot
from faers_anon.synthetic._shape import REALISTIC, vocabulary


@pytest.fixture(scope="module")
def figures() -> dict[str, float]:
    return quarter_figures(make_quarter(6000, seed=3, shape="realistic"))


@pytest.fixture(scope="module")
def small() -> dict[str, float]:
    return quarter_figures(make_quarter(6000, seed=3))


# (figure, real value (FDA 2022Q4 statistics / 2022Q3 whole quarter / 2024Q1+2025Q4 samples), tolerance)
REAL = [
    ("drug per report", 4.15, 0.25),
    ("reac per report", 3.345, 0.2),
    ("indi per report", 1.42, 0.12),
    ("follow-up share", 0.304, 0.03),
    ("age missing", 0.461, 0.04),
    ("weight missing", 0.847, 0.03),
    ("sex UNK or null", 0.134, 0.03),
    ("rept DIR", 0.041, 0.015),
    ("drug share of reports with 1", 0.306, 0.04),
    ("reac share of reports with 1", 0.278, 0.04),
    ("pt share of cases with the top value", 0.094, 0.02),
    (UNKNOWN_SHARE_KEY, 0.40, 0.04),
    ("country top share", 0.414, 0.05),
]


@pytest.mark.parametrize(("name", "real", "tol"), REAL)
def test_realistic_figures_match_the_real_ones(
    figures: dict[str, float], name: str, real: float, tol: float
) -> None:
    assert figures[name] == pytest.approx(real, abs=tol)


def test_realistic_vocabularies_are_whole_quarter_sized(
    figures: dict[str, float], small: dict[str, float]
) -> None:
    # 6,000 cases already show thousands of PTs and drug names (the small shape: ~150 each).
    assert figures["reac distinct"] > 3000 and small["reac distinct"] < 200
    assert figures["drug distinct"] > 3000
    assert figures["indi distinct"] > 300
    assert figures["senders distinct"] > 200 > small["senders distinct"]
    vocab = vocabulary(REALISTIC)
    assert (len(vocab.drugs), len(vocab.reactions), len(vocab.companies)) == (7500, 7300, 670)
    assert len({d.name for d in vocab.drugs}) == 7500 and len(set(vocab.reactions)) == 7300


def test_realistic_laws_are_zipf_shaped(figures: dict[str, float]) -> None:
    # PTs per case: 2022Q3 fits s ≈ 1.0 on the pooled samples' law; a 6,000-case draw fits s in [0.8, 1.3].
    assert 0.8 <= figures["pt per case zipf s"] <= 1.3
    assert 0.8 <= figures["drug per case zipf s"] <= 1.5


def test_zipf_mandelbrot_recovers_a_known_law() -> None:
    rng = np.random.default_rng(0)
    ranks = np.arange(1, 2001)
    p = (ranks + 5.0) ** -1.3
    counts = np.bincount(rng.choice(2000, size=400_000, p=p / p.sum()), minlength=2000)
    s, q = zipf_mandelbrot(counts[counts > 0])
    assert s == pytest.approx(1.3, abs=0.08) and q == pytest.approx(5.0, abs=2.5)


def test_realistic_receipt_dates_are_weekdays(figures: dict[str, float], small: dict[str, float]) -> None:
    assert figures["fda_dt Mon-Fri share"] == 1.0
    assert small["fda_dt Mon-Fri share"] < 0.8


def test_weekday_is_monotone_idempotent_and_bounded() -> None:
    days = np.arange(np.datetime64("2025-03-20"), np.datetime64("2025-04-01"))
    moved = weekday(days, np.datetime64("2025-03-31"))
    dow = (moved.astype(np.int64) + 3) % 7
    assert (dow < 5).all() and (np.diff(moved.astype(np.int64)) >= 0).all()
    assert (weekday(moved, np.datetime64("2025-03-31")) == moved).all()
    assert moved.max() <= np.datetime64("2025-03-31")
    # Saturday 2025-03-29 → Monday 03-31; with the quarter ending on Sunday 03-30 → Friday 03-28.
    assert weekday(np.array(["2025-03-29"], dtype="datetime64[D]"), np.datetime64("2025-03-30"))[
        0
    ] == np.datetime64("2025-03-28")


def test_realistic_keeps_planted_signals_and_unknown_shape_fails() -> None:
    tables = make_quarter(3000, seed=5, shape="realistic")
    assert tables["REAC"].filter(pl.col("pt") == "Progressive multifocal leukoencephalopathy").height > 0
    with pytest.raises(ValueError, match="shape must be one of small, realistic"):
        make_quarter(100, shape="huge")


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parents[3] / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_make_synthetic_quarter_takes_a_shape(tmp_path: Path) -> None:
    main = _script("make_synthetic_quarter").main
    argv = ["--cases", "300", "-o", str(tmp_path), "--shape", "realistic", "--no-malformed"]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    demo = pl.read_csv(tmp_path / "ASCII" / "DEMO25Q1.txt", separator="$", infer_schema=False)
    fda_dt = demo["fda_dt"].str.to_date("%Y%m%d")
    assert (fda_dt.dt.weekday() <= 5).all()  # realistic: weekday receipts only
    bad = CliRunner().invoke(main, ["--cases", "60", "-o", str(tmp_path), "--shape", "huge"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_corpus_links_follow_ups_to_earlier_cases() -> None:
    link = _script("bench_corpus")._link
    tables = make_quarter(400, seed=2, quarter="2021Q2", shape="realistic", malformed=False)
    seen = pl.DataFrame({"caseid": ["7000001", "7000002", "7000003"], "version": [4, 1, 2]})
    linked = link(tables, seen, 1.0, seed=0)
    demo = linked["DEMO"].filter(pl.col("caseid").is_in(seen["caseid"].implode()))
    assert demo["caseid"].n_unique() == 3  # three follow-ups took the three earlier caseids
    versions = demo.join(seen, on="caseid").with_columns(pl.col("caseversion").cast(pl.Int64))
    assert (versions["caseversion"] > versions["version"]).all()  # moved above the earlier version
    assert (demo["primaryid"] == demo["caseid"] + demo["caseversion"]).all()
    moved = set(demo["primaryid"])
    assert moved <= set(linked["DRUG"]["primaryid"]) and moved <= set(linked["REAC"]["primaryid"])
    assert linked["DEMO"].height == tables["DEMO"].height and linked["DRUG"].height == tables["DRUG"].height
