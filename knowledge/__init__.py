"""The external drug→disease knowledge table E: loaders, mining from FAERS INDI, drug-name keys.

Imports polars only; never imports ``faers_anon``, ``hierarchies`` or ``signals``.
"""

from knowledge.errors import KnowledgeError

__all__ = ["KnowledgeError"]
