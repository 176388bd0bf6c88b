"""What one anonymize run did and measured (:class:`AnonymizeResult`; a leaf, issue 13)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.algorithms.types import Partition
from faers_anon.anonymize.thresholds import Thresholds
from faers_anon.methods import MethodResult

__all__ = ["AnonymizeResult"]


@dataclass(frozen=True, kw_only=True, slots=True)
class AnonymizeResult:
    """What one anonymize run did and measured.

    Attributes:
        release: the release folder (None when only the partition was computed).
        partition: the engine's output.
        thresholds: θ* with shares and actions.
        cases: number of cases N; nil: NIL in [0, 1]; nil_by_qid: per QID; dr: DR in [0, 1].
        group_sizes: (size, groups, cases); share_k: share of cases in groups of exactly k.
        seconds: wall time per step.
        items: what the item-set protection suppressed (``counts.items`` of manifest.json), or None.
    """

    release: Path | None
    partition: Partition
    thresholds: Thresholds
    k: int
    cases: int
    nil: float
    nil_by_qid: dict[str, float]
    dr: float
    group_sizes: pl.DataFrame
    share_k: float
    seconds: dict[str, float] = field(default_factory=dict)
    method: MethodResult | None = None
    items: dict[str, Any] | None = None

    def summary(self) -> str:
        """A few lines for the CLI."""
        sizes = ", ".join(f"{s}: {g}" for s, g, _ in self.group_sizes.head(12).iter_rows())
        more = f", … ({self.group_sizes.height - 12} more sizes)" if self.group_sizes.height > 12 else ""
        t = self.thresholds
        lines = [
            f"cases {self.cases}, groups {self.partition.groups}"
            + (f", written to {self.release}" if self.release else ""),
            f"NIL {self.nil:.4f} ("
            + ", ".join(f"{q} {v:.4f}" for q, v in self.nil_by_qid.items())
            + f"), DR {self.dr:.4f}",
            f"group sizes (cases: groups): {sizes}{more}; "
            f"in groups of exactly k={self.k}: {self.share_k:.1%}",
            f"thresholds ({t.rule}): {t.count('protected') + t.count('raised')} protected values, "
            f"{t.count('raised')} raised, {t.count('suppressed')} suppressed",
            f"stage 2 placed {self.partition.leftovers} leftovers ({self.partition.forced} forced), "
            f"{self.partition.invalid_groups} invalid groups",
            "seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in self.seconds.items()),
        ]
        if self.method is not None:
            lines[4] = self.method.summary()
        if self.items is not None:
            i = self.items
            lines.insert(4, f"items (k^m, m = {i['m']}, {i['strategy']}): {i['case_items_suppressed']:,} "
                         f"of {i['case_items']:,} (case, item) pairs suppressed in "
                         f"{i['cases_with_suppression']:,} cases")  # fmt: skip
        return "\n".join(lines)
