"""Drug-name normalization: the ``drug_key`` that links FAERS DRUG rows to the knowledge table E.

SPEC §3: the key is ``prod_ai`` when present, else ``drugname``; upper-cased, whitespace collapsed,
dose text and trailing punctuation removed. The verbatim names stay in their own columns. Everything
here is a polars expression, so ingest applies it to millions of rows at once, and the loaders of E
apply the very same expression to E's drug names, so that both sides meet on one key.

The key of one name (``name_key_expr``), step by step:

1. ``normalize_name_expr``: upper-case; parenthesized text dropped (``(200 MG)``, ``(ROSIGLITAZONE
   MALEATE)``, one level of nesting, and an unclosed ``(`` to the end); WHO Drug record numbers
   dropped (``VITAMIN A /00056001/``); trailing dose text dropped (a number with a unit and all
   after it: ``AVANDIA 4 MG TABLETS`` → ``AVANDIA``); whitespace collapsed; leading/trailing
   punctuation stripped.
2. Optional lookup (``load_drug_names``): a whole name found in the lookup is replaced by its
   preferred substance name (brand → ingredient, INN → USAN: ``AVANDIA`` → ``ROSIGLITAZONE MALEATE``,
   ``PARACETAMOL`` → ``ACETAMINOPHEN``).
3. Combination products: `` AND ``, ``+``, ``&``, ``;``, `` W/`` (with), ``\\`` and a ``/``
   between two letters separate ingredients (``X AND Y``, ``X/Y``, ``X\\Y``). Not separators: a
   ``/`` next to a digit (``NOVOLOG MIX 70/30``), a comma (``ESTROGENS, CONJUGATED`` is one
   ingredient), and any of them between two single letters (``SENNOSIDES A AND B`` → ``SENNOSIDES
   A-B``, ``GAMMAGARD S/D`` → ``GAMMAGARD S-D``). Each ingredient is looked up again (step 2) and
   stripped (step 4); duplicates are dropped and the ingredients sorted and joined with ``\\``
   (FAERS's own ``prod_ai`` separator): ``Y/X``, ``X AND Y`` and ``X\\Y`` all give ``X\\Y``.
4. Per ingredient: trailing dose-form words (``FORM_WORDS``: ``TABLETS``, ``USP``, ``CREAM``,
   ``XR``…) are removed. Then the salt rule: trailing words from ``SALT_WORDS`` (counter-ions,
   hydrates, simple esters: ``HYDROCHLORIDE``, ``SODIUM``, ``MALEATE``, ``CITRATE``,
   ``TRIHYDRATE``, ``PROPIONATE``…) are removed, then leading cations (``SODIUM``, ``POTASSIUM``,
   ``CALCIUM``, ``MAGNESIUM``) when a name follows them, so ``ROSIGLITAZONE MALEATE``, ``METFORMIN
   HCL``, ``SODIUM VALPROATE`` and ``VALPROATE SODIUM`` meet their parent moiety. A name made only
   of salt words (and mineral cations such as ``FERROUS``, ``ZINC``) is a salt itself and is kept
   whole: ``SODIUM CHLORIDE``, ``POTASSIUM CHLORIDE``, ``CALCIUM CARBONATE``, ``FERROUS SULFATE``,
   ``MAGNESIUM SULFATE``. ``LITHIUM`` is not in the list, so ``LITHIUM CARBONATE`` → ``LITHIUM``
   (the drug is the ion). Prodrug moieties (``MOFETIL``, ``DISOPROXIL``, ``ALAFENAMIDE``) are kept:
   they name different substances.

Decisions: the rule is lexical and conservative (only whole trailing/leading words); a name it does
not recognise keeps its normalized spelling, so nothing is lost, only left unlinked.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from knowledge._csv import LINE, read_text_table
from knowledge.errors import KnowledgeError

__all__ = [
    "FORM_WORDS",
    "SALT_WORDS",
    "drug_key_expr",
    "load_drug_names",
    "name_key_expr",
    "normalize_name_expr",
]

_PARENTHESES = r"\([^()]*\)"
_UNCLOSED = r"\([^()]*$"
_WHO_DRUG_CODE = r"\s*/\d{5,}/?"  # WHO Drug record numbers some reporters append: "VITAMIN A /00056001/"
_TRAILING_PUNCT = r"[\s.,;:/\\\-_*#+&]+$"
_LEADING_PUNCT = r"^[\s.,;:/\\\-_*#+&]+"
_UNITS = r"MG|MCG|UG|µG|G|GM|GRAMS?|ML|L|IU|MIU|UNITS?|MEQ|MMOL|%"
_DOSE = rf"\s+\d[\d.,/]*\s*(?:{_UNITS})(?:[\s/].*)?$"

#: Counter-ions, hydrates and simple esters removed from the end of an ingredient name (rule 4).
SALT_WORDS: tuple[str, ...] = (
    "ACETATE", "ACETONIDE", "ANHYDROUS", "BENZOATE", "BESILATE", "BESYLATE", "BICARBONATE",
    "BISULFATE", "BITARTRATE", "BROMIDE", "CALCIUM", "CAMSYLATE", "CARBONATE", "CHLORIDE", "CITRATE",
    "DIHYDRATE", "DIHYDROCHLORIDE", "DIPOTASSIUM", "DIPROPIONATE", "DISODIUM", "EDISYLATE", "ERBUMINE",
    "ETHANOLATE", "FUMARATE", "FUROATE", "GLUCONATE", "HCL", "HEMIFUMARATE", "HEMIHYDRATE",
    "HEPTAHYDRATE", "HEXAHYDRATE", "HYCLATE", "HYDRATE", "HYDROBROMIDE", "HYDROCHLORIDE", "IODIDE",
    "ISETHIONATE", "LACTATE", "MAGNESIUM", "MALATE", "MALEATE", "MEGLUMINE", "MESILATE", "MESYLATE",
    "MONOHYDRATE", "MONOSODIUM", "NAPSYLATE", "NITRATE", "OXALATE", "PAMOATE", "PENTAHYDRATE",
    "PHOSPHATE", "POTASSIUM", "PROPIONATE", "SACCHARATE", "SESQUIHYDRATE", "SODIUM", "STEARATE",
    "SUCCINATE", "SULFATE", "SULPHATE", "TARTRATE", "TOSYLATE", "TRIHYDRATE", "TRISODIUM",
    "TROMETHAMINE", "VALERATE", "XINAFOATE",
)  # fmt: skip
#: Dose-form and pharmacopoeia words removed from the end of an ingredient name (rule 4).
FORM_WORDS: tuple[str, ...] = (
    "BP", "CAP", "CAPS", "CAPSULE", "CAPSULES", "CHEWABLE", "COATED", "CR", "CREAM", "DELAYED", "DR",
    "DROPS", "ELIXIR", "EP", "ER", "EXTENDED", "FILM-COATED", "GEL", "INHALER", "INJ", "INJECTABLE",
    "INJECTION", "LOTION", "ODT", "OINTMENT", "ORAL", "PATCH", "POWDER", "RELEASE", "SOLN", "SOLUTION",
    "SPRAY", "SR", "SUSP", "SUSPENSION", "SYRUP", "TAB", "TABLET", "TABLETS", "TABS", "TOPICAL", "USP",
    "XL", "XR",
)  # fmt: skip
#: Cations removed from the start of a name (``SODIUM VALPROATE`` → ``VALPROATE``).
_LEADING_CATIONS = ("SODIUM", "POTASSIUM", "CALCIUM", "MAGNESIUM")
#: Mineral cations: not stripped, but a name of these plus salt words is a salt itself.
_MINERAL_CATIONS = ("ALUMINUM", "ALUMINIUM", "AMMONIUM", "FERRIC", "FERROUS", "ZINC", "CUPRIC")

_SALT_ALT = "|".join(SALT_WORDS)
_ANY_SALT_ALT = "|".join((*SALT_WORDS, *_MINERAL_CATIONS))
_ALL_SALT = rf"^(?:{_ANY_SALT_ALT})(?: (?:{_ANY_SALT_ALT}))*$"
_TRAILING_SALTS = rf"^(.+?)(?: (?:{_SALT_ALT}))+$"
_TRAILING_FORMS = rf"^(.+?)(?: (?:{'|'.join(FORM_WORDS)}))+$"
_LEADING_CATION = rf"^(?:(?:{'|'.join(_LEADING_CATIONS)}) )+([A-Z].*)$"
_LETTER_PAIR = r"\b([A-Z])(?:\s*[+&/]\s*|\s+AND\s+)([A-Z])\b"  # "SENNOSIDES A+B", "S/D": one ingredient
_COMBINATION_SEPARATORS = (r"\s+AND\s+", r"\s*\+\s*", r"\s*&\s*", r"\s*;\s*", r"\s+W/\s*", r"\s*\\\s*")
_SLASH_BETWEEN_LETTERS = r"([A-Z])\s*/\s*([A-Z])"


def normalize_name_expr(name: pl.Expr) -> pl.Expr:
    """Normalize one free-text drug name column (rule 1 of the module docstring).

    Steps: upper-case; drop parenthesized text such as ``(200 MG)`` or ``(ROSIGLITAZONE MALEATE)``;
    drop trailing dose text (a number followed by a unit, and everything after it); collapse runs of
    whitespace; strip leading/trailing punctuation and spaces. A name that becomes empty is null.

    Args:
        name: a Utf8 expression of verbatim names.

    Returns:
        A Utf8 expression; null where the input is null or normalizes to nothing.
    """
    cleaned = (
        name.str.to_uppercase()
        .str.replace_all(_PARENTHESES, " ")
        .str.replace_all(_PARENTHESES, " ")  # twice: one level of nesting, "(HYPROMELLOSE (4000 MPA.S))"
        .str.replace(_UNCLOSED, " ")
        .str.replace_all(_WHO_DRUG_CODE, " ")
        .str.replace_all(r"\s+", " ")
        .str.replace(_DOSE, "")
        .str.replace_all(_TRAILING_PUNCT, "")
        .str.replace_all(_LEADING_PUNCT, "")
        .str.strip_chars()
    )
    return pl.when(cleaned.str.len_chars() > 0).then(cleaned).otherwise(None)


def _strip_salts(ingredient: pl.Expr) -> pl.Expr:
    """Rule 4 on one ingredient: trailing form words; then, unless only salt words are left,
    trailing salt words and leading cations."""
    formless = ingredient.str.replace(_TRAILING_FORMS, "${1}")
    stripped = formless.str.replace(_TRAILING_SALTS, "${1}").str.replace(_LEADING_CATION, "${1}")
    return pl.when(formless.str.contains(_ALL_SALT)).then(formless).otherwise(stripped)


def _looked_up(name: pl.Expr, lookup: pl.DataFrame | None) -> pl.Expr:
    """Rule 2: replace a name found in the lookup by its substance; other names unchanged."""
    if lookup is None:
        return name
    return name.replace(lookup.get_column("name"), lookup.get_column("substance"))


def _key(name: pl.Expr, lookup: pl.DataFrame | None) -> pl.Expr:
    """Rules 1–4 applied row by row (``name_key_expr`` applies them to the distinct names only)."""
    whole = _looked_up(normalize_name_expr(name), lookup).str.replace_all(_LETTER_PAIR, "${1}-${2}")
    for separator in _COMBINATION_SEPARATORS:
        whole = whole.str.replace_all(separator, "\\")
    for _ in range(2):  # twice: "A/B/C" with one-letter words overlaps in one pass
        whole = whole.str.replace_all(_SLASH_BETWEEN_LETTERS, "${1}\\${2}")
    ingredient = pl.element().str.replace_all(_TRAILING_PUNCT, "").str.replace_all(_LEADING_PUNCT, "")
    ingredient = _strip_salts(_looked_up(ingredient.str.strip_chars(), lookup))
    key = (
        whole.str.split("\\")
        .list.eval(ingredient.filter(ingredient.str.len_chars() > 0))
        .list.unique()
        .list.sort()
        .list.join("\\")
    )
    return pl.when(key.str.len_chars() > 0).then(key).otherwise(None)


def name_key_expr(name: pl.Expr, *, lookup: pl.DataFrame | None = None) -> pl.Expr:
    """The key of one drug-name column: rules 1–4 of the module docstring.

    The rules run once per distinct name and are mapped back with ``replace`` (a DRUG table of
    millions of rows holds some ten thousand distinct names; the regex and list work dominate).

    Args:
        name: a Utf8 expression of verbatim drug or ingredient names.
        lookup: optional (name, substance) frame from ``load_drug_names``.

    Returns:
        A Utf8 expression: sorted, ``\\``-joined ingredient keys; null where nothing is left.
    """
    distinct = name.cast(pl.Utf8).unique(maintain_order=True)  # same order at both uses
    return name.cast(pl.Utf8).replace(distinct, _key(distinct, lookup))


def drug_key_expr(prod_ai: pl.Expr, drugname: pl.Expr, *, lookup: pl.DataFrame | None = None) -> pl.Expr:
    """The ``drug_key`` of a DRUG row: the key of ``prod_ai`` when present, else of ``drugname``.

    Args:
        prod_ai: active-ingredient column (absent before 2014Q3: pass ``pl.lit(None, pl.Utf8)``).
        drugname: verbatim drug name column.
        lookup: optional (name, substance) frame from ``load_drug_names`` (brand → ingredient).

    Returns:
        A Utf8 expression; null only when both names are missing or empty after normalization.
    """
    return pl.coalesce(name_key_expr(prod_ai, lookup=lookup), name_key_expr(drugname, lookup=lookup))


def load_drug_names(path: str | Path) -> pl.DataFrame:
    """Read a name → substance lookup, such as FDA's UNII names file (``unii_names_bn_of.tsv``).

    Columns are matched case-insensitively: ``Name`` and ``Display Name`` (the FDA layout) or
    ``name`` and ``substance``. Both sides are normalized with ``normalize_name_expr``. Decisions:
    rows whose name equals their substance are dropped (they change nothing); a name that
    normalizes to two different substances is ambiguous and dropped rather than guessed; rows with
    an empty name or substance are skipped (the FDA file has none).

    Args:
        path: a CSV or TSV file (separator sniffed from the header line).

    Returns:
        A frame (name Utf8, substance Utf8), unique on name, sorted by name.

    Raises:
        KnowledgeError: the file is missing, unreadable or lacks the two columns.
    """
    raw = read_text_table(path).drop(LINE)
    columns = {c.strip().lower(): c for c in raw.columns}
    name_col = columns.get("name")
    substance_col = columns.get("display name", columns.get("substance"))
    if name_col is None or substance_col is None:
        raise KnowledgeError(
            f"{path}:1: drug-name lookup header {list(raw.columns)!r} lacks its columns "
            "(expected 'Name' and 'Display Name', or 'name' and 'substance')"
        )
    return (
        raw.lazy()
        .select(
            name=normalize_name_expr(pl.col(name_col)),
            substance=normalize_name_expr(pl.col(substance_col)),
        )
        .drop_nulls()
        .filter(pl.col("name") != pl.col("substance"))
        .unique()
        .filter(pl.len().over("name") == 1)
        .sort("name")
        .collect()
    )
