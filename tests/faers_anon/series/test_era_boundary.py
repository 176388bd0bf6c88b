"""A ledgered series across the AERS → FAERS boundary: legacy 2012Q3 (ISR/CASE) then FAERS 2012Q4.

2012Q3 (legacy layout, rows ending with the stray ``$``; see tests/faers_anon/io/test_cumulative_ingest.py)
holds cases 101–124, one ISR each; 2012Q4 (FAERS layout) holds fresh cases 201–224 and version 2 of
cases 101 and 102 (FDA carried AERS cases into FAERS under the same case number, caseversion counting
on: docs/series.md §1). Released one after the other with one ledger at k = 3: cases 101 and 102 keep
their case pseudonym across the eras, and each keeps ≥ k of its 2012Q3 group-mates in its 2012Q4
group (``verify --series``).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from faers_anon import api
from faers_anon.keys import load_key
from faers_anon.series.units import pseudonym_ids
from faers_anon.verify.series import verify_series

K = 3
LEGACY = "ISR$CASE$I_F_COD$FOLL_SEQ$FDA_DT$AGE$AGE_COD$GNDR_COD"
MODERN = "primaryid$caseid$caseversion$i_f_code$fda_dt$age$age_cod$sex"
TERMS = ["PYREXIA", "NAUSEA", "RASH", "COUGH", "HEADACHE", "DIZZINESS", "FATIGUE", "VOMITING"]


def _write(folder: Path, name: str, lines: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("\n".join(lines) + "\n")


def _sex(i: int) -> str:
    return "F" if i % 2 else "M"


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("era")
    q3, q4 = root / "aers12q3", root / "faers12q4"
    legacy = [f"{8000000 + c}${c}$I$$20120801${30 + c % 20}$YR${_sex(c)}$" for c in range(101, 125)]
    _write(q3, "DEMO12Q3.TXT", [LEGACY, *legacy])
    _write(q3, "REAC12Q3.TXT", ["ISR$PT", *[f"{8000000 + c}${TERMS[c % 8]}$" for c in range(101, 125)]])
    fresh = [f"{c}1${c}$1$I$20121101${30 + c % 20}$YR${_sex(c)}" for c in range(201, 225)]
    follow = [f"{c}2${c}$2$F$20121115${30 + c % 20}$YR${_sex(c)}" for c in (101, 102)]
    _write(q4, "DEMO12Q4.txt", [MODERN, *fresh, *follow])
    reac = [f"{c}1${c}${TERMS[c % 8]}" for c in range(201, 225)] + [f"{c}2${c}$FATIGUE" for c in (101, 102)]
    _write(q4, "REAC12Q4.txt", ["primaryid$caseid$pt", *reac])
    ledger = root / "ledger"
    for name, raw in (("r3", q3), ("r4", q4)):
        flags: dict[str, object] = {"k": K, "ledger": ledger, "republish": True}
        api.release([raw], root / name, config=api.release_config(None, flags))
    return {"r3": root / "r3", "r4": root / "r4", "ledger": ledger}


def test_a_case_spanning_the_era_boundary_keeps_its_pseudonym_and_its_group(
    released: dict[str, Path], agency_key_file: Path
) -> None:
    key = load_key(agency_key_file)
    ids = dict(pseudonym_ids(pl.DataFrame({"caseid": [101, 102]}), key.pseudonym_key).rows())
    demos = {n: pl.read_parquet(released[n] / "parquet" / "demo.parquet") for n in ("r3", "r4")}
    meta = json.loads((released["ledger"] / "ledger.json").read_text())
    assert [r["quarters"] for r in meta["releases"]] == [["2012Q3"], ["2012Q4"]]
    assert meta["releases"][1]["withheld"] == 0  # both follow-ups published
    for case in (101, 102):
        pseudonym = ids[case]
        assert demos["r3"].filter(pl.col("caseid") == pseudonym).height == 1  # the AERS ISR
        assert demos["r4"].filter(pl.col("caseid") == pseudonym).height >= 1  # its FAERS version
    verdict = verify_series([released["r3"], released["r4"]])
    assert verdict.ok and verdict.k == K and verdict.in_several >= 2
    # the group constraint from the releases alone: each spanning case shares its 2012Q4 group with
    # >= k case pseudonyms of its 2012Q3 group
    region = ("age_group", "age_min", "age_max", "sex", "wt_min", "wt_max")
    qids = [c for c in region if c in demos["r3"].columns]
    for case in (101, 102):
        groups = []
        for demo in demos.values():
            mine = demo.filter(pl.col("caseid") == ids[case]).select(qids).head(1)
            groups.append(set(demo.join(mine, on=qids, nulls_equal=True).get_column("caseid").to_list()))
        assert len(groups[0] & groups[1]) >= K
