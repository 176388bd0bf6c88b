"""The partition-independent half of writing a release: a draft folder (issue 18 item 6).

:func:`faers_anon.release.writer.write_release` = :func:`prepare_release`, then
:func:`faers_anon.release.writer.seal_release` and ``place_release``. Everything here needs the
ingested folder, the column policy and the key, never the partition, so the anonymize stage runs it
on a thread beside the clustering engine (:func:`faers_anon.anonymize.pipeline.anonymize_folder`):

* the tables read as published (:func:`read_release_table`), every row labelled with the release's
  quarter (:func:`one_quarter`), their ids pseudonymized and their rows
  in release order (:func:`~faers_anon.release.writer_tables.released_rows`), DEMO with its case's OUTC
  set (:func:`~faers_anon.io.qid_fields.with_outcome_sets`);
* the tables the partition does not touch (all but DEMO and OUTC; with item protection, DRUG and REAC
  also wait for the groups) shaped by the policy and written, Parquet and ascii, with their counts;
* ``rejects/`` written, the input folder and the files written so far hashed for the manifest;
* the superseded reports the version plan leaves out (:mod:`faers_anon.anonymize.versions`, decided
  before the engine: a case's version count must be common to its group) left out of every table with
  their child rows, after the ids are mapped (a report keeps its pseudonym), and counted
  (:attr:`ReleaseDraft.superseded`: ``rows_in`` = rows read = ``rows_out`` + ``superseded_left_out``).

The draft lives in ``.<name>.tmp-<pid>`` beside ``out`` (and ``.<name>-restricted.tmp-<pid>``:
:func:`draft_paths`); :func:`prepare_release` removes both when it fails or is interrupted, and
:func:`discard_draft` removes them when the release is abandoned after it (the finish removes them on
its own failure).

Decision (a table shaped early): for a table other than DEMO, :func:`~faers_anon.io.column_policy.
shape_table` reads the partition only for its column names, to accept a kept column that only the
partition holds; shaped against the partition's fixed columns it gives the same frame, or an
InputError, and then the table waits for the real partition (same outcome as before).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.anonymize.items import ItemProtection
from faers_anon.errors import ConfigError, InputError
from faers_anon.io.column_policy import (
    INGESTED_FILES,
    PARTITION_SCHEMA,
    TABLES,
    ColumnPolicy,
    ShapedTable,
    shape_table,
)
from faers_anon.io.qid_fields import with_outcome_sets
from faers_anon.io.rejects import write_rejects_csv
from faers_anon.keys import AgencyKey, load_key
from faers_anon.release.manifest import hash_tree
from faers_anon.release.pseudonyms import IdMap, release_id_map
from faers_anon.release.writer_tables import (
    published,
    published_columns,
    release_quarters,
    released_rows,
    write_parquet,
    write_table,
)

__all__ = [
    "LATE_TABLES",
    "ReleaseDraft",
    "check_target",
    "cleanup",
    "discard_draft",
    "draft_paths",
    "one_quarter",
    "prepare_release",
    "read_release_table",
    "restricted_path",
    "without_reports",
]

LATE_TABLES = frozenset({"demo", "outc"})
"""Tables shaped by the partition: DEMO takes its groups' QIDs, OUTC the codes they make certain."""
_ITEM_TABLES = frozenset({"drug", "reac"})
_RAW_IDS = frozenset({"primaryid", "caseid", "isr", "case"})
_REJECT_PUBLIC = ("quarter", "source_file", "line", "reason")
_QUARTER = re.compile(r"^\d{4}Q[1-4]$")
_NO_GROUPS = pl.DataFrame(schema=PARTITION_SCHEMA)


@dataclass(frozen=True, kw_only=True, slots=True)
class ReleaseDraft:
    """A release written up to its partition (module docstring).

    Attributes:
        out, force, policy, agency: as given to :func:`prepare_release` (the key loaded).
        tmp, tmp_r: the draft folders (:func:`draft_paths`); ``tmp`` holds ``ascii/``, ``parquet/``
            and ``rejects/`` so far.
        ids: raw ids → pseudonyms (in memory only).
        tables: every table pseudonymized, in release order (DEMO with ``outcome``).
        reports: DEMO's raw (``primaryid``, ``caseid``): the partition is checked against them.
        quarters: the release's quarter (one; none when every table is empty: :func:`one_quarter`).
        shaped: the tables shaped and written already; counts: their manifest counts, ``rejects`` too.
        inputs: SHA-256 of the ingested folder's files; written: of the files in ``tmp`` so far.
        superseded: rows left out per table and quarter (:func:`without_reports`); left_out: the
            reports and cases left out (``counts.superseded_left_out`` of the manifest).
    """

    out: Path
    force: bool
    policy: ColumnPolicy
    agency: AgencyKey
    tmp: Path
    tmp_r: Path
    ids: IdMap
    tables: dict[str, pl.DataFrame]
    reports: pl.DataFrame
    quarters: list[str]
    shaped: dict[str, ShapedTable] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, str] = field(default_factory=dict)
    written: dict[str, str] = field(default_factory=dict)
    superseded: dict[str, dict[str, int]] = field(default_factory=dict)
    left_out: dict[str, int] = field(default_factory=lambda: {"reports": 0, "cases": 0})


def restricted_path(out: Path) -> Path:
    """The restricted folder beside a release: ``<parent>/<name>-restricted``."""
    return out.parent / f"{out.name}-restricted"


def draft_paths(out: Path, pid: int) -> tuple[Path, Path]:
    """The draft folders of release ``out`` written by process ``pid``: public, restricted."""
    return out.parent / f".{out.name}.tmp-{pid}", out.parent / f".{restricted_path(out).name}.tmp-{pid}"


def discard_draft(out: Path, pid: int) -> None:
    """Remove the draft folders of ``out`` (:func:`draft_paths`), if any."""
    cleanup(*draft_paths(out, pid))


def prepare_release(
    ingested: Path,
    out: Path,
    *,
    policy: ColumnPolicy,
    key: AgencyKey | None,
    force: bool,
    items: ItemProtection | None,
    pid: int,
    left_out: pl.DataFrame | None = None,
) -> ReleaseDraft:
    """The partition-independent half of a release of ``ingested`` into ``out`` (module docstring);
    ``key`` None reads ``$FAERS_ANON_KEY_FILE``; ``left_out``: the raw (primaryid, caseid) of the
    superseded reports the release leaves out (:attr:`faers_anon.anonymize.versions.VersionPlan.left_out`).

    Raises:
        ConfigError: ``out`` exists without ``force``, or is not a folder.
        InputError: a missing or unreadable ingested table or column, a bad quarter, an unwritable
            output; a case with more than 1000 reports.
    """
    check_target(out, force)
    agency = key if key is not None else load_key(None)
    raw = {table: read_release_table(ingested / INGESTED_FILES[table], table, policy) for table in TABLES}
    raw = one_quarter(raw)  # before any count, sort or split sees the input quarters
    ids = release_id_map(raw, agency.pseudonym_key)  # every input report: a kept one keeps its pseudonym
    raw, superseded = without_reports(raw, left_out)
    reports = raw["demo"].select("primaryid", "caseid")
    tables = {t: released_rows(f, ids) for t, f in raw.items()}
    del raw
    tables["demo"] = with_outcome_sets(tables["demo"], tables["outc"])  # the case's OUTC set, a qid
    tmp, tmp_r = draft_paths(out, pid)
    draft = ReleaseDraft(
        out=out, force=force, policy=policy, agency=agency, tmp=tmp, tmp_r=tmp_r, ids=ids, tables=tables,
        reports=reports, quarters=release_quarters(tables), superseded=superseded,
    )  # fmt: skip
    if left_out is not None:
        draft.left_out.update(reports=left_out.height, cases=left_out.get_column("caseid").n_unique())
    rejects = sorted((ingested / "rejects").glob("*.parquet")) if (ingested / "rejects").is_dir() else []
    try:
        _fresh_dir(tmp)
        (tmp / "ascii").mkdir()
        (tmp / "parquet").mkdir()
        for table in TABLES:
            if table in LATE_TABLES or (items is not None and table in _ITEM_TABLES):
                continue
            try:
                shape = shape_table(table, tables[table], _NO_GROUPS, policy)
            except InputError:  # a kept column the partition may hold (module docstring)
                continue
            draft.shaped[table] = shape
            draft.counts[table] = write_table(
                tmp, table, shape, tables[table], draft.quarters, superseded.get(table)
            )
        restricted = tmp_r if policy.rejects == "restricted" else None
        draft.counts["rejects"] = _write_rejects(tmp, restricted, rejects, policy)
        draft.inputs.update(hash_tree(ingested))
        draft.written.update(hash_tree(tmp))
    except OSError as exc:
        cleanup(tmp, tmp_r)
        raise InputError(f"cannot write the release ({exc.strerror or exc})", path=out) from exc
    except BaseException:
        cleanup(tmp, tmp_r)
        raise
    return draft


def one_quarter(tables: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """``tables`` with every row's ``quarter`` set to the release's quarter: the latest quarter of any
    row (:func:`release_quarters`); unchanged when there is one quarter (or none).

    Decision (SPEC §11, docs/formats.md "The quarter column"): ``quarter`` is a released field, and the
    input quarter of a row (an earlier quarter of a multi-quarter release, a republished or retried
    report of a ledgered one) varies inside a QID-group and singles cases out (4.7 % of cases below k
    on QIDs + quarter, two 100k quarters). When a report was received is told by ``fda_dt`` and
    ``init_fda_dt`` at the precision its group allows; ``quarter`` is the quarter of the release that
    publishes the row. Rejects keep their input quarter (they name input rows, not cases).
    """
    quarters = release_quarters(tables)
    if len(quarters) < 2:
        return tables
    label = pl.lit(quarters[-1], pl.String)
    return {t: f.with_columns(label.cast(f.schema["quarter"]).alias("quarter")) for t, f in tables.items()}


def without_reports(
    raw: dict[str, pl.DataFrame], left_out: pl.DataFrame | None
) -> tuple[dict[str, pl.DataFrame], dict[str, dict[str, int]]]:
    """``raw`` (ingested tables, raw ids) without the rows of the reports ``left_out`` (``primaryid``),
    and the rows left out per table and quarter (every table: 0 where none)."""
    if left_out is None or left_out.is_empty():
        return raw, {t: {} for t in raw}
    ids = left_out.select(pl.col("primaryid").cast(pl.Int64)).unique()
    kept, counts = {}, {}
    for table, frame in raw.items():
        hit = pl.col("primaryid").cast(pl.Int64).is_in(ids.get_column("primaryid").implode())
        marked = frame.with_columns(hit.alias("_out"))
        gone = marked.filter(pl.col("_out"))
        counts[table] = dict(gone.group_by(pl.col("quarter").cast(pl.String)).len().iter_rows())
        kept[table] = marked.filter(~pl.col("_out")).drop("_out")
    return kept, counts


def read_release_table(path: Path, table: str, policy: ColumnPolicy) -> pl.DataFrame:
    """An ingested table, the columns the policy drops as empty stand-ins (:func:`published_columns`)."""
    if not path.is_file():
        raise InputError("missing ingested table (run `faers-anon ingest` first)", path=path)
    try:
        names = list(pl.read_parquet_schema(path))
        read = pl.read_parquet(path, columns=published(table, names, policy))
        frame = published_columns(table, names, policy, read)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise InputError(f"unreadable parquet ({str(exc).splitlines()[0]})", path=path) from exc
    for name in ("primaryid", "caseid", "quarter"):
        if name not in frame.columns:
            raise InputError("missing column", path=path, field=name)
    bad = frame.filter(~pl.col("quarter").cast(pl.String).str.contains(_QUARTER.pattern).fill_null(False))
    if bad.height:
        raise InputError(
            f"bad quarter {bad['quarter'][0]!r} (expected e.g. 2024Q1)", path=path, field="quarter"
        )
    return frame


def check_target(path: Path, force: bool) -> None:
    """ConfigError when ``path`` exists without ``force``, or exists and is not a folder."""
    if path.exists() and not force:
        raise ConfigError(f"{path}: already exists (use --force to replace it)")
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{path}: exists and is not a folder")


def _write_rejects(
    root: Path, restricted: Path | None, files: list[Path], policy: ColumnPolicy
) -> dict[str, int]:
    (root / "rejects").mkdir()
    counts: dict[str, int] = {}
    for path in files:
        try:
            frame = pl.read_parquet(path)
        except pl.exceptions.PolarsError as exc:
            raise InputError(f"unreadable parquet ({str(exc).splitlines()[0]})", path=path) from exc
        counts[path.name] = frame.height
        if policy.rejects == "keep":
            write_parquet(frame.select(c for c in frame.columns if c.lower() not in _RAW_IDS),
                           root / "rejects" / path.name)  # fmt: skip
            continue
        for name in ("source_file", "line", "reason"):
            if name not in frame.columns:
                raise InputError("missing column", path=path, field=name)
        write_parquet(
            frame.select(c for c in _REJECT_PUBLIC if c in frame.columns), root / "rejects" / path.name
        )
        if restricted is not None and policy.rejects == "restricted":
            (restricted / "rejects").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, restricted / "rejects" / path.name)
    write_rejects_csv(root / "rejects")  # file, line, table, reason in words; no field of the rows
    return counts


def _fresh_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)


def cleanup(*paths: Path) -> None:
    """Remove each folder (a missing one is fine)."""
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
