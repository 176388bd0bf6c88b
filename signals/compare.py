"""Signal survival: which raw-data signals still signal on the release, and which appear only there.

SPEC §9. Both inputs go through :func:`signals.table.signal_table` with the same options. A *signal*
is a row (stratum, drug, event) with a ≥ ``min_a`` that meets a criterion (``evans``, ``ror``, ``ic``,
``eb``; each with its own count floor, :data:`signals.measures.CRITERION_RULES`; with the default
``min_a`` = 3 every criterion works on the same pairs). By default both tables carry every measure
(``measures="all"``): EBGM with each side's own fitted prior, Fisher, and the Mantel–Haenszel ROR.
A raw row is matched with the release row of the same stratum, drug and event in each of the
release's readings (``exact`` for the stratum ``all``; ``certain``, ``possible``, ``expected`` for
the other strata on released ranges). A pair absent on one side had a < ``min_a`` there and does
not signal there.

* survival: per stratum, reading and criterion, ``n_raw`` raw signals, ``n_survived`` of them still
  signalling on the release, ``share_survived`` = n_survived / n_raw (null when n_raw = 0: nothing
  to survive), ``n_release`` release signals and ``n_new`` = release signals that are not raw ones.
* correlation: Spearman's rank correlation of PRR over the pairs present on both sides (null with
  fewer than 3 such pairs or a constant side).
* panel: every reference rule with raw and released counts, PRR/ROR/IC and their CIs; relative
  change = release/raw − 1 for PRR and ROR (null when the raw a = 0, where both are 0), and
  2^(IC_release − IC_raw) − 1 for IC (the relative change of the shrunk observed-to-expected ratio
  whose log2 IC is, defined even when IC_raw = 0);
  ``survived`` = ``yes``/``no`` for a rule that signals on the raw data (under ``criterion``) and
  does / does not on the release, ``n/a`` for a rule that does not signal on the raw data; per
  criterion the same in ``survived_<criterion>`` (``survived_evans``, ``survived_ror``,
  ``survived_ic``, ``survived_eb``); with all measures and strata, the Mantel–Haenszel ROR across
  the age × sex bands within the rule's condition, ``ror_mh``, ``ror_mh_lo``, ``ror_mh_hi`` (and
  ``breslow_day_p``), suffixed ``_raw`` and ``_release``.

What a report shows (the shape of :class:`Comparison` it reads): survival per criterion is
``survival`` filtered on ``criterion`` (one of :data:`Comparison.criteria`) or, pooled,
``as_dict()["overall"][name]`` and ``as_dict()["strata"][reading][name]``; the stratum whose
raw signals survive least, ``as_dict()["worst_stratum"][name][reading]``; the panel's per
criterion, ``as_dict()["panel"]["by_criterion"][name][reading]``; each criterion's rule,
count floor and source are ``as_dict()["criteria"][name]``; the panel's adjusted ROR is
``panel["ror_mh_raw" / "ror_mh_lo_raw" / "ror_mh_hi_raw"]`` and the ``_release`` twins; the priors
are ``as_dict()["ebgm_prior"]``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from signals.counts import CaseTables, prepared
from signals.errors import SignalsError
from signals.measures import CRITERIA, CRITERION_RULES
from signals.panels import panel_by_criterion, panel_comparison
from signals.sides import RawSide, checked, comparison_panel, raw_side
from signals.strata import OVERALL
from signals.summary import correlation as prr_correlation
from signals.summary import finite, pooled, spearman, worst_stratum
from signals.table import SignalConfig, SignalTable, readings_of, signal_table, strata_of

__all__ = ["PANEL_CONDITIONS", "CompareConfig", "Comparison", "compare"]

PANEL_CONDITIONS = ("age>=18", "age>=60", "age<18", "sex=F")
_SIDE_COLUMNS = ("a", "prr", "prr_lo", "ror", "ror_lo", "ic", "ic025", "chi2", "ebgm", "eb05", "fisher_q",
                 *CRITERIA.values())  # fmt: skip
_KEYS = ["stratum", "reading", "drug", "event"]


def _default_signals() -> SignalConfig:
    return SignalConfig(stratify=("age", "sex"), conditions=PANEL_CONDITIONS, min_a=3.0, measures="all")


@dataclass(frozen=True, kw_only=True, slots=True)
class CompareConfig:
    """Options of a raw-versus-release comparison.

    Attributes:
        signals: options of both signal tables; default age × sex bands, the four conditions of the
            paper's Table 5 (age ≥ 18, age ≥ 60, age < 18, sex = F), min_a = 3 and all measures.
        criterion: the criterion of the headline figures and of the panel's ``survived``.
        reference: optional reference-pair CSV (e.g. ``../shared/data/reference_signals/
            reference_pairs.csv``) compared besides the bundled MedWatch panel.
        outcome_groups: optional outcome-group CSV for the reference pairs' event groups.
    """

    signals: SignalConfig = field(default_factory=_default_signals)
    criterion: str = "evans"
    reference: Path | None = None
    outcome_groups: Path | None = None

    def __post_init__(self) -> None:
        if self.criterion not in CRITERIA:
            raise SignalsError(f"criterion must be one of {', '.join(CRITERIA)}; got {self.criterion!r}")
        if self.criterion == "eb" and self.signals.measures != "all":
            raise SignalsError("criterion eb needs measures 'all' (EBGM is not computed otherwise)")
        if self.outcome_groups is not None and self.reference is None:
            raise SignalsError("outcome_groups needs reference (the pairs whose events it groups)")


@dataclass(frozen=True, slots=True)
class Comparison:
    """Result of :func:`compare`: frames and a JSON-ready overview.

    Attributes:
        raw: the raw signal table.
        release: the release signal table.
        pairs: every (stratum, reading, drug, event) on either side with ``a``, ``prr``, ``prr_lo``,
            ``ror``, ``ror_lo``, ``ic``, ``ic025``, ``chi2`` and the criteria, suffixed ``_raw`` and
            ``_release`` (measures null on the side where a < min_a; criteria false there).
        survival: stratum, reading, criterion, n_raw, n_survived, share_survived, n_release, n_new;
            one block per criterion of :attr:`criteria`.
        correlation: stratum, reading, n_common, prr_spearman.
        new_signals: criterion, stratum, reading, drug, event, a/prr on both sides: release-only signals.
        panel: the reference rules, raw and released measures, relative changes and ``survived``.
        overview: headline numbers (see :meth:`as_dict`).
    """

    raw: SignalTable
    release: SignalTable
    pairs: pl.DataFrame
    survival: pl.DataFrame
    correlation: pl.DataFrame
    new_signals: pl.DataFrame
    panel: pl.DataFrame
    overview: dict[str, Any]

    @property
    def criteria(self) -> tuple[str, ...]:
        """The criteria compared (``evans``, ``ror``, ``ic``, and ``eb`` with all measures)."""
        return tuple(k for k in self.raw.criteria if k in self.release.criteria)

    def as_dict(self) -> dict[str, Any]:
        """The overview: options, case counts, survival overall and pooled over strata per reading,
        pooled PRR rank correlations and the panel's survival; JSON-ready (no NaN)."""
        return self.overview

    def summary(self) -> str:
        """A few lines for the terminal: survival per criterion (overall, strata pooled, worst
        stratum), the headline criterion per reading, the panel."""
        o = self.overview
        crit = o["criterion"]
        cases = f"raw {o['cases']['raw']:,} cases, release {o['cases']['release']:,} cases"
        lines = [f"{cases}; criterion {crit}"]
        reading = "expected" if "expected" in o["strata"] else next(iter(o["strata"]), None)
        names = [crit, *(n for n in o["criteria"] if n != crit)]  # the headline criterion first
        lines.extend(_criterion_line(o, name, reading) for name in names if name in o["criteria"])
        for reading, by_criterion in o["strata"].items():
            rho = o["prr_spearman"].get(reading)
            rho_text = "n/a" if rho is None else f"{rho:.3f}"
            lines.append(
                f"  strata, {reading}: {_survival_text(by_criterion[crit])}; PRR Spearman {rho_text}"
            )
        for reading, counts in o["panel"]["survived"].items():
            lines.append(
                f"  panel, {reading}: {counts['yes']} of {counts['yes'] + counts['no']} raw signals survive "
                f"({o['panel']['rules']} rules)"
            )
        return "\n".join(lines)


def _criterion_line(o: dict[str, Any], name: str, reading: str | None) -> str:
    """``evans (rule; source): overall …; strata (expected) …; worst <stratum>: …``."""
    rule = o["criteria"][name]
    text = f"  {name} ({rule['rule']}; {rule['source']}): overall {_survival_text(o['overall'][name])}"
    if reading is None:
        return text
    worst = o["worst_stratum"].get(name, {}).get(reading)
    text += f"; strata ({reading}) {_survival_text(o['strata'][reading][name], short=True)}"
    return text + (
        "" if worst is None else f"; worst {worst['stratum']}: {_survival_text(worst, short=True)}"
    )


def _survival_text(row: dict[str, Any], *, short: bool = False) -> str:
    share = "n/a" if row["share_survived"] is None else f"{row['share_survived']:.1%}"
    if short:
        return f"{row['n_survived']:,} of {row['n_raw']:,} ({share})"
    return f"{row['n_survived']:,} of {row['n_raw']:,} raw signals survive ({share}), {row['n_new']:,} new"


def compare(
    raw: CaseTables | RawSide,
    release: CaseTables,
    /,
    *,
    config: CompareConfig | None = None,
    bounds: bool = True,
) -> Comparison:
    """Compare the signals of raw data with those of its release (SPEC §9; see the module docstring).

    Args:
        raw: the raw case tables (exact ages: ``age_years``), or their side already computed by
            :func:`signals.sides.raw_side` under the same ``config`` and ``bounds`` (e.g. while the
            anonymizer ran): the same figures, the raw half's work not done again.
        release: the released case tables (ranges ``age_min``/``age_max``, sex with ``*``), or any
            second exact data set.
        config: options; default :class:`CompareConfig`.
        bounds: False leaves EB05, EB95, Fisher and the Mantel–Haenszel ROR out of both tables and
            of ``pairs`` (:func:`signals.table.signal_table`; every criterion, every survival figure
            and the whole panel are unchanged): for a caller that reads only the survival and the
            panel, such as the release report.

    Returns:
        A :class:`Comparison`.

    Raises:
        SignalsError: bad input or options, raw data holding ranges, or a raw side computed under
            other options.
    """
    config = config or CompareConfig()
    # each side validated once: its table and its panel share the frames and the strata weights
    computed = (
        checked(raw, config, bounds)
        if isinstance(raw, RawSide)
        else raw_side(raw, config=config, bounds=bounds)
    )
    raw_prepared, raw_table = computed.prepared, computed.table
    release_side = prepared(release, role=config.signals.role)
    release_table = signal_table(release_side, config=config.signals, bounds=bounds)
    combos = _combos(config.signals, ranges=release_table.ranges)
    criteria = {k: c for k, c in raw_table.criteria.items() if k in release_table.criteria}
    pairs = _pairs(raw_table.frame, release_table.frame, combos, criteria)
    survival = _survival(pairs, combos, criteria)
    correlation = prr_correlation(pairs, combos)
    new_signals = _new_signals(pairs, criteria)
    panel = panel_comparison(
        raw_prepared,
        release_side,
        comparison_panel(config),
        config=config.signals,
        flag=criteria[config.criterion],
        criteria=criteria,
        priors=(raw_table.ebgm_prior, release_table.ebgm_prior),
        raw_panel=computed.panel,
    )
    overview = _overview(config, raw_table, release_table, pairs, survival, panel)
    return Comparison(raw_table, release_table, pairs, survival, correlation, new_signals, panel, overview)


def _combos(config: SignalConfig, *, ranges: bool) -> pl.DataFrame:
    rows = [
        {"stratum": s.label, "reading": r}
        for group in strata_of(config)
        for s in group
        for r in readings_of(s, ranges=ranges)
    ]
    return pl.DataFrame(rows, schema={"stratum": pl.Utf8, "reading": pl.Utf8}).with_row_index("order")


def _side(frame: pl.DataFrame, suffix: str) -> pl.DataFrame:
    present = [c for c in _SIDE_COLUMNS if c in frame.columns]
    return frame.select(*_KEYS, *(pl.col(c).alias(f"{c}_{suffix}") for c in present))


def _pairs(
    raw: pl.DataFrame, release: pl.DataFrame, combos: pl.DataFrame, criteria: dict[str, str]
) -> pl.DataFrame:
    expanded = raw.drop("reading").join(combos.select("stratum", "reading"), on="stratum")
    flags = [f"{c}_{side}" for c in criteria.values() for side in ("raw", "release")]
    return (
        _side(expanded, "raw")
        .join(_side(release, "release"), on=_KEYS, how="full", coalesce=True)
        .with_columns(pl.col(flags).fill_null(False))
        .join(combos, on=["stratum", "reading"], how="left")
        .sort("order", "drug", "event")
        .drop("order")
    )


def _survival(pairs: pl.DataFrame, combos: pl.DataFrame, criteria: dict[str, str]) -> pl.DataFrame:
    parts = []
    for name, column in criteria.items():
        r, s = pl.col(f"{column}_raw"), pl.col(f"{column}_release")
        counts = pairs.group_by("stratum", "reading").agg(
            n_raw=r.sum(), n_survived=(r & s).sum(), n_release=s.sum(), n_new=(s & ~r).sum()
        )
        parts.append(
            combos.join(counts, on=["stratum", "reading"], how="left").with_columns(
                pl.lit(name).alias("criterion")
            )
        )
    return (
        pl.concat(parts)
        .with_columns(pl.col("n_raw", "n_survived", "n_release", "n_new").fill_null(0).cast(pl.Int64))
        .with_columns(
            share_survived=pl.when(pl.col("n_raw") > 0).then(pl.col("n_survived") / pl.col("n_raw"))
        )
        .sort("order", maintain_order=True)
        .select(
            "stratum", "reading", "criterion", "n_raw", "n_survived", "share_survived", "n_release", "n_new"
        )
    )


def _new_signals(pairs: pl.DataFrame, criteria: dict[str, str]) -> pl.DataFrame:
    parts = [
        pairs.filter(pl.col(f"{column}_release") & ~pl.col(f"{column}_raw")).select(
            pl.lit(name).alias("criterion"), *_KEYS, "a_raw", "a_release", "prr_raw", "prr_release"
        )
        for name, column in criteria.items()
    ]
    return pl.concat(parts)


def _overview(
    config: CompareConfig,
    raw: SignalTable,
    release: SignalTable,
    pairs: pl.DataFrame,
    survival: pl.DataFrame,
    panel: pl.DataFrame,
) -> dict[str, Any]:
    is_all = pl.col("stratum") == OVERALL.label
    strata = survival.filter(~is_all)
    readings = strata.get_column("reading").unique(maintain_order=True).to_list()
    pooled_rho = spearman(pairs.filter(~is_all), ["reading"]).collect()
    overall_rho = spearman(pairs.filter(is_all), ["reading"]).collect()
    rho = {"overall": finite(overall_rho.item(0, "prr_spearman")) if overall_rho.height else None}
    found = {r["reading"]: finite(r["prr_spearman"]) for r in pooled_rho.iter_rows(named=True)}
    rho.update({r: found[r] for r in readings if r in found})  # in reading order: the group-by's varied
    flagged = panel.filter(pl.col("signal_raw"))
    return {
        "criterion": config.criterion,
        "options": {
            "role": config.signals.role,
            "min_a": config.signals.min_a,
            "stratify": list(config.signals.stratify),
            "conditions": list(config.signals.conditions),
        },
        "criteria": {
            name: {"rule": r.rule, "min_a": r.min_a, "source": r.source}
            for name, r in CRITERION_RULES.items()
            if name in raw.criteria and name in release.criteria
        },
        "ebgm_prior": {
            "raw": None if raw.ebgm_prior is None else asdict(raw.ebgm_prior),
            "release": None if release.ebgm_prior is None else asdict(release.ebgm_prior),
        },
        "cases": {"raw": raw.n_cases, "release": release.n_cases},
        "rows": {"raw": raw.frame.height, "release": release.frame.height},
        "overall": pooled(survival.filter(is_all)),
        "strata": {r: pooled(strata.filter(pl.col("reading") == r)) for r in readings},
        "worst_stratum": worst_stratum(strata),
        "prr_spearman": rho,
        "panel": {
            "rules": int(panel.select(pl.struct("panel", "drug", "event", "condition").n_unique()).item()),
            "raw_signals": int(
                flagged.select(pl.struct("panel", "drug", "event", "condition").n_unique()).item()
            ),
            "survived": {
                r: {
                    k: int(flagged.filter((pl.col("reading") == r) & (pl.col("survived") == k)).height)
                    for k in ("yes", "no")
                }
                for r in panel.get_column("reading").unique(maintain_order=True).to_list()
            },
            "by_criterion": panel_by_criterion(panel),
        },
    }
