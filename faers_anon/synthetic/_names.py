"""Synthetic names for the realistic vocabularies: drugs, MedDRA-style terms, senders.

Names are built from syllables, so they read like drug names and terms but are no real product or
MedDRA term (nothing is taken from FAERS). Drawn without replacement from all syllable combinations,
so every name is unique; ``avoid`` removes collisions with the hand-written vocabulary.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["drug_names", "pt_names", "company_names"]

_SYLLABLES = (
    "ba",
    "ce",
    "da",
    "fe",
    "go",
    "ka",
    "li",
    "lo",
    "ma",
    "ne",
    "no",
    "pa",
    "ri",
    "ro",
    "sa",
    "ta",
    "te",
    "vi",
    "vo",
    "xa",
    "ze",
    "zo",
    "tra",
    "pro",
)
_STEMS = (
    "mab",
    "nib",
    "pril",
    "sartan",
    "olol",
    "azole",
    "cillin",
    "statin",
    "tide",
    "vir",
    "dronate",
    "floxacin",
    "gliptin",
    "parin",
    "setron",
    "tinib",
    "zumab",
    "vastatin",
    "oxetine",
    "pine",
)
_SALTS = ("", "", "", " HYDROCHLORIDE", " SODIUM", " MALEATE", " ACETATE")
_TERM_WORDS = (
    "disorder",
    "syndrome",
    "increased",
    "decreased",
    "abnormal",
    "pain",
    "infection",
    "haemorrhage",
    "oedema",
    "inflammation",
    "reaction",
    "neoplasm",
    "injury",
    "failure",
    "stenosis",
    "deficiency",
    "toxicity",
    "lesion",
    "atrophy",
    "spasm",
)
_INDICATION_WORDS = (
    "disease",
    "carcinoma",
    "deficiency",
    "disorder",
    "infection",
    "syndrome",
    "prophylaxis",
    "arthritis",
    "insufficiency",
    "hypertension",
)
_COMPANY_WORDS = ("PHARMA", "LABS", "THERAPEUTICS", "BIOSCIENCES", "HEALTHCARE", "GENERICS")


def _words(n: int, syllables: int, rng: np.random.Generator) -> list[str]:
    """``n`` distinct words of ``syllables`` syllables (``n`` at most 24**syllables)."""
    base = len(_SYLLABLES)
    codes = rng.choice(base**syllables, size=n, replace=False)
    out = []
    for code in codes.tolist():
        parts = []
        for _ in range(syllables):
            code, digit = divmod(code, base)
            parts.append(_SYLLABLES[digit])
        out.append("".join(parts))
    return out


def drug_names(n: int, rng: np.random.Generator) -> list[tuple[str, str]]:
    """``n`` (brand, ingredient) pairs, e.g. ``("ZOLITRA", "KAVOTINIB HYDROCHLORIDE")``."""
    brands = _words(n, 3, rng)
    roots = _words(n, 3, rng)
    stems = rng.integers(0, len(_STEMS), n)
    salts = rng.integers(0, len(_SALTS), n)
    return [
        (b.upper(), f"{r}{_STEMS[s]}".upper() + _SALTS[t])
        for b, r, s, t in zip(brands, roots, stems.tolist(), salts.tolist(), strict=True)
    ]


def pt_names(n: int, rng: np.random.Generator, *, avoid: Iterable[str], style: str = "reaction") -> list[str]:
    """``n`` distinct MedDRA-style terms, e.g. ``"Vetrosis increased"`` (indications: ``"Kalo disease"``)."""
    words = _TERM_WORDS if style == "reaction" else _INDICATION_WORDS
    if n <= 0:
        return []
    codes = rng.choice(len(_SYLLABLES) ** 2 * len(words) * 2, size=n, replace=False)
    roots = _words(len(_SYLLABLES) ** 2, 2, np.random.default_rng(0))
    taken = set(avoid)
    out = []
    for code in codes.tolist():
        code, tail = divmod(code, 2)
        root, word = divmod(code, len(words))
        name = roots[root].capitalize() + ("osis " if tail else "ia ") + words[word]
        if name not in taken:
            out.append(name)
    return out


def company_names(n: int, rng: np.random.Generator) -> list[str]:
    """``n`` distinct sender names, e.g. ``"VOKALI PHARMA"``."""
    if n <= 0:
        return []
    firms = _words(n, 3, rng)
    kinds = rng.integers(0, len(_COMPANY_WORDS), n)
    return [f"{f.upper()} {_COMPANY_WORDS[k]}" for f, k in zip(firms, kinds.tolist(), strict=True)]
