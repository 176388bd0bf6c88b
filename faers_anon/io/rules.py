"""The named rules of ingest: boolean polars expressions, True where a row passes.

Source: STYLE §4 (named rules, quarantine with a reason); SPEC §3; issue "ingest" item 4.

Rules are grouped by what a failure does:

* **Row rules** (:func:`row_rules`) — the row cannot be used; it is quarantined (``rejects/``) with
  the failed rule names as its reason: ``row_width`` (more fields than the header, beyond legacy's
  one empty trailing field), ``primaryid_present`` / ``caseid_present`` (present and a positive
  integer; ``61.0`` counts as 61), ``caseid_readable`` (a child row's caseid, when given, is an
  integer; legacy child files have none).
* **Deletion** — a row of a case on a DELETE list is removed and counted as deleted (reason
  ``caseid_deleted``); only rows that pass the row rules can be recognised as deleted.
* **Link rules** — checked after deletion. Reports: ``primaryid_unique`` (the first row with a
  primaryid in a quarter is kept, later ones quarantined) and ``primaryid_latest_quarter`` (the same
  report in two quarters: the later extract is kept, FDA FAQ 29). Child rows: ``report_known`` (a
  kept DEMO row of the same quarter has this primaryid) and ``caseid_matches_report``.
* **Value rules** (:func:`value_rules`) — a field that cannot be read or is implausible becomes null;
  the row is kept and the rule is counted in the ingest report: ``<column>_is_integer``,
  ``<column>_is_number``, ``<column>_is_date``, and for DEMO ``age_cod_known``, ``age_plausible``,
  ``wt_cod_known``, ``weight_plausible``, ``sex_known`` (see :mod:`faers_anon.io.normalize`).

Expressions refer to the annotated frame built by :mod:`faers_anon.io.ingest`: typed columns under
their FAERS names, the verbatim text of typed columns as ``_raw_<name>``, ``extra_fields`` from the
reader, and for child rows ``_report_caseid`` / ``_report_kept`` from the join with DEMO.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from faers_anon.io.faers_ascii import EXTRA_FIELDS
from faers_anon.io.normalize import age_factor, weight_factor
from faers_anon.io.parse import cast_failed
from faers_anon.io.schema import COLUMNS, Kind

__all__ = [
    "DELETED",
    "CANDIDATE",
    "raw_name",
    "row_rules",
    "report_link_rules",
    "child_link_rules",
    "value_rules",
    "deleted_list_rules",
    "passes",
    "reason",
]

#: Reason given to the rows of deleted cases.
DELETED = "caseid_deleted"
#: Column that is True for a row that passed the row rules and is not deleted.
CANDIDATE = "_candidate"

_SUFFIX = {Kind.ID: "is_integer", Kind.INT: "is_integer", Kind.FLOAT: "is_number", Kind.DATE: "is_date"}


def raw_name(column: str) -> str:
    """Name of the verbatim text of a typed or normalized column in the annotated frame."""
    return f"_raw_{column}"


def _positive_id(column: str) -> pl.Expr:
    return pl.col(column).is_not_null() & (pl.col(column) > 0)


def row_rules(table: str) -> dict[str, pl.Expr]:
    """Rules whose failure quarantines a row of ``table`` before anything else is checked.

    Args:
        table: ``"demo"`` or a child table name.

    Returns:
        rule name → expression (True = passes).
    """
    rules = {"row_width": pl.col(EXTRA_FIELDS).is_null(), "primaryid_present": _positive_id("primaryid")}
    if table == "demo":
        rules["caseid_present"] = _positive_id("caseid")
    else:
        rules["caseid_readable"] = pl.col(raw_name("caseid")).is_null() | _positive_id("caseid")
    return rules


def report_link_rules() -> dict[str, pl.Expr]:
    """Rules between DEMO rows, evaluated on candidates (``CANDIDATE`` True) in file order."""
    candidate = pl.col(CANDIDATE)
    key = pl.when(candidate).then(pl.struct("quarter", "primaryid"))
    latest = pl.when(candidate).then(pl.col("quarter")).max().over("primaryid")
    return {
        "primaryid_unique": key.is_first_distinct(),
        "primaryid_latest_quarter": pl.col("quarter") == latest,
    }


def child_link_rules() -> dict[str, pl.Expr]:
    """Rules between a child row and the kept report it belongs to."""
    report_caseid = pl.col("_report_caseid")
    return {
        "report_known": pl.col("_report_kept").fill_null(False),
        "caseid_matches_report": pl.col("caseid").is_null()
        | report_caseid.is_null()
        | (pl.col("caseid") == report_caseid),
    }


def value_rules(table: str) -> dict[str, pl.Expr]:
    """Rules on single values: a failure nulls the value and is counted; the row is kept.

    Args:
        table: ``"demo"`` or a child table name.

    Returns:
        rule name → expression (True = the value was read and, for DEMO QIDs, is plausible).
    """
    rules = {
        f"{column}_{_SUFFIX[kind]}": ~cast_failed(pl.col(raw_name(column)), pl.col(column))
        for column, kind in COLUMNS[table].items()
        if kind in (Kind.INT, Kind.FLOAT, Kind.DATE)
    }
    if table == "demo":
        age_unit = age_factor(pl.col("age_cod"))
        wt_unit = weight_factor(pl.col("wt_cod"))
        rules |= {
            "age_cod_known": pl.col("age").is_null() | age_unit.is_not_null(),
            "age_plausible": pl.col("age").is_null() | age_unit.is_null() | pl.col("age_years").is_not_null(),
            "wt_cod_known": pl.col("wt").is_null() | wt_unit.is_not_null(),
            "weight_plausible": pl.col("wt").is_null()
            | wt_unit.is_null()
            | pl.col("weight_kg").is_not_null(),
            "sex_known": pl.col(raw_name("sex")).is_null() | pl.col("sex").is_not_null(),
        }
    return rules


def deleted_list_rules() -> dict[str, pl.Expr]:
    """Rules on DELETE list lines: each must be a positive integer caseid."""
    return {"caseid_present": _positive_id("caseid")}


def passes(rules: Mapping[str, pl.Expr]) -> pl.Expr:
    """True where every rule passes (an empty mapping passes everything)."""
    return pl.all_horizontal(*rules.values()) if rules else pl.lit(True)


def reason(rules: Mapping[str, pl.Expr]) -> pl.Expr:
    """The failed rule names of each row, ``;``-joined in rule order; null when all pass."""
    failed = [pl.when(~rule).then(pl.lit(name)) for name, rule in rules.items()]
    joined = pl.concat_str(failed, separator=";", ignore_nulls=True)
    return pl.when(joined.str.len_bytes() > 0).then(joined)
