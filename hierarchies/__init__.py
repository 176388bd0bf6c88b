"""Value generalization hierarchies: trees, hierarchy-free numeric intervals, bundled MeSH age tree.

Imports numpy only; never imports ``faers_anon``, ``knowledge`` or ``signals``.
"""

from hierarchies.errors import HierarchyError

__all__ = ["HierarchyError"]
