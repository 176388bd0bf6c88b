"""Planting drug–event signals into the per-case reaction lists (see ``PlantedSignal``)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from faers_anon.synthetic._cases import Reports
from faers_anon.synthetic._items import DRUG_INDEX, PT_INDEX, Items, dedupe, reaction_weights
from faers_anon.synthetic._plan import PlantedSignal
from faers_anon.synthetic._shape import SMALL, Shape

__all__ = ["in_stratum", "plant"]

BOOL = NDArray[np.bool_]


def in_stratum(signal: PlantedSignal, reports: Reports, n_cases: int) -> BOOL:
    """Per case: does the latest version's reported sex and age meet the signal's condition?

    A missing value (blank/UNK sex, missing or implausible age) fails any condition on it.
    """
    latest = reports.latest
    sex = np.full(n_cases, -1, dtype=np.int64)
    age = np.full(n_cases, np.nan)
    sex[reports.case[latest]] = reports.sex[latest]
    age[reports.case[latest]] = reports.age_years[latest]
    age = np.where(age > 120.0, np.nan, age)
    ok = np.ones(n_cases, dtype=bool)
    if signal.sex is not None:
        ok &= sex == (0 if signal.sex == "F" else 1)
    with np.errstate(invalid="ignore"):
        if signal.age_min is not None:
            ok &= age >= signal.age_min
        if signal.age_max is not None:
            ok &= age < signal.age_max
    return ok & ((signal.age_min is None and signal.age_max is None) | ~np.isnan(age))


def plant(
    reactions: Items,
    drugs: Items,
    reports: Reports,
    signals: tuple[PlantedSignal, ...],
    rng: np.random.Generator,
    shape: Shape = SMALL,
) -> Items:
    """Add each signal's event inside its stratum and thin it outside; return deduplicated lists.

    Raises:
        ValueError: when a signal names a drug or event missing from the vocabularies.
    """
    n_cases = int(reports.case.max()) + 1 if reports.n else 0
    case, item = reactions.case, reactions.item.copy()
    added_case: list[NDArray[np.int64]] = []
    added_item: list[NDArray[np.int64]] = []
    weights = reaction_weights(shape)
    for signal in signals:
        if signal.drug not in DRUG_INDEX:
            raise ValueError(f"planted signal names unknown drug {signal.drug!r}")
        if signal.event not in PT_INDEX:
            raise ValueError(f"planted signal names unknown event {signal.event!r}")
        event = PT_INDEX[signal.event]
        takes = drugs.has(DRUG_INDEX[signal.drug], n_cases)
        inside = in_stratum(signal, reports, n_cases)
        if signal.p_out_keep < 1.0:
            thin = (
                (item == event) & takes[case] & ~inside[case] & (rng.random(item.size) >= signal.p_out_keep)
            )
            redraw = rng.choice(weights.size, size=int(thin.sum()), p=weights)
            item[thin] = np.where(redraw == event, 0, redraw)
        hit = np.flatnonzero(takes & inside & (rng.random(n_cases) < signal.p_in))
        added_case.append(hit.astype(np.int64))
        added_item.append(np.full(hit.size, event, dtype=np.int64))
    merged = Items(case=np.concatenate([case, *added_case]), item=np.concatenate([item, *added_item]))
    return dedupe(merged, weights.size)
