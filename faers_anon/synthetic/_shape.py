"""Shapes of a synthetic quarter: the small hand-written one and the one fitted to real FAERS.

``SMALL`` is the original generator (~150 drugs, ~150 PTs, 20 senders, 27 countries; fast tests,
the bundled demo). ``REALISTIC`` carries the figures ``scripts/fit_synthetic.py`` measures on the real
data in ``../shared/data/faers_samples`` (docs/synthetic.md lists them beside the real ones):

* vocabularies of a whole quarter (Heaps' law from the samples, β of 2022Q3's PS drugs): 7,500
  drugs, 7,300 PTs, 2,000 indication PTs, 670 senders, 70 countries; the hand-written entries take
  the top ranks (planted drugs and events stay), synthetic names (``_names``) fill the rest;
* Zipf–Mandelbrot laws ``p_r ∝ (r + q)^-s``: drugs (1.37, 19.3) from 2022Q3's whole-quarter PS drugs
  per case; PTs (1.05, 19.7) from the pooled 2024Q1/2025Q4 samples, with the top PT at 2.8 % of rows
  (2022Q3: the top PT in 9.4 % of cases, 3.35 PT rows per report); indications (1.17, 0), with
  "Product used for unknown indication" at 40 % of INDI rows; senders (2.46, 21.5) and countries
  (2.34, 1.54) from 2025Q4;
* per report (FDA 2022Q4 statistics): 4.15 drug, 3.35 reaction, 1.42 indication rows; drug and
  reaction counts 1 + negative binomial with the samples' share of single-item reports (0.31, 0.28);
* 30.4 % follow-up reports, age missing in 46 %, weight in 85 %, sex UNK/blank in 13.4 %, report
  type EXP/PER/DIR/30DAY/5DAY 47.2/47.7/4.1/1.0/0.02 %, FDA receipt on weekdays (2025Q4: 94 %).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from faers_anon.synthetic._names import company_names, drug_names, pt_names
from faers_anon.synthetic._vocab import COMPANIES, COUNTRIES, DRUGS, REACTIONS, Drug

__all__ = ["Shape", "Vocab", "SMALL", "REALISTIC", "SHAPES", "shape_named", "vocabulary", "zipf_weights"]

F64 = NDArray[np.float64]
Law = tuple[float, float]

# ISO 3166 codes beyond the small list, most reporting first (realistic countries; no shares implied).
_MORE_COUNTRIES = (
    "IE",
    "DK",
    "NO",
    "FI",
    "PT",
    "GR",
    "CZ",
    "HU",
    "RO",
    "IL",
    "SA",
    "AE",
    "TW",
    "HK",
    "SG",
    "MY",
    "TH",
    "PH",
    "VN",
    "ID",
    "NZ",
    "CL",
    "PE",
    "VE",
    "UA",
    "BG",
    "HR",
    "RS",
    "SK",
    "SI",
    "LT",
    "LV",
    "EE",
    "IS",
    "LU",
    "CY",
    "MT",
    "MA",
    "TN",
    "DZ",
    "NG",
    "KE",
    "PK",
    "BD",
    "LK",
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Shape:
    """Every number the generator draws a quarter by (defaults: the small shape).

    Laws are Zipf–Mandelbrot ``(s, q)``; None keeps the hand-written weights. Probabilities per case
    unless named per report.
    """

    name: str = "small"
    drugs_per_case: float = 3.95
    drug_dispersion: float = 1.0  # negative-binomial r of the count beyond the first drug
    drug_cap: int = 40
    reactions_per_case: float = 2.95
    reaction_dispersion: float = 1.5
    reaction_cap: int = 30
    n_drugs: int = len(DRUGS)
    n_pts: int = len(REACTIONS)
    n_indications: int = 0  # synthetic indication PTs beyond the hand-written label indications
    n_senders: int = len(COMPANIES)
    n_countries: int = len(COUNTRIES)
    drug_law: Law | None = None
    pt_law: Law | None = None
    top_pt_share: float = 0.0
    indication_law: Law = (1.17, 0.0)
    sender_law: Law = (1.0, 1.0)
    country_law: Law | None = None
    label_indication: float = 0.55  # per drug row: a label indication, else the unknown filler, else none
    unknown_indication: float = 0.12
    new_case: float = 0.5  # version 1 falls inside the quarter
    versions: tuple[float, float, float] = (0.86, 0.11, 0.03)  # 1, 2, 3 versions in the quarter
    age_known: tuple[float, float] = (0.88, 0.675)  # child, adult
    weight_known: tuple[float, float] = (0.45, 0.25)
    sex_unknown: tuple[float, float] = (0.04, 0.10)  # cumulative: UNK below the first, blank below the second
    rept: tuple[float, float, float, float, float] = (0.738, 0.17, 0.082, 0.006, 0.004)  # EXP PER DIR 30D 5D
    weekdays: bool = False  # FDA receipt dates on Monday–Friday only


SMALL = Shape()
REALISTIC = Shape(
    name="realistic",
    drugs_per_case=4.15,
    drug_dispersion=0.69,
    drug_cap=150,
    reactions_per_case=3.35,
    reaction_dispersion=1.16,
    reaction_cap=100,
    n_drugs=7_500,
    n_pts=7_300,
    n_indications=2_000,
    n_senders=670,
    n_countries=len(COUNTRIES) + len(_MORE_COUNTRIES),
    drug_law=(1.37, 19.3),
    pt_law=(1.05, 19.7),
    top_pt_share=0.028,
    indication_law=(1.17, 0.0),
    sender_law=(2.46, 21.5),
    country_law=(2.34, 1.54),
    label_indication=0.205,
    unknown_indication=0.137,
    new_case=0.74,
    versions=(0.95, 0.04, 0.01),
    age_known=(0.75, 0.52),
    weight_known=(0.30, 0.14),
    sex_unknown=(0.003, 0.134),
    rept=(0.455, 0.477, 0.058, 0.0098, 0.0002),  # DIR above 4.1 %: follow-ups of DIR become EXP
    weekdays=True,
)
SHAPES: dict[str, Shape] = {"small": SMALL, "realistic": REALISTIC}


def shape_named(shape: str | Shape) -> Shape:
    """``"small"``/``"realistic"`` or a ``Shape`` → the Shape (ValueError for another name)."""
    if isinstance(shape, Shape):
        return shape
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {', '.join(SHAPES)}; got {shape!r}")
    return SHAPES[shape]


def zipf_weights(size: int, s: float, *, offset: float = 0.0) -> F64:
    """Probabilities ``p_r ∝ (r + offset)^-s`` over ranks r = 1..size (sums to 1)."""
    w = (np.arange(1, size + 1, dtype=np.float64) + offset) ** -s
    return w / w.sum()


@dataclass(frozen=True, slots=True)
class Vocab:
    """The values a shape draws from; hand-written entries first (their indices never change)."""

    drugs: tuple[Drug, ...]
    reactions: tuple[str, ...]
    companies: tuple[tuple[str, str], ...]
    countries: tuple[tuple[str, float], ...]
    drug_weight: F64  # popularity of each drug (before the demographic profile)
    pt_weight: F64 | None  # background PT law, or None for ``_items``' hand-written law
    top_pt_share: float
    company_weight: F64


@functools.cache
def vocabulary(shape: Shape) -> Vocab:
    """The shape's vocabulary: the hand-written one, extended with synthetic names when larger."""
    rng = np.random.default_rng(16)  # fixed: the same shape always names the same values
    extra_drugs = max(0, shape.n_drugs - len(DRUGS))
    indications = pt_names(shape.n_indications, rng, avoid=REACTIONS, style="indication")
    drugs = DRUGS + tuple(_synthetic_drugs(drug_names(extra_drugs, rng), indications, shape, rng))
    reactions = REACTIONS + tuple(pt_names(max(0, shape.n_pts - len(REACTIONS)), rng, avoid=REACTIONS))
    companies = COMPANIES + tuple(
        (n, n.replace(" ", "")) for n in company_names(shape.n_senders - len(COMPANIES), rng)
    )
    countries = COUNTRIES + tuple((c, 0.0) for c in _MORE_COUNTRIES[: shape.n_countries - len(COUNTRIES)])
    if shape.country_law is not None:
        law = zipf_weights(len(countries), *shape.country_law[:1], offset=shape.country_law[1])
        countries = tuple((c, float(p)) for (c, _), p in zip(countries, law, strict=True))
    if shape.drug_law is None:
        drug_weight = np.array([d.weight for d in DRUGS], dtype=np.float64)
    else:  # hand-written drugs take the top ranks in their popularity order
        by_weight = np.argsort(-np.array([d.weight for d in DRUGS]), kind="stable")
        rank = np.r_[np.argsort(by_weight), np.arange(len(DRUGS), len(drugs))]
        drug_weight = zipf_weights(len(drugs), shape.drug_law[0], offset=shape.drug_law[1])[rank]
    pt_weight = (
        None
        if shape.pt_law is None
        else zipf_weights(len(reactions), shape.pt_law[0], offset=shape.pt_law[1])
    )
    company_weight = (
        1.0 / (np.arange(len(companies), dtype=np.float64) + 2.0)
        if shape is SMALL or shape.n_senders == len(COMPANIES)
        else zipf_weights(len(companies), shape.sender_law[0], offset=shape.sender_law[1])
    )
    return Vocab(
        drugs, reactions, companies, countries, drug_weight, pt_weight, shape.top_pt_share, company_weight
    )


def _synthetic_drugs(
    names: list[tuple[str, str]], indications: list[str], shape: Shape, rng: np.random.Generator
) -> list[Drug]:
    """Drugs with synthetic names: usual route oral/sc/iv/…, 1–3 label indications by the indication law."""
    routes = ("oral", "oral", "oral", "sc", "iv", "im", "inh", "td")
    pool = indications or [i for d in DRUGS for i in d.indications.split("|")]
    law = zipf_weights(len(pool), shape.indication_law[0], offset=shape.indication_law[1])
    out = []
    for brand, ai in names:
        terms = rng.choice(len(pool), size=int(rng.integers(1, 4)), p=law, replace=False)
        dose = f"{int(rng.choice([1, 5, 10, 20, 25, 50, 100, 200, 500]))} MG"
        out.append(
            Drug(
                brand,
                ai,
                routes[int(rng.integers(0, len(routes)))],
                dose,
                "QD",
                "|".join(pool[t] for t in terms),
                1.0,
                "any",
            )
        )
    return out
