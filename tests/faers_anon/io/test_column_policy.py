"""Column policy (SPEC §10): the documented default decisions, validation, table shaping, ascii text."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import polars as pl
import pytest

from faers_anon.errors import ConfigError, InputError
from faers_anon.io.column_policy import (
    DEFAULT_POLICY,
    FAERS_COLUMNS,
    ColumnPolicy,
    ascii_text,
    shape_table,
)

DECISIONS = [
    *(("demo", c, "drop") for c in ("mfr_num", "auth_num", "lit_ref", "event_dt", "mfr_dt", "rept_dt",
                                    "caseversion", "age_grp", "age_years")),
    *(("drug", c, "drop") for c in ("lot_num", "exp_dt", "dose_vbm", "drugname", "prod_ai", "nda_num")),
    *(("ther", c, "drop") for c in ("start_dt", "end_dt")),
    *(("demo", c, "qid") for c in ("age", "sex", "wt", "fda_dt", "init_fda_dt", "mfr_sndr", "occp_cod",
                                   "rept_cod", "reporter_country", "occr_country", "e_sub", "to_mfr",
                                   "i_f_code")),
    *(("demo", c, "keep") for c in ("primaryid", "caseid", "is_latest")),
    *(("drug", c, "keep") for c in ("cum_dose_chr", "cum_dose_unit", "drug_key")),
    ("reac", "pt", "keep"),
    ("reac", "drug_rec_act", "drop"),
    ("indi", "indi_pt", "keep"),
    ("outc", "outc_cod", "keep"),
    ("ther", "dur", "keep"),
    ("rpsr", "rpsr_cod", "drop"),
]  # fmt: skip


@pytest.mark.parametrize(("table", "column", "action"), DECISIONS)
def test_default_decisions(table: str, column: str, action: str) -> None:
    assert DEFAULT_POLICY.action(table, column) == action


def test_unlisted_columns_are_dropped_and_every_faers_column_is_decided() -> None:
    assert DEFAULT_POLICY.action("demo", "not_a_faers_column") == "drop"
    assert DEFAULT_POLICY.action("drug", "source_file") == "drop"
    for table in ("drug", "reac", "indi", "outc", "ther", "rpsr"):
        assert set(DEFAULT_POLICY.columns[table]) >= set(FAERS_COLUMNS[table]), table


def test_policy_rejects_unsafe_or_broken_settings() -> None:
    with pytest.raises(ConfigError, match="demo.age is a raw QID"):
        DEFAULT_POLICY.with_actions("demo", age="keep")
    with pytest.raises(ConfigError, match="drug must keep drug_key"):
        DEFAULT_POLICY.with_actions("drug", drug_key="drop")
    with pytest.raises(ConfigError, match="unknown action 'publish'"):
        DEFAULT_POLICY.with_actions("reac", pt="publish")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown table"):
        ColumnPolicy(columns={"faers": {}})
    assert DEFAULT_POLICY.with_actions("demo", age="restricted").action("demo", "age") == "restricted"


def test_policy_is_frozen_and_describes_itself_as_json() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_POLICY.rejects = "keep"  # type: ignore[misc]
    with pytest.raises(TypeError):
        DEFAULT_POLICY.columns["demo"]["lot_num"] = "keep"  # type: ignore[index]
    described = json.loads(json.dumps(DEFAULT_POLICY.describe()))
    assert described["unlisted"] == "drop" and described["rejects"] == "drop"
    assert described["columns"]["drug"]["lot_num"] == "drop"


def test_shape_table_fills_missing_faers_columns_and_splits_restricted() -> None:
    drug = pl.DataFrame(
        {"primaryid": [2, 1], "caseid": [20, 10], "quarter": ["2004Q1"] * 2, "drugname": ["B", "A"],
         "drug_key": ["B", "A"], "lot_num": ["L2", "L1"], "line": [3, 2]}
    )  # fmt: skip
    policy = DEFAULT_POLICY.with_actions("drug", lot_num="restricted")
    shaped = shape_table("drug", drug, pl.DataFrame(), policy)
    assert shaped.public.columns == [
        c for c in FAERS_COLUMNS["drug"] if policy.action("drug", c) == "keep"
    ] + [
        "drug_key",
        "quarter",
    ]
    assert shaped.public["role_cod"].null_count() == 2  # absent from the ingested frame: written empty
    assert "drugname" not in shaped.public.columns  # the release's one drug column is drug_key
    assert shaped.restricted is not None
    assert shaped.restricted.rows() == [(0, "2004Q1", 2, 20, "L2"), (1, "2004Q1", 1, 10, "L1")]
    assert shaped.columns["dropped"] == ["drugname", "line"] and shaped.columns["restricted"] == ["lot_num"]
    with pytest.raises(InputError, match="drug.parquet: drug_key: missing column"):
        shape_table("drug", drug.drop("drug_key"), pl.DataFrame(), DEFAULT_POLICY)


def test_ascii_text_formats() -> None:
    frame = pl.DataFrame(
        {"d": [dt.date(2024, 1, 5), None], "f": [18.0, 1 / 12], "b": [True, None], "s": ["a$b\nc", None],
         "i": [7, None]}
    )  # fmt: skip
    text = frame.select(ascii_text(c, frame.schema[c]) for c in frame.columns)
    assert text.rows() == [
        ("20240105", "18", "Y", "a b c", "7"),
        (None, "0.08333333333333333", None, None, None),
    ]
    assert float(text["f"][1]) == 1 / 12  # round trip
