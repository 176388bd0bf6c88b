"""The knowledge table E: rows (drug_key, disease, weight); loading, combining, validating, writing.

SPEC §5: E holds rows (drug d, disease s, weight w). Without given weights, w(d, s) = 1/|E(d)|: the
attacker spreads a drug's diseases evenly (this reproduces the paper's Example 1: Paracetamol treats
Headache or Fever, so w = 0.5 each). Lin, Yang & Wang 2016, Table 3(b).

The frame: ``drug_key`` Utf8 (the same key as DRUG rows, ``knowledge.drug_names.name_key_expr``),
``disease`` Utf8 (the source's name, whitespace collapsed), ``weight`` Float64 in (0, 1]; unique on
(drug_key, value_key(disease)), sorted by drug_key then disease.

A run's E: ``knowledge.mining.default_table`` (mined from the released quarter), optionally
``combine_tables`` with a loaded file, ``knowledge.terms.match_table`` to FAERS terms, then
``with_combinations`` for the combination products of the data; that E is what ``knowledge.csv``
carries (``write_table``) and what ``knowledge.link`` reads.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from knowledge._csv import LINE, read_text_table
from knowledge.drug_names import name_key_expr
from knowledge.errors import KnowledgeError
from knowledge.values import value_key_expr

__all__ = [
    "E_SCHEMA",
    "combine_tables",
    "load_table",
    "validate_table",
    "with_combinations",
    "with_default_weights",
    "write_table",
]

_log = logging.getLogger(__name__)

E_SCHEMA: dict[str, type[pl.DataType]] = {"drug_key": pl.Utf8, "disease": pl.Utf8, "weight": pl.Float64}

_DRUG_NAMES = (
    "drug_key",
    "drug",
    "drugname",
    "drug_name",
    "rxnorm_name",
    "ingredient",
    "prod_ai",
    "substance",
)
_DISEASE_NAMES = ("disease", "disease_name", "disease_mesh_name", "indication", "indi_pt", "condition")
_WEIGHT_NAMES = ("weight", "w", "probability", "p")


@dataclass(frozen=True, kw_only=True, slots=True)
class _Profile:
    """A known public table: how to recognise it and which of its rows are not indications."""

    name: str
    signature: frozenset[str]
    keep: pl.Expr | None = None
    skip_empty_names: bool = False


_PROFILES = (
    # PharmacotherapyDB (Himmelstein et al. 2016): physicians classed each pair DM (disease
    # modifying), SYM (symptomatic) or NOT (non-indication); NOT rows are not knowledge of a use.
    _Profile(
        name="PharmacotherapyDB",
        signature=frozenset({"doid_id", "drugbank_id", "category"}),
        keep=pl.col("category").str.strip_chars().str.to_uppercase() != "NOT",
    ),
    # LabeledIn (Khare et al. 2014): 584 rows carry a UMLS CUI without a MeSH name, and 39
    # combination rows ("10763;5487") carry RxNorm ids without a drug name; a row without names
    # cannot be linked to FAERS, so those rows are skipped (and the count logged).
    _Profile(
        name="LabeledIn",
        signature=frozenset({"disease_cui", "disease_mesh_name", "rxnorm_name"}),
        skip_empty_names=True,
    ),
)


def _pick(path: Path, header: list[str], given: str | None, known: tuple[str, ...], role: str) -> str | None:
    """The header column for ``role``: the given name, else the first known name (case-insensitive)."""
    lowered = {c.lower(): c for c in header}
    if given is not None:
        if given not in header and given.lower() not in lowered:
            raise KnowledgeError(
                f"{path}:1: {role}_col: {given!r} not in header {header!r} (expected a column name)"
            )
        return given if given in header else lowered[given.lower()]
    return next((lowered[n] for n in known if n in lowered), None)


def _first_bad(frame: pl.DataFrame, rule: pl.Expr) -> pl.DataFrame:
    return frame.filter(rule).sort(LINE).head(1)


def load_table(
    path: str | Path,
    *,
    drug_col: str | None = None,
    disease_col: str | None = None,
    weight_col: str | None = None,
    lookup: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Load a drug → disease table E from a CSV or TSV file.

    The separator is sniffed from the header. Columns are the given ones, else the first present of
    (case-insensitive) drug: ``drug_key, drug, drugname, drug_name, rxnorm_name, ingredient, prod_ai,
    substance``; disease: ``disease, disease_name, disease_mesh_name, indication, indi_pt,
    condition``; weight (optional): ``weight, w, probability, p``. The two public tables are
    recognised by their headers: PharmacotherapyDB drops its ``NOT`` (non-indication) rows;
    LabeledIn skips its rows without a MeSH disease name.

    Drug names get the DRUG-row key (``name_key_expr``, with the optional brand → ingredient
    ``lookup``), so brand names and ingredients meet. Diseases keep their spelling (whitespace
    collapsed); two rows of one drug naming the same disease up to case are one row. Weights: when
    the file has none, w(d, s) = 1/|E(d)| over d's distinct diseases (SPEC §5); when given, a
    duplicated pair keeps its largest weight (two salts of one drug share a key).

    Args:
        path: the file.
        drug_col, disease_col, weight_col: header names overriding the sniffed ones.
        lookup: optional (name, substance) frame from ``knowledge.drug_names.load_drug_names``.

    Returns:
        E as described in the module docstring.

    Raises:
        KnowledgeError: missing file or column, an empty drug or disease name, a weight that is not
            a number in (0, 1]; the message names file, line and field.
    """
    path = Path(path)
    raw = read_text_table(path)
    header = [c for c in raw.columns if c != LINE]
    drug = _pick(path, header, drug_col, _DRUG_NAMES, "drug")
    disease = _pick(path, header, disease_col, _DISEASE_NAMES, "disease")
    weight = _pick(path, header, weight_col, _WEIGHT_NAMES, "weight")
    for role, column, known in (("drug", drug, _DRUG_NAMES), ("disease", disease, _DISEASE_NAMES)):
        if column is None:
            raise KnowledgeError(
                f"{path}:1: no {role} column in header {header!r} (expected one of {', '.join(known)}, "
                f"or pass {role}_col)"
            )
    assert drug is not None and disease is not None
    lowered = {c.lower() for c in header}
    profile = next((p for p in _PROFILES if p.signature <= lowered), None)
    if profile is not None:
        rename = {c: c.lower() for c in header if c.lower() in profile.signature and c != c.lower()}
        raw = raw.rename(rename)
        drug, disease = rename.get(drug, drug), rename.get(disease, disease)
        if profile.keep is not None:
            raw = raw.filter(profile.keep)
        if profile.skip_empty_names:
            named = value_key_expr(pl.col(disease)).is_not_null() & value_key_expr(pl.col(drug)).is_not_null()
            skipped = raw.height - (raw := raw.filter(named)).height
            _log.info(
                "%s: %s table: skipped %d rows without a drug or disease name", path, profile.name, skipped
            )
    rows = raw.select(
        LINE,
        pl.col(drug).alias("_drug_raw"),
        name_key_expr(pl.col(drug), lookup=lookup).alias("drug_key"),
        pl.col(disease).str.replace_all(r"\s+", " ").str.strip_chars().alias("disease"),
        (pl.col(weight) if weight is not None else pl.lit(None, pl.Utf8)).alias("_weight_raw"),
    )
    for field, column in (("drug_key", drug), ("disease", disease)):
        bad = _first_bad(rows, pl.col(field).is_null() | (pl.col(field).str.len_chars() == 0))
        if bad.height:
            raw_value = bad.item(0, "_drug_raw") if field == "drug_key" else None
            shown = f" {raw_value!r} normalizes to nothing" if raw_value else " empty name"
            raise KnowledgeError(
                f"{path}:{bad.item(0, LINE)}: {column}:{shown} (expected a {field.split('_')[0]} name)"
            )
    if weight is None:
        return with_default_weights(rows.select("drug_key", "disease"))
    rows = rows.with_columns(weight=pl.col("_weight_raw").str.strip_chars().cast(pl.Float64, strict=False))
    bad = _first_bad(rows, pl.col("weight").is_null() | pl.col("weight").is_nan())
    if bad.height:
        raise KnowledgeError(
            f"{path}:{bad.item(0, LINE)}: {weight}: {bad.item(0, '_weight_raw')!r} is not a number "
            "(expected a weight in (0, 1])"
        )
    bad = _first_bad(rows, (pl.col("weight") <= 0) | (pl.col("weight") > 1))
    if bad.height:
        raise KnowledgeError(
            f"{path}:{bad.item(0, LINE)}: {weight}: {bad.item(0, 'weight')!r} is outside (0, 1] "
            "(expected a weight in (0, 1])"
        )
    return _deduplicated(rows.select("drug_key", "disease", "weight"))


def _deduplicated(frame: pl.DataFrame) -> pl.DataFrame:
    """One row per (drug_key, value_key(disease)): first spelling, largest weight; sorted."""
    return (
        frame.lazy()
        .with_columns(_value=value_key_expr(pl.col("disease")))
        .group_by("drug_key", "_value", maintain_order=True)
        .agg(pl.col("disease").first(), pl.col("weight").max())
        .select("drug_key", "disease", pl.col("weight").cast(pl.Float64))
        .sort("drug_key", "disease")
        .collect()
    )


def with_default_weights(pairs: pl.DataFrame) -> pl.DataFrame:
    """E from (drug_key, disease) pairs with the default weight w(d, s) = 1/|E(d)| (SPEC §5).

    |E(d)| counts d's distinct diseases (up to case), so repeated pairs do not dilute the weight.

    Returns:
        E (drug_key, disease, weight); every weight in (0, 1], equal within a drug, summing to 1.
    """
    unique = _deduplicated(pairs.select("drug_key", "disease").with_columns(weight=pl.lit(1.0)))
    return unique.with_columns(weight=1.0 / pl.len().over("drug_key").cast(pl.Float64))


def combine_tables(*tables: pl.DataFrame) -> pl.DataFrame:
    """The union of several E (e.g. mined from FAERS and loaded from a file): one row per pair.

    A (drug_key, disease) pair in several tables, up to the disease's case, keeps its largest
    weight: the attacker holds the strongest of the beliefs on offer.

    Raises:
        KnowledgeError: a table outside the E contract (``validate_table``), or no table at all.
    """
    if not tables:
        raise KnowledgeError("combine_tables: no table given (expected at least one E)")
    checked = [validate_table(t, where=f"E #{i + 1}") for i, t in enumerate(tables)]
    return _deduplicated(pl.concat(checked))


def with_combinations(table: pl.DataFrame, drug_keys: pl.Series) -> pl.DataFrame:
    """E plus rows for the combination products among ``drug_keys``, from their ingredients' rows.

    Rule: for a combination key K = ``A\\B`` (``knowledge.drug_names``) and a disease s,
    w(K, s) = max(w(K, s) if E has it, max over K's ingredients I of w(I, s)): whoever knows that
    a patient takes a combination knows they take each ingredient. The rows are written into E (not
    applied silently while linking), so the E that travels with a release reproduces every
    P(s | case) under SPEC §5's plain rule. Keys without ``\\`` add nothing.

    Args:
        table: E.
        drug_keys: the drug keys of the data (e.g. the exploded ``drug_keys`` of the cases).

    Returns:
        E with the added rows, sorted by drug_key then disease.
    """
    table = validate_table(table)
    combinations = (
        pl.LazyFrame({"combination": drug_keys.cast(pl.Utf8)})
        .unique()
        .filter(pl.col("combination").str.contains("\\", literal=True))
        .with_columns(drug_key=pl.col("combination").str.split("\\"))
        .explode("drug_key")
    )
    added = (
        combinations.join(table.lazy(), on="drug_key", how="inner")
        .select(pl.col("combination").alias("drug_key"), "disease", "weight")
        .collect()
    )
    return _deduplicated(pl.concat([table, added]))


def validate_table(table: pl.DataFrame, *, where: str = "E") -> pl.DataFrame:
    """Check a frame against the E contract and return it with canonical column order and types.

    Raises:
        KnowledgeError: a missing column, a null or empty drug_key or disease, a weight outside
            (0, 1]; the message names ``where``, the row (0-based) and the field.
    """
    missing = [c for c in E_SCHEMA if c not in table.columns]
    if missing:
        raise KnowledgeError(f"{where}: missing columns {missing} (expected drug_key, disease, weight)")
    try:
        frame = table.select(pl.col(c).cast(t) for c, t in E_SCHEMA.items()).with_row_index("_row")
    except pl.exceptions.InvalidOperationError as exc:
        raise KnowledgeError(f"{where}: columns cannot be typed (expected Utf8, Utf8, Float64)") from exc
    rules = {
        "drug_key": pl.col("drug_key").is_null() | (pl.col("drug_key").str.strip_chars() == ""),
        "disease": pl.col("disease").is_null() | (pl.col("disease").str.strip_chars() == ""),
        "weight": pl.col("weight").is_null() | ~((pl.col("weight") > 0) & (pl.col("weight") <= 1)),
    }
    for field, rule in rules.items():
        bad = frame.filter(rule).head(1)
        if bad.height:
            raise KnowledgeError(
                f"{where}: row {bad.item(0, '_row')}: {field}: {bad.item(0, field)!r} is invalid "
                f"(expected {'a weight in (0, 1]' if field == 'weight' else 'a non-empty name'})"
            )
    return frame.drop("_row")


def write_table(table: pl.DataFrame, path: str | Path) -> None:
    """Write E as ``knowledge.csv`` (SPEC §10): columns drug_key, disease, weight; comma-separated."""
    validate_table(table).write_csv(Path(path))
