"""The number of a case's DEMO rows in a release is common to its group (issue 18 item 1;
faers_anon.anonymize.versions): the demo release, end to end (a realistic 50k quarter: in
test_released_view_realistic.py, whose class over every released field counts the reports).

The class of a case over every released DEMO field of its latest row plus its number of DEMO rows (the
lead's /tmp/nver.py) must hold >= k cases. Before: 1,108 of the demo's 2,998 cases below k 5 (k 5, the
default θ), 12,744 of 99,900 on the realistic 100k quarter; without the row count 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from faers_anon.cli import cli

K = 5


def _classes(release: Path) -> pl.DataFrame:
    """Per case (latest row): its class size over every released DEMO field but the ids, with and
    without its number of DEMO rows (``n_fields``, ``n_rows``), and that number (``rows``)."""
    demo = pl.read_parquet(release / "parquet" / "demo.parquet")
    fields = [c for c in demo.columns if c not in ("primaryid", "caseid", "is_latest")]
    rows = demo.group_by("caseid").agg(pl.len().alias("rows"))
    latest = demo.filter(pl.col("is_latest")).join(rows, on="caseid")
    return latest.select(
        "caseid",
        "rows",
        pl.len().over(fields).alias("n_fields"),
        pl.len().over([*fields, "rows"]).alias("n_rows"),
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("versions") / "demo"
    result = CliRunner().invoke(cli, ["release", "--demo", "-o", str(out), "--theta", "0.4", "--seed", "3"])
    assert result.exit_code == 0, result.output
    (out.parent / "output.txt").write_text(result.output, encoding="utf-8")
    return out


def test_demo_release_no_case_is_singled_out_by_its_number_of_reports(demo: Path) -> None:
    classes = _classes(demo)
    assert classes.height == 2_998
    assert classes.filter(pl.col("n_fields") < K).is_empty()
    assert classes.filter(pl.col("n_rows") < K).is_empty()  # 1,108 before
    # at θ 0.4 the 89 three-version cases cannot stand apart (a value over θ inside): cut to two
    counts = json.loads((demo / "report.json").read_text())["counts"]
    assert counts["reports_superseded_left_out"] == 89 and counts["cases_with_superseded_left_out"] == 89
    assert classes.get_column("rows").max() == 2
    assert counts["reports_read"] == (
        counts["reports_out"] + counts["reports_quarantined"] + counts["reports_deleted"] + 89
    )
    line = next(x for x in (demo.parent / "output.txt").read_text().splitlines() if "reports in" in x)
    assert ", superseded left out 89;" in line  # the terminal's count line adds up too
