"""(X,Y)-anonymity with Y = caseid (Wang & Fung 2006; Lin, Yang & Wang 2016, ref. 11; SPEC §7).

(X,Y)-anonymity asks that every value x of the QID X be linked to at least k distinct values of Y;
with Y the patient identifier (FAERS ``caseid``), a QID-group is valid when it holds at least k
distinct caseids, however many reports each of them has. It is the paper's answer to "Multiple
Individual Records" without the confidence bound of MS(k, θ*)-bounding.

Departures, with reasons:

* The engine is fed case super-records (SPEC §4): all reports of a case form one unit and land in
  one group. A group then holds ≥ k distinct caseids by construction, which is exactly the model's
  condition; splitting a case's reports over groups would be allowed by the definition but gains
  nothing for the QIDs (the super-record is the smallest generalization covering its versions) and
  would put one patient in several groups.
* Built by the shared greedy engine with PR = 1 (ΔIL' = ΔIL), as k-anonymity, so the two models
  differ only in the unit counted (distinct cases versus rows).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import InitVar, dataclass, field

from faers_anon.models.base import CaseStats, GroupStats, Requirements
from faers_anon.models.k_anonymity import check_k

__all__ = ["XYAnonymity"]

SOURCE = "Wang & Fung 2006, KDD 754-759, (X,Y)-anonymity (Lin et al. 2016, ref. 11)"


@dataclass(frozen=True, kw_only=True, slots=True)
class XYAnonymity:
    """(X,Y)-anonymity: ≥ k distinct caseids per QID-group.

    Args:
        k: minimum number of distinct cases per group (≥ 2).
        thetas: accepted for the common registry options and ignored (no sensitive value is bounded).

    Raises:
        ConfigError: k < 2.
    """

    k: int = 5
    thetas: InitVar[Mapping[str, float] | None] = None
    name: str = field(default="xy-anonymity", init=False)

    def __post_init__(self, thetas: Mapping[str, float] | None) -> None:
        check_k(self.k)

    def is_valid(self, group: GroupStats) -> bool:
        """|g| ≥ k distinct cases."""
        return group.cases >= self.k

    def risk(self, group: GroupStats, case: CaseStats) -> float:
        """Always 1.0 (no risk term)."""
        return 1.0

    def describe(self) -> dict[str, object]:
        """Model name, k, the unit and the source."""
        return {"model": self.name, "k": self.k, "unit": "cases", "source": SOURCE}

    def requirements(self) -> Requirements:
        """k distinct cases; case super-records; no caps, no risk, no knowledge."""
        return Requirements(min_size=self.k, size_unit="cases", unit="cases", knowledge=False)
