"""The FAERS tables: their columns, the renames that unify eras, and each column's type.

Source: docs/architecture.md "The ingested folder"; FAERS header lists of FORMAT.md §2.1 (2014Q3+),
§2.2 (2012Q4–2014Q2 variant) and §3 (legacy AERS 2004Q1–2012Q3).

Column names are read case-blind with surrounding spaces and a UTF-8 byte-order mark removed
(`` rept_dt`` of 2012Q4/2013Q1 DEMO), then renamed to one modern spelling (``isr→primaryid``,
``case→caseid``, ``i_f_cod→i_f_code``, ``gndr_cod→sex``, ``lot_nbr→lot_num``, ``outc_code→outc_cod``,
legacy THER ``drug_seq→dsg_drug_seq``, legacy INDI ``drug_seq→indi_drug_seq``). Columns missing from
an era (``prod_ai`` before 2014Q3, ``caseid`` in legacy child files) are null. Columns only legacy has
(``foll_seq``, ``image``, ``death_dt``, ``confid``) and unknown columns (such as the ``v23``
placeholder some re-packagers give the stray trailing field) are not carried into the typed tables;
the ingest report lists them per file.
"""

from __future__ import annotations

from enum import Enum

__all__ = [
    "Kind",
    "TABLES",
    "CHILD_TABLES",
    "OUTPUT_NAMES",
    "COLUMNS",
    "REQUIRED",
    "canonical_header",
]


class Kind(Enum):
    """How a raw text column is typed (see :mod:`faers_anon.io.parse`)."""

    ID = "id"  # Int64 key (primaryid, caseid): a failure quarantines the row
    INT = "int"  # Int64 value; ``61.0`` is read as 61
    FLOAT = "float"  # Float64 value
    DATE = "date"  # Date from YYYYMMDD, YYYYMM or YYYY (first day of month/year)
    TEXT = "text"  # Utf8 verbatim; an empty field is null


#: The seven data tables, DEMO first (children are checked against it).
TABLES: tuple[str, ...] = ("demo", "drug", "reac", "indi", "outc", "ther", "rpsr")
CHILD_TABLES: tuple[str, ...] = TABLES[1:]

#: Output Parquet name of each table (DEMO becomes ``reports``).
OUTPUT_NAMES: dict[str, str] = {t: ("reports" if t == "demo" else t) for t in TABLES}

_T, _D = Kind.TEXT, Kind.DATE

#: Canonical input columns of each table, in output order, with their kind.
COLUMNS: dict[str, dict[str, Kind]] = {
    "demo": {
        "primaryid": Kind.ID,
        "caseid": Kind.ID,
        "caseversion": Kind.INT,
        "i_f_code": _T,
        "fda_dt": _D,
        "event_dt": _D,
        "init_fda_dt": _D,
        "mfr_dt": _D,
        "rept_dt": _D,
        "age": Kind.FLOAT,
        "age_cod": _T,
        "age_grp": _T,
        "sex": _T,
        "wt": Kind.FLOAT,
        "wt_cod": _T,
        "occr_country": _T,
        "reporter_country": _T,
        "rept_cod": _T,
        "occp_cod": _T,
        "mfr_num": _T,
        "mfr_sndr": _T,
        "auth_num": _T,
        "lit_ref": _T,
        "e_sub": _T,
        "to_mfr": _T,
    },
    "drug": {
        "primaryid": Kind.ID,
        "caseid": Kind.ID,
        "drug_seq": Kind.INT,
        "role_cod": _T,
        "drugname": _T,
        "prod_ai": _T,
        "val_vbm": _T,
        "route": _T,
        "dose_vbm": _T,
        "cum_dose_chr": _T,
        "cum_dose_unit": _T,
        "dechal": _T,
        "rechal": _T,
        "lot_num": _T,
        "exp_dt": _T,
        "nda_num": _T,
        "dose_amt": _T,
        "dose_unit": _T,
        "dose_form": _T,
        "dose_freq": _T,
    },
    "reac": {"primaryid": Kind.ID, "caseid": Kind.ID, "pt": _T, "drug_rec_act": _T},
    "indi": {"primaryid": Kind.ID, "caseid": Kind.ID, "indi_drug_seq": Kind.INT, "indi_pt": _T},
    "outc": {"primaryid": Kind.ID, "caseid": Kind.ID, "outc_cod": _T},
    "ther": {
        "primaryid": Kind.ID,
        "caseid": Kind.ID,
        "dsg_drug_seq": Kind.INT,
        "start_dt": _D,
        "end_dt": _D,
        "dur": Kind.FLOAT,
        "dur_cod": _T,
    },
    "rpsr": {"primaryid": Kind.ID, "caseid": Kind.ID, "rpsr_cod": _T},
}

#: Columns a file must have (after renaming); a file without them is an InputError.
REQUIRED: dict[str, tuple[str, ...]] = {
    t: (("primaryid", "caseid") if t == "demo" else ("primaryid",)) for t in TABLES
}

_RENAMES: dict[str, str] = {
    "isr": "primaryid",
    "case": "caseid",
    "i_f_cod": "i_f_code",
    "gndr_cod": "sex",
    "lot_nbr": "lot_num",
    "outc_code": "outc_cod",
}
_TABLE_RENAMES: dict[str, dict[str, str]] = {
    "ther": {"drug_seq": "dsg_drug_seq"},
    "indi": {"drug_seq": "indi_drug_seq"},
}


def canonical_header(table: str, names: list[str]) -> list[str]:
    """Canonical spelling of a file's header names.

    Args:
        table: one of :data:`TABLES`.
        names: the header fields as found.

    Returns:
        The names lower-cased, stripped of spaces and a byte-order mark, and renamed to the modern
        spelling; unknown names are returned cleaned but otherwise unchanged.
    """
    renames = {**_RENAMES, **_TABLE_RENAMES.get(table, {})}
    cleaned = [name.replace("\ufeff", "").strip().lower() for name in names]
    return [renames.get(name, name) for name in cleaned]
