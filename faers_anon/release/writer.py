"""Write a release folder from an ingested folder and a partition (SPEC §4, §10; docs/architecture.md).

Layout written (all paths relative to the release folder ``out``):

* ``ascii/<TABLE><yyQq>.txt``: per table (yyQq: the release's quarter), FAERS ``$``-delimited layout,
  a header line, lower-case names, no quoting, ``\\n`` line ends, empty field = missing. Dates
  ``YYYYMMDD``; floats in their shortest round-trip form without a trailing ``.0`` (``18``,
  ``0.08333333333333333``).
  FAERS has no quoting, so a ``$``, CR or LF inside a published text value becomes a space in ascii
  (parquet keeps the exact value); ``counts.<table>.ascii_replaced_cells`` in the manifest counts them.
  All seven files (header only when empty). Every row of every table carries one ``quarter``, the
  release's: the latest quarter among its rows (a multi-quarter or ledgered release's earlier rows too;
  :func:`~faers_anon.release.writer_draft.one_quarter`, docs/formats.md "The quarter column").
* ``parquet/<table>.parquet``: the ascii columns plus ``quarter`` (and ``is_latest`` in
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
input row is written: rows in == rows out per table (and per quarter: the release's), but OUTC's (its
certain codes), except the superseded reports the version plan leaves out with their child rows (so
that a case's number of DEMO rows is common to its group: :mod:`faers_anon.anonymize.versions`),
counted per table and quarter (``superseded_left_out``: rows in = rows out + left out) and as
``counts.superseded_left_out`` (reports, cases).

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
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.anonymize.items import ItemProtection, protect_items
from faers_anon.errors import InputError
from faers_anon.io.column_policy import (
    DEFAULT_POLICY,
    QID_COLUMNS,
    TABLES,
    ColumnPolicy,
    ShapedTable,
    shape_table,
)
from faers_anon.io.qid_fields import generalize_fields, released_outcome_rows
from faers_anon.keys import AgencyKey
from faers_anon.release.certificate import seal
from faers_anon.release.manifest import (
    CERTIFICATE_NAME,
    MANIFEST_NAME,
    build_manifest,
    dump_manifest,
    hash_tree,
    sha256_file,
)
from faers_anon.release.pseudonyms import IdMap
from faers_anon.release.writer_checks import KNOWLEDGE, THRESHOLDS, check_extras, check_frame, check_partition
from faers_anon.release.writer_draft import (
    ReleaseDraft,
    check_target,
    cleanup,
    prepare_release,
    restricted_path,
)
from faers_anon.release.writer_tables import write_parquet, write_table

__all__ = [
    "ReleaseWritten",
    "SealedRelease",
    "place_release",
    "restricted_path",
    "seal_release",
    "write_release",
]

_RESERVED = frozenset(
    {"ascii", "parquet", "rejects", "knowledge.csv", "thresholds.csv", MANIFEST_NAME, CERTIFICATE_NAME}
)


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
    """Write the release folder ``out`` (layout in the module docstring; SPEC §10): its partition-independent
    half (:func:`~faers_anon.release.writer_draft.prepare_release`), then :func:`seal_release` and
    :func:`place_release`.

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
    draft = prepare_release(ingested, out, policy=policy, key=key, force=force, items=items, pid=os.getpid())
    sealed = seal_release(
        draft, partition, knowledge=knowledge, thresholds=thresholds, parameters=parameters,
        extra_files=extra_files, items=items,
    )  # fmt: skip
    return place_release(sealed)


@dataclass(frozen=True, slots=True)
class SealedRelease:
    """A release complete and signed in its draft folders, not yet renamed into place."""

    draft: ReleaseDraft
    written: ReleaseWritten


def seal_release(
    draft: ReleaseDraft,
    partition: pl.DataFrame,
    *,
    knowledge: pl.DataFrame,
    thresholds: pl.DataFrame,
    parameters: Mapping[str, object],
    extra_files: Mapping[str, bytes] | None = None,
    items: ItemProtection | None = None,
) -> SealedRelease:
    """Write the rest of ``draft`` with ``partition``, its manifest and certificate, in the draft folders
    (nothing beside them changes); they are removed when this fails or is interrupted."""
    try:
        return _seal(draft, partition, knowledge, thresholds, parameters, extra_files or {}, items)
    except OSError as exc:
        cleanup(draft.tmp, draft.tmp_r)
        raise InputError(f"cannot write the release ({exc.strerror or exc})", path=draft.out) from exc
    except BaseException:
        cleanup(draft.tmp, draft.tmp_r)
        raise


def place_release(sealed: SealedRelease) -> ReleaseWritten:
    """Rename a sealed release into place: the restricted folder first, then the release (an existing
    one moved aside and removed after); the draft folders are removed when this fails."""
    draft, written = sealed.draft, sealed.written
    restricted = restricted_path(draft.out)
    placed: list[Path] = []  # a restricted folder already renamed, removed if the public rename fails
    try:
        if written.restricted is not None:
            _replace(draft.tmp_r, restricted)
            placed.append(restricted)
        elif draft.force and restricted.exists():
            shutil.rmtree(restricted)
        _replace(draft.tmp, draft.out)
    except OSError as exc:
        cleanup(draft.tmp, draft.tmp_r, *placed)
        raise InputError(f"cannot write the release ({exc.strerror or exc})", path=draft.out) from exc
    except BaseException:
        cleanup(draft.tmp, draft.tmp_r, *placed)
        raise
    return written


def _seal(
    draft: ReleaseDraft,
    partition: pl.DataFrame,
    knowledge: pl.DataFrame,
    thresholds: pl.DataFrame,
    parameters: Mapping[str, object],
    extra_files: Mapping[str, bytes],
    items: ItemProtection | None,
) -> SealedRelease:
    """:func:`seal_release` without its clean-up."""
    policy, tables, ids, out, tmp, tmp_r = (
        draft.policy,
        draft.tables,
        draft.ids,
        draft.out,
        draft.tmp,
        draft.tmp_r,
    )
    part = ids.apply(check_partition(partition, draft.reports))
    part, _ = generalize_fields(part, tables["demo"], policy)  # the policy's other DEMO qids (qid_fields)
    shown = {**tables, "outc": released_outcome_rows(tables["outc"], tables["demo"], part)}
    know = check_frame(knowledge, "knowledge", KNOWLEDGE, 3)
    thetas = check_frame(thresholds, "thresholds", THRESHOLDS, 2)
    extras = check_extras(extra_files, _RESERVED)
    shaped = {
        t: draft.shaped[t] if t in draft.shaped else shape_table(t, f, part, policy) for t, f in shown.items()
    }
    item_counts = None if items is None else _protect_items(shaped, tables, part, items)
    needs_restricted = policy.rejects == "restricted" or any(
        s.restricted is not None for s in shaped.values()
    )
    restricted = restricted_path(out)
    if needs_restricted:
        check_target(restricted, draft.force)
    counts: dict[str, Any] = {
        t: draft.counts[t]
        if t in draft.shaped
        else write_table(tmp, t, s, tables[t], draft.quarters, draft.superseded.get(t))
        for t, s in shaped.items()
    }
    counts["groups"] = part.select(QID_COLUMNS).unique().height
    counts["cases"] = tables["demo"]["caseid"].n_unique()
    counts["superseded_left_out"] = dict(draft.left_out)  # reports, cases (anonymize.versions)
    if item_counts is not None:
        counts["items"] = item_counts
    counts["rejects"] = draft.counts["rejects"]
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
        inputs=draft.inputs,
        outputs=_hashes(tmp, draft.written),
        counts=counts,
        columns={t: s.columns for t, s in shaped.items()},
        policy=policy.describe(),
        restricted=restricted_info,
        pseudonyms=ids.describe(),
    )
    (tmp / MANIFEST_NAME).write_bytes(dump_manifest(manifest))
    seal(tmp, draft.agency)
    manifest = json.loads((tmp / MANIFEST_NAME).read_text(encoding="utf-8"))
    written = ReleaseWritten(
        path=out, restricted=restricted if needs_restricted else None, manifest=manifest, ids=ids
    )
    return SealedRelease(draft, written)


def _hashes(root: Path, known: Mapping[str, str]) -> dict[str, str]:
    """:func:`~faers_anon.release.manifest.hash_tree` of ``root``, the files of ``known`` (relative path →
    SHA-256, hashed when the draft was written and not changed since) not read again."""
    hashes: dict[str, str] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel != CERTIFICATE_NAME:
            hashes[rel] = known[rel] if rel in known else sha256_file(path)
    return hashes


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


def _write_csv(frame: pl.DataFrame, path: Path) -> None:
    frame.select(
        pl.col(c).cast(pl.String).str.replace(r"\.0$", "") if frame.schema[c].is_float() else pl.col(c)
        for c in frame.columns
    ).write_csv(path, null_value="", line_terminator="\n")


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
