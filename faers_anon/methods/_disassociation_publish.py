"""Disassociation as a release mode (``--method disassociation`` of ``anonymize`` and ``release``; SPEC §7).

The method's :class:`~faers_anon.methods.base.ItemForm` (:data:`DISASSOCIATED_LISTS`, declared in its
registry entry's capabilities). The release folder is the one
:func:`faers_anon.release.writer.write_release` writes for the method's point partition, then changed
by :func:`publish_disassociated`:

* **DEMO, OUTC, THER, RPSR, INDI** stay as written: every case at its own QID values (the method
  leaves demographics alone, like the other point methods), every row published.
* **DRUG and REAC are not published row by row.** Their ``ascii/DRUG*.txt``, ``ascii/REAC*.txt``,
  ``parquet/drug.parquet`` and ``parquet/reac.parquet`` are removed; in their place ``disassociated/``
  holds the disassociated form of each case's drug keys (``D:<drug_key>``) and reactions (``R:<pt>``),
  written by :func:`faers_anon.methods.disassociation.write_released`: ``clusters``, ``members``,
  ``record_chunks``, ``item_chunk``, ``shared_chunks``, ``shared_clusters`` (Parquet) and
  ``disassociation.json`` (k, m, row counts). A case's items are the union over all its reports. The
  other DRUG and REAC columns (role, route, dose, ``drug_rec_act`` …) are not published at all.
* **manifest.json**: ``counts.drug`` and ``counts.reac`` keep ``rows_in`` and get ``rows_out`` 0 and
  ``disassociated`` = ``rows_in`` (per table and per quarter; every input row is accounted for) with a
  ``note``; ``counts.disassociated`` holds the released form's ``describe()``; ``columns.<table>``
  lists no public column and the ``disassociated`` one; ``parameters`` records ``method``, ``k``,
  ``m`` and, in ``method_privacy``, :func:`check_km`'s ``km_*`` figures; ``outputs`` is re-hashed.

What is protected, plainly: k^m-anonymity of the drug and reaction lists only (an attacker who knows
up to m of a case's drugs and reactions cannot narrow it below k records of some possible dataset).
Demographics, INDI, OUTC, THER and RPSR are published exactly, with their caseids; ``members`` links
each caseid to its cluster. So anyone who knows a patient's age, sex, weight or country can find the
caseid in DEMO, and then learns the cluster's chunks, not the record: a record chunk item holds for
that case with probability support / cluster size (which is 1 when every record of the cluster has
it), an item chunk item for fewer than k of its records. Indications, published row by row, can hint
at the drugs. A release that must hide drugs and reactions from an attacker who knows demographics
needs a model release (``--model``) instead.

Analyses use one reconstruction (:func:`reconstruction`: ``reconstruct`` with
``numpy.random.default_rng(seed)``, the run's seed from ``parameters.seed``; ``split_items``): the
release pipeline's signals stage and the verifier's DR (for information) both draw the same one. The
released form has no drug roles, so the signals stage compares raw and release with role ``any``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from faers_anon.errors import InputError
from faers_anon.methods.base import IdMapping, MethodResult
from faers_anon.methods.disassociation import (
    DisassociationResult,
    read_released,
    reconstruct,
    split_items,
    write_released,
)
from faers_anon.release.manifest import MANIFEST_NAME, dump_manifest, hash_tree, read_manifest

if TYPE_CHECKING:
    from signals import CaseTables

__all__ = [
    "DISASSOCIATED",
    "DISASSOCIATED_LISTS",
    "DisassociatedLists",
    "ITEM_TABLES",
    "SIGNALS_NOTE",
    "case_tables",
    "published_item_files",
    "publish_disassociated",
    "reconstruction",
]

DISASSOCIATED = "disassociated"
"""The folder of the released form inside the release."""

ITEM_TABLES: dict[str, str] = {"drug": "drug_key", "reac": "pt"}
"""Release table → its column released as items (``split_items`` output name)."""

SIGNALS_NOTE = (
    "release side computed on one reconstruction of the disassociated drug and reaction lists "
    "(numpy default_rng(seed)); role any on both sides (the released form has no drug roles)"
)
_ASCII = {"drug": "DRUG", "reac": "REAC"}


def published_item_files(release: Path, table: str) -> list[Path]:
    """The row-level files of ``table`` (``drug`` or ``reac``) in a release folder: parquet and ascii."""
    pattern = re.compile(rf"^{_ASCII[table]}\d\dq[1-4]\.txt$", re.IGNORECASE)
    ascii_dir = release / "ascii"
    texts = sorted(p for p in ascii_dir.glob("*") if pattern.match(p.name)) if ascii_dir.is_dir() else []
    parquet = release / "parquet" / f"{table}.parquet"
    return [*([parquet] if parquet.is_file() else []), *texts]


def _counts(entry: dict[str, Any]) -> dict[str, Any]:
    """A manifest ``counts.<table>`` entry with rows_out 0 and every input row disassociated (but the
    superseded rows the release left out: :mod:`faers_anon.anonymize.versions`)."""
    quarters = {
        q: {**c, "rows_out": 0, "disassociated": c.get("rows_in", 0) - c.get("superseded_left_out", 0)}
        for q, c in (entry.get("quarters") or {}).items()
    }
    return {
        **entry,
        "rows_out": 0,
        "disassociated": entry.get("rows_in", 0) - entry.get("superseded_left_out", 0),
        "quarters": quarters,
        "ascii_replaced_cells": 0,
        "note": f"not published row by row: released as items of {DISASSOCIATED}/ (k^m-anonymity)",
    }


def publish_disassociated(out: Path, result: DisassociationResult) -> None:
    """Replace the DRUG and REAC tables of a written release by the disassociated form (module docstring).

    Raises:
        InputError: ``out`` has no manifest.json, or a file cannot be written or removed.
    """
    manifest = read_manifest(out)
    if manifest is None:
        raise InputError("manifest.json missing after writing the release", path=out)
    try:
        write_released(result.released, out / DISASSOCIATED)
        for table in ITEM_TABLES:
            for path in published_item_files(out, table):
                path.unlink()
    except OSError as exc:
        raise InputError(f"cannot write the disassociated form ({exc.strerror or exc})", path=out) from exc
    counts = manifest.setdefault("counts", {})
    columns = manifest.setdefault("columns", {})
    for table, column in ITEM_TABLES.items():
        counts[table] = _counts(counts.get(table) or {})
        columns[table] = {**(columns.get(table) or {}), "public": [], "disassociated": [column]}
    counts[DISASSOCIATED] = result.released.describe()
    manifest["parameters"]["m"] = result.released.m
    manifest["outputs"] = hash_tree(out, exclude=frozenset({MANIFEST_NAME}))
    (out / MANIFEST_NAME).write_bytes(dump_manifest(manifest))


def reconstruction(release: Path, /, *, seed: int) -> dict[str, pl.DataFrame]:
    """One reconstruction of the release's ``disassociated/`` form, per item table.

    Returns:
        ``drug`` → (caseid Int64, drug_key), ``reac`` → (caseid Int64, pt), sorted.

    Raises:
        InputError: no ``disassociated/`` folder or a malformed table in it.
    """
    folder = release / DISASSOCIATED
    if not folder.is_dir():
        raise InputError(f"no {DISASSOCIATED}/ folder (expected a disassociation release)", path=release)
    records = reconstruct(read_released(folder), rng=np.random.default_rng(seed))
    parts = split_items(records)
    return {table: parts[column] for table, column in ITEM_TABLES.items()}


def case_tables(release: Path, /, *, seed: int) -> CaseTables:
    """The release side of the signal comparison: released DEMO (latest versions), one reconstruction."""
    from signals import CaseTables  # here: signals pulls in scipy, which the series step's child never needs

    demo = pl.read_parquet(release / "parquet" / "demo.parquet")
    qids = [c for c in ("age_min", "age_max", "sex", "wt_min", "wt_max") if c in demo.columns]
    cases = demo.filter(pl.col("is_latest")).select("caseid", *qids)
    kind = cases.schema["caseid"]
    parts = reconstruction(release, seed=seed)
    drugs = parts["drug"].select(pl.col("caseid").cast(kind), "drug_key", role_cod=pl.lit(None, pl.String))
    events = parts["reac"].select(pl.col("caseid").cast(kind), "pt")
    return CaseTables(cases=cases, drugs=drugs, events=events)


@dataclass(frozen=True, slots=True)
class DisassociatedLists:
    """The :class:`~faers_anon.methods.base.ItemForm` of disassociation (module docstring)."""

    signals_note: str = SIGNALS_NOTE
    signals_role: str = "any"  # the released form has no drug roles

    def publish(self, out: Path, result: MethodResult, ids: IdMapping, /) -> None:
        """:func:`publish_disassociated` with the members named by their pseudonyms (``ids``)."""
        if not isinstance(result, DisassociationResult):
            raise TypeError(f"expected a disassociation result; got {type(result).__name__}")
        members = ids(result.released.members).sort("cluster_id", "caseid")
        publish_disassociated(out, replace(result, released=replace(result.released, members=members)))

    def case_tables(self, release: Path, /, *, seed: int) -> CaseTables:
        """:func:`case_tables`: released DEMO and one reconstruction of the lists."""
        return case_tables(release, seed=seed)


DISASSOCIATED_LISTS = DisassociatedLists()
"""The instance the registry entry declares."""
