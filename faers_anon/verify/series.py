"""Composition check of a series of releases from their files alone (SPEC §11 "Composition"; issue 14).

Like :mod:`faers_anon.verify.verifier`, this module imports nothing of the anonymizer (only
:mod:`faers_anon.errors`; ``tests/faers_anon/verify/test_independence.py`` enforces it): a bug in the
series placement cannot hide here.

Per release r, every case pseudonym c (``caseid`` of ``parquet/demo.parquet``) is in one QID-group
G_r(c): the cases sharing its whole released QID tuple (the six standard columns and every other
DEMO QID the manifest lists in ``columns.demo.qid``; a missing value is a value of its own). An
attacker following the pseudonym learns I(c) = ∩_{r ∈ R(c)} G_r(c), R(c) the releases holding c.
Rule ``series_k``: every case in two or more releases has |I(c)| ≥ k, k the smallest of the
releases' ``parameters.k`` unless stated. Each violating case pseudonym is named with its releases
and |I(c)|.

Computation: I(c) depends only on c's groups in R(c), so for each distinct set S of releases that
some case appears in (at most 2^n − 1, n releases), the cases present in every release of S are
grouped on their groups there; the count is |I(c)| for the cases whose R(c) is exactly S.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from faers_anon.errors import InputError

__all__ = ["SeriesVerdict", "verify_series"]

_STANDARD = ("age_group", "age_min", "age_max", "sex", "wt_min", "wt_max")


@dataclass(frozen=True, slots=True)
class SeriesVerdict:
    """The composition check of a series.

    Attributes:
        releases: the release folders, in the order given; k: the k checked.
        cases: distinct case pseudonyms; in_several: of those, cases in two or more releases.
        violations: ``caseid`` (pseudonym), ``releases`` (indexes, from 1), ``intersection`` (|I(c)|),
            one row per case in several releases with |I(c)| < k, by caseid.
    """

    releases: tuple[Path, ...]
    k: int
    cases: int
    in_several: int
    violations: pl.DataFrame

    @property
    def ok(self) -> bool:
        """True when no case in several releases is below k."""
        return self.violations.height == 0

    def summary(self, limit: int = 20) -> str:
        """A few lines: the verdict, the counts, the first ``limit`` violating pseudonyms."""
        head = "OK" if self.ok else "FAILED"
        lines = [f"series of {len(self.releases)} releases: {head} (series_k, k = {self.k}): "
                 f"{self.cases:,} case pseudonyms, {self.in_several:,} in several releases, "
                 f"{self.violations.height:,} below k"]  # fmt: skip
        for row in self.violations.head(limit).iter_rows(named=True):
            where = ", ".join(str(self.releases[i - 1]) for i in row["releases"])
            lines.append(f"  case {row['caseid']}: {row['intersection']} case(s) share its group in every "
                         f"release where it appears ({where})")  # fmt: skip
        if self.violations.height > limit:
            lines.append(f"  … and {self.violations.height - limit:,} more")
        return "\n".join(lines)


def _manifest(release: Path) -> dict[str, object]:
    path = release / "manifest.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"unreadable manifest.json ({exc})", path=release) from exc
    if not isinstance(data, dict):
        raise InputError("manifest.json is not an object", path=release)
    return data


def _groups(release: Path, manifest: dict[str, object], index: int) -> pl.DataFrame:
    """``caseid`` → ``g<index>``, the index of its QID-group in this release."""
    path = release / "parquet" / "demo.parquet"
    if not path.is_file():
        raise InputError("missing parquet/demo.parquet (expected a release folder)", path=release)
    columns = manifest.get("columns", {})
    listed = columns.get("demo", {}).get("qid", []) if isinstance(columns, dict) else []
    names = pl.read_parquet_schema(path)
    qids = [c for c in dict.fromkeys([*_STANDARD, *listed]) if c in names]
    cases = pl.read_parquet(path, columns=["caseid", *qids]).unique("caseid", keep="first")
    tuples = cases.select(qids).unique().with_row_index("g")
    return cases.join(tuples, on=qids, nulls_equal=True).select(
        "caseid", pl.col("g").cast(pl.Int64).alias(f"g{index}")
    )


def _k(manifests: list[dict[str, object]], k: int | None) -> int:
    if k is not None:
        return k
    parameters = [m.get("parameters") for m in manifests]
    known = [p["k"] for p in parameters if isinstance(p, dict) and isinstance(p.get("k"), int)]
    if not known:
        raise InputError("no release states k (manifest parameters.k); give --k")
    return min(known)


def verify_series(releases: Sequence[Path], /, *, k: int | None = None) -> SeriesVerdict:
    """Check that every case in several releases shares its group with ≥ k cases in all of them.

    Raises:
        InputError: fewer than two releases, or a folder that is not a release.
    """
    folders = tuple(Path(r) for r in releases)
    if len(folders) < 2:
        raise InputError("verify --series: give two or more releases")
    manifests = [_manifest(r) for r in folders]
    wide = _groups(folders[0], manifests[0], 0)
    for i in range(1, len(folders)):
        wide = wide.join(_groups(folders[i], manifests[i], i), on="caseid", how="full", coalesce=True)
    columns = [f"g{i}" for i in range(len(folders))]
    wide = wide.with_columns(pl.concat_list(
        [pl.when(pl.col(c).is_not_null()).then(pl.lit(i + 1)) for i, c in enumerate(columns)]
    ).list.drop_nulls().alias("releases"))  # fmt: skip
    several = wide.filter(pl.col("releases").list.len() > 1)
    parts = []
    for pattern in several.get_column("releases").unique().to_list():
        chosen = [columns[i - 1] for i in pattern]
        sizes = wide.filter(pl.all_horizontal(pl.col(c).is_not_null() for c in chosen)).group_by(chosen).len()
        targets = several.filter(pl.col("releases") == pl.lit(pattern, pl.List(pl.Int32)))
        parts.append(
            targets.join(sizes, on=chosen).select("caseid", "releases", pl.col("len").alias("intersection"))
        )
    checked = _k(manifests, k)
    found = pl.concat(parts) if parts else pl.DataFrame(
        schema={"caseid": pl.Int64, "releases": pl.List(pl.Int32), "intersection": pl.UInt32})  # fmt: skip
    violations = found.filter(pl.col("intersection") < checked).sort("caseid")
    return SeriesVerdict(folders, checked, wide.height, several.height, violations)
