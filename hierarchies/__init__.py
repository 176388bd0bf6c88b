"""Value generalization hierarchies: trees, hierarchy-free numeric intervals, bundled MeSH age tree.

Imports numpy only; never imports ``faers_anon``, ``knowledge`` or ``signals``.

Public API (docs/architecture.md, "Hierarchies"): :class:`Hierarchy` (LCA, heights, leaves, node ranges,
vectorized ``leaf_of``/``cover``/``lca_pairs``), the builders :func:`from_rows`, :func:`from_levels`,
:func:`load_csv`, the bundled trees :func:`mesh_age_tree`, :func:`paper_example_age_tree`,
:func:`sex_tree`, :func:`weight_bands`, :func:`age_from_decade` for ages in decades, and the module
:mod:`hierarchies.interval` for hierarchy-free numeric generalization.
"""

from hierarchies import interval
from hierarchies.bands import band_name, weight_bands
from hierarchies.build import NodeRow, from_levels, from_rows
from hierarchies.errors import HierarchyError
from hierarchies.loader import load_csv
from hierarchies.mesh import NEWBORN_END_YEARS, age_from_decade, mesh_age_tree, paper_example_age_tree
from hierarchies.sex import sex_tree
from hierarchies.tree import MISSING, Hierarchy

__all__ = [
    "MISSING",
    "NEWBORN_END_YEARS",
    "Hierarchy",
    "HierarchyError",
    "NodeRow",
    "age_from_decade",
    "band_name",
    "from_levels",
    "from_rows",
    "interval",
    "load_csv",
    "mesh_age_tree",
    "paper_example_age_tree",
    "sex_tree",
    "weight_bands",
]
