"""The verifier's rules for a disassociation release (manifest ``parameters.method`` = ``disassociation``).

Unlike the other rules, these read the released form with the method's own reader and checker
(:func:`faers_anon.methods.disassociation.read_released`, :func:`check_km`): the guarantee is defined
on the chunk tables, and ``check_km`` recomputes it from those tables alone. Rules:

* ``km``: every itemset of 1..m items in a record or shared chunk has support ≥ k, and every cluster
  holds ≥ k records (k from ``parameters.k`` or the verifier's ``k`` override; m from
  ``parameters.m``, else ``method_parameters.m``, else 2).
* ``disassociated``: ``disassociated/`` exists and is readable; DRUG and REAC are not published row by
  row beside it (``parquet/drug.parquet``, ``parquet/reac.parquet``, ``ascii/DRUG*``, ``ascii/REAC*``);
  ``members`` lists every DEMO caseid exactly once and no other.
* ``case_split`` and ``integrity`` as for every release; no QID group size (the QIDs are points).

DR is reported for information on one reconstruction (:func:`with_reconstruction`): where the
verifier reads DRUG or REAC and the release has ``disassociated/``, it reads the (caseid, drug_key) and
(caseid, pt) pairs of :func:`faers_anon.disassociation_release.reconstruction` drawn with
``parameters.seed``, the same draw as the release report's signals.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.disassociation_release import (
    DISASSOCIATED,
    ITEM_TABLES,
    published_item_files,
    reconstruction,
)
from faers_anon.errors import InputError
from faers_anon.manifest import read_manifest
from faers_anon.methods.disassociation import check_km, read_released

__all__ = ["KM_LABEL", "km_violations", "with_reconstruction"]

KM_LABEL = "k^m-anonymity (k={k}, m={m}) of the drug and reaction lists; QIDs released as points"
_SHOWN = 50  # violating itemsets listed one per row; the rest summed up in one row

TableReader = Callable[[Path, str, Sequence[str]], pl.LazyFrame]


def _rows(details: Sequence[str], rule: str) -> pl.DataFrame:
    return pl.DataFrame(
        {"group": [None] * len(details), "rule": [rule] * len(details), "detail": list(details)},
        schema={"group": pl.Int64, "rule": pl.String, "detail": pl.String},
    )


def km_m(params: Mapping[str, Any]) -> int:
    """m of the release: ``parameters.m``, else ``method_parameters.m``, else 2."""
    value = params.get("m", (params.get("method_parameters") or {}).get("m", 2))
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"parameters.m: got {value!r} (expected an integer >= 1)", path="manifest.json")
    return value


def km_violations(release: Path, members: pl.DataFrame, *, k: int, m: int) -> pl.DataFrame:
    """Rules ``km`` and ``disassociated`` (module docstring) as (group, rule, detail), group null."""
    folder = release / DISASSOCIATED
    if not folder.is_dir():
        return _rows([f"no {DISASSOCIATED}/ folder"], "disassociated")
    shown = [
        f"{path.relative_to(release).as_posix()}: {table} published row by row beside {DISASSOCIATED}/"
        for table in ITEM_TABLES
        for path in published_item_files(release, table)
    ]
    released = read_released(folder)
    listed = released.members.select(pl.col("caseid").cast(pl.String))
    demo = members.select("caseid").unique()
    twice = listed.height - listed.unique().height
    if twice:
        shown.append(f"members lists {twice} caseid(s) more than once")
    missing = demo.join(listed, on="caseid", how="anti").height
    extra = listed.unique().join(demo, on="caseid", how="anti").height
    if missing or extra:
        shown.append(f"members: {missing} DEMO case(s) in no cluster, {extra} caseid(s) not in DEMO")
    report = check_km(released, k=k, m=m)
    details = [
        f"{kind} chunk {chunk}: itemset {list(items)} in {support} subrecord(s), fewer than k = {k}"
        for kind, chunk, items, support in report.violating.head(_SHOWN).iter_rows()
    ]
    if report.violations > _SHOWN:
        details.append(f"… and {report.violations - _SHOWN} more itemsets below k = {k}")
    if report.clusters_below_k:
        details.append(f"{report.clusters_below_k} cluster(s) of fewer than k = {k} records")
    return pl.concat([_rows(shown, "disassociated"), _rows(details, "km")])


@functools.lru_cache(maxsize=4)
def _drawn(release: str, seed: int, stamp: tuple[tuple[str, int, int], ...]) -> dict[str, pl.DataFrame]:
    """One reconstruction, cached by folder, seed and the released files' (name, size, mtime)."""
    del stamp  # part of the cache key only
    return reconstruction(Path(release), seed=seed)


def _reconstructed(release: Path, table: str, columns: Sequence[str]) -> pl.LazyFrame:
    params = (read_manifest(release) or {}).get("parameters") or {}
    seed = params.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"parameters.seed: got {seed!r} (expected an integer)", path="manifest.json")
    folder = release / DISASSOCIATED
    stamp = tuple(
        (p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.iterdir()) if p.is_file()
    )
    frame = _drawn(str(release.resolve()), seed, stamp)[table]
    for name in columns:
        if name not in frame.columns:
            raise InputError(f"{table}: column not in the disassociated form", path=folder, field=name)
    return frame.lazy().select(columns).with_columns(pl.col("caseid").cast(pl.String))


def with_reconstruction(read: TableReader) -> TableReader:
    """``read``, except DRUG and REAC of a release with ``disassociated/``: one reconstruction's pairs."""

    @functools.wraps(read)
    def table(release: Path, name: str, columns: Sequence[str]) -> pl.LazyFrame:
        if name in ITEM_TABLES and (release / DISASSOCIATED).is_dir():
            return _reconstructed(release, name, columns)
        return read(release, name, columns)

    return table
