"""The external drug→disease knowledge table E: loaders, mining from FAERS INDI, drug-name keys.

Imports polars (and numpy) only; never imports ``faers_anon``, ``hierarchies`` or ``signals``.
Modules: ``table`` (E: load, validate, write, default weights), ``drug_names`` (the drug_key),
``terms`` (disease names → FAERS terms), ``mining`` (E from INDI ⋈ DRUG), ``link`` (P(s | case),
conf(q → s, E)), ``values`` (the canonical key of a sensitive value).
"""

from knowledge.drug_names import (
    FORM_WORDS,
    SALT_WORDS,
    drug_key_expr,
    load_drug_names,
    name_key_expr,
    normalize_name_expr,
)
from knowledge.errors import KnowledgeError
from knowledge.link import SENSITIVE_ATTRIBUTES, case_value_probabilities, confidence
from knowledge.mining import FILLER_TERMS, MiningConfig, default_table, mine_from_indications
from knowledge.table import (
    E_SCHEMA,
    combine_tables,
    load_table,
    validate_table,
    with_combinations,
    with_default_weights,
    write_table,
)
from knowledge.terms import MATCH_METHODS, MatchReport, match_table, match_terms, vocabulary_of_cases
from knowledge.values import value_key_expr

__all__ = [
    "E_SCHEMA",
    "FILLER_TERMS",
    "FORM_WORDS",
    "MATCH_METHODS",
    "SALT_WORDS",
    "SENSITIVE_ATTRIBUTES",
    "KnowledgeError",
    "MatchReport",
    "MiningConfig",
    "case_value_probabilities",
    "combine_tables",
    "confidence",
    "default_table",
    "drug_key_expr",
    "load_drug_names",
    "load_table",
    "match_table",
    "match_terms",
    "mine_from_indications",
    "name_key_expr",
    "normalize_name_expr",
    "validate_table",
    "value_key_expr",
    "vocabulary_of_cases",
    "with_combinations",
    "with_default_weights",
    "write_table",
]
