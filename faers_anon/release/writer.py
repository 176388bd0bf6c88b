"""Write a release folder from an ingested folder and a partition (SPEC §4, §10; docs/architecture.md).

Layout written (all paths relative to the release folder ``out``):

* ``ascii/<TABLE><yyQq>.txt``: per quarter and table, FAERS ``$``-delimited layout with a header line,
  lower-case names, no quoting, ``\\n`` line ends, empty field = missing. Dates ``YYYYMMDD``; floats in
  their shortest round-trip form without a trailing ``.0`` (``18``, ``0.08333333333333333``).
  FAERS has no quoting, so a ``$``, CR or LF inside a published text value becomes a space in ascii
  (parquet keeps the exact value); ``counts.<table>.ascii_replaced_cells`` in the manifest counts them.
  Every quarter seen in any table gets all seven files (header only when empty).
* ``parquet/<table>.parquet``: all quarters, the ascii columns plus ``quarter`` (and ``is_latest`` in
  demo), with the ingested types (dates as Date).
* ``knowledge.csv`` (drug_key, disease, weight), ``thresholds.csv`` (value, theta, then share, action
  and reason when given), comma-separated, sorted.
* ``rejects/<table>.parquet``: see :class:`~faers_anon.io.column_policy.ColumnPolicy` ``rejects``;
  with ``keep``, the raw id columns (``primaryid``, ``caseid``, legacy ``isr``, ``case``) are left out.
* extra files from the caller (``report.json``, ``report.html``), then ``manifest.json``, signed into
  ``certificate.json`` (:func:`faers_anon.release.certificate.seal`).

Ids: every ``primaryid`` and ``caseid`` written (ascii, parquet, the restricted folder) is its keyed
pseudonym (:mod:`faers_anon.release.pseudonyms`, under the agency key); the raw ids are replaced right after
the tables are read, so no later step sees them, and the map lives in memory only
(:attr:`ReleaseWritten.ids`, for a method that publishes ids in a form of its own).

DEMO rows get their case's group QIDs by a join on ``caseid`` with the partition (one row per case),
so every version of a case carries the same generalized QID, its OUTC set too (SPEC §4; OUTC rows:
:func:`~faers_anon.io.qid_fields.released_outcome_rows`). A report-level partition (one row per report,
with ``primaryid``; k-anonymity) is joined on ``primaryid``: each report carries its own group's QIDs.
Partition columns other than ``caseid`` (and ``primaryid``), ``group_id`` and the six standard QIDs
are extra QIDs (e.g. ``occr_country``): they replace the raw DEMO column of that name or are
appended. ``group_id`` itself is not published (the released QID tuple defines the group). Every
input row is written: rows in == rows out per table and quarter, but OUTC's (its certain codes).

Rows are sorted by (quarter, report pseudonym, source_file, line), ties in input order (not by the
raw primaryid: the row order would give the raw order back); float formatting is fixed and parquet
is written by polars with fixed settings, so the same inputs and key give byte-identical files (only
``manifest.json``'s ``created`` and so the certificate's signature differ).

Atomicity: everything is written into ``.<name>.tmp-<pid>`` beside ``out`` and renamed to ``out`` at
the end; on any exception the temporary folder is removed. An existing ``out`` is replaced only with
``force=True``. The restricted folder ``<name>-restricted`` (see the column policy) follows the same
rules and is renamed first, so a visible release is always complete.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.anonymize.items import ItemProtection, protect_items
from faers_anon.errors import ConfigError, InputError
from faers_anon.io.column_policy import (
    DEFAULT_POLICY,
    INGESTED_FILES,
    QID_COLUMNS,
    TABLES,
    ColumnPolicy,
    ShapedTable,
    shape_table,
)
from faers_anon.io.qid_fields import generalize_fields, released_outcome_rows, with_outcome_sets
from faers_anon.io.rejects import write_rejects_csv
from faers_anon.keys import AgencyKey, load_key
from faers_anon.release.certificate import seal
from faers_anon.release.manifest import (
    CERTIFICATE_NAME,
    MANIFEST_NAME,
    build_manifest,
    dump_manifest,
    hash_tree,
)
from faers_anon.release.pseudonyms import IdMap, release_id_map
from faers_anon.release.writer_checks import KNOWLEDGE, THRESHOLDS, check_extras, check_frame, check_partition
from faers_anon.release.writer_tables import (
    published,
    published_columns,
    released_rows,
    write_parquet,
    write_tables,
)

__all__ = ["ReleaseWritten", "write_release", "restricted_path"]

_RESERVED = frozenset(
    {"ascii", "parquet", "rejects", "knowledge.csv", "thresholds.csv", MANIFEST_NAME, CERTIFICATE_NAME}
)
_RAW_IDS = frozenset({"primaryid", "caseid", "isr", "case"})
_REJECT_PUBLIC = ("quarter", "source_file", "line", "reason")
_QUARTER = re.compile(r"^\d{4}Q[1-4]$")


@dataclass(frozen=True, kw_only=True, slots=True)
class ReleaseWritten:
    """What :func:`write_release` wrote.

    Attributes:
        path: the release folder.
        restricted: the restricted folder, or None when the policy restricted nothing present.
        manifest: the manifest as written.
        ids: raw ids → pseudonyms (in memory only; never write it next to the release).
    """

    path: Path
    restricted: Path | None
    manifest: Mapping[str, Any]
    ids: IdMap

    def summary(self) -> str:
        """A few lines for the CLI: where, how many rows per table, the restricted folder."""
        counts = self.manifest["counts"]
        rows = ", ".join(f"{t} {counts[t]['rows_out']}" for t in TABLES)
        lines = [f"release written to {self.path}", f"rows: {rows}", f"QID-groups: {counts['groups']}"]
        if self.restricted is not None:
            lines.append(f"restricted columns written to {self.restricted} (not public)")
        return "\n".join(lines)


def restricted_path(out: Path) -> Path:
    """The restricted folder beside a release: ``<parent>/<name>-restricted``."""
    return out.parent / f"{out.name}-restricted"


def write_release(
    ingested: Path,
    partition: pl.DataFrame,
    out: Path,
    *,
    knowledge: pl.DataFrame,
    thresholds: pl.DataFrame,
    parameters: Mapping[str, object],
    policy: ColumnPolicy = DEFAULT_POLICY,
    force: bool = False,
    extra_files: Mapping[str, bytes] | None = None,
    key: AgencyKey | None = None,
    items: ItemProtection | None = None,
) -> ReleaseWritten:
    """Write the release folder ``out`` (layout in the module docstring; SPEC §10).

    Args:
        ingested: the ingested folder (``reports.parquet`` … ``rpsr.parquet``, optional ``rejects/``).
        partition: one row per caseid with ``group_id`` and the generalized QIDs (architecture.md), or
            one row per report with ``primaryid`` too (a report-level partition).
        out: the release folder to create.
        knowledge: E as (drug_key, disease, weight); a ``drug`` column is accepted for ``drug_key``.
        thresholds: (value, theta[, share][, action]).
        parameters: the run's parameters (seed included), stored as given in ``manifest.json``.
        policy: the column policy.
        force: replace an existing ``out`` (and an existing restricted folder beside it).
        extra_files: relative path → bytes written before the rename (report.json, report.html) and
            hashed in the manifest.
        key: the agency key (pseudonyms, certificate); None reads ``$FAERS_ANON_KEY_FILE``.
        items: k^m-anonymity of the released drug and reaction sets within each group
            (:mod:`faers_anon.anonymize.items`): suppressed cells become null, ``counts.items`` of the
            manifest says how many per table and column; None leaves the items as they are.

    Returns:
        The release's path, restricted folder and manifest.

    Raises:
        InputError: a missing or unreadable ingested file or column, a bad quarter, an unwritable output.
        ConfigError: ``out`` exists without ``force``; a partition that is not one row per ingested case;
            malformed knowledge, thresholds, parameters or extra file names.
    """
    _check_target(out, force)
    agency = key if key is not None else load_key(None)
    raw = {table: _read_table(ingested / INGESTED_FILES[table], table, policy) for table in TABLES}
    part = check_partition(partition, raw["demo"])
    ids = release_id_map(raw, agency.pseudonym_key)
    tables = {t: released_rows(f, ids) for t, f in raw.items()}
    part = ids.apply(part)
    tables["demo"] = with_outcome_sets(tables["demo"], tables["outc"])  # the case's OUTC set, a qid
    part, _ = generalize_fields(part, tables["demo"], policy)  # the policy's other DEMO qids (qid_fields)
    shown = {**tables, "outc": released_outcome_rows(tables["outc"], tables["demo"], part)}
    del raw
    know = check_frame(knowledge, "knowledge", KNOWLEDGE, 3)
    thetas = check_frame(thresholds, "thresholds", THRESHOLDS, 2)
    extras = check_extras(extra_files or {}, _RESERVED)
    rejects = sorted((ingested / "rejects").glob("*.parquet")) if (ingested / "rejects").is_dir() else []
    shaped = {t: shape_table(t, f, part, policy) for t, f in shown.items()}
    item_counts = None if items is None else _protect_items(shaped, tables, part, items)
    needs_restricted = policy.rejects == "restricted" or any(
        s.restricted is not None for s in shaped.values()
    )
    restricted = restricted_path(out)
    if needs_restricted:
        _check_target(restricted, force)

    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    tmp_r = out.parent / f".{restricted.name}.tmp-{os.getpid()}"
    placed: list[Path] = []  # a restricted folder already renamed, removed if the public rename fails
    try:
        _fresh_dir(tmp)
        counts = write_tables(tmp, shaped, tables)
        counts["groups"] = part.select(QID_COLUMNS).unique().height
        counts["cases"] = tables["demo"]["caseid"].n_unique()
        if item_counts is not None:
            counts["items"] = item_counts
        counts["rejects"] = _write_rejects(tmp, tmp_r if needs_restricted else None, rejects, policy)
        _write_csv(know, tmp / "knowledge.csv")
        _write_csv(thetas, tmp / "thresholds.csv")
        for name, payload in extras.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_bytes(payload)
        restricted_info: dict[str, object] | None = None
        if needs_restricted:
            (tmp_r / "parquet").mkdir(parents=True, exist_ok=True)
            for table, shape in shaped.items():
                if shape.restricted is not None:
                    write_parquet(shape.restricted, tmp_r / "parquet" / f"{table}.parquet")
            restricted_info = {"folder": restricted.name, "files": hash_tree(tmp_r)}
        manifest = build_manifest(
            parameters=parameters,
            inputs=hash_tree(ingested),
            outputs=hash_tree(tmp),
            counts=counts,
            columns={t: s.columns for t, s in shaped.items()},
            policy=policy.describe(),
            restricted=restricted_info,
            pseudonyms=ids.describe(),
        )
        (tmp / MANIFEST_NAME).write_bytes(dump_manifest(manifest))
        seal(tmp, agency)
        manifest = json.loads((tmp / MANIFEST_NAME).read_text(encoding="utf-8"))
        if needs_restricted:
            _replace(tmp_r, restricted)
            placed.append(restricted)
        elif force and restricted.exists():
            shutil.rmtree(restricted)
        _replace(tmp, out)
    except OSError as exc:
        _cleanup(tmp, tmp_r, *placed)
        raise InputError(f"cannot write the release ({exc.strerror or exc})", path=out) from exc
    except BaseException:
        _cleanup(tmp, tmp_r, *placed)
        raise
    return ReleaseWritten(
        path=out, restricted=restricted if needs_restricted else None, manifest=manifest, ids=ids
    )


def _protect_items(
    shaped: dict[str, ShapedTable],
    tables: Mapping[str, pl.DataFrame],
    part: pl.DataFrame,
    items: ItemProtection,
) -> dict[str, Any]:
    """Null the suppressed item cells of the public drug and reac frames in place; their counts."""
    names = [t for t in ("drug", "reac") if t in shaped]
    done = protect_items(
        {t: shaped[t].public for t in names},
        part.select("caseid", "group_id"),
        protection=items,
        cases={t: tables[t].get_column("caseid") for t in names},  # public rows keep the input order
    )
    for table in names:
        shaped[table] = dataclasses.replace(shaped[table], public=done.tables[table])
    return done.counts


def _read_table(path: Path, table: str, policy: ColumnPolicy) -> pl.DataFrame:
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


def _check_target(path: Path, force: bool) -> None:
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


def _write_csv(frame: pl.DataFrame, path: Path) -> None:
    frame.select(
        pl.col(c).cast(pl.String).str.replace(r"\.0$", "") if frame.schema[c].is_float() else pl.col(c)
        for c in frame.columns
    ).write_csv(path, null_value="", line_terminator="\n")


def _fresh_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)


def _replace(tmp: Path, target: Path) -> None:
    """Rename ``tmp`` to ``target``, moving an existing ``target`` aside first and restoring it on failure."""
    old = target.parent / f".{target.name}.old-{os.getpid()}"
    if target.exists():
        target.rename(old)
    try:
        tmp.rename(target)
    except OSError:
        if old.exists():
            old.rename(target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _cleanup(*paths: Path) -> None:
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)  # a missing path is fine
