"""The verifier's model-specific rules (SPEC §7), read from ``manifest.json`` → ``parameters.model``.

Kept apart from :mod:`.verifier` for size; like it, this module recomputes everything from the
release's own files and imports nothing from the models, the engine or the writer. A QID-group is a
distinct released QID tuple; its *cases* are the distinct caseids with a report in it, its *rows*
the DEMO rows (reports) in it.

* ``ms-k-theta``: ≥ k cases; ``case_split``; ``theta`` (conf(q → s, E) ≤ θ_s, in verify.py).
* ``xy-anonymity``: ≥ k cases; ``case_split``.
* ``k-anonymity``: ≥ k rows (reports are the units: no ``case_split``).
* ``l-diversity``: ≥ l cases (l = ``parameters.k``); ``case_split``; ``l``: ≥ l distinct values of
  each sensitive attribute (``indi_pt``, ``pt``, as ``parameters.sensitive`` makes them sensitive).
* ``alpha-k-anonymity``: ≥ k rows; ``alpha``: rows carrying s / rows ≤ α_s for every s of
  thresholds.csv with α_s < 1, s read from the row's own ``indi_pt`` / ``pt`` (no E).

For every model the verdict still reports DR against thresholds.csv with E (the paper's measure),
but only MS(k, θ*)-bounding counts a dangerous group as a violation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import polars as pl

from faers_anon.errors import ConfigError

__all__ = ["CHECKS", "ModelCheck", "check_for", "model_violations"]

Reader = Callable[[str, list[str]], pl.LazyFrame]
OWN_COLUMNS: Mapping[str, str] = {"indi": "indi_pt", "reac": "pt"}


@dataclass(frozen=True, slots=True)
class ModelCheck:
    """What the verifier checks for one model (list in the module docstring); ``label`` has a ``{k}``."""

    label: str
    size_unit: Literal["cases", "rows"]
    case_split: bool
    theta: bool
    distinct: bool = False
    alpha: bool = False


CHECKS: Mapping[str, ModelCheck] = {
    "ms-k-theta": ModelCheck("MS(k={k}, θ*)-bounding", "cases", case_split=True, theta=True),
    "xy-anonymity": ModelCheck("(X,Y)-anonymity (k={k} cases)", "cases", case_split=True, theta=False),
    "k-anonymity": ModelCheck("k-anonymity (k={k} rows)", "rows", case_split=False, theta=False),
    "l-diversity": ModelCheck(
        "multi-sensitive l-diversity (l={k})", "cases", case_split=True, theta=False, distinct=True
    ),
    "alpha-k-anonymity": ModelCheck(
        "(α,k)-anonymity (k={k} rows)", "rows", case_split=False, theta=False, alpha=True
    ),
}


def check_for(model: object) -> ModelCheck:
    """The checks of a manifest's model name (``ms-k-theta`` when the manifest names none).

    Raises:
        ConfigError: a model this verifier does not know.
    """
    name = "ms-k-theta" if model is None else str(model)
    if name not in CHECKS:
        raise ConfigError(
            f"manifest model {name!r}: unknown to the verifier (expected one of {', '.join(CHECKS)})"
        )
    return CHECKS[name]


def row_sizes(reports: pl.DataFrame) -> pl.DataFrame:
    """(group, rows): DEMO rows per QID-group."""
    return reports.group_by("group").agg(pl.len().alias("rows"))


def _own_values(read: Reader, tables: Sequence[str], key: str) -> pl.LazyFrame:
    """(key, table, value): the canonical own values of each report or case, per sensitive table."""
    parts = [
        read(table, list(dict.fromkeys(["caseid", key, OWN_COLUMNS[table]]))).select(
            pl.col(key).cast(pl.String),
            pl.lit(table).alias("table"),
            pl.col(OWN_COLUMNS[table])
            .cast(pl.String)
            .str.replace_all(r"\s+", " ")
            .str.strip_chars()
            .str.to_uppercase()
            .alias("value"),
        )
        for table in tables
    ]
    return pl.concat(parts).filter(pl.col("value").str.len_chars() > 0).unique()


def distinct_violations(
    read: Reader, members: pl.DataFrame, tables: Sequence[str], l_value: int
) -> pl.DataFrame:
    """Rule ``l``: groups with fewer than l distinct values of a sensitive table (over their cases' reports).

    Returns:
        (group, rule, detail), one row per group and table that fails.
    """
    values = _own_values(read, tables, "caseid")
    counts = (
        members.lazy()
        .select("group", pl.col("caseid").cast(pl.String))
        .join(values, on="caseid")
        .group_by("group", "table")
        .agg(pl.col("value").n_unique().alias("distinct"))
    )
    grid = members.select("group").unique().join(pl.DataFrame({"table": list(tables)}), how="cross")
    return (
        grid.lazy()
        .join(counts, on=["group", "table"], how="left")
        .with_columns(pl.col("distinct").fill_null(0))
        .filter(pl.col("distinct") < l_value)
        .select(
            "group",
            pl.lit("l").alias("rule"),
            pl.format(
                "{} distinct {} values < l = {}",
                "distinct",
                pl.col("table").replace_strict(dict(OWN_COLUMNS)),
                pl.lit(l_value),
            ).alias("detail"),
        )
        .collect()
    )


def alpha_violations(
    read: Reader, reports: pl.DataFrame, tables: Sequence[str], thetas: pl.DataFrame, tolerance: float
) -> pl.DataFrame:
    """Rule ``alpha``: σ_s(g) / rows(g) > α_s + tolerance, σ_s = rows of g whose own values include s.

    Args:
        reports: (primaryid, group), one row per DEMO row.
        thetas: (value, theta) from thresholds.csv, canonical values.

    Returns:
        (group, rule, detail), one row per group and value that fails.
    """
    values = _own_values(read, tables, "primaryid").select("primaryid", "value").unique()
    rows = reports.lazy().select(pl.col("primaryid").cast(pl.String), "group")
    return (
        rows.join(values, on="primaryid")
        .join(thetas.lazy().filter(pl.col("theta") < 1.0), on="value")
        .group_by("group", "value", "theta")
        .agg(pl.len().alias("sigma"))
        .join(row_sizes(reports).lazy(), on="group")
        .with_columns((pl.col("sigma") / pl.col("rows")).alias("share"))
        .filter(pl.col("share") > pl.col("theta") + tolerance)
        .sort("group", "value")
        .select(
            "group",
            pl.lit("alpha").alias("rule"),
            pl.format("share({}) = {} > alpha {}", "value", pl.col("share").round(6), "theta").alias(
                "detail"
            ),
        )
        .collect()
    )


def model_violations(
    check: ModelCheck,
    read: Reader,
    /,
    *,
    reports: pl.DataFrame,
    members: pl.DataFrame,
    tables: Sequence[str],
    k: int,
    thresholds: Callable[[], pl.DataFrame],
    tolerance: float,
) -> list[pl.DataFrame]:
    """The size rule ``k`` and the ``l`` / ``alpha`` rules of a model, as (group, rule, detail) frames.

    Args:
        check: the model's checks.
        read: reads a release table's columns (``caseid`` as text).
        reports: (caseid, primaryid, group), one row per DEMO row.
        members: (caseid, group), distinct.
        tables: the sensitive own tables (``indi``, ``reac``).
        k: k (l for l-diversity).
        thresholds: reads (value, theta) of thresholds.csv (called only by the ``alpha`` rule).
        tolerance: slack on shares.
    """
    if check.size_unit == "cases":
        sizes, what = members.group_by("group").agg(pl.len().alias("n")), "distinct cases"
    else:
        sizes, what = row_sizes(reports).rename({"rows": "n"}), "rows"
    found = [
        sizes.filter(pl.col("n") < k).select(
            "group", pl.lit("k").alias("rule"), pl.format(f"{{}} {what} < k = {k}", "n").alias("detail")
        )
    ]
    if check.distinct:
        found.append(distinct_violations(read, members, tables, k))
    if check.alpha:
        found.append(alpha_violations(read, reports, tables, thresholds(), tolerance))
    return found
