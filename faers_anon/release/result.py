"""The outcome of ``faers-anon release``: the published release and what each stage found."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from faers_anon.anonymize.result import AnonymizeResult
    from faers_anon.io.ingest_report import IngestResult
    from faers_anon.verify.verifier import Verdict
    from signals import Comparison

__all__ = ["ReleaseResult"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ReleaseResult:
    """A published release and what each stage found.

    Attributes:
        path: the release folder.
        ingest: the ingest counts; anonymized: partition, θ*, NIL, DR; verdict: the verifier's answer;
        comparison: the raw-vs-release signal comparison; report: the content of report.json;
        seconds: wall time per stage.
    """

    path: Path
    ingest: IngestResult
    anonymized: AnonymizeResult
    verdict: Verdict
    comparison: Comparison
    report: dict[str, Any]
    seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        """The closing lines for the terminal."""
        privacy, utility, signals = self.report["privacy"], self.report["utility"], self.report["signals"]
        counts = self.report["counts"]
        survival = signals.get("survival_overall")
        share = "n/a" if survival is None else f"{survival:.1%}"
        return "\n".join(
            [
                f"Release written to {self.path} (verified: {self.verdict.label} holds)",
                f"  reports in {counts['reports_read']:,}: out {counts['reports_out']:,}, "
                f"quarantined {counts['reports_quarantined']:,}, deleted {counts['reports_deleted']:,}"
                f"{_left_out(counts)}; cases {counts['cases']:,}",
                f"  groups {privacy['groups']:,}, smallest {privacy['k_achieved']}, DR {privacy['dr']:.4f}; "
                f"NIL {utility['nil']:.4f}",
                f"  signals ({signals['criterion']}): {share} of raw signals survive overall, "
                f"{signals['n_new_overall']} new; panel {signals['panel_survived']} of "
                f"{signals['panel_raw_signals']} raw rules survive{_worst(signals.get('worst_stratum'))}",
                f"  report: {self.path / 'report.html'}",
            ]
        )


def _left_out(counts: dict[str, Any]) -> str:
    """ ", superseded left out 89" when the release left superseded reports out (a case's number of
    reports is common to its group: :mod:`faers_anon.anonymize.versions`), so the line adds up."""
    left = counts.get("reports_superseded_left_out", 0)
    return f", superseded left out {left:,}" if left else ""


def _worst(stratum: dict[str, Any] | None) -> str:
    """ "; worst stratum age<18: 0 of 5" (never a bare overall share beside a failing stratum)."""
    if not stratum:
        return ""
    return f"; worst stratum {stratum['stratum']}: {stratum['n_survived']} of {stratum['n_raw']}"
