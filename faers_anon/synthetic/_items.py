"""Per-case item lists (drugs, reactions) and their expansion into the reports of each case.

A case's drugs and reactions are drawn once; each version of the case repeats them, except that an
earlier version may lack the last drug or the last reaction (added in the follow-up).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from faers_anon.synthetic._cases import Cases, Reports
from faers_anon.synthetic._shape import SMALL, Shape, Vocab, vocabulary
from faers_anon.synthetic._vocab import DRUGS, PROFILES, REACTIONS

__all__ = [
    "Items",
    "draw_drugs",
    "draw_reactions",
    "expand",
    "dedupe",
    "reaction_weights",
    "EVENT_SHARES",
    "DRUG_INDEX",
    "PT_INDEX",
]

I64 = NDArray[np.int64]
BOOL = NDArray[np.bool_]

DRUG_INDEX: dict[str, int] = {d.name: i for i, d in enumerate(DRUGS)}
PT_INDEX: dict[str, int] = {pt: i for i, pt in enumerate(REACTIONS)}

# Shares of reaction rows fixed by hand for the planted events (their background rates); every other
# PT follows the Zipf-like law w_i = 1 / (i + 5) over ``REACTIONS`` order, scaled to fill the rest.
EVENT_SHARES: dict[str, float] = {
    "Death": 0.013,
    "Fall": 0.02,
    "Myocardial infarction": 0.004,
    "Cerebrovascular accident": 0.004,
    "Progressive multifocal leukoencephalopathy": 0.0005,
}


@dataclass(frozen=True, slots=True)
class Items:
    """A flat list of per-case items (drug or PT indices), grouped by case in case order.

    Attributes:
        case: case index of each item (non-decreasing).
        item: drug index into ``DRUGS`` or PT index into ``REACTIONS``.
    """

    case: I64
    item: I64

    def first_and_count(self, n_cases: int) -> tuple[I64, I64]:
        """Index of each case's first item and its number of items."""
        count = np.bincount(self.case, minlength=n_cases).astype(np.int64)
        return np.cumsum(count) - count, count

    def has(self, item: int, n_cases: int) -> BOOL:
        """Per case: does the case list ``item``?"""
        out = np.zeros(n_cases, dtype=bool)
        out[self.case[self.item == item]] = True
        return out


def _drug_probabilities(vocab: Vocab) -> NDArray[np.float64]:
    """Drug choice probabilities per stratum (6 × n_drugs): popularity × profile multiplier."""
    profile = np.array([PROFILES[d.profile] for d in vocab.drugs], dtype=np.float64).T  # (6, n_drugs)
    p = profile * vocab.drug_weight
    return p / p.sum(axis=1, keepdims=True)


def _counts(rng: np.random.Generator, n: int, mean: float, r: float, cap: int) -> I64:
    """Items per case: 1 + negative binomial (shape ``r``, mean ``mean - 1``), capped at ``cap``."""
    p = 1.0 / mean if r == 1.0 else r / (r + mean - 1.0)
    return np.minimum(1 + rng.negative_binomial(r, p, n), cap).astype(np.int64)


def draw_drugs(cases: Cases, rng: np.random.Generator, shape: Shape = SMALL) -> Items:
    """Draw each case's drug list: 1 + negative-binomial many (capped), by stratum probabilities."""
    vocab = vocabulary(shape)
    count = _counts(rng, cases.n, shape.drugs_per_case, shape.drug_dispersion, shape.drug_cap)
    case = np.repeat(np.arange(cases.n, dtype=np.int64), count)
    stratum = cases.stratum[case]
    item = np.empty(case.size, dtype=np.int64)
    probs = _drug_probabilities(vocab)
    for s in range(probs.shape[0]):
        rows = np.flatnonzero(stratum == s)
        item[rows] = rng.choice(len(vocab.drugs), size=rows.size, p=probs[s])
    return Items(case=case, item=item)


def reaction_weights(shape: Shape = SMALL) -> NDArray[np.float64]:
    """Probability of each PT of the shape's vocabulary for one background reaction row (sums to 1).

    Small: ``1 / (i + 5)`` over ``REACTIONS`` order; realistic: the shape's Zipf–Mandelbrot law with
    the top PT at ``top_pt_share``. The planted events keep their ``EVENT_SHARES`` either way.
    """
    vocab = vocabulary(shape)
    if vocab.pt_weight is None:
        w = 1.0 / (np.arange(len(REACTIONS), dtype=np.float64) + 5.0)
    else:
        w = vocab.pt_weight.copy()
    shares = dict(EVENT_SHARES)
    if vocab.top_pt_share > 0:
        shares[REACTIONS[0]] = vocab.top_pt_share
    fixed = np.zeros(w.size, dtype=bool)
    for pt in shares:
        fixed[PT_INDEX[pt]] = True
    w[~fixed] *= (1.0 - sum(shares.values())) / w[~fixed].sum()
    for pt, share in shares.items():
        w[PT_INDEX[pt]] = share
    return w


def draw_reactions(cases: Cases, rng: np.random.Generator, shape: Shape = SMALL) -> Items:
    """Draw each case's background PTs: 1 + negative-binomial many (capped), Zipf-like PTs."""
    count = _counts(rng, cases.n, shape.reactions_per_case, shape.reaction_dispersion, shape.reaction_cap)
    case = np.repeat(np.arange(cases.n, dtype=np.int64), count)
    weights = reaction_weights(shape)
    item = rng.choice(weights.size, size=case.size, p=weights).astype(np.int64)
    return Items(case=case, item=item)


def dedupe(items: Items, n_items: int) -> Items:
    """Sort items by case (stably) and keep each (case, item) pair's first occurrence."""
    order = np.argsort(items.case, kind="stable")
    case, item = items.case[order], items.item[order]
    _, first = np.unique(case * n_items + item, return_index=True)
    keep = np.sort(first)
    return Items(case=case[keep], item=item[keep])


def expand(items: Items, reports: Reports, n_cases: int, *, drop_last: BOOL) -> tuple[I64, I64, I64]:
    """The item rows of every report: each version repeats its case's list, minus the last if ``drop_last``.

    Args:
        items: the per-case lists.
        reports: the reports (``reports.case`` indexes cases).
        n_cases: number of cases.
        drop_last: per report, leave out the case's last item (only honoured when the case has > 1).

    Returns:
        (item_row, report, seq): index into ``items`` for each output row, its report index, and its
        1-based position in the case's list (FAERS ``drug_seq``).
    """
    first, count = items.first_and_count(n_cases)
    per_report = count[reports.case] - (drop_last & (count[reports.case] > 1)).astype(np.int64)
    report = np.repeat(np.arange(reports.n, dtype=np.int64), per_report)
    within = np.arange(report.size, dtype=np.int64) - np.repeat(
        np.cumsum(per_report) - per_report, per_report
    )
    return first[reports.case][report] + within, report, within + 1
