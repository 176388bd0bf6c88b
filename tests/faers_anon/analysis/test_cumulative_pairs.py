"""Streaming pair counts over a cumulative ingest: each case once, counted quarter by quarter.

A hand-built three-quarter series, ingested by the real ingest (worked answers):

* 2023Q1: case 1 v1 (ASPIRIN PS, ZOLPIDEM SS; Nausea); case 2 v1 (IBUPROFEN PS; Rash);
  case 4 v1 (IBUPROFEN PS; Nausea).
* 2023Q2: case 1 v2 (ASPIRIN PS listed twice; Death) supersedes Q1's; case 3 v1 (ASPIRIN PS,
  IBUPROFEN SS; "rash", the same event as RASH); case 5 v3 (IBUPROFEN PS; Fever, Rash).
* 2023Q3: case 5 v2 (ASPIRIN PS; Nausea), an older version arriving later: Q2's v3 stays the latest;
  the DELETE list removes case 4.

Counted: case 1 (ASPIRIN; DEATH), 2 (IBUPROFEN; RASH), 3 (ASPIRIN, +IBUPROFEN as SS; RASH),
5 (IBUPROFEN; FEVER, RASH); N = 4. Role PS: IBUPROFEN {2, 5}, ASPIRIN {1, 3}; RASH {2, 3, 5}.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from faers_anon.analysis.cumulative import _quarter_spans, series_pair_counts
from faers_anon.analysis.signals import read_case_tables
from faers_anon.errors import ConfigError
from faers_anon.io.ingest import ingest_quarters
from signals.counts import co_reports, count_2x2, prepare

DEMO = "primaryid$caseid$caseversion$fda_dt$age$age_cod$sex"
DRUG = "primaryid$caseid$drug_seq$role_cod$drugname$prod_ai"
REAC = "primaryid$caseid$pt"
QUARTERS = {
    "23Q1": ([DEMO, "11$1$1$20230105$40$YR$F", "21$2$1$20230201$50$YR$M", "41$4$1$20230301$60$YR$F"],
             [DRUG, "11$1$1$PS$ASPIRIN$ASPIRIN", "11$1$2$SS$ZOLPIDEM$ZOLPIDEM",
              "21$2$1$PS$IBUPROFEN$IBUPROFEN", "41$4$1$PS$IBUPROFEN$IBUPROFEN"],
             [REAC, "11$1$Nausea", "21$2$Rash", "41$4$Nausea"], []),
    "23Q2": ([DEMO, "12$1$2$20230402$40$YR$F", "31$3$1$20230501$30$YR$M", "53$5$3$20230601$70$YR$M"],
             [DRUG, "12$1$1$PS$ASPIRIN$ASPIRIN", "12$1$2$PS$ASPIRIN$ASPIRIN", "31$3$1$PS$ASPIRIN$ASPIRIN",
              "31$3$2$SS$IBUPROFEN$IBUPROFEN", "53$5$1$PS$IBUPROFEN$IBUPROFEN"],
             [REAC, "12$1$Death", "31$3$rash", "53$5$Fever", "53$5$Rash"], []),
    "23Q3": ([DEMO, "52$5$2$20230701$70$YR$M"], [DRUG, "52$5$1$PS$ASPIRIN$ASPIRIN"], [REAC, "52$5$Nausea"],
             ["4"]),
}  # fmt: skip
PS = {("IBUPROFEN", "RASH"): (2, 0, 1, 1), ("IBUPROFEN", "FEVER"): (1, 1, 0, 2),
      ("ASPIRIN", "DEATH"): (1, 1, 0, 2), ("ASPIRIN", "RASH"): (1, 1, 2, 0)}  # fmt: skip
# role suspect adds IBUPROFEN (SS) to case 3: IBUPROFEN {2, 3, 5}
SUSPECT = PS | {("IBUPROFEN", "RASH"): (3, 0, 0, 1), ("IBUPROFEN", "FEVER"): (1, 2, 0, 1)}


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folders = []
    for quarter, (demo, drug, reac, deleted) in QUARTERS.items():
        folder = tmp_path_factory.mktemp(f"raw{quarter}")
        for table, lines in (("DEMO", demo), ("DRUG", drug), ("REAC", reac), ("DELETE", deleted)):
            if lines:
                (folder / f"{table}{quarter}.txt").write_text("\n".join(lines) + "\n")
        folders.append(folder)
    return folders


@pytest.fixture(scope="module")
def cumulative(raw: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cumulative") / "out"
    ingest_quarters(raw, out)
    return out


def _counts(table: pl.DataFrame) -> dict[tuple[str, str], tuple[int, ...]]:
    return {
        (d, e): tuple(int(x) for x in rest) for d, e, *rest in table.select("drug", "event", *"abcd").rows()
    }


def _all_at_once(folders: Path | list[Path], role: str) -> pl.DataFrame:
    """The same counts by :mod:`signals.counts` over every case at once (one stratum of weight 1)."""
    cases, case_drugs, case_events = prepare(read_case_tables(folders), role=role)
    members = cases.select("caseid", pl.lit(0, pl.UInt32).alias("stratum_id"), pl.lit(1.0).alias("w"))
    return count_2x2(co_reports(case_drugs, case_events), members, min_a=1).drop("stratum_id")


@pytest.mark.parametrize(("role", "expected"), [("ps", PS), ("suspect", SUSPECT)])
def test_hand_worked_counts_of_a_cumulative_ingest(
    cumulative: Path, role: str, expected: dict[tuple[str, str], tuple[int, ...]]
) -> None:
    counts = series_pair_counts([cumulative], role=role)
    assert counts.cases == 4
    assert counts.parts == 2  # the counted versions lie in 2023Q1 (case 2) and 2023Q2 (1, 3, 5)
    assert _counts(counts.table) == expected
    assert _counts(_all_at_once(cumulative, role)) == expected


def test_each_quarter_is_read_from_its_own_row_groups(cumulative: Path) -> None:
    # latest quarter first (faers_anon.io.cumulative): Q3's 1 drug row, Q2's 5, Q1's 3 (deleted case 4's
    # row is a reject)
    assert _quarter_spans(cumulative / "drug.parquet") == {
        "2023Q3": (0, 1),
        "2023Q2": (1, 6),
        "2023Q1": (6, 9),
    }
    assert _quarter_spans(cumulative / "reac.parquet") == {
        "2023Q3": (0, 1),
        "2023Q2": (1, 5),
        "2023Q1": (5, 7),
    }


@pytest.mark.parametrize("role", ["ps", "suspect", "any"])
def test_separate_folders_give_the_counts_of_the_cumulative_ingest(
    raw: list[Path], cumulative: Path, role: str, tmp_path: Path
) -> None:
    folders = [tmp_path / r.name for r in raw]
    for r, folder in zip(raw, folders, strict=True):
        ingest_quarters([r], folder)
    streamed = series_pair_counts(folders, role=role)
    assert streamed.cases == 4 and streamed.parts == 2
    assert _counts(streamed.table) == _counts(series_pair_counts([cumulative], role=role).table)
    assert _counts(streamed.table) == _counts(_all_at_once(folders, role))
    # role any: ZOLPIDEM (SS of case 1's superseded version) is never counted
    assert "ZOLPIDEM" not in streamed.table.get_column("drug").to_list()


def test_min_a_and_an_unknown_role(cumulative: Path) -> None:
    assert _counts(series_pair_counts([cumulative], min_a=2).table) == {("IBUPROFEN", "RASH"): (2, 0, 1, 1)}
    with pytest.raises(ConfigError, match="role must be one of ps, suspect, any; got 'all'"):
        series_pair_counts([cumulative], role="all")
