"""What one anonymize run did and measured (:class:`AnonymizeResult`; a leaf, issue 13)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.algorithms.types import Partition
from faers_anon.anonymize.metrics import Measures
from faers_anon.anonymize.thresholds import Thresholds
from faers_anon.methods import MethodResult

__all__ = ["AnonymizeResult"]


@dataclass(frozen=True, kw_only=True, slots=True)
class AnonymizeResult:
    """What one anonymize run did and measured.

    A run is a model's (``partition`` holds the engine's diagnostics, ``method`` is None) or a method's
    (``method`` holds its result and privacy figures, ``partition`` is None: a method has no engine,
    so nothing of the engine is reported for it).

    Attributes:
        release: the release folder (None when only the partition was computed).
        frame: the partition frame as the algorithm made it (docs/architecture.md).
        thresholds: θ* with shares and actions.
        k: the run's k; cases: number of cases N.
        measures: NIL, DR, groups (:func:`faers_anon.anonymize.metrics.measure`).
        partition: the engine's output of a model run (groups, leftovers, forced, …); None for a method.
        method: a method run's result; None for a model.
        seconds: wall time per step.
        items: what the item-set protection suppressed (``counts.items`` of manifest.json), or None.
        superseded: the superseded reports and cases left out to make the version count common to each
            group (``counts.superseded_left_out`` of manifest.json, :mod:`.versions`), or None.
    """

    release: Path | None
    frame: pl.DataFrame
    thresholds: Thresholds
    k: int
    cases: int
    measures: Measures
    partition: Partition | None = None
    method: MethodResult | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    items: dict[str, Any] | None = None
    superseded: dict[str, int] | None = None

    @property
    def nil(self) -> float:
        """NIL in [0, 1] (:attr:`measures`)."""
        return self.measures.nil

    @property
    def nil_by_qid(self) -> dict[str, float]:
        """NIL per QID (:attr:`measures`)."""
        return self.measures.nil_by_qid

    @property
    def dr(self) -> float:
        """DR in [0, 1] on the released QID groups (:attr:`measures`)."""
        return self.measures.dr

    @property
    def group_sizes(self) -> pl.DataFrame:
        """(size, groups, cases) of the algorithm's groups (:attr:`measures`)."""
        return self.measures.group_sizes

    @property
    def share_k(self) -> float:
        """Share of cases in groups of exactly k (:attr:`measures`)."""
        return self.measures.share_k

    def summary(self) -> str:
        """A few lines for the CLI."""
        sizes = ", ".join(f"{s}: {g}" for s, g, _ in self.group_sizes.head(12).iter_rows())
        more = f", … ({self.group_sizes.height - 12} more sizes)" if self.group_sizes.height > 12 else ""
        t = self.thresholds
        lines = [
            f"cases {self.cases}, groups {self.measures.groups}"
            + (f", written to {self.release}" if self.release else ""),
            f"NIL {self.nil:.4f} ("
            + ", ".join(f"{q} {v:.4f}" for q, v in self.nil_by_qid.items())
            + f"), DR {self.dr:.4f}",
            f"group sizes (cases: groups): {sizes}{more}; "
            f"in groups of exactly k={self.k}: {self.share_k:.1%}",
            f"thresholds ({t.rule}): {t.count('protected') + t.count('raised')} protected values, "
            f"{t.count('raised')} raised, {t.count('suppressed')} suppressed",
        ]
        if self.items is not None:
            i = self.items
            lines.append(f"items (k^m, m = {i['m']}, {i['strategy']}): {i['case_items_suppressed']:,} "
                         f"of {i['case_items']:,} (case, item) pairs suppressed in "
                         f"{i['cases_with_suppression']:,} cases")  # fmt: skip
        if self.partition is not None:
            p = self.partition
            lines.append(f"engine: {p.groups} groups; stage 2 placed {p.leftovers} leftovers "
                         f"({p.forced} forced), {p.invalid_groups} invalid groups")  # fmt: skip
        if self.method is not None:
            lines.append(self.method.summary())
        lines.append("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in self.seconds.items()))
        return "\n".join(lines)
