"""Which FAERS columns a release publishes, generalizes, drops or sets aside: the column policy (SPEC §10-11).

Every column of every released table has one declared *role* (``id``, ``qid``, ``sensitive``,
``keep``, ``drop``, ``restricted``) in one policy file: the bundled default
``faers_anon/data/column_policy.toml`` states each decision with its reason (``why``), and a user's
TOML or CSV file (:func:`load_policy`, ``--column-policy``) overrides the entries it lists
(:mod:`faers_anon.io._policy_file`; docs/formats.md, "Column policy"). A role gives the writer's
*action*:

* ``keep`` (roles ``id``, ``sensitive``, ``keep``): published in ``ascii/`` and ``parquet/``.
* ``qid`` (role ``qid``, DEMO only): never published raw; every report of a QID-group carries the
  group's common value in the column's hierarchy (:mod:`faers_anon.io.qid_fields`; ``engine`` QIDs
  age, sex, weight come from the clustering partition).
* ``drop``: not written anywhere.
* ``restricted``: written only to the sibling ``<release name>-restricted/`` folder, one
  ``<table>.parquet`` per table: ``row`` (0-based row of the public ``parquet/<table>.parquet``),
  ``quarter``, ``primaryid``, ``caseid`` and the restricted columns (and ``rejects/`` with
  ``rejects="restricted"``).

An unlisted column is dropped (safe default: a column a new ingest adds is never published by
accident); the manifest lists every dropped column. ``age``, ``sex``, ``wt`` are released as the
group's ``age_group``, ``age_min``, ``age_max``, ``sex``, ``wt_min``, ``wt_max``; ``age_cod``,
``wt_cod``, ``age_grp``, ``age_years``, ``weight_kg`` are never ``keep``.

The default's guarantee (SPEC §11, released case view): every DEMO column is an id, a qid or dropped
(``is_latest`` is kept: a derived flag), so every released DEMO field is constant over a QID-group and
every case's class over all its released DEMO fields holds its whole group (≥ k cases); a policy
keeping another DEMO column as is gives that up (manifest ``roles``). Residual: report pseudonyms
sort in version order, a case's DEMO rows count its versions, a multi-quarter release has ``quarter``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, cast

import polars as pl

from faers_anon.anonymize.partition import PARTITION_SCHEMA, QID_COLUMNS
from faers_anon.errors import ConfigError, InputError
from faers_anon.io._policy_file import (
    BUILTIN_HIERARCHIES,
    DEFAULT_POLICY_FILE,
    OUTCOME_HIERARCHIES,
    PolicyFile,
    read_policy_file,
)

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
    "load_policy",
    "QID_COLUMNS",
    "PARTITION_SCHEMA",
    "PARQUET_ONLY",
    "INGESTED_FILES",
    "ShapedTable",
    "shape_table",
    "ascii_text",
]

Action = Literal["keep", "qid", "drop", "restricted"]
ACTIONS: tuple[Action, ...] = ("keep", "qid", "drop", "restricted")

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

_ACTION_OF_ROLE: Mapping[str, Action] = MappingProxyType(
    {"id": "keep", "sensitive": "keep", "keep": "keep", "qid": "qid", "drop": "drop",
     "restricted": "restricted"}
)  # fmt: skip
_NEVER_QIDS = frozenset({"primaryid", "caseid", "caseversion", "quarter", "is_latest"})
_HIERARCHY = MappingProxyType({**dict.fromkeys(QID_REPLACED, "engine"), "outcome": "outcome"})  # else value


def _frozen(columns: Mapping[str, Mapping[str, str]]) -> Mapping[str, Mapping[str, Any]]:
    return MappingProxyType({t: MappingProxyType(dict(cols)) for t, cols in columns.items()})


@dataclass(frozen=True, kw_only=True, slots=True)
class ColumnPolicy:
    """Per table and column: a role and its action (see the module docstring).

    Args:
        columns: table → column → action (``keep``, ``qid``, ``drop``, ``restricted``). Unlisted
            columns are dropped.
        roles: table → column → role; a column without one takes the role named like its action.
        qids: DEMO column → hierarchy (``engine``, ``date``, ``value`` or a tree of ``trees``) of a
            column whose action is ``qid`` (default ``engine`` for age, sex, wt, else ``value``).
        trees: named categorical trees (value → parent; parents → ``*``).
        reasons: table → column → why (the policy file's ``why``).
        rejects: what happens to the quarantined rows' raw content. ``drop`` (default): the public
            ``rejects/<table>.parquet`` holds only ``source_file``, ``line``, ``reason`` (and
            ``quarter`` when present), so every quarantined row is accounted for without publishing
            its raw, un-anonymized values; ``restricted``: the full files also go to the restricted
            folder; ``keep``: the full files are published (only for data that is already public).

    Raises:
        ConfigError: unknown table, action or hierarchy, a raw QID column listed as kept, a qid outside
            DEMO or on an id, or a required column (``REQUIRED``) not kept.
    """

    columns: Mapping[str, Mapping[str, Action]]
    roles: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    qids: Mapping[str, str] = field(default_factory=dict)
    trees: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    reasons: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    rejects: Action = "drop"

    def __post_init__(self) -> None:
        unknown = sorted(set(self.columns) - set(TABLES))
        if unknown:
            raise ConfigError(f"column policy: unknown table(s) {unknown} (expected {', '.join(TABLES)})")
        for table, cols in self.columns.items():
            for name, action in cols.items():
                self._check(table, name, action)
        for table in TABLES:
            missing = [c for c in REQUIRED[table] if self.action(table, c) != "keep"]
            if missing:
                raise ConfigError(f"column policy: {table} must keep {', '.join(missing)}")
        if self.rejects not in ("keep", "drop", "restricted"):
            raise ConfigError(f"column policy: rejects: unknown action {self.rejects!r}")
        roles = {
            t: {c: (self.roles.get(t, {}).get(c) or a) for c, a in cols.items()}
            for t, cols in self.columns.items()
        }
        object.__setattr__(self, "columns", _frozen(self.columns))
        object.__setattr__(self, "roles", _frozen(roles))
        object.__setattr__(self, "qids", MappingProxyType(dict(self.qids)))
        object.__setattr__(self, "trees", _frozen(self.trees))
        object.__setattr__(self, "reasons", _frozen(self.reasons))

    def _check(self, table: str, name: str, action: str) -> None:
        where = f"column policy: {table}.{name}"
        if action not in ACTIONS:
            raise ConfigError(f"{where}: unknown action {action!r} (expected keep, qid, drop or restricted)")
        if table == "demo" and (name in QID_REPLACED or name in ALWAYS_DROPPED) and action == "keep":
            raise ConfigError(f"{where} is a raw QID and is never published (drop or restricted)")
        if action != "qid":
            return
        if table != "demo":
            raise ConfigError(f"{where}: only DEMO columns can be qids (a group is a set of DEMO reports)")
        if name in _NEVER_QIDS:
            raise ConfigError(f"{where}: an id or bookkeeping column cannot be a qid")
        hierarchy = self.qids.get(name, _HIERARCHY.get(name, "value"))
        if hierarchy not in BUILTIN_HIERARCHIES and hierarchy not in self.trees:
            known = ", ".join([*BUILTIN_HIERARCHIES, *sorted(self.trees)])
            raise ConfigError(f"{where}: unknown hierarchy {hierarchy!r} (expected one of {known})")
        if (hierarchy == "engine") != (name in QID_REPLACED):
            raise ConfigError(f"{where}: hierarchy engine is for age, sex and wt only")
        if (hierarchy in OUTCOME_HIERARCHIES) != (name == "outcome"):
            raise ConfigError(
                f"{where}: hierarchy {hierarchy} is for the derived column outcome only"
                if name != "outcome"
                else f"{where}: the derived column outcome takes hierarchy {', '.join(OUTCOME_HIERARCHIES)}"
            )

    def action(self, table: str, column: str) -> Action:
        """The action for ``table.column``; ``drop`` when the policy does not list the column."""
        return self.columns.get(table, {}).get(column, "drop")

    def role(self, table: str, column: str) -> str:
        """The declared role of ``table.column``; ``drop`` when the policy does not list the column."""
        return self.roles.get(table, {}).get(column, "drop")

    def field_qids(self) -> dict[str, str]:
        """DEMO qid columns generalized after clustering (not the engine's) → hierarchy, in FAERS order."""
        order = {c: i for i, c in enumerate(FAERS_COLUMNS["demo"])}
        names = [c for c, a in self.columns.get("demo", {}).items() if a == "qid" and c not in QID_REPLACED]
        names.sort(key=lambda c: (order.get(c, len(order)), c))
        return {c: self.qids.get(c, _HIERARCHY.get(c, "value")) for c in names}

    def with_actions(self, table: str, /, **actions: Action) -> ColumnPolicy:
        """A copy with some columns of one table set to new actions (their role follows; validated again)."""
        columns = {t: dict(c) for t, c in self.columns.items()}
        columns.setdefault(table, {}).update(actions)
        roles = {t: dict(c) for t, c in self.roles.items()}
        roles.setdefault(table, {}).update(actions)
        return ColumnPolicy(
            columns=columns, roles=roles, qids=self.qids, trees=self.trees, reasons=self.reasons,
            rejects=self.rejects,
        )  # fmt: skip

    def describe(self) -> dict[str, object]:
        """The policy as plain JSON data, for ``manifest.json``."""
        return {
            "columns": {t: dict(sorted(c.items())) for t, c in sorted(self.columns.items())},
            "roles": {t: dict(sorted(c.items())) for t, c in sorted(self.roles.items())},
            "hierarchies": dict(sorted(self.qids.items())),
            "trees": {t: dict(sorted(c.items())) for t, c in sorted(self.trees.items())},
            "rejects": self.rejects,
            "unlisted": "drop",
        }


def _policy_of(files: Sequence[PolicyFile]) -> ColumnPolicy:
    """Merge policy files, later entries winning per (table, column)."""
    columns: dict[str, dict[str, Action]] = {}
    roles: dict[str, dict[str, str]] = {}
    reasons: dict[str, dict[str, str]] = {}
    qids: dict[str, str] = {}
    trees: dict[str, dict[str, str]] = {}
    rejects: str = "drop"
    for policy_file in files:
        trees.update(policy_file.trees)
        rejects = policy_file.rejects or rejects
        for table, entries in policy_file.entries.items():
            for column, entry in entries.items():
                columns.setdefault(table, {})[column] = _ACTION_OF_ROLE[entry.role]
                roles.setdefault(table, {})[column] = entry.role
                reasons.setdefault(table, {})[column] = entry.why
                if entry.hierarchy is not None:
                    qids[column] = entry.hierarchy
    return ColumnPolicy(
        columns=columns, roles=roles, qids=qids, trees=trees, reasons=reasons,
        rejects=cast(Action, rejects),
    )  # fmt: skip


def load_policy(path: Path | None = None) -> ColumnPolicy:
    """The bundled default policy, overridden entry by entry by a user's TOML or CSV file (``path``).

    Raises:
        InputError: an unreadable or malformed policy file (file, line, ``table.column``).
        ConfigError: the merged policy breaks a rule of :class:`ColumnPolicy`.
    """
    files = [read_policy_file(DEFAULT_POLICY_FILE)]
    if path is not None:
        files.append(read_policy_file(path))
    try:
        return _policy_of(files)
    except ConfigError as exc:
        if path is None:
            raise
        raise ConfigError(f"{path}: {exc}") from exc


DEFAULT_POLICY = load_policy()


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
