"""Which FAERS columns a release publishes, drops, or sets aside: the column policy (SPEC §10).

SPEC §10 asks that explicit identifiers and free text that can identify be "dropped or kept by a
documented column policy". This module is that documentation and its code. Each column of each
released table has one action:

* ``keep``: published in ``ascii/`` and ``parquet/``.
* ``drop``: not written anywhere.
* ``restricted``: not published; written to the *restricted folder* beside the release (a sibling
  ``<release name>-restricted/``, never inside the public folder), one ``<table>.parquet`` per table
  holding ``row`` (Int64, 0-based row number in the public ``parquet/<table>.parquet``, whose rows are
  in the same order), ``quarter``, ``primaryid``, ``caseid`` and the restricted columns. With
  ``rejects="restricted"`` the full quarantined rows go to ``<release name>-restricted/rejects/``.

A column the policy does not list is dropped (safe default), so a column an ingest version adds is
never published by accident; the manifest lists every dropped column. The DEMO QIDs ``age``,
``age_cod``, ``sex``, ``wt``, ``wt_cod`` are never written raw: the release writer replaces them with
the group's generalized ``age_group``, ``age_min``, ``age_max``, ``sex``, ``wt_min``, ``wt_max``, and
the derived raw ``age_years``/``weight_kg`` and ``age_grp`` (the FDA age class leaks the age) are
dropped whatever the policy says (a policy may set them ``restricted``, never ``keep``).

Default decisions (the table ``DEFAULT_POLICY`` encodes):

======================  =========  ==========================================================
column(s)               action     why
======================  =========  ==========================================================
mfr_num, auth_num       drop       control numbers: explicit identifiers, link to company/
                                   authority case files
lit_ref                 drop       free text (authors, titles) naming the published case report
lot_num, exp_dt         drop       lot and expiry date narrow the patient to a pharmacy batch
dose_vbm                drop       verbatim dose text, free text
event_dt                drop       a patient-event date is a QID the model does not bound;
                                   coarsening (e.g. to the year) would still split QID-groups
                                   for an attacker who knows the year, so the only safe default
                                   is to drop it. To publish it, make it a QID of the model: a
                                   partition column of the same name replaces the raw value.
mfr_dt, rept_dt         drop       report dates of the manufacturer, close proxies of the event
                                   date and not needed by any analysis
start_dt, end_dt        drop       therapy dates (THER): patient-event dates, as event_dt;
                                   ``dur``/``dur_cod`` keep the duration
occr_country,           drop       a natural extra QID (SPEC §5) the default model does not
reporter_country                   bound; small countries can single a case out. A partition
                                   column ``occr_country`` (country as a QID) is published
init_fda_dt, fda_dt     keep       FDA receipt dates, needed to pick the latest version
                                   (SPEC §4); they fall in the release quarter
mfr_sndr                keep       the sending organization (company), not a patient
                                   attribute; analysts stratify by sender
cum_dose_chr            keep       a number (cumulative dose), with ``cum_dose_unit``
everything else in      keep       coded, non-identifying FAERS fields (FORMAT.md §2.1, §4)
FORMAT.md §2.1
======================  =========  ==========================================================

Residual risk, stated plainly: ``primaryid``/``caseid`` are kept (every table links through them
and the verifier needs them); when the raw quarter is public (FDA's FAERS), they link a released row
back to the raw one. A publisher of non-public data should keep this in mind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal, cast

import polars as pl

from faers_anon.errors import ConfigError, InputError
from faers_anon.partition import PARTITION_SCHEMA

__all__ = [
    "Action",
    "ACTIONS",
    "TABLES",
    "ASCII_NAMES",
    "FAERS_COLUMNS",
    "QID_REPLACED",
    "ALWAYS_DROPPED",
    "REQUIRED",
    "ColumnPolicy",
    "DEFAULT_POLICY",
    "QID_COLUMNS",
    "PARTITION_SCHEMA",
    "PARQUET_ONLY",
    "INGESTED_FILES",
    "ShapedTable",
    "shape_table",
    "ascii_text",
]

Action = Literal["keep", "drop", "restricted"]
ACTIONS: tuple[Action, ...] = ("keep", "drop", "restricted")

TABLES: tuple[str, ...] = ("demo", "drug", "reac", "indi", "outc", "ther", "rpsr")
"""Release table names; ``demo`` is read from the ingested ``reports.parquet``."""

ASCII_NAMES: Mapping[str, str] = MappingProxyType({t: t.upper() for t in TABLES})

FAERS_COLUMNS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "demo": (
            "primaryid", "caseid", "caseversion", "i_f_code", "event_dt", "mfr_dt", "init_fda_dt",
            "fda_dt", "rept_cod", "auth_num", "mfr_num", "mfr_sndr", "lit_ref", "age", "age_cod",
            "age_grp", "sex", "e_sub", "wt", "wt_cod", "rept_dt", "to_mfr", "occp_cod",
            "reporter_country", "occr_country",
        ),
        "drug": (
            "primaryid", "caseid", "drug_seq", "role_cod", "drugname", "prod_ai", "val_vbm", "route",
            "dose_vbm", "cum_dose_chr", "cum_dose_unit", "dechal", "rechal", "lot_num", "exp_dt",
            "nda_num", "dose_amt", "dose_unit", "dose_form", "dose_freq",
        ),
        "reac": ("primaryid", "caseid", "pt", "drug_rec_act"),
        "indi": ("primaryid", "caseid", "indi_drug_seq", "indi_pt"),
        "outc": ("primaryid", "caseid", "outc_cod"),
        "ther": ("primaryid", "caseid", "dsg_drug_seq", "start_dt", "end_dt", "dur", "dur_cod"),
        "rpsr": ("primaryid", "caseid", "rpsr_cod"),
    }
)  # fmt: skip
"""The current FAERS column order (FORMAT.md §2.1); the ascii files keep it."""

QID_REPLACED: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"age": ("age_group", "age_min", "age_max"), "sex": ("sex",), "wt": ("wt_min", "wt_max")}
)
"""DEMO raw column → the generalized columns written in its place (SPEC §10)."""

ALWAYS_DROPPED: frozenset[str] = frozenset({"age_cod", "wt_cod", "age_grp", "age_years", "weight_kg"})
"""Raw DEMO QID companions that no policy may publish."""

REQUIRED: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "demo": ("primaryid", "caseid"),
        "drug": ("primaryid", "caseid", "drug_key"),
        "reac": ("primaryid", "caseid", "pt"),
        "indi": ("primaryid", "caseid", "indi_pt"),
        "outc": ("primaryid", "caseid"),
        "ther": ("primaryid", "caseid"),
        "rpsr": ("primaryid", "caseid"),
    }
)
"""Columns a policy must keep: the keys, and what the verifier needs to recompute conf (SPEC §5)."""

_DROP: dict[str, tuple[str, ...]] = {
    "demo": ("event_dt", "mfr_dt", "rept_dt", "auth_num", "mfr_num", "lit_ref", "reporter_country",
             "occr_country"),
    "drug": ("dose_vbm", "lot_num", "exp_dt"),
    "ther": ("start_dt", "end_dt"),
}  # fmt: skip


def _default_columns() -> dict[str, dict[str, Action]]:
    columns: dict[str, dict[str, Action]] = {}
    for table in TABLES:
        actions: dict[str, Action] = {}
        for name in FAERS_COLUMNS[table]:
            if name in QID_REPLACED or name in ALWAYS_DROPPED:
                continue
            actions[name] = "drop" if name in _DROP.get(table, ()) else "keep"
        if table == "drug":
            actions["drug_key"] = "keep"
        if table == "demo":
            actions["is_latest"] = "keep"
        columns[table] = actions
    return columns


def _frozen(columns: Mapping[str, Mapping[str, str]]) -> Mapping[str, Mapping[str, Action]]:
    return MappingProxyType(
        {t: MappingProxyType({c: cast(Action, a) for c, a in cols.items()}) for t, cols in columns.items()}
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class ColumnPolicy:
    """Per table and column: ``keep``, ``drop`` or ``restricted`` (see the module docstring).

    Args:
        columns: table → column → action. Unlisted columns are dropped.
        rejects: what happens to the quarantined rows' raw content. ``drop`` (default): the public
            ``rejects/<table>.parquet`` holds only ``source_file``, ``line``, ``reason`` (and
            ``quarter`` when present), so every quarantined row is accounted for without publishing
            its raw, un-anonymized values; ``restricted``: the full files also go to the restricted
            folder; ``keep``: the full files are published (only for data that is already public).

    Raises:
        ConfigError: unknown table or action, a raw QID column listed as kept, or a required column
            (``REQUIRED``) not kept.
    """

    columns: Mapping[str, Mapping[str, Action]] = field(default_factory=lambda: _frozen(_default_columns()))
    rejects: Action = "drop"

    def __post_init__(self) -> None:
        unknown = sorted(set(self.columns) - set(TABLES))
        if unknown:
            raise ConfigError(f"column policy: unknown table(s) {unknown} (expected {', '.join(TABLES)})")
        for table, cols in self.columns.items():
            for name, action in cols.items():
                if action not in ACTIONS:
                    raise ConfigError(
                        f"column policy: {table}.{name}: unknown action {action!r} (expected keep, drop "
                        "or restricted)"
                    )
                if table == "demo" and (name in QID_REPLACED or name in ALWAYS_DROPPED) and action == "keep":
                    raise ConfigError(
                        f"column policy: demo.{name} is a raw QID and is never published (drop or restricted)"
                    )
        for table in TABLES:
            missing = [c for c in REQUIRED[table] if self.action(table, c) != "keep"]
            if missing:
                raise ConfigError(f"column policy: {table} must keep {', '.join(missing)}")
        if self.rejects not in ACTIONS:
            raise ConfigError(f"column policy: rejects: unknown action {self.rejects!r}")
        object.__setattr__(self, "columns", _frozen(self.columns))

    def action(self, table: str, column: str) -> Action:
        """The action for ``table.column``; ``drop`` when the policy does not list the column."""
        return self.columns.get(table, {}).get(column, "drop")

    def with_actions(self, table: str, /, **actions: Action) -> ColumnPolicy:
        """A copy with some columns of one table set to new actions (validated again)."""
        columns = {t: dict(c) for t, c in self.columns.items()}
        columns.setdefault(table, {}).update(actions)
        return ColumnPolicy(columns=_frozen(columns), rejects=self.rejects)

    def describe(self) -> dict[str, object]:
        """The policy as plain JSON data, for ``manifest.json``."""
        return {
            "columns": {t: dict(sorted(c.items())) for t, c in sorted(self.columns.items())},
            "rejects": self.rejects,
            "unlisted": "drop",
        }


DEFAULT_POLICY = ColumnPolicy()


QID_COLUMNS: tuple[str, ...] = ("age_group", "age_min", "age_max", "sex", "wt_min", "wt_max")
"""The generalized DEMO QIDs of a release, in ascii order (SPEC §10)."""

PARQUET_ONLY: tuple[str, ...] = ("quarter", "is_latest")
"""Columns written to parquet but not to ascii (the quarter is in the ascii file name)."""

INGESTED_FILES: Mapping[str, str] = MappingProxyType(
    {t: ("reports" if t == "demo" else t) + ".parquet" for t in TABLES}
)
"""Release table → ingested file it comes from."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ShapedTable:
    """One table after the policy: public rows, restricted rows, and which column went where.

    Attributes:
        public: the published columns (ascii order, then ``quarter``/``is_latest``), input row order.
        restricted: ``row``, ``quarter``, ``primaryid``, ``caseid`` and the restricted columns, or None.
        columns: ``public``, ``dropped``, ``restricted`` column lists; for demo also ``replaced`` (raw
            QIDs replaced by generalized ones) and ``qid`` (the released QID columns).
    """

    public: pl.DataFrame
    restricted: pl.DataFrame | None
    columns: dict[str, list[str]]


def shape_table(
    table: str, frame: pl.DataFrame, partition: pl.DataFrame, policy: ColumnPolicy
) -> ShapedTable:
    """Apply the policy to one ingested table and, for demo, the partition's generalized QIDs.

    Column order: FAERS order (FORMAT.md §2.1) with ``age`` → ``age_group, age_min, age_max``, ``sex`` →
    ``sex``, ``wt`` → ``wt_min, wt_max`` and an extra QID in its raw column's place (appended when it is
    not a FAERS column); then other kept columns (``drug_key``) by name; then ``quarter``, ``is_latest``.
    A FAERS column the ingested table lacks (older eras) is written empty; a kept non-FAERS column it
    lacks is an InputError. DEMO rows get their case's QIDs by a many-to-one join on ``caseid``, or,
    for a report-level partition (one row per report, with ``primaryid``: models whose unit is the
    report, such as k-anonymity), by a one-to-one join on ``primaryid``.

    Args:
        table: release table name (``demo``, ``drug``, …).
        frame: the ingested table, already in release row order.
        partition: the validated partition (one row per caseid, or per report with ``primaryid``).
        policy: the column policy.
    """
    demo = table == "demo"
    key = "primaryid" if "primaryid" in partition.columns else "caseid"
    extra_qids = [c for c in partition.columns if c not in PARTITION_SCHEMA and c != key] if demo else []
    replaced = (set(QID_REPLACED) | set(extra_qids)) if demo else set()
    public: list[str] = []
    for name in FAERS_COLUMNS[table]:
        if demo and name in QID_REPLACED:
            public.extend(QID_REPLACED[name])
        elif name in replaced or policy.action(table, name) == "keep":
            public.append(name)
    public.extend(c for c in extra_qids if c not in public)
    listed = sorted(policy.columns.get(table, {}).items())
    public.extend(c for c, a in listed if a == "keep" and c not in public and c not in FAERS_COLUMNS[table]
                  and c not in PARQUET_ONLY)  # fmt: skip
    public.extend(c for c in PARQUET_ONLY if c == "quarter" or policy.action(table, c) == "keep")
    for name in public:
        if name not in FAERS_COLUMNS[table] and name not in frame.columns and name not in partition.columns:
            raise InputError("missing column", path=Path(INGESTED_FILES[table]), field=name)
    hidden = [
        c
        for c in frame.columns
        if policy.action(table, c) == "restricted" and c not in ("primaryid", "caseid")
    ]
    base = frame.with_columns(
        pl.lit(None, pl.String).alias(c) for c in FAERS_COLUMNS[table] if c not in frame.columns
    ).with_row_index("row")
    restricted = None
    if hidden:
        restricted = base.select(pl.col("row").cast(pl.Int64), "quarter", "primaryid", "caseid", *hidden)
    if demo:
        base = base.drop([c for c in replaced | ALWAYS_DROPPED if c in base.columns]).join(
            partition.drop("group_id", *(["caseid"] if key == "primaryid" else [])),
            on=key,
            how="left",
            validate="m:1",
            maintain_order="left",
        )
    columns = {
        "public": public,
        "dropped": sorted(
            c for c in frame.columns if c not in public and c not in hidden and c not in replaced
        ),
        "restricted": hidden,
    }
    if demo:
        columns["replaced"] = sorted(c for c in frame.columns if c in replaced)
        columns["qid"] = [*QID_COLUMNS, *extra_qids]
    return ShapedTable(public=base.select(public), restricted=restricted, columns=columns)


def ascii_text(name: str, dtype: pl.DataType) -> pl.Expr:
    """Column ``name`` as FAERS ascii text (null stays null and is written as an empty field).

    Dates and datetimes → ``YYYYMMDD``; floats → shortest round-trip text without a trailing ``.0``;
    booleans → ``Y``/``N``; text → ``$``, CR and LF replaced by a space (the layout has no quoting);
    integers → decimal text.
    """
    col = pl.col(name)
    if dtype == pl.Date or isinstance(dtype, pl.Datetime):
        text = col.dt.strftime("%Y%m%d")
    elif dtype.is_float():
        text = col.cast(pl.String).str.replace(r"\.0$", "")
    elif dtype == pl.Boolean:
        text = pl.when(col).then(pl.lit("Y")).when(col.not_()).then(pl.lit("N"))
    elif dtype == pl.String:
        text = col.str.replace_all(r"[$\r\n]", " ")
    else:
        text = col.cast(pl.String)
    return text.alias(name)
