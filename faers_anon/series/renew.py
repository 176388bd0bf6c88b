"""What changed between two E tables, as P(s | c) reads them (issue 14 item 7).

Source: SPEC §5; docs/series.md §6 ("The series step's cost", fifth, sixth and twelfth sessions). P(s | c)
of a case is a function of its own value lists, its OUTC codes, the class file and E's rows of its drugs
(:func:`knowledge.case_value_probabilities`: p = 1 for an own value, else the largest weight of its
drugs; a class's p is the largest of its members'; an OUTC code's p is 1). So when E changes and the
case does not, only a case holding a drug whose E rows changed (drug keys as P reads them, each (drug,
value) at its largest weight: :func:`as_read`) can get a new P, and only for a value of a changed row or
a class holding one (:class:`Change`). The recheck (:mod:`.recheck`) checks only those values again and
rule 6's raise check (:mod:`.raised`) reads only them; since the twelfth session P itself is computed
again for every member as arrays (:mod:`.linked`), which cost less than renewing the changed rows of
the holders did (the frames merged and sorted: 1.44 CPU-s over the 100k quarter 4's 3 calls).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.value_classes import CLASS_PREFIX, read_classes
from knowledge.drug_names import name_key_expr
from knowledge.values import value_key_expr

__all__ = ["Change", "as_read", "change", "changed_rows"]

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
