"""Ingest: FAERS quarterly files → typed, normalized Parquet tables, rejects, cases and a report.

Source: SPEC §3–§4; docs/architecture.md "The ingested folder" (the output contract).

One lazy chain per table (DEMO collected once; a child table's typed text, then the columns added
to it): the raw text of every file of the table (all quarters),
typed (:mod:`faers_anon.io.parse`), normalized (:mod:`faers_anon.io.normalize`, DEMO), checked by the
named rules of :mod:`faers_anon.io.rules`, and given a status: *quarantined* when a row rule fails,
*deleted* when its case is on a DELETE list (of any quarter given), *quarantined* when a link rule
fails, else *kept*. Kept rows go to ``<table>.parquet``; the others to ``rejects/<table>.parquet``
with ``source_file``, ``line``, ``reason`` and their raw text. DEMO is done first; child rows are
matched to its kept (or deleted) reports by (quarter, primaryid), and legacy child rows take their
caseid from there. Then ``cases.parquet`` (:func:`faers_anon.io.cases.merge_versions`) and
``ingest_report.json``. Several quarters make one cumulative database (latest version across them,
every DELETE list applied to every quarter, AERS cases linked to FAERS across 2012Q3/Q4, an
accounting per quarter in ``by_quarter``), ingested one quarter at a time by the same steps
(:func:`_run` per quarter; :mod:`faers_anon.io.cumulative`).

Decisions: drug keys are computed once per distinct name; quarter and file are carried as small
integer codes inside the chain (lookups, windows and counts on integers) and as the contract's Utf8
columns in the output. Work runs as two tasks at a time (much of a table's work, such as Parquet
encoding, runs on one core; scheduling in :func:`_run`).
Parquet is written by Arrow's encoder (:mod:`faers_anon.io.outputs`). A quarter with data files but
no DEMO is refused before anything is written.

A table not in the source (extractFAERS has no OUTC/THER/RPSR) is an empty table, not an error:
every table is written, an absent one with no rows and the schema of a present one, and the report
says why (``missing_tables``: ``{"quarter", "table", "reason": "not in the source"}``; the table's
entry has ``not_in_source``, the quarters that lack it). ``rejects/rejects.csv`` lists every
rejected row (file, line, table, reason in words; :mod:`faers_anon.io.rejects`), and ``warnings``
names each file whose encoding is not UTF-8 or that holds invalid bytes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon import __version__
from faers_anon._paths import bundled
from faers_anon.errors import ConfigError, InputError
from faers_anon.io import cumulative
from faers_anon.io.annotate import (
    Scan,
    annotated_children,
    annotated_reports,
    child_rules,
    deleted_lists,
    report_key,
    report_rules,
    typed_rows,
    with_is_latest,
)
from faers_anon.io.cases import TERM_LISTS, combine, term_lists, version_summary
from faers_anon.io.cumulative import check_quarters, index_columns, ingest_series, quarter_accounting
from faers_anon.io.faers_ascii import local_files, scan_table
from faers_anon.io.ingest_report import KEPT, QUARANTINED, STATUS, IngestResult
from faers_anon.io.outputs import (
    Sink,
    file_meta,
    kept_columns,
    normalization_counts,
    table_report,
    write_split,
    write_table,
)
from faers_anon.io.rejects import NOT_IN_SOURCE, note_absence, write_rejects_csv
from faers_anon.io.schema import CHILD_TABLES, COLUMNS, TABLES
from faers_anon.io.sources import LocalFile, check_demo_present, discover, encoding_warnings
from faers_anon.io.staging import REPORT_NAME, discard, open_staging, publish
from faers_anon.io.workspace import paused_gc
from faers_anon.json_data import json_data
from knowledge.drug_names import load_drug_names

__all__ = ["IngestConfig", "ingest_quarters", "demo_source"]

_OUTPUT_EXTRA = {"drug": ("drug_key",)}
_REPORT_ORDER = (
    "primaryid", "caseid", "caseversion", "i_f_code", "fda_dt", "event_dt", "init_fda_dt", "mfr_dt",
    "rept_dt", "age", "age_cod", "age_grp", "age_years", "sex", "wt", "wt_cod", "weight_kg",
    "occr_country", "reporter_country", "rept_cod", "occp_cod", "mfr_num", "mfr_sndr", "auth_num",
    "lit_ref", "e_sub", "to_mfr", "is_latest",
)  # fmt: skip
_VERSION_COLUMNS = ("caseid", "primaryid", "caseversion", "fda_dt", "quarter", "age_years", "sex",
                    "weight_kg")  # fmt: skip
#: Child table → the super-record attribute it feeds (faers_anon.io.cases.TERM_LISTS).
_LISTS = {"indi": "indications", "reac": "reactions", "drug": "drug_keys"}


@dataclass(frozen=True, kw_only=True, slots=True)
class IngestConfig:
    """Options of ``faers-anon ingest``.

    Attributes:
        demo: also ingest the bundled demo quarter (``faers_anon/data/demo/*.zip``).
        drug_names: optional brand → ingredient lookup for ``drug_key``
            (``knowledge.drug_names.load_drug_names``), e.g. FDA's ``unii_names_bn_of.tsv``.
        work_dir: parent of the private work folder the tables are built in (default: the system
            temp folder; :mod:`faers_anon.io.staging`).

    Raises:
        ConfigError: ``drug_names`` is given but is not a file.
    """

    demo: bool = False
    drug_names: Path | None = None
    work_dir: Path | None = None

    def __post_init__(self) -> None:
        if self.drug_names is not None and not Path(self.drug_names).is_file():
            raise ConfigError(
                f"drug_names: {self.drug_names}: no such file (expected a CSV/TSV of name and substance)"
            )


def demo_source() -> Path:
    """The bundled demo quarter: the zip in ``faers_anon/data/demo``.

    Raises:
        InputError: no zip is bundled there.
    """
    zips = sorted(bundled("demo").glob("*.zip"))
    if not zips:
        raise InputError(f"{bundled('demo')}: bundled demo quarter not found (expected one *.zip there)")
    return zips[0]


def _scans(files: list[LocalFile], table: str, quarters: list[str]) -> list[Scan]:
    chosen = [f for f in files if f.source.table == table]
    code = {q: i for i, q in enumerate(quarters)}
    return [
        Scan(scan=scan_table(f, table), file_code=i, quarter_code=code[f.source.quarter or ""])
        for i, f in enumerate(chosen)
    ]


def _meta(scans: list[Scan]) -> list[dict[str, Any]]:
    return [
        file_meta(
            s.scan.file,
            ignored_columns=list(s.scan.ignored_columns),
            missing_columns=list(s.scan.missing_columns),
            invalid_bytes=s.scan.file.invalid_bytes,
        )
        for s in scans
    ]


def _report_status(frame: pl.DataFrame, n_quarters: int) -> pl.DataFrame:
    """Key, caseid and kept flag of the kept and deleted reports, unique on the key (kept first, then
    file order), sorted by the key (sorted once here, not by each child table's
    :func:`~faers_anon.io.annotate._with_report`): one sort by (key, kept) and the first row of each
    key (0.035 CPU-s at 400k cases, against 0.088 for a sort, a hashed ``unique`` and a second sort)."""
    key = pl.col("_report_key")
    return (
        frame.lazy()
        .filter(pl.col(STATUS) != QUARANTINED)
        .select(
            report_key(n_quarters).alias("_report_key"),
            pl.col("caseid").alias("_report_caseid"),
            (pl.col(STATUS) == KEPT).alias("_report_kept"),
        )
        .drop_nulls("_report_key")
        .sort(["_report_key", "_report_kept"], descending=[False, True], maintain_order=True)
        .filter(key.ne_missing(key.shift()))
        .collect()
    )


def _finish_reports(
    frame: pl.DataFrame,
    scans: list[Scan],
    out: Path,
    quarters: list[str],
    outputs: _Outputs,
    early: Future[Any],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Give ``early`` the version summary first, for the case merge (a quarter of a series: its kept
    rows' versions, summarized with every quarter's at the end; its kept rows are staged); then write
    DEMO and return its report entry (with ``by_quarter``, :func:`quarter_accounting`) and counts."""
    kept = kept_columns(frame, _VERSION_COLUMNS)
    early.set_result(kept if outputs.stage is not None else version_summary(kept))
    del kept
    kept_to = outputs.stage / "reports.arrow" if outputs.stage is not None else None
    written = write_split(
        frame, "demo", out, report_rules(), columns=_REPORT_ORDER, sink=outputs.sink, kept_to=kept_to
    )
    report = table_report(frame, "demo", written, _meta(scans))
    report["by_quarter"] = quarter_accounting(frame, quarters) if outputs.stage is None else []
    return report, normalization_counts(frame, report["values_nulled"])


def _publishing(early: Future[Any], fn: Any, *args: Any) -> Any:
    """``fn(*args, early)``; should it fail before giving ``early`` its result, ``early`` gets the
    exception (a task waiting for it fails instead of waiting forever)."""
    try:
        return fn(*args, early)
    except BaseException as exc:
        if not early.done():
            early.set_exception(exc)
        raise


@dataclass(frozen=True, kw_only=True, slots=True)
class _Outputs:
    """Where one run writes: alone (``sink`` None, every file written at once) or as one quarter of a
    cumulative ingest (:func:`faers_anon.io.cumulative.ingest_series`): rows appended to ``sink``'s
    files, DEMO's kept rows and the super-record value lists staged in ``stage``, and ``later`` the
    primaryids of the later quarters' candidate reports (among those read in several quarters:
    :func:`faers_anon.io.cumulative.repeated_primaryids`)."""

    sink: Sink | None = None
    stage: Path | None = None
    later: pl.Series | None = None


def _run(
    files: list[LocalFile],
    out: Path,
    lookup: pl.DataFrame | None,
    quarters: list[str],
    deleted_ids: pl.Series,
    outputs: _Outputs = _Outputs(),
) -> dict[str, Any]:
    """Ingest the data files of ``quarters`` (the DELETE lists already read: ``deleted_ids``).

    Returns:
        The report's ``tables`` (but ``deleted``), ``by_quarter``, ``missing_tables``,
        ``normalization`` and ``cases``; for a quarter of a series also ``index``, the
        :func:`faers_anon.io.cumulative.index_columns` of its DEMO rows.
    """
    report_status = pl.DataFrame(
        schema={"_report_key": pl.Int64, "_report_caseid": pl.Int64, "_report_kept": pl.Boolean}
    )
    demo_scans = _scans(files, "demo", quarters)
    missing: list[dict[str, str]] = []
    demo_quarters = {s.scan.file.source.quarter for s in demo_scans}
    children: dict[str, list[Scan]] = {}
    for table in CHILD_TABLES:
        children[table] = _scans(files, table, quarters)
        absent = demo_quarters - {s.scan.file.source.quarter for s in children[table]}
        missing += [
            {"quarter": q, "table": table, "reason": NOT_IN_SOURCE} for q in sorted(q for q in absent if q)
        ]

    def child(table: str, rows: Future[pl.DataFrame] | None, lists: Future[Any]) -> dict[str, Any]:
        typed = rows.result() if rows is not None else typed_rows(table, children[table])
        frame = annotated_children(table, typed, report_status, deleted_ids, lookup, n_quarters=len(quarters))
        del typed
        name = _LISTS.get(table)  # the value lists first: the case merge waits for them, not the writing
        kept = kept_columns(frame, ["caseid", TERM_LISTS[name][0]]) if name else None
        lists.set_result(term_lists(kept, name) if name and kept is not None else None)
        del kept
        columns = [*COLUMNS[table], *_OUTPUT_EXTRA.get(table, ())]
        written = write_split(frame, table, out, child_rules(table), columns=columns, sink=outputs.sink)
        return table_report(frame, table, written, _meta(children[table]))

    # Two tasks at a time: much of a table's work (Parquet encoding, Python glue) runs on one core,
    # so a second task keeps the other core busy. The first child table is read while DEMO is
    # annotated (reading needs nothing from DEMO); only DEMO's report status is needed before child
    # rows are checked; DEMO's writing and counts run beside the child tables. The case merge needs
    # DEMO's version summary and the value lists, which each task gives (``early``) before it writes
    # its Parquet: the merge runs beside DRUG's writing (the longest). It is queued right after the
    # last table feeding it and waits only for tasks queued before it, which have all started.
    index = None
    early: dict[str, Future[Any]] = {t: Future() for t in ("reports", *CHILD_TABLES)}
    with ThreadPoolExecutor(max_workers=2) as pool:
        present = list(CHILD_TABLES)  # every table is written; an absent one has no rows
        first = pool.submit(typed_rows, present[0], children[present[0]]) if present else None
        demo = None
        if demo_scans:
            frame = with_is_latest(annotated_reports(demo_scans, deleted_ids, outputs.later).collect())
            report_status = _report_status(frame, len(quarters))
            index = index_columns(frame) if outputs.stage is not None else None
            finish = (frame, demo_scans, out, quarters, outputs)
            demo = pool.submit(_publishing, early["reports"], _finish_reports, *finish)
            del frame
        feeding = [t for t in present if t in _LISTS]
        done: dict[str, Future[dict[str, Any]]] = {}
        merged = pool.submit(_merge, out, early, [], outputs) if demo is not None and not feeding else None
        for i, table in enumerate(present):
            done[table] = pool.submit(_publishing, early[table], child, table, first if i == 0 else None)
            if demo is not None and feeding and table == feeding[-1]:
                merged = pool.submit(_merge, out, early, feeding, outputs)
        del first
        tables: dict[str, Any] = {}
        normalization: dict[str, Any] = {}
        by_quarter: list[dict[str, Any]] = []
        if demo is not None:
            tables["reports"], normalization = demo.result()
            by_quarter = tables["reports"].pop("by_quarter")
        tables |= {table: future.result() for table, future in done.items()}
        cases = merged.result() if merged is not None else _NO_CASES
    result: dict[str, Any] = {"tables": tables, "by_quarter": by_quarter, "missing_tables": missing,
            "normalization": normalization, "cases": cases}  # fmt: skip
    return result if index is None else result | {"index": index}


_NO_CASES = {"cases": 0, "with_several_versions": 0}


def _ingest(
    files: list[LocalFile], out: Path, lookup: pl.DataFrame | None, quarters: list[str]
) -> dict[str, Any]:
    """The DELETE lists, then every data file: one run, or quarter by quarter when several quarters
    have DEMO (:func:`faers_anon.io.cumulative.ingest_series`, memory bounded by one quarter)."""
    deleted_ids, deleted_report = deleted_lists([f for f in files if f.source.table == "deleted"], out)

    def quarter(
        chosen: list[LocalFile], quarter: str, sink: Sink, stage: Path, later: pl.Series
    ) -> dict[str, Any]:
        return _run(
            chosen, out, lookup, [quarter], deleted_ids, _Outputs(sink=sink, stage=stage, later=later)
        )

    if len({f.source.quarter for f in files if f.source.table == "demo"}) > 1:
        done = ingest_series(files, out, quarter)
    else:
        done = _run(files, out, lookup, quarters, deleted_ids)
    tables = done["tables"] | {"deleted": deleted_report}
    for table in CHILD_TABLES:
        note_absence(tables[table], [m["quarter"] for m in done["missing_tables"] if m["table"] == table])
    return {"tables": tables, "by_quarter": done["by_quarter"], "missing_tables": done["missing_tables"],
            "deleted_caseids": deleted_ids.len(), "normalization": done["normalization"],
            "cases": done["cases"]}  # fmt: skip


def _merge(out: Path, early: dict[str, Future[Any]], feeding: list[str], outputs: _Outputs) -> dict[str, int]:
    """Write ``cases.parquet`` from DEMO's version summary and the value lists of the ``feeding`` child
    tables, given early by their tasks (for a quarter of a series: stage its versions and value
    lists, :func:`faers_anon.io.cumulative.stage_case_parts`)."""
    lists = {_LISTS[t]: kept for t in feeding if (kept := early[t].result()) is not None}
    versions = early["reports"].result()
    if outputs.stage is not None and versions is not None:
        cumulative.stage_case_parts(outputs.stage, versions, lists)
        return _NO_CASES
    return _cases(out, versions, lists) if versions is not None else _NO_CASES


def _cases(out: Path, versions: pl.DataFrame, lists: dict[str, pl.DataFrame]) -> dict[str, int]:
    """Write ``cases.parquet``; a missing child table contributes empty lists."""
    cases = combine(versions, lists)
    write_table(cases, out / "cases.parquet")
    return {"cases": cases.height, "with_several_versions": int((cases.get_column("n_reports") > 1).sum())}


def ingest_quarters(
    sources: Sequence[Path], out: Path, /, *, config: IngestConfig | None = None
) -> IngestResult:
    """Ingest FAERS quarters from zips, folders or files into the ingested folder ``out``.

    Args:
        sources: FDA zips, folders or FAERS text files (any mix of eras and quarters).
        out: the folder to write (see docs/architecture.md "The ingested folder"); it appears only
            when complete (:mod:`faers_anon.io.staging`).
        config: options; ``IngestConfig()`` when None.

    Returns:
        The folder and the content of its ``ingest_report.json``.

    Raises:
        InputError: no source given, a source missing or unreadable, a quarter without DEMO, a header
            without a key column, or ``out`` a folder that is neither empty nor a previous ingest.
        KnowledgeError: the drug-name lookup cannot be read.
    """
    config = config or IngestConfig()
    paths = [Path(p) for p in sources] + ([demo_source()] if config.demo else [])
    if not paths:
        raise InputError("ingest: no sources given (expected FAERS zips or folders, or --demo)")
    found = discover(paths)
    check_demo_present(found)
    lookup = load_drug_names(config.drug_names) if config.drug_names is not None else None
    quarters = sorted({f.quarter for f in found if f.quarter is not None})
    with paused_gc():
        staging = open_staging(Path(out), inputs=[*paths, config.drug_names], work_dir=config.work_dir)
        try:
            files = local_files(found, staging / "_work")
            done = _ingest(files, staging, lookup, quarters)
            done["warnings"] = check_quarters(quarters) + encoding_warnings(files)
            write_rejects_csv(staging / "rejects")
            report = {
                "tool_version": __version__,
                "sources": [str(p) for p in paths],
                "quarters": sorted({f.quarter for f in found if f.table in TABLES and f.quarter is not None}),
                "drug_names": str(config.drug_names) if config.drug_names else None,
                **done,
            }
            (staging / REPORT_NAME).write_text(json.dumps(json_data(report), indent=2) + "\n")
            publish(staging, Path(out))
        except BaseException:
            discard(staging)
            raise
    return IngestResult(out=Path(out), report=report)
