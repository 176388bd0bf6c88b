"""Rule 6's raise check pass after pass: what one series step's checks share (issue 14 item 7).

Source: docs/series.md §4 (rule 6) and §6 ("The series step's cost (item 7), tenth session", "The raise
check as arrays"); :mod:`faers_anon.series.raised` (the check). The series step leaves links out, mines
again and checks again until no kept history fails (:func:`faers_anon.series.step.prepare`); between
two passes E*_{t−1}, the ledger and its histories are fixed, E*_t and θ* change, and a re-plan can
withhold units. :class:`RaiseCheck` keeps what is fixed (the ledger as arrays, E*_{t−1} as P reads it,
the drug keys as P reads them, the class file: :class:`~faers_anon.series.raised.Step`) and checks every
pass in full.

From the tenth to the eleventh session a later pass checked only the (history, value) pairs that could
fail since the last pass (the holders of the risen drugs, the members withheld since, the histories
kept now only, the values whose θ fell, and the last pass's failing pairs), with the polars reader of
P, whose ~1 M ledger cases cost 24 CPU-s at the 400k quarter 4's first check. The arrays
(:mod:`faers_anon.series.raised_arrays`) read every ledger case in one pass for less than that
bookkeeping cost, so every pass is the full check (its definition: the same pairs as before, which the
narrowed passes gave too; tests/faers_anon/series/test_raised_passes.py compares each pass with a
fresh full check).
"""

from __future__ import annotations

import polars as pl

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.series.raised import FAILING_SCHEMA, Step, check

__all__ = ["RaiseCheck"]


class RaiseCheck:
    """:func:`faers_anon.series.raised.links_over_theta`, called pass after pass by one series step with
    what the passes share made once (module docstring)."""

    def __init__(self) -> None:
        self._step = Step()
        self.failing = pl.DataFrame(schema=FAILING_SCHEMA)  # the last pass's failing (history, value)

    def __call__(
        self, published: pl.DataFrame, past: pl.DataFrame, state: pl.DataFrame, earlier: pl.DataFrame,
        current: pl.DataFrame, thetas: dict[str, float], config: AnonymizeConfig,
    ) -> pl.DataFrame:  # fmt: skip
        """The pairs whose INDI links the release must leave out (arguments as ``links_over_theta``)."""
        found, self.failing = check(published, past, state, earlier, current, thetas, config, self._step)
        return found
