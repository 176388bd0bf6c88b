"""Multi-sensitive l-diversity (Gal, Chen & Gangopadhyay 2008; Lin, Yang & Wang 2016, ref. 14; SPEC §7).

Distinct l-diversity (Machanavajjhala et al. 2006) asks each QID-group to hold at least l distinct
values of the sensitive attribute; the multi-sensitive version asks it of every sensitive attribute
separately. Here the attributes are the cases' indications (INDI_PT) and reactions (PT), the
paper's SA, each set-valued: a group's values of an attribute are the union of its cases' values.

    g valid  ⇔  |g| ≥ l distinct cases  and  |∪_{c∈g} A(c)| ≥ l for every attribute A

Values reach the model as keys ``"<attribute>:<value>"`` (see :func:`value_key`), so one term
that is both an indication and a reaction counts once in each attribute.

Departures, with reasons:

* ``|g| ≥ l`` cases is added. With one value per record, l distinct values imply l records; with
  set-valued attributes one case listing five reactions would otherwise be a valid group alone.
* A case without any value of an attribute adds nothing to that attribute (missing is not a value):
  it cannot be disclosed, and counting "none" as a value would let empty cases buy diversity.
* Case super-records are the units (SPEC §4), as for MS(k, θ*): all reports of a case share a group.
* No external knowledge: the diseases reached through E are not an attribute of this model.
* The partition is built top-down (Mondrian-style, :mod:`faers_anon.algorithms.mondrian`), as the
  paper did ("the top-down method tends to create larger QID-groups"), not by the greedy engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import InitVar, dataclass, field

from faers_anon.errors import ConfigError
from faers_anon.models.base import CaseStats, GroupStats, Requirements
from faers_anon.models.k_anonymity import check_k

__all__ = ["ATTRIBUTES", "LDiversity", "value_key"]

SOURCE = (
    "Gal, Chen & Gangopadhyay 2008, Int J Inf Secur Priv 2(3):28-44, multi-sensitive l-diversity "
    "(Lin et al. 2016, ref. 14); top-down partitioning after LeFevre, DeWitt & Ramakrishnan 2006 (Mondrian)"
)
ATTRIBUTES = ("indications", "reactions")
_SEP = ":"


def value_key(attribute: str, value: str) -> str:
    """The key of a value of one attribute: ``"reactions:NAUSEA"``."""
    return f"{attribute}{_SEP}{value}"


@dataclass(frozen=True, kw_only=True, slots=True)
class LDiversity:
    """Multi-sensitive distinct l-diversity with at least l cases per group.

    Args:
        k: l, the minimum number of distinct values per attribute and of cases per group (≥ 2); named
            ``k`` because every registry factory takes the same options (the paper's "k (or l)").
        thetas: accepted for the common options and ignored (the model bounds no confidence).
        attributes: the sensitive attributes, a non-empty subset of ``indications``, ``reactions``.

    Raises:
        ConfigError: l < 2, or unknown or no attributes.
    """

    k: int = 5
    thetas: InitVar[Mapping[str, float] | None] = None
    attributes: tuple[str, ...] = ATTRIBUTES
    name: str = field(default="l-diversity", init=False)

    def __post_init__(self, thetas: Mapping[str, float] | None) -> None:
        check_k(self.k, "l")
        bad = [a for a in self.attributes if a not in ATTRIBUTES]
        if bad or not self.attributes:
            raise ConfigError(
                f"l-diversity attributes: got {list(self.attributes)!r} "
                f"(expected a non-empty subset of {', '.join(ATTRIBUTES)})"
            )

    @property
    def l(self) -> int:  # noqa: E743 - the paper's symbol
        """l (the same number as ``k``)."""
        return self.k

    def distinct(self, group: GroupStats) -> dict[str, int]:
        """Number of distinct values of each attribute in the group."""
        counts = dict.fromkeys(self.attributes, 0)
        for key in group.sigma:
            attribute = key.split(_SEP, 1)[0]
            if attribute in counts:
                counts[attribute] += 1
        return counts

    def is_valid(self, group: GroupStats) -> bool:
        """|g| ≥ l cases and ≥ l distinct values of every attribute."""
        return group.cases >= self.k and min(self.distinct(group).values()) >= self.k

    def risk(self, group: GroupStats, case: CaseStats) -> float:
        """Always 1.0: the top-down algorithm does not rank candidates."""
        return 1.0

    def describe(self) -> dict[str, object]:
        """Model name, l, the attributes, the unit and the source."""
        return {
            "model": self.name,
            "k": self.k,
            "l": self.k,
            "attributes": list(self.attributes),
            "unit": "cases",
            "source": SOURCE,
        }

    def requirements(self) -> Requirements:
        """l cases and l distinct values per attribute, checked by the Mondrian partitioner."""
        return Requirements(
            min_size=self.k,
            size_unit="cases",
            unit="cases",
            knowledge=False,
            algorithm="mondrian",
            distinct=self.k,
            attributes=self.attributes,
        )
