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

Rule ``series_receipt`` (docs/series.md §4, "Knowing when a report came in"): the attacker who also
knows when the target's reports came in keeps, of I(c), the cases that show a new report in the same
releases: I_R(c), the members whose latest report pseudonym (the highest of the case in the release)
is, release by release, the same as or other than the one of each earlier of c's releases exactly
when c's is. Every case in several releases must have |I_R(c)| ≥ k, unless a release of the series
states ``parameters.republish`` true (made with republished group-mates, which this attacker tells
from a follow-up by design): then the cases below k are counted and named, and the verdict does not
fail on them.

Computation: I(c) depends only on c's groups in R(c), so for each distinct set S of releases that
some case appears in (at most 2^n − 1, n releases), the cases present in every release of S are
grouped on their groups there; the count is |I(c)| for the cases whose R(c) is exactly S; with the
labels of their reports added to the key, |I_R(c)|.
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
        receipt: the same for |I_R(c)| < k (``intersection`` = |I_R(c)|): rule ``series_receipt``.
        republished: a release states ``parameters.republish`` true: ``receipt`` is counted, not a failure.
    """

    releases: tuple[Path, ...]
    k: int
    cases: int
    in_several: int
    violations: pl.DataFrame
    receipt: pl.DataFrame
    republished: bool = False

    @property
    def ok(self) -> bool:
        """True when no case in several releases is below k (and none knowing receipts, unless the series
        was made with republished group-mates)."""
        return self.violations.height == 0 and (self.republished or self.receipt.height == 0)

    def summary(self, limit: int = 20) -> str:
        """A few lines: the verdict, the counts, the first ``limit`` violating pseudonyms."""
        head = "OK" if self.ok else "FAILED"
        rules = "series_k" if self.republished else "series_k, series_receipt"
        lines = [f"series of {len(self.releases)} releases: {head} ({rules}, k = {self.k}): "
                 f"{self.cases:,} case pseudonyms, {self.in_several:,} in several releases, "
                 f"{self.violations.height:,} below k"]  # fmt: skip
        for row in self.violations.head(limit).iter_rows(named=True):
            where = ", ".join(str(self.releases[i - 1]) for i in row["releases"])
            lines.append(f"  case {row['caseid']}: {row['intersection']} case(s) share its group in every "
                         f"release where it appears ({where})")  # fmt: skip
        if self.violations.height > limit:
            lines.append(f"  … and {self.violations.height - limit:,} more")
        rule = "counted only: made with republish" if self.republished else "series_receipt"
        lines.append(f"knowing when reports came in ({rule}): {self.receipt.height:,} of {self.in_several:,} "
                     "cases in several releases below k")  # fmt: skip
        if not self.republished:
            for row in self.receipt.head(limit).iter_rows(named=True):
                lines.append(f"  case {row['caseid']}: {row['intersection']} case(s) share its group and its "
                             "report dates in every release where it appears")  # fmt: skip
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
    rows = pl.read_parquet(path, columns=["caseid", "primaryid", *qids])
    latest = rows.group_by("caseid").agg(pl.col("primaryid").max().alias(f"p{index}"))
    cases = rows.unique("caseid", keep="first")
    tuples = cases.select(qids).unique().with_row_index("g")
    return cases.join(tuples, on=qids, nulls_equal=True).join(latest, on="caseid").select(
        "caseid", pl.col("g").cast(pl.Int64).alias(f"g{index}"), f"p{index}"
    )


def _label(chosen: list[int], j: int) -> pl.Expr:
    """The position among ``chosen`` of the first release showing the same latest report as the j-th."""
    at = pl.col(f"p{chosen[j]}")
    label: pl.Expr = pl.lit(j)
    for position in reversed(range(j)):  # built inside out: the first match wins
        label = pl.when(pl.col(f"p{chosen[position]}") == at).then(pl.lit(position)).otherwise(label)
    return label.alias(f"_l{j}")


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
    parts: list[pl.DataFrame] = []
    receipts: list[pl.DataFrame] = []
    for pattern in several.get_column("releases").unique().to_list():
        chosen = [columns[i - 1] for i in pattern]
        labels = [_label([i - 1 for i in pattern], j) for j in range(len(pattern))]
        holders = wide.filter(pl.all_horizontal(pl.col(c).is_not_null() for c in chosen)).with_columns(labels)
        keys = [*chosen, *[f"_l{j}" for j in range(len(pattern))]]
        mine = pl.col("releases") == pl.lit(pattern, pl.List(pl.Int32))
        targets = several.filter(mine).with_columns(labels)
        for out, key in ((parts, chosen), (receipts, keys)):
            sizes = holders.group_by(key).len()
            out.append(targets.join(sizes, on=key).select("caseid", "releases",
                                                          pl.col("len").alias("intersection")))  # fmt: skip
    checked = _k(manifests, k)
    empty = pl.DataFrame(schema={"caseid": pl.Int64, "releases": pl.List(pl.Int32),
                                 "intersection": pl.UInt32})  # fmt: skip
    found = pl.concat(parts) if parts else empty
    violations = found.filter(pl.col("intersection") < checked).sort("caseid")
    by_receipt = pl.concat(receipts) if receipts else empty
    receipt = by_receipt.filter(pl.col("intersection") < checked).sort("caseid")
    republished = any(_parameter(m, "republish") is True for m in manifests)
    return SeriesVerdict(folders, checked, wide.height, several.height, violations, receipt, republished)


def _parameter(manifest: dict[str, object], name: str) -> object:
    parameters = manifest.get("parameters")
    return parameters.get(name) if isinstance(parameters, dict) else None
