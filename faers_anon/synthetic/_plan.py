"""What the synthetic quarter plants on purpose: drug–event signals and malformed rows."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PlantedSignal", "PLANTED_SIGNALS", "MALFORMED_KINDS", "Quarter"]


@dataclass(frozen=True, kw_only=True, slots=True)
class PlantedSignal:
    """A drug–event pair made disproportionate inside one demographic stratum.

    A case is *in the stratum* when its latest version's reported sex and age (converted to years)
    meet the condition; a case whose latest version lacks the value is outside. For every case that
    takes ``drug`` (by brand, see ``_vocab.DRUGS``): inside the stratum ``event`` is added with
    probability ``p_in``; outside, each background ``event`` row of the case is kept with probability
    ``p_out_keep`` (1.0 leaves the background alone; below 1 makes the pair rarer than background
    there, the opposite direction).

    Args:
        drug: brand name as in ``DRUGS`` (the ``drugname``); ``prod_ai`` is the drug's ingredient.
        event: MedDRA-style PT, as written in REAC.
        sex: ``"F"``, ``"M"`` or None (either).
        age_min: lower bound in years (inclusive), or None.
        age_max: upper bound in years (exclusive), or None.
        p_in: probability of adding the event to a drug case inside the stratum, in [0, 1].
        p_out_keep: probability of keeping a background event row outside the stratum, in [0, 1].
    """

    drug: str
    event: str
    sex: str | None = None
    age_min: float | None = None
    age_max: float | None = None
    p_in: float = 0.3
    p_out_keep: float = 1.0

    def __post_init__(self) -> None:
        if self.sex not in (None, "F", "M"):
            raise ValueError(f"sex must be 'F', 'M' or None; got {self.sex!r}")
        for name in ("p_in", "p_out_keep"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1]; got {value!r}")

    @property
    def stratum(self) -> str:
        """The condition in words, e.g. ``sex = F, age >= 65`` or ``all``."""
        parts = []
        if self.sex is not None:
            parts.append(f"sex = {self.sex}")
        if self.age_min is not None:
            parts.append(f"age >= {self.age_min:g}")
        if self.age_max is not None:
            parts.append(f"age < {self.age_max:g}")
        return ", ".join(parts) or "all"


PLANTED_SIGNALS: tuple[PlantedSignal, ...] = (
    # The seven MedWatch rules of Lin et al. 2016, Table 5, inside their demographic condition.
    PlantedSignal(drug="AVANDIA", event="Myocardial infarction", age_min=18, p_in=0.30),
    PlantedSignal(drug="AVANDIA", event="Death", age_min=18, p_in=0.25),
    PlantedSignal(drug="AVANDIA", event="Cerebrovascular accident", age_min=18, p_in=0.25),
    PlantedSignal(drug="TYSABRI", event="Progressive multifocal leukoencephalopathy", age_min=18, p_in=0.30),
    PlantedSignal(drug="ZELNORM", event="Cerebrovascular accident", sex="F", p_in=0.30),
    PlantedSignal(drug="WARFARIN", event="Myocardial infarction", age_min=60, p_in=0.25),
    PlantedSignal(drug="REVATIO", event="Death", age_max=18, p_in=0.40),
    # Stratified only: zolpidem and falls in elderly women; drug users elsewhere fall less than
    # background, so over all cases the pair does not reach PRR 2.
    PlantedSignal(drug="AMBIEN", event="Fall", sex="F", age_min=65, p_in=0.35, p_out_keep=0.0),
)

# The malformed rows a quarter carries when ``malformed=True`` (one of each, appended as fresh cases
# whose caseids follow the generated ones; no other row refers to them):
MALFORMED_KINDS: dict[str, str] = {
    "demo_field_count": "DEMO row with 26 fields: an embedded '$' in mfr_num (as in 2012Q1)",
    "demo_primaryid_not_numeric": "DEMO row whose primaryid is not a number (e.g. '2512345X1')",
    "demo_duplicate_primaryid": "DEMO row repeating an existing report's line exactly (same primaryid)",
    "demo_unknown_age_cod": "DEMO row with age_cod 'YRS' (not a FAERS age unit)",
    "drug_orphan": "DRUG row whose primaryid has no DEMO row",
    "reac_orphan": "REAC row whose primaryid has no DEMO row",
}


@dataclass(frozen=True, slots=True)
class Quarter:
    """A FAERS quarter label, e.g. ``2025Q1``.

    Args:
        year: four-digit year, 2014 or later (the modern 2014Q3+ layout is written).
        q: quarter 1..4.
    """

    year: int
    q: int

    @classmethod
    def parse(cls, label: str) -> Quarter:
        """Parse ``"2025Q1"`` (case-blind).

        Raises:
            ValueError: when the label is not ``YYYYQn`` with n in 1..4 and year >= 2014.
        """
        text = label.strip().upper()
        if len(text) != 6 or text[4] != "Q" or not text[:4].isdigit() or text[5] not in "1234":
            raise ValueError(f"quarter must look like 2025Q1; got {label!r}")
        year, q = int(text[:4]), int(text[5])
        if (year, q) < (2014, 3):
            raise ValueError(f"quarter must be 2014Q3 or later (modern layout); got {label!r}")
        return cls(year, q)

    @property
    def label(self) -> str:
        """``2025Q1``."""
        return f"{self.year}Q{self.q}"

    @property
    def suffix(self) -> str:
        """The file-name suffix, ``25Q1``."""
        return f"{self.year % 100:02d}Q{self.q}"
