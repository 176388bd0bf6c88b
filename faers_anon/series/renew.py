"""P(s | c) again after E changed: the changed values of the cases holding a changed drug (issue 14 item 7).

Source: SPEC §5; docs/series.md §6 ("The series step's cost", fifth and sixth sessions). P(s | c) of a
case is a function of its own value lists, its OUTC codes, the class file and E's rows of its drugs
(:func:`knowledge.case_value_probabilities`: p = 1 for an own value, else the largest weight of its
drugs; a class's p is the largest of its members'; an OUTC code's p is 1). So when E changes and
the case does not, only a case holding a drug whose E rows changed (drug keys as P reads them, each
(drug, value) at its largest weight: :func:`as_read`) can get a new P, and only for a value of a
changed row or a class holding one (:class:`Change`); computing P again for those cases and values
(E cut to the rows of the values they read, the cases' own terms cut to those: :func:`only_terms`)
and keeping every other row gives the full computation's frame, row for row (p is a weight, 1 or a
largest weight, never a sum: no rounding differs). Used by the recheck's later attempts
(:mod:`.recheck`: P over the members' values now and in the ledger).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.value_classes import CLASS_PREFIX, read_classes
from knowledge.drug_names import name_key_expr
from knowledge.values import value_key_expr

__all__ = ["Change", "as_read", "change", "changed_rows", "holding", "only_terms"]

_OWN = ("indications", "reactions")


def as_read(knowledge: pl.DataFrame) -> pl.DataFrame:
    """E as :func:`knowledge.case_value_probabilities` reads it: keys made canonical, the largest
    weight of each (drug, value) (P keeps the largest p of a pair)."""
    return (
        knowledge.select(
            name_key_expr(pl.col("drug_key")).alias("drug_key"),
            value_key_expr(pl.col("disease")).alias("value"),
            "weight",
        )  # fmt: skip
        .group_by("drug_key", "value")
        .agg(pl.col("weight").max())
    )


def changed_rows(before: pl.DataFrame, after: pl.DataFrame) -> pl.DataFrame:
    """(``drug_key``, ``value``) whose weight differs between two E as P reads them (:func:`as_read`),
    a row present in one only included."""
    joined = before.join(after, on=["drug_key", "value"], how="full", coalesce=True, suffix="_after")
    differs = pl.col("weight").ne_missing(pl.col("weight_after"))
    return joined.filter(differs).select("drug_key", "value")


@dataclass(frozen=True, slots=True)
class Change:
    """What changed between two E (and θ*): ``drugs`` whose E rows changed; ``values``: the P values
    that may change (the changed rows' values and the classes holding one); ``reads``: the values
    those are computed from (the changed rows' values and every member of those classes);
    ``moved``: the values whose θ fell or is new (a unit that passed for s passes under a higher θ_s:
    its conf is the same; a value no longer bounded is not checked)."""

    drugs: pl.Series
    values: list[str]
    reads: list[str]
    moved: list[str]

    @property
    def wanted(self) -> list[str]:
        """V*: the values whose check may change."""
        return sorted({*self.values, *self.moved})


def change(before: pl.DataFrame, after: pl.DataFrame, config: AnonymizeConfig,
           thetas: tuple[dict[str, float], dict[str, float]] = ({}, {})) -> Change:  # fmt: skip
    """The drugs, values and θ that changed between two E as P reads them (:func:`as_read`) and two θ*."""
    rows = changed_rows(before, after)
    values = rows.get_column("value").unique()
    members = read_classes(config.classes).members
    touched = members.join(members.filter(pl.col("value").is_in(values.implode())).select("class").unique(),
                           on="class")  # fmt: skip
    last, now = thetas
    moved = [v for v, theta in now.items() if v not in last or theta < last[v]]
    classes = [CLASS_PREFIX + c for c in touched.get_column("class").unique().to_list()]
    reads = {*values.to_list(), *touched.get_column("value").to_list()}
    return Change(rows.get_column("drug_key").unique(), sorted({*values.to_list(), *classes}), sorted(reads),
                  sorted(moved))  # fmt: skip


def only_terms(frame: pl.DataFrame, reads: list[str]) -> pl.DataFrame:
    """``frame`` with its indication and reaction lists cut to the terms whose value (the canonical key
    P reads a term as) is in ``reads``: a term outside adds no P row for those values. The lists are
    exploded, joined with the few terms kept and gathered again (``list.filter`` with ``is_in`` cost
    1 CPU-s on 100k cases, this 0.1); P does not read a list's order."""
    rows = frame.select(_OWN).with_row_index("_row")
    empty = pl.lit([], pl.List(pl.Utf8))
    cut = []
    for name in _OWN:
        exploded = rows.select("_row", pl.col(name).alias("term")).explode("term").drop_nulls("term")
        keep = exploded.select("term").unique().filter(value_key_expr(pl.col("term")).is_in(reads))
        kept = exploded.join(keep, on="term").group_by("_row").agg(pl.col("term").alias(name))
        cut.append(rows.select("_row").join(kept, on="_row", how="left").get_column(name))
    # a list left empty is empty, a null list stays null (as list.filter leaves them)
    kept_lists = [pl.when(pl.col(n).is_null()).then(None).otherwise(c.fill_null(empty)).alias(n)
                  for n, c in zip(_OWN, cut, strict=True)]  # fmt: skip
    return frame.with_columns(kept_lists)


def holding(frame: pl.DataFrame, drugs: pl.Series) -> pl.DataFrame:
    """``caseid`` of the rows of ``frame`` whose ``drug_keys`` hold one of ``drugs`` (unique)."""
    exploded = frame.select("caseid", "drug_keys").explode("drug_keys")
    return exploded.filter(pl.col("drug_keys").is_in(drugs.implode())).select("caseid").unique()


def in_order(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame.sort("caseid", "value")`` for unique (caseid, value) keys, the values sorted as integers:
    an Enum of the distinct values in their sorted order compares as the text does (UTF-8 bytes in
    code-point order), at a fraction of a text sort's cost (1.6 M rows of a 100k composition)."""
    order = pl.Enum(frame.get_column("value").unique().drop_nulls().sort())
    return frame.sort("caseid", pl.col("value").cast(order))


def renewed(rows: pl.DataFrame, again: pl.DataFrame, fresh: pl.DataFrame, values: list[str]) -> pl.DataFrame:
    """``rows`` (P(s | c) of the last E) less the ``values`` of the ``again`` cases, with ``fresh`` (their P
    of those values under the new E), in (caseid, value) order (:func:`in_order`)."""
    wanted = pl.Series(values, dtype=pl.Utf8).implode()
    renew = pl.col("caseid").is_in(again.get_column("caseid").implode()) & pl.col("value").is_in(wanted)
    return in_order(pl.concat([rows.filter(~renew), fresh.filter(pl.col("value").is_in(wanted))]))
