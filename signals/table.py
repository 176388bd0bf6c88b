"""The signal table: 2×2 counts and measures for every drug–event pair, overall and per stratum.

One call does SPEC §9 end to end: validate the three case frames, code drugs and events, build the
co-reported pairs once, then for each stratification (overall; the age/sex bands; each condition)
and each reading (``exact`` on raw data; ``certain``, ``possible``, ``expected`` on released
ranges, see :mod:`signals.strata`) count a, b, c, d (:mod:`signals.counts`) and add the measures
and criteria (:mod:`signals.measures`). The stratum ``all`` covers every case, so its only reading
is ``exact`` on a release too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from signals.battery import MEASURE_SETS, add_ebgm, add_fisher, adjusted_ror, table_prior
from signals.counts import CaseTables, CoReports, Prepared, co_reports, prepared
from signals.ebgm import GammaMixture
from signals.errors import SignalsError
from signals.mantel_haenszel import MH_COLUMNS
from signals.measures import CRITERIA, CRITERION_RULES, disproportionality
from signals.profiles import count_profiles, incidence, strata_variables, weights
from signals.strata import (
    EXACT_READINGS,
    OVERALL,
    RANGE_READINGS,
    STRATIFY_VARIABLES,
    Stratum,
    band_strata,
    has_ranges,
    parse_condition,
)

__all__ = [
    "SignalConfig",
    "SignalTable",
    "signal_table",
    "strata_of",
    "readings_of",
    "side_variables",
    "KEY_COLUMNS",
]

KEY_COLUMNS = ("stratum", "reading", "drug", "event")
_STRATUM_COLUMNS = ("age_band", "sex", "condition")


@dataclass(frozen=True, kw_only=True, slots=True)
class SignalConfig:
    """Options of a signal analysis.

    Attributes:
        role: ``ps`` (primary suspect), ``suspect`` (PS or SS) or ``any``.
        stratify: variables whose levels are crossed into strata: ``age`` (bands), ``sex``, or both.
        conditions: conditions, each a stratum of its own (``age>=18``, ``sex=F&age>=60``).
        min_a: keep the rows with a ≥ min_a (> 0; fractional a exists in the ``expected`` reading).
        age_bands: inner edges of the age bands in years, increasing (default 18, 45, 65).
        overall: include the stratum ``all``.
        age_cap: upper end (years) of an open age range under the ``expected`` reading.
        weight_cap: upper end (kg) of an open weight range under the ``expected`` reading.
        measures: ``basic`` (PRR, ROR, IC, χ²) or ``all`` (adds EBGM/EB05/EB95, Fisher p and BH q,
            and with ``stratify`` the Mantel–Haenszel ROR and Breslow–Day; :mod:`signals.battery`).
        ebgm_prior: a fixed MGPS prior; None fits it on the table (``measures="all"`` only).
    """

    role: str = "ps"
    stratify: tuple[str, ...] = ()
    conditions: tuple[str, ...] = ()
    min_a: float = 1.0
    age_bands: tuple[float, ...] = (18.0, 45.0, 65.0)
    overall: bool = True
    age_cap: float = 120.0
    weight_cap: float = 650.0
    measures: str = "basic"
    ebgm_prior: GammaMixture | None = None

    def __post_init__(self) -> None:
        if self.measures not in MEASURE_SETS:
            raise SignalsError(f"measures must be one of {', '.join(MEASURE_SETS)}; got {self.measures!r}")
        if self.ebgm_prior is not None and self.measures != "all":
            raise SignalsError("ebgm_prior needs measures 'all' (EBGM is not computed otherwise)")
        if self.role not in ("ps", "suspect", "any"):
            raise SignalsError(f"role must be ps, suspect or any; got {self.role!r}")
        for variable in self.stratify:
            if variable not in STRATIFY_VARIABLES:
                raise SignalsError(f"stratify: unknown variable {variable!r} (expected age, sex)")
        if len(set(self.stratify)) != len(self.stratify):
            raise SignalsError(f"stratify: a variable is repeated in {','.join(self.stratify)!r}")
        for text in self.conditions:
            parse_condition(text)
        if not (math.isfinite(self.min_a) and self.min_a > 0):
            raise SignalsError(f"min_a must be a number > 0; got {self.min_a!r}")
        edges = list(self.age_bands)
        if not edges or edges[0] <= 0 or any(lo >= hi for lo, hi in zip(edges, edges[1:], strict=False)):
            raise SignalsError(f"age_bands must be increasing numbers > 0; got {self.age_bands!r}")
        if not (self.age_cap > 0 and self.weight_cap > 0):
            raise SignalsError(
                f"age_cap and weight_cap must be > 0; got {self.age_cap!r}, {self.weight_cap!r}"
            )
        if not (self.overall or self.stratify or self.conditions):
            raise SignalsError("nothing to count: overall is off and no stratify or conditions given")


def strata_of(config: SignalConfig) -> list[tuple[Stratum, ...]]:
    """The stratifications of a configuration: overall, the band cross product, then each condition."""
    groups: list[tuple[Stratum, ...]] = [(OVERALL,)] if config.overall else []
    if config.stratify:
        groups.append(band_strata(config.stratify, age_bands=config.age_bands))
    groups.extend((parse_condition(text),) for text in dict.fromkeys(config.conditions))
    return groups


def side_variables(config: SignalConfig) -> frozenset[str]:
    """The QID variables a side's strata read: those of the table's strata, the panel's conditions
    (:data:`signals.compare.PANEL_CONDITIONS` among them) and bands, so that both share one set of
    profiles (:meth:`signals.counts.Prepared.profiles`)."""
    return strata_variables(s for group in strata_of(config) for s in group) | {"age", "sex"}


def readings_of(stratum: Stratum, *, ranges: bool) -> tuple[str, ...]:
    """Readings reported for a stratum: ``exact`` for ``all`` or raw data, else the three range readings."""
    return RANGE_READINGS if (ranges and stratum.predicates) else EXACT_READINGS


@dataclass(frozen=True, slots=True)
class SignalTable:
    """Result of :func:`signal_table`.

    Attributes:
        frame: one row per (stratum, reading, drug, event) with a ≥ min_a: ``stratum``, ``reading``,
            the tidy stratum columns (``age_band``, ``sex``, ``condition``; null where not used),
            ``drug``, ``event``, ``a``, ``b``, ``c``, ``d`` (Float64), the measures and the criteria.
            With ``measures="all"`` also ``ebgm``, ``eb05``, ``eb95``, ``fisher_p``, ``fisher_q``,
            ``signal_eb`` and, when stratified, the Mantel–Haenszel columns (:mod:`signals.battery`).
        ranges: True when the input held released ranges.
        n_cases: cases analysed.
        config: the options used.
        ebgm_prior: the MGPS prior used (fitted or given); None with ``measures="basic"``.
        adjusted: per pair (``drug``, ``event``) the Mantel–Haenszel columns across the strata;
            None unless ``measures="all"`` and ``stratify``.
    """

    frame: pl.DataFrame
    ranges: bool
    n_cases: int
    config: SignalConfig = field(repr=False)
    ebgm_prior: GammaMixture | None = None
    adjusted: pl.DataFrame | None = field(default=None, repr=False)

    @property
    def criteria(self) -> dict[str, str]:
        """The criteria this table holds (name → column): ``eb`` only with ``measures="all"``."""
        return {k: c for k, c in CRITERIA.items() if c in self.frame.columns}

    def signals(self, criterion: str = "evans") -> pl.DataFrame:
        """The rows meeting ``criterion`` (``evans``, ``ror``, ``ic``, or ``eb`` with all measures)."""
        if criterion not in self.criteria:
            raise SignalsError(f"criterion must be one of {', '.join(self.criteria)}; got {criterion!r}")
        return self.frame.filter(pl.col(CRITERIA[criterion]))

    def summary(self) -> str:
        """Counts of rows and of signals per criterion, overall and over the strata."""
        kind = "released ranges" if self.ranges else "exact values"
        criteria = self.criteria
        counts = self.frame.group_by(pl.col("stratum") == OVERALL.label).agg(
            pl.len().alias("rows"), *(pl.col(c).sum().alias(k) for k, c in criteria.items())
        )
        lines = [
            f"{self.n_cases:,} cases ({kind}), role {self.config.role}, min a {self.config.min_a:g}: "
            f"{self.frame.height:,} drug-event rows"
        ]
        if self.ebgm_prior is not None:
            n_star = max(1, math.ceil(self.config.min_a))
            how = (
                "given"
                if self.config.ebgm_prior is not None
                else f"fitted on the pairs with a >= {n_star}, likelihood truncated at {n_star}"
            )
            lines.append(f"  EBGM prior ({how}): {self.ebgm_prior}")
        for row in counts.sort("stratum", descending=True).iter_rows(named=True):
            where = "overall" if row["stratum"] else "strata"
            found = ", ".join(f"{k} {row[k]:,}" for k in criteria)
            lines.append(f"  {where}: {row['rows']:,} rows; signals: {found}")
        floors = "; ".join(f"{k}: {CRITERION_RULES[k].rule} ({CRITERION_RULES[k].source})" for k in criteria)
        lines.append(f"  criteria: {floors}")
        return "\n".join(lines)


def signal_table(
    tables: CaseTables | Prepared, /, *, config: SignalConfig | None = None, bounds: bool = True
) -> SignalTable:
    """2×2 counts, PRR/ROR/IC/χ² and criteria for every drug–event pair in every stratum (SPEC §9).

    Counting convention (cases, not pairs), role filter and event matching: :mod:`signals.counts`.
    Strata and readings: :mod:`signals.strata`. Measures, zero-cell rule and criteria:
    :mod:`signals.measures`.

    Args:
        tables: cases (one row per case, latest version), drugs and events; or those frames already
            validated (:func:`signals.counts.prepared`, under ``config.role``), whose strata
            memberships are then shared with other tables of the same side.
        config: options; default :class:`SignalConfig`.
        bounds: with ``measures="all"``, False leaves out what only a reader of single pairs needs:
            ``eb05`` and ``eb95`` (their root searches were most of the battery's time), Fisher's
            ``fisher_p``/``fisher_q`` and the Mantel–Haenszel columns; ``ebgm`` and ``signal_eb``
            (decided all the same) stay, so every criterion's signals are those of the full table.

    Returns:
        A :class:`SignalTable`, rows sorted by stratum (in configuration order), reading, drug, event.

    Raises:
        SignalsError: bad options or input (missing column, repeated caseid, unknown role).
    """
    config = config or SignalConfig()
    side = prepared(tables, role=config.role)
    cases = side.cases
    ranges = has_ranges(cases)
    co = co_reports(side.case_drugs, side.case_events)
    caps = {"age": config.age_cap, "weight": config.weight_cap}
    parts: list[pl.DataFrame] = []
    labels: list[pl.DataFrame] = []
    first = 0
    groups = strata_of(config)
    found = side.profiles(side_variables(config))  # counts summed over profiles (signals.profiles)
    counted = incidence(co, found)
    for group in groups:
        labels.append(_labels(group, first))
        for reading in readings_of(group[0], ranges=ranges):
            w = weights(found, group, reading=reading, caps=caps)
            counts = count_profiles(co, counted, w, first_id=first, min_a=config.min_a)
            parts.append(counts.with_columns(pl.lit(reading).alias("reading")))
        first += len(group)
    frame = disproportionality(_assemble(parts, labels))
    if config.measures == "basic":
        return SignalTable(frame=frame, ranges=ranges, n_cases=cases.height, config=config)
    prior = config.ebgm_prior or table_prior(frame, min_a=config.min_a)
    frame = add_ebgm(frame, prior=prior, bounds=bounds)
    if not bounds:
        return SignalTable(frame, ranges, cases.height, config, ebgm_prior=prior)
    frame = add_fisher(frame)
    adjusted = None
    if config.stratify:
        bands = groups[1 if config.overall else 0]
        adjusted = _adjusted(co, side, bands, frame, config=config, ranges=ranges)
        frame = frame.join(
            adjusted.select("drug", "event", *MH_COLUMNS).with_columns(
                pl.lit(OVERALL.label).alias("stratum")
            ),
            on=["stratum", "drug", "event"],
            how="left",
            maintain_order="left",
        )
    return SignalTable(frame, ranges, cases.height, config, ebgm_prior=prior, adjusted=adjusted)


def _adjusted(
    co: CoReports,
    side: Prepared,
    bands: Sequence[Stratum],
    frame: pl.DataFrame,
    *,
    config: SignalConfig,
    ranges: bool,
) -> pl.DataFrame:
    """MH across the bands for the pairs of the stratum ``all`` (else of any stratum)."""
    overall = frame.filter(pl.col("stratum") == OVERALL.label)
    pairs = (overall if overall.height else frame).select("drug", "event").unique().sort("drug", "event")
    caps = {"age": config.age_cap, "weight": config.weight_cap}
    reading = "expected" if ranges else "exact"
    return adjusted_ror(co, side, bands, pairs, reading=reading, caps=caps)


def _labels(group: Sequence[Stratum], first: int) -> pl.DataFrame:
    rows = [
        {
            "stratum_id": first + i,
            "stratum": s.label,
            **{c: None for c in _STRATUM_COLUMNS},
            **dict(s.columns),
        }
        for i, s in enumerate(group)
    ]
    schema = {"stratum_id": pl.UInt32, "stratum": pl.Utf8, **{c: pl.Utf8 for c in _STRATUM_COLUMNS}}
    return pl.DataFrame(rows, schema=schema)


def _assemble(parts: list[pl.DataFrame], labels: list[pl.DataFrame]) -> pl.DataFrame:
    names = pl.concat(labels)
    used = [c for c in _STRATUM_COLUMNS if names.get_column(c).is_not_null().any()]
    frame = pl.concat(parts).join(names, on="stratum_id", how="left", maintain_order="left")
    return frame.select("stratum", "reading", *used, "drug", "event", "a", "b", "c", "d")
