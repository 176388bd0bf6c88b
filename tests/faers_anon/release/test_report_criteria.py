"""Survival per criterion in a release (report.json, report.html) and in `compare`, from the Comparison.

A release computes the field's whole battery (issue 19): every criterion — Evans, ROR025 > 1,
IC025 > 0, EB05 ≥ 2 — with its rule, count floor and source, survival overall, pooled over the
strata and in its worst stratum; the reference panel carries the Mantel–Haenszel ROR. The expected
figures are recomputed here from a :func:`signals.compare` of the same demo quarter and its release.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner

from faers_anon.analysis.signals import read_case_tables
from faers_anon.cli import cli
from faers_anon.io.ingest import demo_source, ingest_quarters
from faers_anon.release.config import build_release_config
from faers_anon.release.report_html import render_page
from signals import Comparison, compare

CRITERIA = ("evans", "ror", "ic", "eb")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Comparison]:
    """The demo released with k = 5, θ = 0.4, seed 3; the demo ingested on its own; their Comparison."""
    root = tmp_path_factory.mktemp("criteria")
    out = root / "release"
    result = CliRunner().invoke(cli, ["release", "--demo", "-o", str(out), "--theta", "0.4", "--seed", "3"])
    assert result.exit_code == 0, result.output
    ingested = ingest_quarters([demo_source()], root / "ingested").out
    config = build_release_config(flag_options={"theta": 0.4, "seed": 3}).compare
    return out, ingested, compare(read_case_tables(ingested), read_case_tables(out), config=config)


def _report(out: Path) -> dict[str, Any]:
    return json.loads((out / "report.json").read_text(encoding="utf-8"))


def _expected(comparison: Comparison, criterion: str) -> dict[str, Any]:
    """Overall, pooled-strata and worst-stratum survival of one criterion, from the survival frame."""
    rows = comparison.survival.filter(pl.col("criterion") == criterion)
    overall = rows.filter(pl.col("stratum") == "all").row(0, named=True)
    strata = rows.filter((pl.col("stratum") != "all") & (pl.col("reading") == "expected"))
    pooled = {c: int(strata.get_column(c).sum()) for c in ("n_raw", "n_survived", "n_new")}
    ranked = strata.filter(pl.col("n_raw") > 0).with_columns(share=pl.col("n_survived") / pl.col("n_raw"))
    worst = ranked.sort("share", "n_raw", "stratum", descending=[False, True, False]).head(1).to_dicts()
    return {"overall": overall, "strata": pooled, "worst": worst[0] if worst else None}


def test_release_computes_every_criterion_with_its_rule(demo: tuple[Path, Path, Comparison]) -> None:
    out, _, comparison = demo
    by_criterion = _report(out)["signals"]["by_criterion"]
    assert comparison.criteria == CRITERIA  # the release config asks for all measures
    assert set(by_criterion) == set(CRITERIA)
    assert {k: by_criterion["ror"][k] for k in ("rule", "min_a", "source")} == {
        "rule": "ROR025 > 1, a >= 3", "min_a": 3, "source": "EMA/849944/2016 (EudraVigilance screening)"
    }  # fmt: skip
    assert by_criterion["eb"]["min_a"] == 1 and by_criterion["eb"]["rule"] == "EB05 >= 2"


@pytest.mark.parametrize("criterion", CRITERIA)
def test_report_survival_per_criterion_matches_the_comparison(
    demo: tuple[Path, Path, Comparison], criterion: str
) -> None:
    out, _, comparison = demo
    figures = _report(out)["signals"]["by_criterion"][criterion]
    expected = _expected(comparison, criterion)
    for key in ("n_raw", "n_survived", "n_new"):
        assert figures["overall"][key] == expected["overall"][key]
        assert figures["strata"][key] == expected["strata"][key]
    assert figures["reading_of_strata"] == "expected"
    worst = expected["worst"]
    if worst is None:
        assert figures["worst_stratum"] is None
    else:
        assert (figures["worst_stratum"]["stratum"], figures["worst_stratum"]["n_survived"]) == (
            worst["stratum"],
            worst["n_survived"],
        )
        assert figures["worst_stratum"]["n_raw"] == worst["n_raw"]
    flagged = comparison.panel.filter(
        (pl.col("reading") == "expected") & (pl.col(f"survived_{criterion}") != "n/a")
    )
    kept = flagged.filter(pl.col(f"survived_{criterion}") == "yes").height
    assert figures["panel"] == {"yes": kept, "no": flagged.height - kept}


def test_demo_loses_its_under_18_signals_under_evans(demo: tuple[Path, Path, Comparison]) -> None:
    # the demo's documented failing stratum (test_pipeline): the headline and the table agree
    signals = _report(demo[0])["signals"]
    assert signals["by_criterion"]["evans"]["worst_stratum"]["stratum"] == signals["worst_stratum"]["stratum"]
    assert signals["by_criterion"]["evans"]["worst_stratum"]["n_survived"] == 0


def _text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_html_table_per_criterion_in_words(demo: tuple[Path, Path, Comparison]) -> None:
    out, _, comparison = demo
    page = (out / "report.html").read_text(encoding="utf-8")
    start = page.index("Signals that survive, per criterion")
    section = page[start : page.index("Reference rules", start)]
    rows = re.findall(r"<tr>(.*?)</tr>", section)[1:]
    assert len(rows) == 4
    words = ("PRR ≥ 2 and χ² ≥ 4", "ROR's 95% lower bound is above 1", "IC's 95% lower bound is above 0",
             "EB05, the MGPS posterior's 5% bound, is at least 2")  # fmt: skip
    for row, criterion, what in zip(rows, CRITERIA, words, strict=True):
        text = _text(row)
        overall = _expected(comparison, criterion)["overall"]
        assert what in text
        assert f"{overall['n_survived']:,} of {overall['n_raw']:,}" in text
    assert "3 patients reporting both" in _text(rows[0]) and "Evans, Waller & Davis 2001" in _text(rows[0])
    assert "EMA/849944/2016" in _text(rows[1]) and " none " in _text(rows[2])
    # the table fits the page: fixed layout, column widths summing to 100% of a ≤ 1240 px body
    widths = [int(w) for w in re.findall(r"<col style='width:(\d+)%'>", section)]
    assert len(widths) == 7 and sum(widths) == 100


def test_panel_gains_the_adjusted_ror(demo: tuple[Path, Path, Comparison]) -> None:
    out, _, comparison = demo
    panel = [r for r in _report(out)["signals"]["panel"] if r["reading"] == "expected"]
    frame = comparison.panel.filter(pl.col("reading") == "expected")
    for row in panel:
        match = frame.filter(
            (pl.col("drug") == row["drug"]) & (pl.col("event") == row["event"])
            & (pl.col("condition") == row["condition"])
        ).row(0, named=True)  # fmt: skip
        for side in ("raw", "release"):
            assert row[f"ror_mh_{side}"] == pytest.approx(match[f"ror_mh_{side}"], rel=1e-9)
            assert row[f"ror_mh_lo_{side}"] <= row[f"ror_mh_{side}"] <= row[f"ror_mh_hi_{side}"]
    page = (out / "report.html").read_text(encoding="utf-8")
    section = page[page.index("Reference rules") :]
    assert "adjusted ROR raw [95% CI]" in section and "adjusted ROR release [95% CI]" in section
    widths = [int(w) for w in re.findall(r"<col style='width:(\d+)%'>", section.split("</table>")[0])]
    assert len(widths) == 9 and sum(widths) == 100


def test_section_is_left_out_without_figures_per_criterion() -> None:
    # an older report.json (no by_criterion) still renders, without the table
    page = render_page({"signals": {"criterion": "evans"}}, {}, lambda *_: "")
    assert "per criterion" not in page


def test_compare_prints_survival_per_criterion(demo: tuple[Path, Path, Comparison], tmp_path: Path) -> None:
    out, ingested, comparison = demo
    result = CliRunner().invoke(cli, ["compare", str(ingested), str(out), "-o", str(tmp_path / "cmp")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    for criterion in CRITERIA:
        expected = _expected(comparison, criterion)
        overall, strata = expected["overall"], expected["strata"]
        line = next(line for line in lines if line.startswith(f"  {criterion} ("))
        assert f"overall {overall['n_survived']:,} of {overall['n_raw']:,} raw signals survive" in line
        assert f"strata (expected) {strata['n_survived']:,} of {strata['n_raw']:,}" in line
        if expected["worst"] is not None:
            assert f"worst {expected['worst']['stratum']}: {expected['worst']['n_survived']} of" in line
