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
* ``knowledge.csv`` (drug_key, disease, weight), ``thresholds.csv`` (value, theta, then share and action
  when given), comma-separated, sorted.
* ``rejects/<table>.parquet``: see :class:`~faers_anon.io.column_policy.ColumnPolicy` ``rejects``.
* extra files from the caller (``report.json``, ``report.html``), then ``manifest.json``.

DEMO rows get their case's group QIDs by a join on ``caseid`` with the partition (one row per case),
so every version of a case carries the same generalized QID (SPEC §4). A report-level partition (one
row per report, with ``primaryid`` besides ``caseid``; models that do not merge follow-ups, such as
k-anonymity) is joined on ``primaryid`` instead, so each report carries its own group's QIDs.
Partition columns other than ``caseid`` (and ``primaryid``), ``group_id`` and the six standard QIDs
are extra QIDs (e.g. ``occr_country``): they replace the raw DEMO column of that name or are
appended. ``group_id`` itself is not published (the released QID tuple defines the group). Every
input row is written: rows in == rows out per table and quarter.

Rows are sorted by (quarter, primaryid, source_file, line), the ingest's file order, with ties kept in
input order; float formatting is fixed and parquet is written by polars with fixed settings, so the
same inputs give byte-identical files (only ``manifest.json``'s ``created`` differs).

Atomicity: everything is written into ``.<name>.tmp-<pid>`` beside ``out`` and renamed to ``out`` at
the end; on any exception the temporary folder is removed. An existing ``out`` is replaced only with
``force=True``. The restricted folder ``<name>-restricted`` (see the column policy) follows the same
rules and is renamed first, so a visible release is always complete.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.errors import ConfigError, InputError
from faers_anon.io.column_policy import (
    ASCII_NAMES,
    DEFAULT_POLICY,
    INGESTED_FILES,
    PARQUET_ONLY,
    PARTITION_SCHEMA,
    QID_COLUMNS,
    TABLES,
    ColumnPolicy,
    ShapedTable,
    ascii_text,
    shape_table,
)
from faers_anon.manifest import MANIFEST_NAME, build_manifest, dump_manifest, hash_tree

__all__ = ["ReleaseWritten", "write_release", "restricted_path"]

_RESERVED = frozenset({"ascii", "parquet", "rejects", "knowledge.csv", "thresholds.csv", MANIFEST_NAME})
_REJECT_PUBLIC = ("quarter", "source_file", "line", "reason")
_KNOWLEDGE: Mapping[str, pl.DataType] = {
    "drug_key": pl.String(),
    "disease": pl.String(),
    "weight": pl.Float64(),
}
_THRESHOLDS: Mapping[str, pl.DataType] = {
    "value": pl.String(), "theta": pl.Float64(), "share": pl.Float64(), "action": pl.String()
}  # fmt: skip
_NOT_QIDS = frozenset({"primaryid", "caseid", "caseversion", "quarter", "is_latest", "row"})
_QUARTER = re.compile(r"^\d{4}Q[1-4]$")


@dataclass(frozen=True, kw_only=True, slots=True)
class ReleaseWritten:
    """What :func:`write_release` wrote.

    Attributes:
        path: the release folder.
        restricted: the restricted folder, or None when the policy restricted nothing present.
        manifest: the manifest as written.
    """

    path: Path
    restricted: Path | None
    manifest: Mapping[str, Any]

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

    Returns:
        The release's path, restricted folder and manifest.

    Raises:
        InputError: a missing or unreadable ingested file or column, a bad quarter, an unwritable output.
        ConfigError: ``out`` exists without ``force``; a partition that is not one row per ingested case;
            malformed knowledge, thresholds, parameters or extra file names.
    """
    _check_target(out, force)
    tables = {table: _read_table(ingested / INGESTED_FILES[table]) for table in TABLES}
    part = _check_partition(partition, tables["demo"])
    know = _check_frame(knowledge, "knowledge", _KNOWLEDGE, 3)
    thetas = _check_frame(thresholds, "thresholds", _THRESHOLDS, 2)
    extras = _check_extras(extra_files or {})
    rejects = sorted((ingested / "rejects").glob("*.parquet")) if (ingested / "rejects").is_dir() else []
    shaped = {t: shape_table(t, f, part, policy) for t, f in tables.items()}
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
        counts = _write_tables(tmp, shaped, tables)
        counts["groups"] = part.select(QID_COLUMNS).unique().height
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
                    _write_parquet(shape.restricted, tmp_r / "parquet" / f"{table}.parquet")
            restricted_info = {"folder": restricted.name, "files": hash_tree(tmp_r)}
        manifest = build_manifest(
            parameters=parameters,
            inputs=hash_tree(ingested),
            outputs=hash_tree(tmp),
            counts=counts,
            columns={t: s.columns for t, s in shaped.items()},
            policy=policy.describe(),
            restricted=restricted_info,
        )
        (tmp / MANIFEST_NAME).write_bytes(dump_manifest(manifest))
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
    return ReleaseWritten(path=out, restricted=restricted if needs_restricted else None, manifest=manifest)


def _read_table(path: Path) -> pl.DataFrame:
    if not path.is_file():
        raise InputError("missing ingested table (run `faers-anon ingest` first)", path=path)
    try:
        frame = pl.read_parquet(path)
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
    keys = [c for c in ("quarter", "primaryid", "source_file", "line") if c in frame.columns]
    return frame.sort(keys, maintain_order=True)


def _check_partition(partition: pl.DataFrame, reports: pl.DataFrame) -> pl.DataFrame:
    missing = [c for c in PARTITION_SCHEMA if c not in partition.columns]
    if missing:
        raise ConfigError(f"partition: missing column(s) {', '.join(missing)}")
    key = "primaryid" if "primaryid" in partition.columns else "caseid"
    clash = sorted(_NOT_QIDS & (set(partition.columns) - set(PARTITION_SCHEMA) - {key}))
    if clash:
        raise ConfigError(f"partition: column(s) {', '.join(clash)} cannot be QIDs")
    types = {**PARTITION_SCHEMA, key: pl.Int64()}
    try:
        part = partition.with_columns(pl.col(c).cast(t, strict=True) for c, t in types.items())
    except pl.exceptions.PolarsError as exc:
        raise ConfigError(f"partition: wrong column type ({str(exc).splitlines()[0]})") from exc
    dup = part.group_by(key).len().filter(pl.col("len") > 1).sort(key)
    if dup.height:
        raise ConfigError(f"partition: {key} {dup[key][0]} has {dup['len'][0]} rows (expected one)")
    bad_sex = part.filter(pl.col("sex").is_not_null() & ~pl.col("sex").is_in(["F", "M", "*"]))
    if bad_sex.height:
        raise ConfigError(f"partition: sex {bad_sex['sex'][0]!r} (expected F, M, * or null)")
    cases = reports.select(pl.col(key).cast(pl.Int64)).unique()
    what = "case" if key == "caseid" else "report"
    uncovered = cases.join(part, on=key, how="anti", nulls_equal=True).sort(key)
    if uncovered.height:
        raise ConfigError(
            f"partition: {uncovered.height} ingested {what}(s) have no group (e.g. {key} "
            f"{uncovered[key][0]}); every {what} must be in the partition"
        )
    foreign = part.join(cases, on=key, how="anti").sort(key)
    if foreign.height:
        raise ConfigError(
            f"partition: {foreign.height} {key}(s) not in the ingested reports (e.g. {foreign[key][0]})"
        )
    return part


def _check_frame(
    frame: pl.DataFrame, what: str, types: Mapping[str, pl.DataType], required: int
) -> pl.DataFrame:
    """The first ``required`` columns of ``types`` must be present, the others are optional; sorted."""
    if what == "knowledge" and "drug_key" not in frame.columns and "drug" in frame.columns:
        frame = frame.rename({"drug": "drug_key"})
    missing = [c for c in list(types)[:required] if c not in frame.columns]
    if missing:
        raise ConfigError(f"{what}: missing column(s) {', '.join(missing)} (expected {', '.join(types)})")
    try:
        checked = frame.select(pl.col(c).cast(t) for c, t in types.items() if c in frame.columns)
    except pl.exceptions.PolarsError as exc:
        raise ConfigError(f"{what}: wrong column type ({str(exc).splitlines()[0]})") from exc
    return checked.sort(pl.all(), maintain_order=True)


def _check_extras(extras: Mapping[str, bytes]) -> dict[str, bytes]:
    checked: dict[str, bytes] = {}
    for name in sorted(extras):
        parts = Path(name).parts
        if not parts or Path(name).is_absolute() or ".." in parts or parts[0] in _RESERVED:
            raise ConfigError(
                f"extra file name {name!r}: expected a relative path outside the reserved names"
            )
        checked[Path(name).as_posix()] = bytes(extras[name])
    return checked


def _check_target(path: Path, force: bool) -> None:
    if path.exists() and not force:
        raise ConfigError(f"{path}: already exists (use --force to replace it)")
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{path}: exists and is not a folder")


def _write_tables(
    root: Path, shaped: Mapping[str, ShapedTable], tables: Mapping[str, pl.DataFrame]
) -> dict[str, Any]:
    (root / "ascii").mkdir()
    (root / "parquet").mkdir()
    quarters = sorted(set().union(*(set(f["quarter"].cast(pl.String).unique()) for f in tables.values())))
    counts: dict[str, Any] = {}
    for table, shape in shaped.items():
        shown = shape.public
        _write_parquet(shown, root / "parquet" / f"{table}.parquet")
        ascii_cols = [c for c in shown.columns if c not in PARQUET_ONLY]
        text = shown.select(
            pl.col("quarter").cast(pl.String), *(ascii_text(c, shown.schema[c]) for c in ascii_cols)
        )
        string_cols = [c for c in ascii_cols if shown.schema[c] == pl.String]
        replaced = shown.select(
            pl.sum_horizontal(pl.col(c).str.contains(r"[$\r\n]").fill_null(False).sum() for c in string_cols)
            if string_cols
            else pl.lit(0)
        ).item()
        rows_in = tables[table].group_by(pl.col("quarter").cast(pl.String)).len()
        rows_out = text.group_by("quarter").len()
        per_quarter = {}
        for quarter in quarters:
            chunk = text.filter(pl.col("quarter") == quarter).drop("quarter")
            chunk.write_csv(
                root / "ascii" / f"{ASCII_NAMES[table]}{quarter[2:]}.txt",
                separator="$",
                quote_style="never",
                null_value="",
                line_terminator="\n",
            )
            per_quarter[quarter] = {
                "rows_in": int(rows_in.filter(pl.col("quarter") == quarter)["len"].sum()),
                "rows_out": int(rows_out.filter(pl.col("quarter") == quarter)["len"].sum()),
            }
        counts[table] = {
            "rows_in": tables[table].height,
            "rows_out": shown.height,
            "quarters": per_quarter,
            "ascii_replaced_cells": int(replaced),
        }
    return counts


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
            shutil.copyfile(path, root / "rejects" / path.name)
            continue
        for name in ("source_file", "line", "reason"):
            if name not in frame.columns:
                raise InputError("missing column", path=path, field=name)
        _write_parquet(
            frame.select(c for c in _REJECT_PUBLIC if c in frame.columns), root / "rejects" / path.name
        )
        if restricted is not None and policy.rejects == "restricted":
            (restricted / "rejects").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, restricted / "rejects" / path.name)
    return counts


def _write_csv(frame: pl.DataFrame, path: Path) -> None:
    frame.select(
        pl.col(c).cast(pl.String).str.replace(r"\.0$", "") if frame.schema[c].is_float() else pl.col(c)
        for c in frame.columns
    ).write_csv(path, null_value="", line_terminator="\n")


def _write_parquet(frame: pl.DataFrame, path: Path) -> None:
    frame.write_parquet(path, compression="zstd", compression_level=3, statistics=True)


def _fresh_dir(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)
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
    if old.exists():
        shutil.rmtree(old)


def _cleanup(*paths: Path) -> None:
    for path in paths:
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)
