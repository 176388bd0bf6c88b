"""Verifier rules for the OUTC set, a quasi-identifier of the case (SPEC §11; issue 18).

From the release's files alone (imports nothing of the anonymizer). SPEC §11's released case view
holds every released DEMO field of the case's latest report and "the case's released OUTC codes as
a set". A release whose column policy declares the derived DEMO field ``outcome`` a qid
(``manifest.json`` → ``policy.columns.demo.outcome`` = ``qid``) promises:

* ``outcome_set``: every case's class over all its released DEMO fields *and* its OUTC set has ≥ k
  distinct cases. The case view is its latest DEMO row (highest report id: report pseudonyms sort
  in version order) with every column but ``primaryid``, ``caseid``, ``is_latest`` and ``quarter``;
  the OUTC set is the distinct ``outc_cod`` values of all its reports, upper case, sorted and
  comma-joined (empty when none). Reported like rule ``demo_fields``: for cases whose QID-group has
  ≥ k cases and whose class over the DEMO fields alone has ≥ k (else ``demo_fields`` reports them),
  once per group, naming its first such case.
* ``outcome_versions``: every report of a case carries the same OUTC codes (all versions carry the
  case's generalized value; a report without OUTC rows carries the empty set), so no version tells
  more than the case view.

θ for the OUTC codes themselves is rule ``outcome_theta`` (:mod:`faers_anon.verify.classes`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.verify.classes import NOT_FIELDS, demo_classes, released_demo, split_groups_below_k

__all__ = ["declares_outcome", "outcome_rules", "outcome_set_violations", "outcome_version_violations"]

TableReader = Callable[..., pl.LazyFrame]  # (table, columns, optional=()) -> the table's columns
_EMPTY = pl.Schema({"group": pl.Int64(), "rule": pl.String(), "detail": pl.String()})


def _sets(outc: pl.DataFrame, by: str) -> pl.DataFrame:
    """``by`` → its OUTC codes as one text (distinct, upper case, sorted, comma-joined)."""
    code = pl.col("outc_cod").cast(pl.String).str.strip_chars().str.to_uppercase()
    return (
        outc.select(pl.col(by).cast(pl.String), code.alias("code"))
        .filter(pl.col("code").str.len_chars() > 0)
        .unique()
        .group_by(by)
        .agg(pl.col("code").sort().str.join(",").alias("_outc_set"))
    )


def outcome_set_violations(
    demo: pl.DataFrame, outc: pl.DataFrame, members: pl.DataFrame, k: int, classes: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Rule ``outcome_set`` (module docstring).

    Args:
        demo: every published DEMO column (``caseid`` and ``primaryid`` as text or integers).
        outc: the OUTC rows (``caseid``, ``outc_cod``).
        members: (``caseid`` as text, ``group``) of the release's QID-groups.
        k: the k checked.
        classes: :func:`faers_anon.verify.classes.demo_classes` of ``demo`` with ``caseid`` as text and
            ``primaryid`` as Int64, when already computed (its classes over the DEMO fields alone).
    """
    sets = _sets(outc, "caseid")
    if sets.is_empty():  # every OUTC set empty: the classes are those over the DEMO fields, demo_fields' own
        return pl.DataFrame(schema=_EMPTY)
    fields = [c for c in demo.columns if c not in NOT_FIELDS]
    typed = demo.with_columns(pl.col("caseid").cast(pl.String), pl.col("primaryid").cast(pl.Int64))
    latest = typed.sort("primaryid").unique("caseid", keep="last", maintain_order=True)
    latest = latest.select("caseid", *fields)
    view = latest.join(sets, on="caseid", how="left").with_columns(pl.col("_outc_set").fill_null(""))
    keys = [*fields, "_outc_set"]
    sizes = view.group_by(keys, maintain_order=True).agg(
        pl.len().alias("size"), pl.col("caseid").min().alias("caseid")
    )
    # a case already below k on the DEMO fields alone is rule demo_fields' (verify.classes)
    alone = demo_classes(typed) if classes is None else classes
    below = alone.filter(pl.col("size") < k).explode("members").get_column("members")
    sizes = sizes.filter(~pl.col("caseid").is_in(below.implode()))
    small = split_groups_below_k(sizes, members.with_columns(pl.col("caseid").cast(pl.String)), k)
    detail = pl.format(
        "{} case(s) share all {} released DEMO fields and the OUTC set of case {} (k = {})",
        "size",
        pl.lit(len(fields)),
        "caseid",
        pl.lit(k),
    )
    return (
        small.sort("group", "caseid")
        .select("group", pl.lit("outcome_set").alias("rule"), detail.alias("detail"))
        .unique("group", keep="first", maintain_order=True)
        .cast(_EMPTY)
    )


def outcome_version_violations(demo: pl.DataFrame, outc: pl.DataFrame, members: pl.DataFrame) -> pl.DataFrame:
    """Rule ``outcome_versions`` (module docstring): one row per case whose reports' OUTC sets differ."""
    sets = _sets(outc, "primaryid")
    if sets.is_empty():  # every report carries the empty set
        return pl.DataFrame(schema=_EMPTY)
    reports = demo.select(pl.col("primaryid").cast(pl.String), pl.col("caseid").cast(pl.String))
    per_report = reports.join(sets, on="primaryid", how="left").with_columns(
        pl.col("_outc_set").fill_null("")
    )
    split = (
        per_report.group_by("caseid")
        .agg(pl.col("_outc_set").n_unique().alias("sets"), pl.col("_outc_set").unique().sort())
        .filter(pl.col("sets") > 1)
        .join(members.with_columns(pl.col("caseid").cast(pl.String)), on="caseid", how="left")
        .sort("caseid")
    )
    return split.select(
        "group",
        pl.lit("outcome_versions").alias("rule"),
        pl.format("caseid {}: its reports carry different OUTC sets ({})", "caseid",
                  pl.col("_outc_set").list.join(" | ")).alias("detail"),
    ).cast(_EMPTY)  # fmt: skip


def declares_outcome(manifest: dict[str, Any]) -> bool:
    """Whether the release's column policy declares ``demo.outcome`` a qid (module docstring)."""
    columns = ((manifest.get("policy") or {}).get("columns") or {}).get("demo") or {}
    return isinstance(columns, dict) and columns.get("outcome") == "qid"


def outcome_rules(
    release: Path,
    read: TableReader,
    members: pl.DataFrame,
    *,
    k: int,
    manifest: dict[str, Any],
    case_groups: bool,
    demo: Callable[[], tuple[pl.DataFrame, pl.DataFrame | None]] | None = None,
) -> list[pl.DataFrame]:
    """The rules of this module, as the verifier calls them (one hook in ``faers_anon.verify.verifier``).

    They run for models whose groups are sets of cases and releases that declare the OUTC set a qid.
    ``demo``: :func:`faers_anon.verify.classes.released_demo` of the release, cached by the caller
    (default: read here).
    """
    if not (case_groups and declares_outcome(manifest)):
        return []
    table, classes = demo() if demo is not None else released_demo(release, read)
    outc = read("outc", ["caseid", "primaryid", "outc_cod"]).collect()
    return [
        outcome_set_violations(table, outc, members, k, classes),
        outcome_version_violations(table, outc, members),
    ]
