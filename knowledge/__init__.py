"""The external drug→disease knowledge table E: loaders, mining from FAERS INDI, drug-name keys.

Imports polars (and numpy) only; never imports ``faers_anon``, ``hierarchies`` or ``signals``.
"""

from knowledge.drug_names import (
    SALT_WORDS,
    drug_key_expr,
    load_drug_names,
    name_key_expr,
    normalize_name_expr,
)
from knowledge.errors import KnowledgeError
from knowledge.link import SENSITIVE_ATTRIBUTES, case_value_probabilities, confidence
from knowledge.table import E_SCHEMA, load_table, validate_table, with_default_weights, write_table
from knowledge.values import value_key_expr

__all__ = [
    "E_SCHEMA",
    "SALT_WORDS",
    "SENSITIVE_ATTRIBUTES",
    "KnowledgeError",
    "case_value_probabilities",
    "confidence",
    "drug_key_expr",
    "load_drug_names",
    "load_table",
    "name_key_expr",
    "normalize_name_expr",
    "validate_table",
    "value_key_expr",
    "with_default_weights",
    "write_table",
]
