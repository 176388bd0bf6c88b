"""Disproportionality analysis: 2x2 counts, PRR, ROR, IC, chi-square, strata, raw-vs-release comparison.

Imports polars, numpy, scipy and statsmodels; never imports ``faers_anon``, ``hierarchies`` or ``knowledge``.

Entry points: :func:`signal_table` (counts, measures and criteria for every drug–event pair, overall
and per stratum), :func:`compare` (signal survival from raw data to a release, with the reference
panel), :func:`disproportionality` (the measures over any frame of a, b, c, d) and
:func:`panel_table` (reference rules at their own conditions). Conventions: cases are counted, not
drug–event rows (:mod:`signals.counts`); strata and readings (:mod:`signals.strata`); formulas,
zero-cell rule and criteria (:mod:`signals.measures`).
"""

from signals.compare import PANEL_CONDITIONS, CompareConfig, Comparison, compare
from signals.counts import ROLES, CaseTables, co_reports, count_2x2, event_key, prepare
from signals.errors import SignalsError
from signals.measures import CRITERIA, Z95, disproportionality
from signals.panels import load_reference_pairs, medwatch_panel, panel_table
from signals.strata import (
    EXACT_READINGS,
    OVERALL,
    RANGE_READINGS,
    Stratum,
    band_strata,
    memberships,
    parse_condition,
)
from signals.table import SignalConfig, SignalTable, signal_table

__all__ = [
    "CRITERIA",
    "EXACT_READINGS",
    "OVERALL",
    "PANEL_CONDITIONS",
    "RANGE_READINGS",
    "ROLES",
    "Z95",
    "CaseTables",
    "CompareConfig",
    "Comparison",
    "SignalConfig",
    "SignalTable",
    "SignalsError",
    "Stratum",
    "band_strata",
    "co_reports",
    "compare",
    "count_2x2",
    "disproportionality",
    "event_key",
    "load_reference_pairs",
    "medwatch_panel",
    "memberships",
    "panel_table",
    "parse_condition",
    "prepare",
    "signal_table",
]
