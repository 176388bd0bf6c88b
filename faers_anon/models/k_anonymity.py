"""k-anonymity over reports (Sweeney 2002; Lin, Yang & Wang 2016, Background and ref. 9; SPEC §7).

A QID-group g is valid when it holds at least k *rows*: every released report is indistinguishable
by its QID from at least k − 1 other reports. Follow-ups are not merged: each report is one unit of
the engine, generalized on its own age, sex and weight, so the reports of one case may land in
different groups, and a group of k rows may hold fewer than k distinct patients (the weakness the
paper's MS(k, θ*)-bounding fixes, "Multiple Individual Records").

Departures from the paper, with reasons:

* The paper does not say which algorithm produced its k-anonymous tables. Here the shared greedy
  clustering engine (Lin et al. 2016, Algorithms 1–2) builds them with PR = 1 (no sensitive values,
  ΔIL' = ΔIL), so NIL differences between models come from the models, not from the algorithms.
* The paper's experiments dropped records with missing QID values; SPEC §5 keeps them (missing is a
  value that generalizes only to the root).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import InitVar, dataclass, field

from faers_anon.errors import ConfigError
from faers_anon.models.base import CaseStats, GroupStats, Requirements

__all__ = ["KAnonymity", "check_k"]

SOURCE = "Sweeney 2002, Int J Uncertain Fuzziness Knowl-Based Syst 10(5):557-570 (Lin et al. 2016, ref. 9)"


def check_k(k: object, name: str = "k") -> int:
    """Validate an integer parameter ≥ 2 (k or l); returns it.

    Raises:
        ConfigError: not an integer (bool excluded) or below 2.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise ConfigError(f"{name} must be an integer >= 2; got {k!r}")
    return k


@dataclass(frozen=True, kw_only=True, slots=True)
class KAnonymity:
    """k-anonymity: ≥ k rows (reports) per QID-group.

    Args:
        k: minimum number of rows per group (≥ 2).
        thetas: accepted so that every registry factory takes the same options; k-anonymity protects
            no sensitive value, so θ* is ignored (DR is still measured against it by the metrics).

    Raises:
        ConfigError: k < 2.
    """

    k: int = 5
    thetas: InitVar[Mapping[str, float] | None] = None
    name: str = field(default="k-anonymity", init=False)

    def __post_init__(self, thetas: Mapping[str, float] | None) -> None:
        check_k(self.k)

    def is_valid(self, group: GroupStats) -> bool:
        """|g| ≥ k counted in rows (reports), whatever the number of distinct cases."""
        return group.rows >= self.k

    def risk(self, group: GroupStats, case: CaseStats) -> float:
        """Always 1.0: the model has no risk term (PR = 1, the engine ranks by ΔIL alone)."""
        return 1.0

    def describe(self) -> dict[str, object]:
        """Model name, k, the unit and the source."""
        return {"model": self.name, "k": self.k, "unit": "reports", "source": SOURCE}

    def requirements(self) -> Requirements:
        """k rows; one engine unit per report; no caps, no risk, no knowledge."""
        return Requirements(min_size=self.k, size_unit="rows", unit="reports", knowledge=False)
