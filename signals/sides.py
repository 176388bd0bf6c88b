"""The raw half of a raw-versus-release comparison, computed before the release exists.

:func:`signals.compare.compare` reads two sides. The raw side (the ingested data, exact values)
does not depend on the release: its validated frames (:func:`signals.counts.prepared`), its
signal table (:func:`signals.table.signal_table`) and its panel table
(:func:`signals.panels.panel_table` under its own prior) are the same whatever the anonymizer
does. :func:`raw_side` computes them once, e.g. while the anonymizer runs, and ``compare`` takes
the result in place of the raw :class:`~signals.counts.CaseTables`, with the same figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from signals.counts import CaseTables, Prepared, prepared
from signals.errors import SignalsError
from signals.panels import load_reference_pairs, medwatch_panel, panel_table
from signals.table import SignalTable, signal_table

if TYPE_CHECKING:
    from signals.compare import CompareConfig

__all__ = ["RawSide", "comparison_panel", "raw_side"]


@dataclass(frozen=True, slots=True)
class RawSide:
    """The raw side of a comparison (:func:`raw_side`).

    Attributes:
        config: the options it was computed under (``compare`` refuses other ones).
        bounds: the ``bounds`` of its signal table (:func:`signals.table.signal_table`).
        prepared: the validated raw frames, with the strata memberships computed so far.
        table: the raw signal table.
        panel: the raw :func:`signals.panels.panel_table` of :func:`comparison_panel` (rules
            numbered in ``rule``), under the table's prior.
    """

    config: CompareConfig
    bounds: bool
    prepared: Prepared
    table: SignalTable
    panel: pl.DataFrame


def comparison_panel(config: CompareConfig) -> pl.DataFrame:
    """The reference rules a comparison reads: the bundled MedWatch panel, then ``config.reference``."""
    panels = [medwatch_panel()]
    if config.reference is not None:
        panels.append(load_reference_pairs(config.reference, outcome_groups=config.outcome_groups))
    return pl.concat(panels, how="diagonal_relaxed")


def raw_side(raw: CaseTables, /, *, config: CompareConfig, bounds: bool = True) -> RawSide:
    """Validate the raw tables and compute their signal table and panel table (module docstring).

    Args:
        raw: the raw case tables (exact ages: ``age_years``).
        config: the options the comparison will use (same ``signals``, ``reference`` and
            ``outcome_groups``).
        bounds: as ``compare``'s (:func:`signals.table.signal_table`).

    Raises:
        SignalsError: bad input, or raw data holding ranges.
    """
    side = prepared(raw, role=config.signals.role)
    table = signal_table(side, config=config.signals, bounds=bounds)
    if table.ranges:
        raise SignalsError("raw: holds ranges (age_min or wt_min); expected exact values (age_years)")
    rules = comparison_panel(config).with_row_index("rule")
    panel = panel_table(side, rules, config=config.signals, prior=table.ebgm_prior)
    return RawSide(config, bounds, side, table, panel)


def checked(side: RawSide, config: CompareConfig, bounds: bool) -> RawSide:
    """``side`` when it was computed under ``config`` and ``bounds``, else a SignalsError."""
    if side.config != config or side.bounds != bounds:
        raise SignalsError(
            "raw side computed under other options (config or bounds) than the comparison's; "
            "compute it with the same CompareConfig and bounds"
        )
    return side
