"""Disproportionality analysis: 2x2 counts, PRR, ROR, IC, χ², EBGM, Fisher, Mantel–Haenszel, strata, survival.

Imports polars, numpy, scipy and statsmodels; never imports ``faers_anon``, ``hierarchies`` or ``knowledge``.

Entry points: :func:`signal_table` (counts, measures and criteria for every drug–event pair, overall
and per stratum), :func:`compare` (signal survival from raw data to a release, with the reference
panel), :func:`disproportionality` (the measures over any frame of a, b, c, d) and
:func:`panel_table` (reference rules at their own conditions). Conventions: cases are counted, not
drug–event rows (:mod:`signals.counts`); strata and readings (:mod:`signals.strata`); formulas,
zero-cell rule and criteria (:mod:`signals.measures`); the rest of the field's battery with
``measures="all"`` (:mod:`signals.battery`: MGPS in :mod:`signals.ebgm`, Fisher and
Benjamini–Hochberg in :mod:`signals.fisher`, Mantel–Haenszel and Breslow–Day in
:mod:`signals.mantel_haenszel`).
"""

from signals.compare import PANEL_CONDITIONS, CompareConfig, Comparison, compare
from signals.counts import ROLES, CaseTables, co_reports, count_2x2, event_key, prepare
from signals.ebgm import DEFAULT_PRIOR, GammaMixture, ebgm_scores, fit_prior
from signals.errors import SignalsError
from signals.fisher import bh_qvalues, fisher_greater
from signals.mantel_haenszel import mantel_haenszel
from signals.measures import CRITERIA, CRITERION_RULES, Z95, CriterionRule, disproportionality
from signals.panels import load_reference_pairs, medwatch_panel, panel_table
from signals.sides import RawSide, raw_side
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
    "CRITERION_RULES",
    "DEFAULT_PRIOR",
    "EXACT_READINGS",
    "OVERALL",
    "PANEL_CONDITIONS",
    "RANGE_READINGS",
    "ROLES",
    "Z95",
    "CaseTables",
    "CompareConfig",
    "Comparison",
    "CriterionRule",
    "GammaMixture",
    "RawSide",
    "SignalConfig",
    "SignalTable",
    "SignalsError",
    "Stratum",
    "band_strata",
    "bh_qvalues",
    "co_reports",
    "compare",
    "count_2x2",
    "disproportionality",
    "ebgm_scores",
    "event_key",
    "fisher_greater",
    "fit_prior",
    "load_reference_pairs",
    "mantel_haenszel",
    "medwatch_panel",
    "memberships",
    "panel_table",
    "parse_condition",
    "prepare",
    "raw_side",
    "signal_table",
]
