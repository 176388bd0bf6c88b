"""Verifier rule for the number of a case's reports, a released field (SPEC §4, §11; issue 18 item 1).

From the release's files alone (imports nothing of the anonymizer). The release drops ``caseversion``
but publishes every kept report of a case as a DEMO row under one case pseudonym, so anyone counts a
case's versions: the number of its DEMO rows is a field of the released case view like any other.

* ``report_count``: every case's class over all its released DEMO fields (its latest DEMO row, highest
  report id: report pseudonyms sort in version order; every column but ``primaryid``, ``caseid``,
  ``is_latest`` and ``quarter``, as rule ``demo_fields``) **plus its number of DEMO rows** has ≥ k
  distinct cases. The count classes refine the classes of rule ``demo_fields``
  (:func:`faers_anon.verify.classes.demo_classes`): a class of ≥ k cases splits by its members' row
  counts. Reported for cases whose QID-group has ≥ k cases (a smaller group is rule ``k``'s) and
  whose class over the DEMO fields alone has ≥ k cases (else rule ``demo_fields`` reports them):
  one violation per split-off class below k, naming its row count and every one of its cases.

Worked example (k = 2): one group of 4 cases, every DEMO field equal; cases 1, 2 have one DEMO row,
case 3 two rows, case 4 three rows. Classes on the fields and the count: {1, 2} (1 row), {3} (2 rows),
{4} (3 rows): cases 3 and 4 are below k, two violations.

The anonymizer makes the count common to each group (:mod:`faers_anon.anonymize` strata by count;
docs/formats.md "Column policy"); this rule re-checks the promise on what was written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import polars as pl

from faers_anon.verify.classes import NOT_FIELDS, demo_classes, released_demo, split_groups_below_k

__all__ = ["report_count_violations", "report_counts", "version_rules"]

TableReader = Callable[..., pl.LazyFrame]  # (table, columns, optional=()) -> the table's columns
_EMPTY = pl.Schema({"group": pl.Int64(), "rule": pl.String(), "detail": pl.String()})


def report_counts(demo: pl.DataFrame) -> pl.DataFrame:
    """(``caseid`` as text, ``reports``): the number of DEMO rows of each case."""
    return demo.group_by(pl.col("caseid").cast(pl.String)).agg(pl.len().cast(pl.Int64).alias("reports"))


def report_count_violations(
    demo: pl.DataFrame, members: pl.DataFrame, k: int, classes: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Rule ``report_count`` (module docstring).

    Args:
        demo: every published DEMO column (``caseid`` and ``primaryid`` as text or integers).
        members: (``caseid``, ``group``) of the release's QID-groups.
        k: the k checked.
        classes: :func:`faers_anon.verify.classes.demo_classes` of ``demo`` (``primaryid`` as Int64),
            when already computed.
    """
    fields = [c for c in demo.columns if c not in NOT_FIELDS]
    if classes is None:
        classes = demo_classes(demo.with_columns(pl.col("primaryid").cast(pl.Int64)))
    # a class already below k on the DEMO fields alone is rule demo_fields' (verify.classes)
    cases = (
        classes.filter(pl.col("size") >= k)
        .select(pl.int_range(pl.len(), dtype=pl.Int64).alias("_class"), "members")
        .explode("members")
        .select("_class", pl.col("members").cast(pl.String).alias("caseid"))
        .join(report_counts(demo), on="caseid")
        .with_columns(pl.len().over("_class", "reports").alias("size"))
    )
    small = split_groups_below_k(cases, members.with_columns(pl.col("caseid").cast(pl.String)), k)
    named = small.group_by("group", "_class", "reports").agg(
        pl.col("size").first(), pl.col("caseid").sort().str.join(", ").alias("cases")
    )
    detail = pl.format(
        "{} case(s) share all {} released DEMO fields and {} DEMO row(s) (k = {}): cases {}",
        "size",
        pl.lit(len(fields)),
        "reports",
        pl.lit(k),
        "cases",
    )
    return (
        named.sort("group", "reports", "cases")
        .select("group", pl.lit("report_count").alias("rule"), detail.alias("detail"))
        .cast(_EMPTY)
    )


def version_rules(
    release: Path,
    read: TableReader,
    members: pl.DataFrame,
    *,
    k: int,
    case_groups: bool,
    policy_roles: bool,
    demo: Callable[[], tuple[pl.DataFrame, pl.DataFrame | None]] | None = None,
) -> list[pl.DataFrame]:
    """The rule of this module, as the verifier calls it (one hook in ``faers_anon.verify.verifier``).

    It runs, like rule ``demo_fields``, for models whose groups are sets of cases and releases whose
    manifest declares column roles (written since issue 18). ``demo``:
    :func:`faers_anon.verify.classes.released_demo` of the release, cached by the caller.
    """
    if not (case_groups and policy_roles):
        return []
    table, classes = demo() if demo is not None else released_demo(release, read)
    return [report_count_violations(table, members, k, classes)]
