"""A generated series of consecutive quarters with cross-quarter follow-ups (tests, benchmarks).

Source: issue 14 ("about 20 % of a quarter's reports follow up an earlier case"); quarters from
:func:`faers_anon.synthetic.make_quarter`.

Quarter i (seed ``seed + i``) is drawn on its own; then in every quarter after the first a share
``follow`` of its cases becomes a follow-up of a distinct random case of an earlier quarter: the
case takes that caseid, its versions are moved above the earlier case's latest version, and its
primaryids become caseid followed by the version (FAERS's form), in every table.

Only those cases link to an earlier quarter. The generator derives a caseid from the case's first
receipt date (:mod:`faers_anon.synthetic`), so independently drawn quarters also share caseids by
accident, more often the larger the quarter: 2 % of a 100k quarter's cases, 9–13 % of a 400k one's
(which then held 29–33 % returning cases instead of 20 %, each accidental one an unrelated case with
other demographics under an earlier caseid). Such a case takes a fresh caseid above every caseid seen
so far, keeping its version; the quarter's DELETE list follows every moved caseid.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

__all__ = ["quarter_labels", "make_series", "relink_reports"]


def quarter_labels(first: str, n: int) -> list[str]:
    """``n`` consecutive labels from ``first`` (``2021Q4``, 2 → ``2021Q4``, ``2022Q1``)."""
    start = int(first[:4]) * 4 + int(first[-1]) - 1
    return [f"{(start + i) // 4}Q{(start + i) % 4 + 1}" for i in range(n)]


def _relink(tables: dict[str, pl.DataFrame], seen: pl.DataFrame, follow: float, rng: np.random.Generator
            ) -> dict[str, pl.DataFrame]:  # fmt: skip
    demo = tables["DEMO"]
    cases = demo.get_column("caseid").unique().sort()
    chosen = cases.filter(pl.Series(rng.random(cases.len()) < follow)).head(seen.height)
    target = seen.sample(n=chosen.len(), seed=int(rng.integers(2**31))) if chosen.len() else seen.head(0)
    moved = pl.concat([
        pl.DataFrame({"caseid": chosen, "new_caseid": target["caseid"], "offset": target["version"]}),
        _fresh(cases.filter(~cases.is_in(chosen.implode())), seen),
    ])  # fmt: skip
    if moved.is_empty():
        return tables
    keys = (
        demo.select("primaryid", "caseid", "caseversion")
        .join(moved, on="caseid")
        .with_columns((pl.col("caseversion").cast(pl.Int64) + pl.col("offset")).alias("new_version"))
        .with_columns(pl.col("new_version").cast(pl.Utf8))
        .with_columns(pl.concat_str("new_caseid", "new_version").alias("new_primaryid"))
        .select("primaryid", "new_primaryid", "new_caseid", "new_version")
    )  # fmt: skip
    tables = relink_reports(tables, keys)
    if "DELETE" in tables:
        renamed = moved.select("caseid", "new_caseid")
        tables["DELETE"] = (
            tables["DELETE"].join(renamed, on="caseid", how="left")
            .select(pl.coalesce("new_caseid", "caseid").alias("caseid"))
        )  # fmt: skip
    return tables


def _fresh(others: pl.Series, seen: pl.DataFrame) -> pl.DataFrame:
    """The cases of ``others`` whose caseid an earlier quarter already holds, each with a fresh caseid
    above every caseid seen and every one of ``others`` (version offset 0)."""
    clash = others.filter(others.is_in(seen.get_column("caseid").implode())).sort()
    numbers = np.concatenate([seen.get_column("caseid").cast(pl.Int64), others.cast(pl.Int64)])
    top = int(numbers.max()) if numbers.size else 0
    fresh = pl.Series(np.arange(top + 1, top + 1 + clash.len(), dtype=np.int64)).cast(pl.Utf8)
    offset = pl.Series(np.zeros(clash.len(), dtype=np.int64))
    return pl.DataFrame({"caseid": clash, "new_caseid": fresh, "offset": offset})


def relink_reports(tables: dict[str, pl.DataFrame], keys: pl.DataFrame, /) -> dict[str, pl.DataFrame]:
    """Rewrite every table's ids by ``keys`` (primaryid → new_primaryid, new_caseid, new_version).

    Reports absent from ``keys`` keep their ids; DEMO's caseversion takes the new version.
    """
    keys = keys.select("primaryid", "new_primaryid", "new_caseid", "new_version")
    out = {}
    for name, frame in tables.items():
        if "primaryid" not in frame.columns:
            out[name] = frame
            continue
        fixed = frame.join(keys, on="primaryid", how="left").with_columns(
            pl.coalesce("new_primaryid", "primaryid").alias("primaryid"),
            pl.coalesce("new_caseid", "caseid").alias("caseid"),
        )
        if name == "DEMO":
            fixed = fixed.with_columns(pl.coalesce("new_version", "caseversion").alias("caseversion"))
        out[name] = fixed.select(frame.columns)
    return out


def make_series(
    n_cases: int, out: Path, /, *, quarters: int = 3, first: str = "2024Q1", follow: float = 0.2,
    seed: int = 0, shape: str = "small",
) -> list[Path]:  # fmt: skip
    """Write ``quarters`` linked quarters under ``out/<label>/`` (FDA layout); return their folders."""
    from faers_anon.synthetic import make_quarter, write_quarter

    rng = np.random.default_rng(seed)
    seen = pl.DataFrame(schema={"caseid": pl.Utf8, "version": pl.Int64})
    folders = []
    for i, label in enumerate(quarter_labels(first, quarters)):
        tables = make_quarter(n_cases, seed=seed + i, quarter=label, shape=shape, malformed=False)  # type: ignore[arg-type]
        if i:
            tables = _relink(tables, seen, follow, rng)
        folder = out / label
        write_quarter(tables, folder, quarter=label)
        latest = (
            tables["DEMO"].group_by("caseid").agg(pl.col("caseversion").cast(pl.Int64).max().alias("version"))
        )
        seen = pl.concat([seen, latest]).group_by("caseid").agg(pl.col("version").max()).sort("caseid")
        folders.append(folder)
    return folders
