"""2×2 counts a, b, c, d for every drug–event pair and stratum at once (SPEC §9).

Counting convention: **cases, not drug–event rows.** Input is one row per case (its latest
version). For a drug D, an event E and a stratum with case weights w (1 on raw data):

    a = Σ w over cases with D and E          b = Σ w over cases with D, without E
    c = Σ w over cases with E, without D     d = Σ w over cases with neither
    N = a + b + c + d = Σ w over all cases of the stratum

A case listing a drug twice, or the same event twice, counts once. Several public tools count
drug–event *rows* instead (a case with 3 drugs and 2 events adds 6 to N), which inflates the margins
of polypharmacy cases; their PRRs differ from ours. N includes the cases that have no drug under the
role filter and the cases without any reaction: they are part of the reporting base.

Drug level is ``drug_key`` (null keys are left out). Role filter: ``ps`` keeps role_cod PS (primary
suspect), ``suspect`` PS and SS, ``any`` every row. Events are MedDRA PTs compared case-insensitively:
the key is ``upper(strip(collapse_whitespace(pt)))`` (architecture.md's canonical value key), so the
upper-case legacy terms and mixed-case modern terms meet; the ``event`` column holds that key.

Computation: distinct (case, drug) and distinct (case, event) are joined on ``caseid`` to the
co-reported pairs, which are grouped by (stratum, drug, event) for a; the margins come from
per-drug, per-event and per-stratum sums of w. No Python loop touches pairs or rows.

Every sum of weights is rounded to 9 decimals (:func:`weight_sum`). A parallel group-by adds a
group's rows in an order that varies from run to run, so a sum of fractional weights (the
``expected`` reading) carried round-off of ~1e-13 whose sign varied too: a = 3 ± 1e-13 was kept or
dropped by a ≥ min_a, and d = 2189.5 ± 1e-13 rounded either way for Fisher, from one run to the
next. Whole counts (raw data, the stratum ``all``, ``certain``/``possible``) are unchanged.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import polars as pl

from signals.errors import SignalsError
from signals.strata import Stratum, memberships

if TYPE_CHECKING:
    from signals.profiles import Profiles

__all__ = [
    "weight_sum",
    "CaseTables",
    "ROLES",
    "event_key",
    "prepare",
    "Prepared",
    "prepared",
    "CoReports",
    "co_reports",
    "count_2x2",
]

ROLES: dict[str, tuple[str, ...] | None] = {"ps": ("PS",), "suspect": ("PS", "SS"), "any": None}
_SEX_CODES = ("F", "M", "*")
_TINY = 1e-9  # cells below this after subtracting fractional sums are round-off, set to 0


_DECIMALS = 9  # sums of weights, rounded (module docstring)


def weight_sum(column: str = "w") -> pl.Expr:
    """Σ of a weight column rounded to 9 decimals: the same number whatever the order of the rows."""
    return pl.col(column).sum().round(_DECIMALS)


@dataclass(frozen=True, slots=True)
class CaseTables:
    """The three input frames of an analysis.

    Attributes:
        cases: one row per case: ``caseid`` plus QID columns (raw: ``age_years``, ``sex``,
            ``weight_kg``; release: ``age_min``, ``age_max``, ``sex``, ``wt_min``, ``wt_max``).
        drugs: ``caseid``, ``drug_key``, ``role_cod`` (the rows of each case's latest version).
        events: ``caseid``, ``pt``.
    """

    cases: pl.DataFrame
    drugs: pl.DataFrame
    events: pl.DataFrame


def event_key(pt: pl.Expr) -> pl.Expr:
    """Canonical event key: upper-cased, whitespace collapsed and stripped; empty → null."""
    key = pt.str.replace_all(r"\s+", " ").str.strip_chars().str.to_uppercase()
    return pl.when(key.str.len_chars() > 0).then(key)


def _require(frame: pl.DataFrame, name: str, columns: tuple[str, ...]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise SignalsError(f"{name}: missing column {missing[0]!r} (expected {', '.join(columns)})")


def prepare(tables: CaseTables, /, *, role: str) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Validate the inputs; return (cases, case_drugs, case_events).

    ``cases`` gets ``caseid`` as Int64 and ``sex`` upper-cased (values outside F, M, ``*`` → null).
    ``case_drugs`` is the distinct (``caseid``, ``drug``) under the role filter and ``case_events``
    the distinct (``caseid``, ``event``), both restricted to the cases of ``cases``.

    Raises:
        SignalsError: a missing column, an unknown role, or a caseid repeated in ``cases``.
    """
    if role not in ROLES:
        raise SignalsError(f"role must be one of {', '.join(ROLES)}; got {role!r}")
    _require(tables.cases, "cases", ("caseid",))
    _require(tables.drugs, "drugs", ("caseid", "drug_key") + (("role_cod",) if ROLES[role] else ()))
    _require(tables.events, "events", ("caseid", "pt"))
    cases = tables.cases.with_columns(pl.col("caseid").cast(pl.Int64))
    repeated = cases.height - cases.get_column("caseid").n_unique()
    if repeated:
        raise SignalsError(
            f"cases: {repeated} repeated caseid (expected one row per case, its latest version)"
        )
    if "sex" in cases.columns:
        sex = pl.col("sex").cast(pl.Utf8).str.strip_chars().str.to_uppercase()
        cases = cases.with_columns(pl.when(sex.is_in(_SEX_CODES)).then(sex).alias("sex"))
    ids = cases.lazy().select("caseid")
    drugs = tables.drugs.lazy()
    codes = ROLES[role]
    if codes is not None:  # the role test once per distinct role_cod, not per row
        roles = tables.drugs.select(pl.col("role_cod").unique())
        kept = roles.filter(pl.col("role_cod").str.strip_chars().str.to_uppercase().is_in(codes))
        drugs = drugs.filter(pl.col("role_cod").is_in(kept.get_column("role_cod").implode()))
    drugs = drugs.select(pl.col("caseid").cast(pl.Int64), pl.col("drug_key").alias("drug"))
    case_drugs = (
        drugs.select("caseid", "drug").drop_nulls().unique().join(ids, on="caseid", how="semi").collect()
    )
    events = tables.events.lazy().select(pl.col("caseid").cast(pl.Int64), pl.col("pt").cast(pl.Utf8))
    keys = events.select(pl.col("pt").unique()).with_columns(
        event_key(pl.col("pt")).alias("event")
    )  # once per term
    case_events = (
        events.join(keys, on="pt")
        .select("caseid", "event")
        .drop_nulls()
        .unique()
        .join(ids, on="caseid", how="semi")
        .collect()
    )
    return cases, case_drugs, case_events


@dataclass(frozen=True, slots=True)
class Prepared:
    """One side's validated frames (:func:`prepare` under ``role``) and the strata memberships made so far.

    :func:`signals.table.signal_table` and :func:`signals.panels.panel_table` both read a side's
    cases in the same strata (the conditions, the bands of the Mantel–Haenszel ROR): given one
    ``Prepared`` they validate the frames once and compute each stratum's weights once.
    """

    role: str
    cases: pl.DataFrame
    case_drugs: pl.DataFrame
    case_events: pl.DataFrame
    _members: dict[tuple[object, ...], pl.DataFrame] = field(default_factory=dict, repr=False)
    _profiles: dict[frozenset[str], Profiles] = field(default_factory=dict, repr=False)

    def members(
        self, strata: Sequence[Stratum], /, *, reading: str, first_id: int = 0, caps: Mapping[str, float]
    ) -> pl.DataFrame:
        """:func:`signals.strata.memberships` of ``cases``, computed once per strata, reading and caps."""
        key = (tuple(strata), reading, tuple(sorted(caps.items())))
        if key not in self._members:
            self._members[key] = memberships(self.cases, strata, reading=reading, caps=caps)
        found = self._members[key]
        return found if first_id == 0 else found.with_columns(pl.col("stratum_id") + first_id)

    def profiles(self, variables: Collection[str], /) -> Profiles:
        """:func:`signals.profiles.profiles` of ``cases`` over ``variables``, made once per set."""
        key = frozenset(variables)
        if key not in self._profiles:
            from signals.profiles import profiles  # noqa: PLC0415 - signals.profiles imports this module

            self._profiles[key] = profiles(self.cases, key)
        return self._profiles[key]


def prepared(tables: CaseTables | Prepared, /, *, role: str) -> Prepared:
    """``tables`` validated under ``role`` (:func:`prepare`); a :class:`Prepared` is used as is.

    Raises:
        SignalsError: as :func:`prepare`, or a :class:`Prepared` made under another role.
    """
    if isinstance(tables, Prepared):
        if tables.role != role:
            raise SignalsError(f"prepared tables are of role {tables.role!r}, not {role!r}")
        return tables
    return Prepared(role, *prepare(tables, role=role))


@dataclass(frozen=True, slots=True)
class CoReports:
    """Case–drug and case–event incidence with integer codes, and the co-reported pairs.

    Codes follow the sorted names, so results sorted by code are sorted by name.
    """

    drugs: pl.DataFrame  # caseid, drug_id
    events: pl.DataFrame  # caseid, event_id
    pairs: pl.DataFrame  # caseid, drug_id, event_id
    drug_names: pl.DataFrame  # drug_id, drug
    event_names: pl.DataFrame  # event_id, event


def _codes(frame: pl.DataFrame, name: str, extra: pl.DataFrame | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    every = frame.select(name) if extra is None else pl.concat([frame.select(name), extra.select(name)])
    names = every.select(pl.col(name).unique().sort()).with_row_index(f"{name}_id")
    coded = frame.join(names, on=name).select("caseid", f"{name}_id")
    return coded, names


def co_reports(
    case_drugs: pl.DataFrame, case_events: pl.DataFrame, /, *, wanted: pl.DataFrame | None = None
) -> CoReports:
    """Code drugs and events and join them on ``caseid`` into the co-reported (case, drug, event).

    Args:
        case_drugs: distinct ``caseid``, ``drug``.
        case_events: distinct ``caseid``, ``event``.
        wanted: optional ``drug``, ``event`` pairs; when given, only these pairs are kept (and their
            names get codes even when absent from the data).
    """
    drugs, drug_names = _codes(case_drugs, "drug", wanted)
    events, event_names = _codes(case_events, "event", wanted)
    pairs = drugs.lazy().join(events.lazy(), on="caseid")
    if wanted is not None:
        pairs = pairs.join(
            _wanted_ids(wanted, drug_names, event_names).lazy(), on=["drug_id", "event_id"], how="semi"
        )
    return CoReports(drugs, events, pairs.collect(), drug_names, event_names)


def _wanted_ids(wanted: pl.DataFrame, drug_names: pl.DataFrame, event_names: pl.DataFrame) -> pl.DataFrame:
    return (
        wanted.select("drug", "event")
        .unique()
        .join(drug_names, on="drug")
        .join(event_names, on="event")
        .select("drug_id", "event_id")
    )


def count_2x2(
    co: CoReports,
    members: pl.DataFrame,
    /,
    *,
    min_a: float,
    wanted: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The 2×2 table of every co-reported pair in every stratum (see the module docstring).

    Args:
        co: coded incidence from :func:`co_reports`.
        members: ``caseid``, ``stratum_id``, ``w`` from :func:`signals.strata.memberships`.
        min_a: keep the rows with a ≥ min_a (and a > 0) only; ignored for ``wanted`` pairs.
        wanted: ``drug``, ``event`` pairs to report in every stratum even when a = 0 (a pair whose
            drug or event never occurs in the data gets a = 0 and its margins, possibly 0).

    Returns:
        ``stratum_id``, ``drug``, ``event``, ``a``, ``b``, ``c``, ``d`` (Float64, ≥ 0; whole
        numbers unless weights are fractional), sorted by stratum, drug and event.
    """
    nd, ne = max(co.drug_names.height, 1), max(co.event_names.height, 1)
    stratum = pl.col("stratum_id").cast(pl.UInt64)
    # one UInt64 key per (stratum, drug, event): a single-key group-by is the fast path in polars
    pair_key = ((stratum * nd + pl.col("drug_id")) * ne + pl.col("event_id")).alias("key")
    m = members.lazy()
    a = (
        co.pairs.lazy()
        .join(m, on="caseid")
        .select(pair_key, "w")
        .group_by("key")
        .agg(weight_sum().alias("a"))
    )
    n_drug = (
        co.drugs.lazy()
        .join(m, on="caseid")
        .group_by((stratum * nd + pl.col("drug_id")).alias("dkey"))
        .agg(weight_sum().alias("nd"))
    )
    n_event = (
        co.events.lazy()
        .join(m, on="caseid")
        .group_by((stratum * ne + pl.col("event_id")).alias("ekey"))
        .agg(weight_sum().alias("ne"))
    )
    n = m.group_by("stratum_id").agg(weight_sum().alias("n"))
    if wanted is None:
        table = a.filter((pl.col("a") >= min_a) & (pl.col("a") > 0.0))
    else:
        grid = (
            _wanted_ids(wanted, co.drug_names, co.event_names)
            .lazy()
            .join(n.select("stratum_id"), how="cross")
            .select(pair_key)
        )
        table = grid.join(a, on="key", how="left")
    key = pl.col("key")
    counted = (
        table.with_columns(
            stratum_id=(key // (nd * ne)).cast(pl.UInt32),
            drug_id=((key // ne) % nd).cast(pl.UInt32),
            event_id=(key % ne).cast(pl.UInt32),
        )
        .with_columns(dkey=key // ne, ekey=(key // (nd * ne)) * ne + key % ne)
        .join(n_drug, on="dkey", how="left")
        .join(n_event, on="ekey", how="left")
        .join(n, on="stratum_id", how="left")
        .with_columns(pl.col("a", "nd", "ne").fill_null(0.0))
        .with_columns(COMPLEMENT_CELLS)
        .with_columns(ROUNDED_CELLS)
        .sort("key")
        .collect()
    )
    return named_cells(counted, co)


#: b = nd − a, c = ne − a, d = n − nd − ne + a from a, the drug's and the event's margins and n.
COMPLEMENT_CELLS: Final = [
    (pl.col("nd") - pl.col("a")).alias("b"),
    (pl.col("ne") - pl.col("a")).alias("c"),
    (pl.col("n") - pl.col("nd") - pl.col("ne") + pl.col("a")).alias("d"),
]
#: A cell below _TINY after the subtractions is the round-off of fractional sums: 0.
ROUNDED_CELLS: Final = [pl.when(pl.col(x) < _TINY).then(0.0).otherwise(pl.col(x)).alias(x) for x in "bcd"]


def named_cells(counted: pl.DataFrame, co: CoReports) -> pl.DataFrame:
    """``counted`` (stratum_id, drug_id, event_id, a–d) as the 2x2 frame: stratum_id, drug, event, a–d."""
    return counted.select(
        "stratum_id",
        co.drug_names.get_column("drug").gather(counted.get_column("drug_id")).alias("drug"),
        co.event_names.get_column("event").gather(counted.get_column("event_id")).alias("event"),
        "a",
        "b",
        "c",
        "d",
    )
