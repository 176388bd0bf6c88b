"""The QIDs and their hierarchies (the engine's and the methods' input) and the engine's partition (output).

A leaf module (numpy-free; hierarchies, polars and the package's errors only), so that the engine's
modules, the methods, the metrics, the orchestrator and evaluate import the types without importing
the engine (issue 13: no import cycle). :class:`QidHierarchies` is the one definition of "the QIDs
and their trees" (models through the engine, methods, metrics, evaluate); :data:`QIDS` the one tuple
of their names.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from faers_anon.errors import ConfigError
from hierarchies import Hierarchy, mesh_age_tree, sex_tree

__all__ = ["QIDS", "FieldQid", "Partition", "QidHierarchies"]

QIDS: tuple[str, ...] = ("age", "sex", "weight")
"""The QIDs of SPEC §5 by name, in order: age (MeSH age tree), sex (sex tree), weight (hierarchy-free)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class FieldQid:
    """A categorical QID given to the engine as per-level codes (docs/engine.md, "Field QIDs").

    The cases frame carries a column ``name`` of type List(Int64) with ``height`` codes per case, level 0
    (the value) first: code ≥ 0 is the value's ancestor at that level, −1 "no common value there" (the
    case's versions differ, or the level is the root ``*``); a null list is a missing value. Two cases
    share their ancestor at level l when both codes are equal and ≥ 0; a group's value is the lowest
    such level (``height`` = the root ``*``) and its loss h(C, g) / h(C) = level / height (SPEC §6).

    Attributes:
        name: the DEMO column (and the cases frame column holding its codes).
        height: h(C), the number of levels below the root (≥ 1).
    """

    name: str
    height: int


@dataclass(frozen=True, kw_only=True, slots=True)
class QidHierarchies:
    """The QIDs and their hierarchies. ``None`` / ``False`` leaves an attribute out of the QID.

    Attributes:
        age: the age tree (numeric: cases' [age_min, age_max] are covered; categorical: the cases frame
            needs an ``age_group`` column of node names).
        sex: the sex tree (cases' ``sex`` names a node: F, M, ``*``, or null for missing).
        weight: whether weight (hierarchy-free, wt_min/wt_max) is a QID.
        weight_domain: (min, max) normalizing the weight term; default the data's own range.
        fields: further categorical QIDs as per-level codes (:class:`FieldQid`; the column policy's
            other DEMO qids, :func:`faers_anon.io.qid_fields.field_codes`).
    """

    age: Hierarchy | None
    sex: Hierarchy | None
    weight: bool = True
    weight_domain: tuple[float, float] | None = None
    fields: tuple[FieldQid, ...] = ()

    @classmethod
    def default(cls) -> QidHierarchies:
        """MeSH age tree, sex tree, weight (SPEC §5)."""
        return cls(age=mesh_age_tree(), sex=sex_tree(), weight=True)

    @property
    def age_tree(self) -> Hierarchy:
        """The age tree, for a reader that needs it (a method's point release names the age's leaf).

        Raises:
            ConfigError: age is left out of the QIDs.
        """
        return _needed(self.age, "age")

    @property
    def sex_tree(self) -> Hierarchy:
        """The sex tree, for a reader that needs it (codes of ``F``, ``M``, ``*``, missing).

        Raises:
            ConfigError: sex is left out of the QIDs.
        """
        return _needed(self.sex, "sex")

    @property
    def trees(self) -> tuple[Hierarchy, ...]:
        """The categorical QIDs' trees, age first."""
        return tuple(t for t in (self.age, self.sex) if t is not None)

    @property
    def names(self) -> tuple[str, ...]:
        """The QIDs among :data:`QIDS` this holds, in that order (field QIDs not included)."""
        held = {"age": self.age is not None, "sex": self.sex is not None, "weight": self.weight}
        return tuple(q for q in QIDS if held[q])

    @property
    def count(self) -> int:
        """|QID| (field QIDs included)."""
        return len(self.trees) + int(self.weight) + len(self.fields)


@dataclass(frozen=True, kw_only=True, slots=True)
class Partition:
    """The engine's output: the partition frame and what happened on the way.

    Attributes:
        frame: one row per caseid (docs/architecture.md, "The partition frame").
        groups: number of groups G.
        leftovers: cases placed by stage 2.
        forced: leftovers no group could take validly (placed where the excess was least).
        failed_groups: stage-1 groups dissolved because no feasible candidate was found.
        invalid_groups: groups that fail the model after the repair (0 unless the data as a whole
            cannot satisfy it: fewer than k cases, or some θ_s below its share).
        first_seed: caseid of the random first seed.
        merged_groups: merges made by :mod:`faers_anon.algorithms.repair` to make invalid groups valid.
    """

    frame: pl.DataFrame
    groups: int
    leftovers: int
    forced: int
    failed_groups: int
    invalid_groups: int
    first_seed: int
    merged_groups: int = 0


def _needed(tree: Hierarchy | None, name: str) -> Hierarchy:
    """``tree``, or a ConfigError naming the QID an algorithm needs but the QIDs leave out."""
    if tree is None:
        raise ConfigError(f"this algorithm needs the {name} tree ({name} is not among the QIDs)")
    return tree
