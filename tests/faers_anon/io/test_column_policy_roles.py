"""Column policy roles (issue 18): every column declared, user overrides, DEMO qids generalized per group."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from faers_anon.errors import ConfigError, InputError
from faers_anon.io.column_policy import DEFAULT_POLICY, FAERS_COLUMNS, TABLES, ColumnPolicy, load_policy
from faers_anon.io.qid_fields import generalize_fields

D = dt.date
ENGINE = ("age", "sex", "wt")


def _only(*fields: str) -> ColumnPolicy:
    """The default policy with only ``fields`` (and the engine's QIDs) as DEMO qids."""
    demo = {c: a for c, a in DEFAULT_POLICY.columns["demo"].items() if a != "qid" or c in ENGINE}
    demo |= {f: "qid" for f in fields}
    return ColumnPolicy(
        columns={**DEFAULT_POLICY.columns, "demo": demo}, qids=DEFAULT_POLICY.qids, trees=DEFAULT_POLICY.trees
    )


def test_every_column_of_every_table_has_one_declared_role_and_reason() -> None:
    for table in TABLES:
        for column in FAERS_COLUMNS[table]:
            assert DEFAULT_POLICY.role(table, column) in ("id", "qid", "sensitive", "keep", "drop"), column
            assert DEFAULT_POLICY.reasons[table][column], (table, column)
    assert DEFAULT_POLICY.role("drug", "drug_key") == "sensitive"
    assert DEFAULT_POLICY.role("outc", "outc_cod") == "sensitive"
    assert DEFAULT_POLICY.role("demo", "caseid") == "id"


def test_default_demo_publishes_nothing_as_is_but_the_latest_flag() -> None:
    """The released case view's guarantee: every DEMO field is an id, a qid (group-constant) or dropped."""
    as_is = [c for c, r in DEFAULT_POLICY.roles["demo"].items() if r not in ("id", "qid", "drop")]
    assert as_is == ["is_latest"]
    assert DEFAULT_POLICY.field_qids() == {
        "i_f_code": "value", "init_fda_dt": "date", "fda_dt": "date", "rept_cod": "value",
        "mfr_sndr": "value", "e_sub": "value", "to_mfr": "value", "occp_cod": "occupation",
        "reporter_country": "value", "occr_country": "value", "outcome": "death",
    }  # fmt: skip


def test_a_users_toml_and_csv_override_listed_entries_only(tmp_path: Path) -> None:
    toml = tmp_path / "policy.toml"
    toml.write_text('[demo]\nfda_dt = { role = "keep", why = "public anyway" }\nevent_dt = { role = "qid", '
                    'hierarchy = "date" }\n', encoding="utf-8")  # fmt: skip
    policy = load_policy(toml)
    assert policy.action("demo", "fda_dt") == "keep" and policy.reasons["demo"]["fda_dt"] == "public anyway"
    assert policy.qids["event_dt"] == "date" and "event_dt" in policy.field_qids()
    assert policy.action("demo", "mfr_num") == "drop"  # untouched entries stay at the default
    csv = tmp_path / "policy.csv"
    csv.write_text("table,column,role,hierarchy\ndrug,drugname,sensitive,\ndemo,occp_cod,qid,value\n")
    policy = load_policy(csv)
    assert policy.action("drug", "drugname") == "keep" and policy.qids["occp_cod"] == "value"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("table,column,role\ndemo,fda_dt,publish\n", r"policy.csv:2: demo.fda_dt: role 'publish'"),
        ("table,column,role\ndemo,fda_dt,qid\n", r"policy.csv:2: demo.fda_dt: a qid needs a hierarchy"),
        ("table,column,role,hierarchy\ndemo,fda_dt,qid,weekly\n", r"unknown hierarchy 'weekly'"),
        ("table,column,role,hierarchy\ndrug,route,qid,value\n", r"only DEMO columns can be qids"),
        ("table,column,role\ndemo,age,keep\n", r"raw QID and is never published"),
        ("table,column,role,hierarchy\ndemo,fda_dt,qid,outcome\n", r"hierarchy outcome is for the derived"),
        ("table,role\n", r"policy.csv: column: missing column"),
    ],
)
def test_policy_mistakes_are_one_line_naming_file_line_and_column(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "policy.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises((InputError, ConfigError), match=message):
        load_policy(path)


def test_fields_take_their_groups_lowest_common_value_and_nil_is_hand_worked() -> None:
    """Four groups of two cases (one report each), k irrelevant here.

    fda_dt (date, height 4): g1 Jan 3 + Jan 20 → 202501 (level 1, loss 1/4); g2 Jan 3 + Mar 1 → 2025Q1
    (level 2, loss 1/2); g3 missing + Jan 3 → * (mixed, loss 1); g4 both missing → null (loss 0).
    NIL = (2·0.25 + 2·0.5 + 2·1 + 0) / 8 = 0.4375.
    occp_cod (occupation tree, height 2): g1 MD + PH → "health professional" (loss 1/2); g2 MD + CN → *
    (1); g3 XX + XX (unlisted) → XX (0); g4 CN + LW → "not a health professional" (1/2).
    NIL = (2·0.5 + 2·1 + 0 + 2·0.5) / 8 = 0.5.
    """
    partition = pl.DataFrame({"caseid": [1, 2, 3, 4, 5, 6, 7, 8], "group_id": [1, 1, 2, 2, 3, 3, 4, 4]})
    reports = pl.DataFrame(
        {
            "primaryid": [11, 21, 31, 41, 51, 61, 71, 81],
            "caseid": [1, 2, 3, 4, 5, 6, 7, 8],
            "fda_dt": [D(2025, 1, 3), D(2025, 1, 20), D(2025, 1, 3), D(2025, 3, 1), None, D(2025, 1, 3),
                       None, None],
            "occp_cod": ["MD", "PH", "MD", "CN", "XX", "XX", "CN", "LW"],
        }
    )  # fmt: skip
    only = _only("fda_dt", "occp_cod")
    out, nil = generalize_fields(partition, reports, only)
    assert out.get_column("fda_dt").to_list() == ["202501"] * 2 + ["2025Q1"] * 2 + ["*"] * 2 + [None] * 2
    assert out.get_column("occp_cod").to_list() == (
        ["health professional"] * 2 + ["*"] * 2 + ["XX"] * 2 + ["not a health professional"] * 2
    )
    assert nil == pytest.approx({"fda_dt": 0.4375, "occp_cod": 0.5})


def test_every_version_of_a_case_counts_for_its_group() -> None:
    """Case 1 has versions I and F; case 2 one F: the group releases * for both (SPEC §4: all versions)."""
    partition = pl.DataFrame({"caseid": [1, 2], "group_id": [0, 0]})
    reports = pl.DataFrame({"primaryid": [11, 12, 21], "caseid": [1, 1, 2], "i_f_code": ["I", "F", "F"]})
    only = _only("i_f_code")
    out, nil = generalize_fields(partition, reports, only)
    assert out.get_column("i_f_code").to_list() == ["*", "*"] and nil == {"i_f_code": 1.0}
    same, nil = generalize_fields(partition, reports.filter(pl.col("primaryid") != 11), only)
    assert same.get_column("i_f_code").to_list() == ["F", "F"] and nil == {"i_f_code": 0.0}


def test_a_bad_policy_file_on_the_command_line_is_one_error_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from faers_anon.cli import cli

    bad = tmp_path / "policy.csv"
    bad.write_text("table,column,role\ndemo,fda_dt,publish\n", encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(cli, ["ingest", "--demo", "-o", str(tmp_path / "in")]).exit_code == 0
    result = runner.invoke(cli, ["anonymize", str(tmp_path / "in"), "-o", str(tmp_path / "out"),
                                 "--column-policy", str(bad)])  # fmt: skip
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip().splitlines()[-1] == (
        "Error: policy.csv:2: demo.fda_dt: role 'publish' (expected one of id, qid, sensitive, keep, drop, "
        "restricted)"
    )
    assert not (tmp_path / "out").exists()
