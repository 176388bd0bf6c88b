"""Reference signal panels: known drug–event rules, each counted and measured at its own condition.

The bundled panel is the paper's Table 5 (Lin, Yang & Wang 2016, BMC Med Inform Decis Mak 16(S1):58;
SPEC §9): seven FDA MedWatch rules with a demographic condition — AVANDIA with myocardial
infarction, death and cerebrovascular accident (age ≥ 18), TYSABRI with progressive multifocal
leukoencephalopathy (age ≥ 18), ZELNORM with cerebrovascular accident (female), WARFARIN with
myocardial infarction (age ≥ 60), REVATIO with death (age < 18). The paper prints the "18~" of
AVANDIA once for its three rows, and its text reads "Avandia, age > 18 years old ⇒ death", so the
condition holds for all three (``../shared/data/reference_signals/reference_pairs.csv`` attaches it
to the myocardial infarction row only; we follow the paper and SPEC §9).

Panel frame columns: ``panel``, ``drug`` (label), ``event`` (PT as given), ``event_group`` (null or
an outcome group name), ``condition`` (null = all cases), ``expected`` (positive/negative/null),
``drug_keys`` and ``event_terms`` (List(Utf8)).

Matching. A case has the panel drug when one of its ``drug_key`` values equals one of
``drug_keys`` or starts with it followed by a space (so ``WARFARIN`` also matches ``WARFARIN
SODIUM``: keys with or without salts). Combination products (``METFORMIN\\ROSIGLITAZONE``) do not
match. REVATIO is listed with SILDENAFIL because a modern ``drug_key`` comes from ``prod_ai``, which
does not tell Revatio from Viagra; the age < 18 condition leaves mostly Revatio's paediatric use. A
case has the panel event when one of its PTs equals one of ``event_terms``, compared by the canonical
key of :func:`signals.counts.event_key`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import polars as pl

from signals.battery import add_ebgm, add_fisher, intersect
from signals.counts import CaseTables, CoReports, Prepared, co_reports, event_key, prepared
from signals.ebgm import GammaMixture
from signals.errors import SignalsError
from signals.mantel_haenszel import MH_COLUMNS, mantel_haenszel
from signals.measures import disproportionality
from signals.profiles import Incidence, Profiles, count_profiles, incidence, strata_variables, weights
from signals.strata import OVERALL, Stratum, band_strata, has_ranges, parse_condition
from signals.table import SignalConfig, readings_of, side_variables

__all__ = [
    "PANEL_COLUMNS",
    "medwatch_panel",
    "load_reference_pairs",
    "panel_table",
    "panel_comparison",
    "panel_by_criterion",
]

PANEL_COLUMNS = ("panel", "drug", "event", "event_group", "condition", "expected", "drug_keys", "event_terms")
_GROUP_NOTE = re.compile(r"use group (\w+)")
_PANEL_SIDE = (  # measures shown per side in a panel comparison
    "a",
    "b",
    "c",
    "d",
    "prr",
    "prr_lo",
    "prr_hi",
    "ror",
    "ror_lo",
    "ror_hi",
    "ic",
    "ic025",
    "ic975",
    "ebgm",
    "eb05",
    "eb95",
    "fisher_p",
    *MH_COLUMNS,
)


def _key(expr: pl.Expr) -> pl.Expr:
    return expr.str.replace_all(r"\s+", " ").str.strip_chars().str.to_uppercase()


def medwatch_panel() -> pl.DataFrame:
    """The bundled panel: the seven MedWatch rules of the paper's Table 5 (see the module docstring).

    Returns:
        A panel frame (``panel`` = ``medwatch``), plus ``marketed`` and ``withdrawn_or_warning`` years.
    """
    source = resources.files("signals").joinpath("data", "medwatch_table5.csv")
    raw = pl.read_csv(source.read_bytes(), infer_schema=False)
    return raw.select(
        pl.lit("medwatch").alias("panel"),
        "drug",
        "event",
        pl.lit(None, pl.Utf8).alias("event_group"),
        "condition",
        pl.lit("positive").alias("expected"),
        pl.col("drug_keys").str.split("|"),
        pl.col("event_terms").str.split("|"),
        pl.col("marketed").cast(pl.Int64),
        pl.col("withdrawn_or_warning").cast(pl.Int64),
    )


def load_reference_pairs(path: str | Path, /, *, outcome_groups: str | Path | None = None) -> pl.DataFrame:
    """Read a reference set such as ``../shared/data/reference_signals/reference_pairs.csv``.

    Expected columns: ``drug``, ``event_pt``, ``expected``, ``demographic_condition``, ``source``.
    Drug keys are the upper-cased name, or both parts of ``NAME (ingredient)``. When
    ``outcome_groups`` (``outcome_group``, ``meddra_pt``) is given and a row's source says
    ``use group X``, the event is the group X (every PT of it); otherwise the PT itself.

    Returns:
        A panel frame with ``panel`` = ``reference``.

    Raises:
        SignalsError: a missing file or column, or a condition that cannot be read.
    """
    pairs = _read(path, ("drug", "event_pt", "expected", "demographic_condition", "source"))
    outer = _key(pl.col("drug").str.replace_all(r"\([^()]*\)", " "))
    inner = _key(pl.col("drug").str.extract(r"\(([^()]*)\)", 1))
    frame = pairs.select(
        pl.lit("reference").alias("panel"),
        "drug",
        pl.col("event_pt").alias("event"),
        pl.col("source").str.extract(_GROUP_NOTE.pattern, 1).alias("event_group"),
        pl.when(pl.col("demographic_condition").str.strip_chars() != "")
        .then("demographic_condition")
        .alias("condition"),
        "expected",
        pl.concat_list(outer, inner).list.drop_nulls().list.unique(maintain_order=True).alias("drug_keys"),
        pl.concat_list("event_pt").alias("event_terms"),
    )
    for text in frame.get_column("condition").drop_nulls().unique():
        parse_condition(text)
    if outcome_groups is None:
        return frame.with_columns(pl.lit(None, pl.Utf8).alias("event_group"))
    groups = (
        _read(outcome_groups, ("outcome_group", "meddra_pt"))
        .group_by("outcome_group")
        .agg(pl.col("meddra_pt").unique().sort().alias("group_terms"))
    )
    return (
        frame.join(groups, left_on="event_group", right_on="outcome_group", how="left", maintain_order="left")
        .with_columns(
            pl.when(pl.col("group_terms").is_not_null()).then("event_group").alias("event_group"),
            pl.coalesce("group_terms", "event_terms").alias("event_terms"),
        )
        .select(PANEL_COLUMNS)
    )


def _read(path: str | Path, columns: tuple[str, ...]) -> pl.DataFrame:
    file = Path(path)
    if not file.is_file():
        raise SignalsError(f"{file}: reference file not found")
    frame = pl.read_csv(file, infer_schema=False)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise SignalsError(f"{file.name}: missing column {missing[0]!r} (expected {', '.join(columns)})")
    return frame


def _map_drugs(case_drugs: pl.DataFrame, panel: pl.DataFrame) -> pl.DataFrame:
    """(caseid, drug label) for every case with a key of the panel drug (exact or word prefix)."""
    keys = (
        panel.select(pl.col("drug").alias("label"), pl.col("drug_keys").alias("key"))
        .explode("key")
        .with_columns(_key(pl.col("key")))
        .unique()
        .with_columns(words=pl.col("key").str.count_matches(" ") + 1)
    )
    names = case_drugs.select(pl.col("drug").unique())
    parts = [
        names.with_columns(key=pl.col("drug").str.extract(rf"^((?:\S+ ){{{n - 1}}}\S+)(?: |$)", 1)).join(
            keys.filter(pl.col("words") == n).select("label", "key"), on="key"
        )
        for n in keys.get_column("words").unique().sort()
    ]
    found = pl.concat([p.select("drug", "label") for p in parts]).unique()
    return case_drugs.join(found, on="drug").select("caseid", pl.col("label").alias("drug")).unique()


def _map_events(case_events: pl.DataFrame, panel: pl.DataFrame) -> pl.DataFrame:
    """(caseid, event id) for every case with a term of the panel event; the id is group or PT."""
    terms = (
        panel.select(pl.coalesce("event_group", "event").alias("label"), pl.col("event_terms").alias("event"))
        .explode("event")
        .with_columns(event_key(pl.col("event")))
        .unique()
    )
    return case_events.join(terms, on="event").select("caseid", pl.col("label").alias("event")).unique()


def panel_table(
    tables: CaseTables | Prepared,
    panel: pl.DataFrame,
    /,
    *,
    config: SignalConfig | None = None,
    prior: GammaMixture | None = None,
) -> pl.DataFrame:
    """Counts, measures and criteria of every panel rule at its condition, in each reading.

    Conventions are those of :func:`signals.table.signal_table` (cases not pairs, role filter,
    zero-cell rule); ``config`` gives the role, the caps, the measures and the strata of the
    Mantel–Haenszel ROR (its conditions and ``min_a`` do not apply: every rule is reported, a = 0
    included). With ``config.measures == "all"`` the rules also get EBGM/EB05/EB95 under ``prior``
    (the prior of the whole table, :attr:`signals.table.SignalTable.ebgm_prior`; required then, since
    a dozen rules cannot identify one), Fisher p and BH q (one family per reading), and with
    ``config.stratify`` the Mantel–Haenszel ROR across the age × sex bands *within* the rule's
    condition (e.g. the bands of age ≥ 18 for an adult rule).

    Returns:
        The panel's descriptive columns (without the key lists), ``reading``, ``a``, ``b``, ``c``,
        ``d``, the measures and the criteria; one row per rule and reading, in panel order.

    Raises:
        SignalsError: a missing panel column or bad input tables.
    """
    config = config or SignalConfig()
    if config.measures == "all" and prior is None:
        raise SignalsError("panel_table: measures 'all' needs the table's EBGM prior (prior=...)")
    missing = [c for c in PANEL_COLUMNS if c not in panel.columns]
    if missing:
        raise SignalsError(f"panel: missing column {missing[0]!r} (expected {', '.join(PANEL_COLUMNS)})")
    side = prepared(tables, role=config.role)  # a Prepared shares its memberships with signal_table
    cases, case_drugs, case_events = side.cases, side.case_drugs, side.case_events
    ranges = has_ranges(cases)
    rules = panel.with_row_index("_rule").with_columns(pl.coalesce("event_group", "event").alias("_event"))
    wanted = rules.select("drug", pl.col("_event").alias("event"))
    co = co_reports(_map_drugs(case_drugs, panel), _map_events(case_events, panel), wanted=wanted)
    caps = {"age": config.age_cap, "weight": config.weight_cap}
    conditions = rules.get_column("condition").unique(maintain_order=True).to_list()
    strata = [OVERALL if condition is None else parse_condition(condition) for condition in conditions]
    # counts summed over the side's profiles (signals.profiles), shared with its signal table
    found = side.profiles(side_variables(config) | strata_variables(strata))
    shared = Counted(co, incidence(co, found), found)
    parts = []
    for condition, stratum in zip(conditions, strata, strict=True):
        chosen = rules.filter(pl.col("condition").eq_missing(condition))
        for reading in readings_of(stratum, ranges=ranges):
            w = weights(found, (stratum,), reading=reading, caps=caps)
            counts = count_profiles(
                co,
                shared.incidence,
                w,
                min_a=0.0,
                wanted=chosen.select("drug", pl.col("_event").alias("event")),
            )
            part = (
                chosen.select("_rule", "drug", "_event")
                .join(counts.rename({"event": "_event"}), on=["drug", "_event"], how="left")
                .with_columns(pl.lit(reading).alias("reading"), pl.col("a", "b", "c", "d").fill_null(0.0))
            )
            if config.measures == "all" and config.stratify:
                part = _with_adjusted(part, shared, stratum, chosen, config=config, reading=reading)
            parts.append(part)
    extra = [c for c in MH_COLUMNS if c in parts[0].columns]
    counted = pl.concat(parts).select("_rule", "reading", "a", "b", "c", "d", *extra)
    described = rules.drop("drug_keys", "event_terms", "_event")
    out = disproportionality(
        described.join(counted, on="_rule").sort("_rule", maintain_order=True).drop("_rule")
    )
    if prior is None or config.measures == "basic":
        return out
    return add_fisher(add_ebgm(out, prior=prior)).select(*(c for c in out.columns if c not in extra),
        "ebgm", "eb05", "eb95", "fisher_p", "fisher_q", "signal_eb", *extra)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Counted:
    """A panel's coded incidence, its counts per profile and the side's profiles."""

    co: CoReports
    incidence: Incidence
    profiles: Profiles


def _with_adjusted(
    part: pl.DataFrame,
    counted: Counted,
    condition: Stratum,
    chosen: pl.DataFrame,
    *,
    config: SignalConfig,
    reading: str,
) -> pl.DataFrame:
    """Join the Mantel–Haenszel columns across the bands within ``condition`` to the rules' rows.

    An unconditioned rule is read ``exact`` on released ranges too (the stratum ``all`` holds every
    case); its bands are then read ``expected``, as :func:`signals.table.signal_table` reads them.
    """
    bands = [intersect(condition, band) for band in band_strata(config.stratify, age_bands=config.age_bands)]
    caps = {"age": config.age_cap, "weight": config.weight_cap}
    if reading == "exact" and counted.profiles.ranges:
        reading = "expected"
    w = weights(counted.profiles, bands, reading=reading, caps=caps)
    wanted = chosen.select("drug", pl.col("_event").alias("event"))
    adjusted = mantel_haenszel(
        count_profiles(counted.co, counted.incidence, w, min_a=0.0, wanted=wanted), by=["drug", "event"]
    )
    return part.join(
        adjusted.select("drug", pl.col("event").alias("_event"), *MH_COLUMNS),
        on=["drug", "_event"],
        how="left",
    )


def panel_comparison(
    raw: CaseTables | Prepared,
    release: CaseTables | Prepared,
    panel: pl.DataFrame,
    /,
    *,
    config: SignalConfig,
    flag: str,
    criteria: dict[str, str],
    priors: tuple[GammaMixture | None, GammaMixture | None],
    raw_panel: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Every panel rule on raw data and on the release side by side (:mod:`signals.compare`).

    Each side is :func:`panel_table` with its own table's prior; ``raw_panel`` is the raw one when
    already computed (:func:`signals.sides.raw_side`: ``panel`` numbered in ``rule``, ``priors[0]``).
    Columns: the rule, ``reading``, the measures suffixed ``_raw``/``_release``,
    ``signal_raw``/``signal_release`` under the headline criterion column ``flag``, the relative
    changes, ``survived`` and ``survived_<criterion>`` for each of ``criteria`` (name → column).
    """
    panel = panel.with_row_index("rule")
    raw_table = (
        raw_panel if raw_panel is not None else panel_table(raw, panel, config=config, prior=priors[0])
    )
    release_side = panel_table(release, panel, config=config, prior=priors[1])
    side = [c for c in _PANEL_SIDE if c in release_side.columns]
    flags = list(criteria.values())
    raw_side = raw_table.select("rule", *(pl.col(c).alias(f"{c}_raw") for c in (*side, *flags)))
    described = [c for c in release_side.columns if c not in (*_PANEL_SIDE, "chi2", "zero_cell", "fisher_q")]
    described = [c for c in described if not c.startswith("signal_")]
    joined = release_side.select(
        *described, *(pl.col(c).alias(f"{c}_release") for c in (*side, *flags))
    ).join(raw_side, on="rule", how="left", maintain_order="left")
    return joined.with_columns(
        pl.col(f"{flag}_raw").alias("signal_raw"),
        pl.col(f"{flag}_release").alias("signal_release"),
        prr_change=pl.when(pl.col("prr_raw") > 0).then(pl.col("prr_release") / pl.col("prr_raw") - 1),
        ror_change=pl.when(pl.col("ror_raw") > 0).then(pl.col("ror_release") / pl.col("ror_raw") - 1),
        ic_change=pl.lit(2.0).pow(pl.col("ic_release") - pl.col("ic_raw")) - 1,
        survived=_survived(flag),
        **{f"survived_{name}": _survived(column) for name, column in criteria.items()},
    ).drop("rule", *(f"{c}_{s}" for c in flags for s in ("raw", "release")))


def _survived(column: str) -> pl.Expr:
    """``yes``/``no``: a raw signal that does / does not signal on the release; ``n/a``: no raw signal."""
    return (
        pl.when(~pl.col(f"{column}_raw"))
        .then(pl.lit("n/a"))
        .when(pl.col(f"{column}_release"))
        .then(pl.lit("yes"))
        .otherwise(pl.lit("no"))
    )


def panel_by_criterion(panel: pl.DataFrame) -> dict[str, dict[str, dict[str, int]]]:
    """Per criterion and reading, the panel rows whose ``survived_<criterion>`` is yes / no."""
    counts = (
        panel.unpivot(index="reading", on=[c for c in panel.columns if c.startswith("survived_")])
        .filter(pl.col("value") != "n/a")
        .group_by("variable", "reading", "value")
        .len()
    )
    out: dict[str, dict[str, dict[str, int]]] = {}
    for row in counts.sort("variable", "reading", "value").iter_rows(named=True):
        by_reading = out.setdefault(row["variable"].removeprefix("survived_"), {})
        by_reading.setdefault(row["reading"], {"yes": 0, "no": 0})[row["value"]] = int(row["len"])
    return out
