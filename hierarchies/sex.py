"""The sex hierarchy: F and M under ``*``, plus `missing` (SPEC §3, §5; Lin, Yang & Wang 2016, Fig. 2)."""

from __future__ import annotations

from hierarchies.build import NodeRow, from_rows
from hierarchies.tree import Hierarchy

__all__ = ["sex_tree"]


def sex_tree() -> Hierarchy:
    """The paper's gender hierarchy (Fig. 2, height 1) with SPEC §5's `missing` leaf.

    Leaves ``F``, ``M`` and ``missing`` sit under the root ``*``; the tree is categorical (no ranges) and
    has height 1. FAERS UNK, NS and blank sex are missing (SPEC §3) and encode to ``missing``
    (``tree.encode([..., None])``); a case whose versions say F and M is ``*`` (the LCA).
    """
    return from_rows(
        (
            NodeRow(name, parent, where=f"sex_tree: {name!r}")
            for name, parent in (("*", None), ("F", "*"), ("M", "*"))
        ),
        source="sex_tree",
    )
