"""Matching E's disease names (MeSH-style) to the FAERS terms (MedDRA PTs) present in the data.

The public tables name diseases in MeSH style ("Diabetes Mellitus, Type 2", "Hypertension,
Pulmonary", "Leukemia"), FAERS in MedDRA style ("Type 2 diabetes mellitus", "Pulmonary
hypertension", "Leukaemia"). A disease and a FAERS term match when they have the same key at the
first of four tiers where the disease matches at all (each tier's key builds on the previous one):

1. ``case``: case folded, whitespace collapsed (``value_key_expr``).
2. ``inversion``: comma parts reversed: "Arthritis, Rheumatoid" → "rheumatoid arthritis",
   "Leukemia, Myeloid, Acute" → "acute myeloid leukemia".
3. ``spelling``: British → American (``ae``/``oe`` → ``e``: leukaemia, oedema, haemorrhage,
   oesophagitis; ``-isation`` → ``-ization``; ``sulph`` → ``sulf``; tumour, behaviour, colour,
   odour, humour; centre, fibre, litre, metre), possessive ``'s`` dropped (Crohn's → Crohn), hyphens,
   slashes and other punctuation as spaces, plural ``-ies`` → ``-y`` and a final ``s`` dropped from
   words of 4+ letters not ending in ``ss``, ``us`` or ``is`` ("HIV Infections" → "hiv infection").
4. ``word_order``: the set of words of the tier-3 key, sorted ("Colitis, Ulcerative" and MedDRA's
   "Colitis ulcerative" meet).

The keys are only for matching; the output value is the FAERS term's canonical key. Decisions: both
sides get the same rules, so a rule can only merge, never split; if a key is shared by several
FAERS terms the alphabetically first one is taken (deterministic); a disease that matches nothing
is kept as its own value (its canonical key): it is still sensitive, and the report counts it.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from knowledge.table import validate_table
from knowledge.values import value_key_expr

__all__ = ["MATCH_METHODS", "MatchReport", "match_table", "match_terms", "vocabulary_of_cases"]

#: The tiers, in the order they are tried, then the label of a disease that matched none.
MATCH_METHODS = ("case", "inversion", "spelling", "word_order", "unmatched")
_SPELLING = (
    (r"ae", "e"),
    (r"oe", "e"),
    (r"isation", "ization"),
    (r"sulph", "sulf"),
    (r"\b(tum|behavi|col|od|hum)our\b", "${1}or"),
    (r"\b(cent|fib|lit|met)re\b", "${1}er"),
    (r"'s\b", ""),
    (r"'", ""),
    (r"[^\w\s]", " "),
    (r"\b(\w{2,})ies\b", "${1}y"),
    (r"\b(\w{2,}[^siu\W])s\b", "${1}"),
    (r"\s+", " "),
)


@dataclass(frozen=True, kw_only=True, slots=True)
class MatchReport:
    """How many distinct disease names matched a FAERS term, by tier (module docstring).

    Attributes:
        n_diseases: distinct disease names (by canonical key) offered for matching.
        by_method: (method, count) for every entry of ``MATCH_METHODS``, in that order.
        unmatched: the unmatched disease names, sorted; kept as their own (sensitive) values.
    """

    n_diseases: int
    by_method: tuple[tuple[str, int], ...]
    unmatched: tuple[str, ...]

    @property
    def n_matched(self) -> int:
        """Diseases that matched a FAERS term at some tier."""
        return self.n_diseases - len(self.unmatched)

    @property
    def share(self) -> float:
        """n_matched / n_diseases in [0, 1]; 1.0 when there is nothing to match (nothing failed)."""
        return self.n_matched / self.n_diseases if self.n_diseases else 1.0

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready summary (for report.json)."""
        return {
            "diseases": self.n_diseases,
            "matched": self.n_matched,
            "share": self.share,
            "by_method": dict(self.by_method),
            "unmatched": list(self.unmatched),
        }

    def summary(self) -> str:
        """One line: matched count and share, counts per tier, and what happened to the rest."""
        tiers = ", ".join(f"{m} {n:,}" for m, n in self.by_method if m != "unmatched")
        return (
            f"matched {self.n_matched:,} of {self.n_diseases:,} disease names to FAERS terms "
            f"({self.share:.1%}; {tiers}); {len(self.unmatched):,} unmatched kept as their own "
            "sensitive values"
        )


def _inverted(key: pl.Expr) -> pl.Expr:
    parts = key.str.split(",").list.eval(pl.element().str.strip_chars()).list.reverse()
    return parts.list.eval(pl.element().filter(pl.element() != "")).list.join(" ")


def _spelled(key: pl.Expr) -> pl.Expr:
    for pattern, replacement in _SPELLING:
        key = key.str.replace_all(pattern, replacement)
    return key.str.strip_chars()


def _word_set(key: pl.Expr) -> pl.Expr:
    words = key.str.split(" ").list.eval(pl.element().filter(pl.element() != ""))
    return words.list.unique().list.sort().list.join(" ")


def _with_keys(frame: pl.LazyFrame) -> pl.LazyFrame:
    """Add the tier keys ``case``, ``inversion``, ``spelling``, ``word_order`` from ``value``."""
    return (
        frame.with_columns(case=pl.col("value").str.to_lowercase())
        .with_columns(inversion=_inverted(pl.col("case")))
        .with_columns(spelling=_spelled(pl.col("inversion")))
        .with_columns(word_order=_word_set(pl.col("spelling")))
    )


def match_terms(diseases: pl.Series, vocabulary: pl.Series) -> tuple[pl.DataFrame, MatchReport]:
    """Map disease names to FAERS terms by case, comma inversion, spelling and word order.

    Args:
        diseases: disease names (e.g. ``E["disease"]``); nulls and blanks are ignored.
        vocabulary: the FAERS terms present in the data (INDI_PT and PT values, any case).

    Returns:
        A frame (disease Utf8, value Utf8, method Utf8), one row per distinct input name, sorted by
        disease: ``value`` is the matched term's canonical key, or the disease's own canonical key
        when ``method`` is ``"unmatched"``; and the ``MatchReport`` (counted on canonical keys).
    """
    terms = _with_keys(
        pl.LazyFrame({"value": vocabulary.cast(pl.Utf8)})
        .select(value_key_expr(pl.col("value")).alias("value"))
        .drop_nulls()
        .unique()
    )
    names = _with_keys(
        pl.LazyFrame({"disease": diseases.cast(pl.Utf8)})
        .unique()
        .with_columns(value=value_key_expr(pl.col("disease")))
        .drop_nulls("value")
    )
    tiers = MATCH_METHODS[:-1]
    for tier in tiers:
        found = terms.group_by(tier).agg(pl.col("value").min().alias(f"_{tier}"))
        names = names.join(found, on=tier, how="left")
    method = pl.lit("unmatched")
    for tier in reversed(tiers):
        method = pl.when(pl.col(f"_{tier}").is_not_null()).then(pl.lit(tier)).otherwise(method)
    mapping = (
        names.select(
            "disease",
            pl.coalesce(*(pl.col(f"_{t}") for t in tiers), pl.col("value")).alias("value"),
            method.alias("method"),
            pl.col("value").alias("_own"),
        )
        .sort("disease")
        .collect()
    )
    per_value = mapping.unique("_own", keep="first")  # every key, hence the method, follows from _own
    tally = per_value.group_by("method").len()  # at most five rows
    counts = dict(zip(tally.get_column("method").to_list(), tally.get_column("len").to_list(), strict=True))
    unmatched = per_value.filter(pl.col("method") == "unmatched").get_column("disease").sort()
    report = MatchReport(
        n_diseases=per_value.height,
        by_method=tuple((m, int(counts.get(m, 0))) for m in MATCH_METHODS),
        unmatched=tuple(unmatched.to_list()),
    )
    return mapping.drop("_own"), report


def match_table(table: pl.DataFrame, vocabulary: pl.Series) -> tuple[pl.DataFrame, MatchReport]:
    """E with its diseases replaced by the FAERS terms they match (``match_terms``).

    Two diseases of one drug that land on one term become one row with weight
    min(1, Σ w): the attacker's belief in "either of two names for one disease" is their sum.

    Returns:
        E (drug_key, disease = the canonical value, weight), sorted; and the ``MatchReport``.
    """
    table = validate_table(table)
    mapping, report = match_terms(table.get_column("disease"), vocabulary)
    matched = (
        table.lazy()
        .join(mapping.lazy().select("disease", "value"), on="disease", how="left")
        .group_by("drug_key", "value")
        .agg(pl.col("weight").sum().clip(upper_bound=1.0))
        .select("drug_key", pl.col("value").alias("disease"), "weight")
        .sort("drug_key", "disease")
        .collect()
    )
    return matched, report


def vocabulary_of_cases(cases: pl.DataFrame | pl.LazyFrame) -> pl.Series:
    """The distinct canonical INDI_PT and PT values of a cases frame (the cases.parquet contract)."""
    lazy = cases.lazy()
    values = pl.concat(
        [
            lazy.select(pl.col(c).cast(pl.List(pl.Utf8)).explode().alias("value"))
            for c in ("indications", "reactions")
        ]
    )
    return (
        values.select(value_key_expr(pl.col("value")).alias("value"))
        .drop_nulls()
        .unique()
        .sort("value")
        .collect()
    ).get_column("value")
