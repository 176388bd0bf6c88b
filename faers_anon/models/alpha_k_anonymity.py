"""(α,k)-anonymity over reports (Wong, Li, Fu & Wang 2006; Lin, Yang & Wang 2016, ref. 13; SPEC §7).

A QID-group g is valid when it holds at least k rows and, for every protected sensitive value s,
the share of g's rows that carry s is at most α_s:

    rows(g) ≥ k   and   σ_s(g) / rows(g) ≤ α_s,   σ_s(g) = number of rows of g whose own
                                                  indications or reactions include s

No external knowledge (a row's drugs reveal nothing here: P(s | row) is 1 for its own values, 0
otherwise) and no case merging: each report is one engine unit with its own QID, so a patient with
three reports counts three times, in the size and in σ_s alike. The paper states that under a
uniform θ this is the only difference from MS(k, θ*)-bounding ("(α, k)-anonymity does not consider
duplicate reports"), besides the knowledge E that MS(k, θ*) adds.

Departures, with reasons:

* α may differ per value (``thetas`` maps s → α_s); with one α for every value this is the paper's
  definition. The evaluation passes one α (the run's θ), as the paper did ("α is set to 0.2 or 0.4").
* Built by the shared greedy engine with the same η-ratio risk term as MS(k, θ*) (Lin et al. 2016,
  eq. 4–6, with |g| in rows), not by Wong et al.'s local recoding: the comparison then isolates the
  model's conditions, which is what the paper discusses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from faers_anon.errors import ConfigError
from faers_anon.models.base import CONF_TOLERANCE, CaseStats, GroupStats, Requirements
from faers_anon.models.k_anonymity import check_k
from faers_anon.models.ms_k_theta import MSKTheta

__all__ = ["AlphaKAnonymity"]

SOURCE = "Wong, Li, Fu & Wang 2006, KDD 754-759, (alpha,k)-anonymity (Lin et al. 2016, ref. 13)"


@dataclass(frozen=True, kw_only=True, slots=True)
class AlphaKAnonymity:
    """(α,k)-anonymity: ≥ k rows and every protected value's row share ≤ α_s per group.

    Args:
        k: minimum number of rows per group (≥ 2).
        thetas: α_s ∈ (0, 1] per protected value; values absent (or with α = 1) are unbounded.

    Raises:
        ConfigError: k < 2 or some α_s outside (0, 1].
    """

    k: int = 5
    thetas: Mapping[str, float] = field(default_factory=dict)
    name: str = field(default="alpha-k-anonymity", init=False)

    def __post_init__(self) -> None:
        check_k(self.k)
        bad = {v: a for v, a in self.thetas.items() if not (0.0 < float(a) <= 1.0)}
        if bad:
            shown = ", ".join(f"{v!r}: {a!r}" for v, a in list(bad.items())[:5])
            raise ConfigError(f"alpha must be in (0, 1] for every value; got {shown}")
        object.__setattr__(self, "thetas", MappingProxyType({v: float(a) for v, a in self.thetas.items()}))

    def alpha(self, value: str) -> float:
        """α_s of a value; 1.0 (unbounded) if it is not listed."""
        return self.thetas.get(value, 1.0)

    def is_valid(self, group: GroupStats) -> bool:
        """rows(g) ≥ k and σ_s(g) ≤ α_s · rows(g) (+ 1e-9) for every value of the group."""
        if group.rows < self.k:
            return False
        return all(
            sigma <= self.alpha(value) * group.rows + CONF_TOLERANCE for value, sigma in group.sigma.items()
        )

    def risk(self, group: GroupStats, case: CaseStats) -> float:
        """PR(g, r) of Lin et al. 2016, eq. 6, with α_s for θ_s (units are rows: one per report)."""
        return MSKTheta(k=self.k, thetas=self.thetas).risk(group, case)

    def describe(self) -> dict[str, object]:
        """Model name, k, a summary of the α_s, the unit and the source."""
        bounded = [a for a in self.thetas.values() if a < 1.0]
        return {
            "model": self.name,
            "k": self.k,
            "bounded_values": len(bounded),
            "alpha_min": min(bounded) if bounded else 1.0,
            "alpha_max": max(bounded) if bounded else 1.0,
            "unit": "reports",
            "source": SOURCE,
        }

    def requirements(self) -> Requirements:
        """k rows, caps σ_s ≤ α_s·rows, the η-ratio risk; one unit per report; no knowledge."""
        return Requirements(
            min_size=self.k,
            size_unit="rows",
            value_caps=True,
            cap_unit="rows",
            risk="eta",
            thetas=MappingProxyType({v: a for v, a in self.thetas.items() if a < 1.0}),
            unit="reports",
            knowledge=False,
            uniform_bound=True,
        )
