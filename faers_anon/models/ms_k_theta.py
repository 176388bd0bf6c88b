"""MS(k, θ*)-bounding (Lin, Yang & Wang 2016, Definition 3; SPEC §5–§6).

A QID-group g is valid when it holds at least k distinct cases and, for every protected value s,
conf(q → s, E) = σ_s(g) / |g| ≤ θ_s, where σ_s(g) = Σ_{c∈g} P(s | c) and |g| counts distinct cases.

The risk of adding a case r (Definition 5, eq. 4–6, with SPEC §6's reading of the "increment"):

    η_s(g ∪ {r}) = max{1, ⌊max{k, |g| + 1} · θ_s⌋}
    PR_s(g, r)  = σ_s(g) / (η_s − σ_s(g))   if σ_s(g) + P(s | r) ≤ η_s, else ∞
    PR(g, r)    = 1 + Σ_{s ∈ S_r} PR_s(g, r)

S_r is the set of r's *protected* values (those with θ_s < 1); an unprotected value can never be
disclosed beyond its bound, so it adds no risk. The floor is taken on max{k, |g|+1}·θ_s + 1e-9 so
that a product such as 0.29·100 = 28.999999999999996 floors to 29 as intended. Sums of P are
compared with :data:`~faers_anon.models.base.CONF_TOLERANCE` slack.

Decision (a departure that matters only when k·θ_s < 1): the paper's η_s is ⌊max{k, |g|+1}·θ_s⌋,
which is 0 while max{k, |g|+1} < 1/θ_s. Then every case holding s has PR = ∞ and a group that holds s
can take no other holder of any such value: with k = 3 and θ = 0.1 on a 100k-case quarter, stage 1
formed almost no group, all cases went to stage 2 and the repair merged them into one group (NIL 1).
η_s is floored at :data:`ETA_FLOOR` = 1: a valid group that holds s has at least σ_s/θ_s ≥ 1/θ_s
cases, so the bound the group grows towards allows one holder. The floor equals
⌊max{k, ⌈1/θ_s⌉, |g|+1}·θ_s⌋, i.e. k is read as max{k, ⌈1/θ_s⌉} for s; when k·θ_s ≥ 1 (the paper's
settings, Example 2, the defaults) it changes nothing. Validity (Definition 3) is unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from faers_anon.errors import ConfigError
from faers_anon.models.base import CONF_TOLERANCE, CaseStats, GroupStats, Requirements

__all__ = ["ETA_FLOOR", "MSKTheta"]

_FLOOR_SLACK = 1e-9
#: Least η_s (module docstring, "Decision"); the kernel (faers_anon.algorithms._group) uses the same 1.
ETA_FLOOR = 1


@dataclass(frozen=True, kw_only=True, slots=True)
class MSKTheta:
    """The MS(k, θ*)-bounding model.

    Args:
        k: minimum number of distinct cases per group (≥ 2).
        thetas: θ_s ∈ (0, 1] per protected value (canonical value key). Values with θ_s = 1 are kept
            for the record but protect nothing (conf ≤ 1 always).

    Raises:
        ConfigError: k < 2 or some θ_s outside (0, 1].
    """

    k: int = 5
    thetas: Mapping[str, float] = field(default_factory=dict)
    name: str = field(default="ms-k-theta", init=False)

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 2:
            raise ConfigError(f"k must be an integer >= 2; got {self.k!r}")
        bad = {v: t for v, t in self.thetas.items() if not (0.0 < float(t) <= 1.0)}
        if bad:
            shown = ", ".join(f"{v!r}: {t!r}" for v, t in list(bad.items())[:5])
            raise ConfigError(f"theta must be in (0, 1] for every value; got {shown}")
        object.__setattr__(self, "thetas", MappingProxyType({v: float(t) for v, t in self.thetas.items()}))

    def theta(self, value: str) -> float:
        """θ_s of a value; 1.0 (unprotected) if it is not listed."""
        return self.thetas.get(value, 1.0)

    def is_valid(self, group: GroupStats) -> bool:
        """|g| ≥ k distinct cases and σ_s(g) ≤ θ_s·|g| for every protected s (Definition 3)."""
        if group.cases < self.k:
            return False
        return all(
            sigma <= self.theta(value) * group.cases + CONF_TOLERANCE for value, sigma in group.sigma.items()
        )

    def risk(self, group: GroupStats, case: CaseStats) -> float:
        """PR(g, r) of eq. 6 with the leading 1 (SPEC §6); ``math.inf`` when some bound would break.

        Returns:
            A value in [1, ∞]; exactly 1 when r has no protected value already present in g.
        """
        size = max(self.k, group.cases + 1)
        total = 1.0
        for value, p in case.sensitive.items():
            theta = self.theta(value)
            if theta >= 1.0:
                continue
            eta = max(ETA_FLOOR, math.floor(size * theta + _FLOOR_SLACK))
            sigma = group.sigma.get(value, 0.0)
            if sigma + p > eta + CONF_TOLERANCE:
                return math.inf
            total += sigma / (eta - sigma)
        return total

    def describe(self) -> dict[str, object]:
        """Model name, k and a summary of θ* (the full θ* travels as thresholds.csv)."""
        protected = [t for t in self.thetas.values() if t < 1.0]
        return {
            "model": self.name,
            "k": self.k,
            "protected_values": len(protected),
            "theta_min": min(protected) if protected else 1.0,
            "theta_max": max(protected) if protected else 1.0,
            "source": "Lin, Yang & Wang 2016, BMC Med Inform Decis Mak 16(Suppl 1):58, Definitions 3-5",
        }

    def requirements(self) -> Requirements:
        """k distinct cases, caps σ_s ≤ θ_s·|g| in cases, the η-ratio risk term."""
        return Requirements(
            min_size=self.k,
            size_unit="cases",
            value_caps=True,
            cap_unit="cases",
            risk="eta",
            thetas=MappingProxyType({v: t for v, t in self.thetas.items() if t < 1.0}),
        )
