"""The named rules of ingest: boolean polars expressions, True where a row passes.

Source: STYLE §4 (named rules, quarantine with a reason); SPEC §3; issue "ingest" item 4.

Rules are grouped by what a failure does:

* **Row rules** (:func:`row_rules`) — the row cannot be used; it is quarantined (``rejects/``) with
  the failed rule names as its reason: ``enough_fields`` (not fewer fields than the header),
  ``no_extra_fields`` (not more, beyond legacy's one empty trailing field; see
  :mod:`faers_anon.io.faers_ascii` for the trailing ``$``), ``valid_encoding`` (no byte sequence
  invalid in the file's encoding, :mod:`faers_anon.io.sources`), ``primaryid_present`` /
  ``caseid_present`` (present and a positive integer — ``isr``/``case`` of legacy files are these
  columns; ``61.0`` counts as 61, the artefact of files re-saved through pandas, and surrounding
  spaces are ignored), ``caseid_readable`` (a child row's caseid, when given, is an integer; legacy
  child files have none).
* **Deletion** — a row of a case on a DELETE list is removed and counted as deleted (reason
  ``caseid_deleted``); only rows that pass the row rules can be recognised as deleted.
* **Link rules** — checked after deletion. Reports: ``primaryid_unique`` (the first row with a
  primaryid in a quarter is kept, later ones quarantined) and ``primaryid_latest_quarter`` (the same
  report in two quarters: the later extract is kept, FDA FAQ 29). Child rows: ``report_known`` (a
  kept DEMO row of the same quarter has this primaryid) and ``caseid_matches_report``. Decision: the
  rows of a quarantined report are orphans and fail ``report_known`` (quarantined too), so nothing of
  a quarantined report reaches the release and every row is counted once.

:func:`reason_words` spells a reason out for ``rejects.csv`` (:data:`REASON_WORDS`).
* **Value rules** (:func:`value_rules`) — a field that cannot be read or is implausible becomes null;
  the row is kept and the rule is counted in the ingest report: ``<column>_is_integer``,
  ``<column>_is_number``, ``<column>_is_date``, and for DEMO ``age_cod_known``, ``age_plausible``,
  ``wt_cod_known``, ``weight_plausible``, ``sex_known`` (see :mod:`faers_anon.io.normalize`).

Expressions refer to the annotated frame built by :mod:`faers_anon.io.ingest`: typed columns under
their FAERS names, the verbatim text of typed columns as ``_raw_<name>``, ``extra_fields`` from the
reader, and for child rows ``_report_caseid`` / ``_report_kept`` from the join with DEMO.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from faers_anon.io.faers_ascii import EXTRA_FIELDS, INVALID_BYTES, SHORT_ROW
from faers_anon.io.ingest_report import DELETED_REASON
from faers_anon.io.normalize import age_factor, weight_factor
from faers_anon.io.parse import cast_failed
from faers_anon.io.schema import COLUMNS, Kind

__all__ = [
    "DELETED",
    "CANDIDATE",
    "ROW_OK",
    "QUARTER_CODE",
    "IS_DELETED",
    "RuleSet",
    "raw_name",
    "row_rules",
    "report_link_rules",
    "child_link_rules",
    "value_rules",
    "deleted_list_rules",
    "REASON_WORDS",
    "reason_words",
]

#: Reason given to the rows of deleted cases.
DELETED = DELETED_REASON
#: Column that is True for a row that passed the row rules and is not deleted.
CANDIDATE = "_candidate"
#: Column with the quarter as a small integer that sorts like the quarter (``2004Q1`` < ``2023Q1``).
QUARTER_CODE = "_quarter_code"
#: Column that is True for a row that passed every row rule.
ROW_OK = "_row_ok"
#: Column that is True for a row that passed the row rules and belongs to a deleted case.
IS_DELETED = "_is_deleted"

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
    rules = {
        "enough_fields": ~pl.col(SHORT_ROW),
        "no_extra_fields": pl.col(EXTRA_FIELDS).is_null(),
        "valid_encoding": ~pl.col(INVALID_BYTES),
        "primaryid_present": _positive_id("primaryid"),
    }
    if table == "demo":
        rules["caseid_present"] = _positive_id("caseid")
    else:
        # A caseid that was read is a given one; the others' text is stripped (null elsewhere, so
        # the string work is done for those few rows only) to tell a blank one from an unreadable one.
        unread = pl.when(pl.col("caseid").is_null()).then(pl.col(raw_name("caseid")))
        given = unread.str.strip_chars().str.len_bytes().fill_null(0) > 0
        rules["caseid_readable"] = _positive_id("caseid") | (pl.col("caseid").is_null() & ~given)
    return rules


def report_link_rules(later: pl.Series | None = None, *, one_quarter: bool = False) -> dict[str, pl.Expr]:
    """Rules between DEMO rows, evaluated on candidates (``CANDIDATE`` True) in file order.

    Args:
        later: when the quarters are ingested one at a time, latest first
            (:mod:`faers_anon.io.cumulative`), the primaryids of the candidate reports of the later
            quarters already read: a report repeated there fails ``primaryid_latest_quarter``.
        one_quarter: every row has the same ``QUARTER_CODE`` (one DEMO quarter, the usual run): the
            rules then give the same values on candidates with the primaryid alone as key (no
            struct of two columns), and ``primaryid_latest_quarter`` holds on every candidate but
            those repeated in ``later`` (their own quarter is the latest of their primaryid). Only
            candidates' values are read (status and reason, :mod:`faers_anon.io.annotate`).
    """
    candidate = pl.col(CANDIDATE)
    if one_quarter:
        key = pl.when(candidate).then(pl.col("primaryid"))
        in_latest = pl.lit(True)
    else:
        key = pl.when(candidate).then(pl.struct(QUARTER_CODE, "primaryid"))
        latest = pl.when(candidate).then(pl.col(QUARTER_CODE)).max().over("primaryid")
        in_latest = pl.col(QUARTER_CODE) == latest
    if later is not None:
        in_latest = in_latest & ~pl.col("primaryid").is_in(later.implode())
    return {"primaryid_unique": key.is_first_distinct(), "primaryid_latest_quarter": in_latest}


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


#: Each quarantine reason in words, for a reviewer (``rejects.csv``).
REASON_WORDS: dict[str, str] = {
    "enough_fields": "fewer fields than the header",
    "no_extra_fields": "more fields than the header (an embedded $ or two records on one line)",
    "valid_encoding": "invalid byte sequence for UTF-8, the file's encoding",
    "primaryid_present": "primaryid (isr) missing or not a positive integer",
    "caseid_present": "caseid (case) missing or not a positive integer",
    "caseid_readable": "caseid not a positive integer",
    "primaryid_unique": "primaryid repeated in the quarter (the first row is kept)",
    "primaryid_latest_quarter": "report repeated in a later quarter (the later one is kept)",
    "report_known": "no kept DEMO report with this primaryid in the quarter (absent or quarantined)",
    "caseid_matches_report": "caseid differs from its DEMO report's",
    DELETED: "case on a DELETE list (removed, not quarantined)",
}


def reason_words(reason: pl.Expr) -> pl.Expr:
    """A ``;``-joined reason (rule names) in words, ``; ``-joined; an unknown name is kept as is."""
    names = reason.str.split(";")
    words = names.list.eval(pl.element().replace(REASON_WORDS))
    return words.list.join("; ")


def _ok(name: str) -> str:
    return f"_ok_{name}"


def _failed_names(names: tuple[str, ...]) -> pl.Expr:
    failed = [pl.when(~pl.col(_ok(name))).then(pl.lit(name)) for name in names]
    return pl.concat_str(failed, separator=";", ignore_nulls=True) if failed else pl.lit(None, pl.Utf8)


@dataclass(frozen=True, kw_only=True, slots=True)
class RuleSet:
    """The row rules and link rules of one table, evaluated as boolean columns ``_ok_<rule>``.

    Only booleans are computed for every row; the ``reason`` text is built for rejected rows only
    (:meth:`reason` on the rejects), so checking millions of good rows costs a few bitmaps.

    Attributes:
        row: row rules (quarantine first).
        link: link rules (quarantine after deletion).
    """

    row: dict[str, pl.Expr]
    link: dict[str, pl.Expr] = field(default_factory=dict)

    def row_columns(self) -> dict[str, pl.Expr]:
        """``_ok_<rule>`` columns of the row rules."""
        return {_ok(name): rule for name, rule in self.row.items()}

    def link_columns(self) -> dict[str, pl.Expr]:
        """``_ok_<rule>`` columns of the link rules."""
        return {_ok(name): rule for name, rule in self.link.items()}

    def row_ok(self) -> pl.Expr:
        """True where every row rule passed (needs :meth:`row_columns`)."""
        return pl.all_horizontal(pl.col(_ok(n)) for n in self.row) if self.row else pl.lit(True)

    def link_ok(self) -> pl.Expr:
        """True where every link rule passed (needs :meth:`link_columns`)."""
        return pl.all_horizontal(pl.col(_ok(n)) for n in self.link) if self.link else pl.lit(True)

    def reason(self) -> pl.Expr:
        """The reason of a rejected row: failed row rules, else ``caseid_deleted``, else failed link
        rules; ``;``-joined in rule order (needs the ``_ok_`` columns, :data:`ROW_OK`, :data:`IS_DELETED`)."""
        return (
            pl.when(~pl.col(ROW_OK))
            .then(_failed_names(tuple(self.row)))
            .when(pl.col(IS_DELETED))
            .then(pl.lit(DELETED))
            .otherwise(_failed_names(tuple(self.link)))
        )
