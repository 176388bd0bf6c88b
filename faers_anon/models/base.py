"""The privacy-model protocol: what a group looks like to a model, and what a model tells the engine.

A privacy model answers two questions about a QID-group (STYLE §6, after ARX's ``PrivacyCriterion``):
*is this group valid?* (:meth:`GroupModel.is_valid`) and *what risk does adding this case bring?*
(:meth:`GroupModel.risk`, the PR(g, r) of Lin et al. 2016, Definition 5). Models read
:class:`GroupStats`, never rows; adding a case to a :class:`GroupStats` costs time in the case's own
sensitive values only.

For speed the clustering kernel does not call these Python methods: a model also declares its
:class:`Requirements` (ARX's ``getRequirements``), a small set of generic checks the numba kernel
implements once: a minimum group size counted in cases or rows, per-value caps
σ_s(g) ≤ θ_s·|g| on sums of P(s | c), and the η-ratio risk term. Later models reuse the kernel by
declaring other combinations: k-anonymity (min size in rows, no caps, no risk), (X,Y)-anonymity (min
size in cases), (α,k)-anonymity (min size in rows, caps in rows with θ_s = α). The Python methods are
the reference the kernel is tested against and what the verifier and report use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, Protocol, runtime_checkable

__all__ = ["CaseStats", "GroupStats", "GroupModel", "Requirements", "CONF_TOLERANCE"]

CONF_TOLERANCE = 1e-9
"""Absolute slack on sums of probabilities: σ_s(g) ≤ θ_s·|g| + 1e-9.

Sums of fractional P(s | c) (1/3 + 1/3 + 1/3) are not exact in floating point; without slack a group
exactly at its bound could be judged both valid and invalid depending on summation order. Since
|g| ≥ 1, the slack on conf(q → s) itself is at most 1e-9, so a verifier that allows conf ≤ θ_s + 1e-9
accepts every group this package builds.
"""

_EMPTY: Mapping[str, float] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class CaseStats:
    """One case (super-record, SPEC §4) as a model sees it.

    Args:
        caseid: the FAERS caseid.
        rows: number of reports (versions) of the case, ≥ 1.
        sensitive: P(s | c) for each sensitive value s of the case with P > 0 (SPEC §5).
    """

    caseid: int
    rows: int = 1
    sensitive: Mapping[str, float] = field(default_factory=lambda: _EMPTY)


@dataclass(slots=True)
class GroupStats:
    """Running totals of a QID-group: distinct cases, rows, σ_s(g) = Σ_{c∈g} P(s | c) per value.

    ``distinct_values`` is the number of values with σ_s > 0. :meth:`add` costs O(|S_c|).
    """

    cases: int = 0
    rows: int = 0
    sigma: dict[str, float] = field(default_factory=dict)

    @property
    def distinct_values(self) -> int:
        """Number of sensitive values present in the group."""
        return len(self.sigma)

    def add(self, case: CaseStats) -> None:
        """Add one case in place (a case is added once; the caller guarantees distinct caseids)."""
        self.cases += 1
        self.rows += case.rows
        for value, p in case.sensitive.items():
            self.sigma[value] = self.sigma.get(value, 0.0) + p

    def with_case(self, case: CaseStats) -> GroupStats:
        """A copy of the group with ``case`` added (g ∪ {r})."""
        out = GroupStats(self.cases, self.rows, dict(self.sigma))
        out.add(case)
        return out

    @classmethod
    def of(cls, cases: Iterable[CaseStats]) -> GroupStats:
        """The totals of a set of cases."""
        group = cls()
        for case in cases:
            group.add(case)
        return group


@dataclass(frozen=True, kw_only=True, slots=True)
class Requirements:
    """What the clustering kernel must check for a model (generic, model-agnostic).

    Attributes:
        min_size: a valid group has at least this many units.
        size_unit: ``"cases"`` (distinct caseids) or ``"rows"`` (reports).
        value_caps: if true, a valid group has σ_s(g) ≤ θ_s·|g| (+ :data:`CONF_TOLERANCE`) for every
            value s in ``thetas``, |g| counted in ``cap_unit``.
        cap_unit: unit of |g| in the caps.
        risk: ``"eta"`` ranks candidates by ΔIL·PR(g, r) with PR of Lin et al. 2016, eq. 5–6 (η_s uses
            ``min_size`` as k and |g| in cases); ``"none"`` ranks by ΔIL alone (PR = 1).
        thetas: θ_s per protected value; values absent are unprotected (θ = 1).
        unit: what one engine unit is: ``"cases"`` (case super-records, SPEC §4: all reports of a case
            share a group) or ``"reports"`` (each report with its own QID; follow-ups not merged).
        knowledge: whether P(s | unit) includes the diseases reached through E (SPEC §5); false: only
            the unit's own indications and reactions.
        algorithm: ``"greedy"`` (the clustering engine) or ``"mondrian"`` (top-down partitioning,
            :mod:`faers_anon.algorithms.mondrian`).
        distinct: Mondrian: a valid group has at least this many distinct values of each attribute in
            ``attributes`` (0: no such check).
        attributes: the sensitive attributes ``distinct`` applies to (``indications``, ``reactions``).
        uniform_bound: the model has one bound for every value (α of (α,k)-anonymity), not a θ* per
            value: a grid of θ* settings gives it that setting's uniform θ (``faers-anon evaluate``).
            The kernel ignores it.
    """

    min_size: int
    size_unit: Literal["cases", "rows"] = "cases"
    value_caps: bool = False
    cap_unit: Literal["cases", "rows"] = "cases"
    risk: Literal["none", "eta"] = "none"
    thetas: Mapping[str, float] = field(default_factory=lambda: _EMPTY)
    unit: Literal["cases", "reports"] = "cases"
    knowledge: bool = True
    algorithm: Literal["greedy", "mondrian"] = "greedy"
    distinct: int = 0
    attributes: tuple[str, ...] = ()
    uniform_bound: bool = False


@runtime_checkable
class GroupModel(Protocol):
    """A privacy model: validity of a group and the risk of adding a case (STYLE §6)."""

    @property
    def name(self) -> str:
        """Registry key, e.g. ``"ms-k-theta"``."""
        ...

    def is_valid(self, group: GroupStats) -> bool:
        """Whether the group satisfies the model."""
        ...

    def risk(self, group: GroupStats, case: CaseStats) -> float:
        """PR(g, r) ≥ 1 of adding ``case`` to ``group``; ``inf`` if it breaks a bound; 1.0 if no risk term."""
        ...

    def describe(self) -> dict[str, object]:
        """JSON-ready parameters for the manifest and the report."""
        ...

    def requirements(self) -> Requirements:
        """The generic checks the clustering kernel performs for this model."""
        ...
