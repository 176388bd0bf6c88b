"""Optional weight bands: a numeric tree of consecutive bands, grouped into a balanced-ish hierarchy."""

from __future__ import annotations

import math
from collections.abc import Sequence

from hierarchies.build import NodeRow, from_rows
from hierarchies.errors import HierarchyError
from hierarchies.tree import Hierarchy

__all__ = ["band_name", "weight_bands"]


def band_name(lo: float, hi: float) -> str:
    """Name of the band [lo, hi): ``"[0, 10)"``, ``"[150, inf)"``."""
    return f"[{lo:g}, {hi:g})"


def weight_bands(edges: Sequence[float], /, *, fanout: int = 2, open_top: bool = True) -> Hierarchy:
    """A numeric tree whose leaves are the bands [e0, e1), [e1, e2), ... given by ``edges``.

    Bands are grouped bottom-up: each level joins runs of ``fanout`` consecutive nodes under a parent named
    after its range; a run of one node (the last, when the count does not divide) is carried up unchanged
    rather than given a parent of the same range, so no single-child chain inflates a height. The root
    ``*`` spans [e0, top) and holds the last level; `missing` is a leaf under it. Weights are hierarchy-free
    by default (SPEC §6, ``hierarchies.interval``); this tree is for users who want weights generalized as
    a hierarchy instead.

    Args:
        edges: Strictly increasing finite bounds, e.g. ``range(0, 160, 10)`` for kg.
        fanout: Children per grouped node, >= 2.
        open_top: Add the open band [e_last, inf) so every weight >= e0 has a leaf.

    Raises:
        HierarchyError: fewer than two bands, edges not strictly increasing or not finite, fanout < 2.
    """
    e = [float(x) for x in edges]
    if fanout < 2:
        raise HierarchyError(f"weight_bands: fanout {fanout} (expected an integer >= 2)")
    if not all(math.isfinite(x) for x in e):
        raise HierarchyError(f"weight_bands: edges {e} hold a non-finite value (expected finite numbers)")
    if any(b <= a for a, b in zip(e, e[1:], strict=False)):
        raise HierarchyError(f"weight_bands: edges {e} (expected strictly increasing numbers)")
    bounds = [*e, math.inf] if open_top else e
    level = [(a, b) for a, b in zip(bounds, bounds[1:], strict=False)]
    if len(level) < 2:
        raise HierarchyError(
            f"weight_bands: {len(level)} band(s) from edges {e} (expected at least two bands)"
        )
    rows = [NodeRow("*", None, where="weight_bands: '*'")]
    parent_of: dict[tuple[float, float], str] = {}
    while len(level) > fanout:
        upper: list[tuple[float, float]] = []
        for start in range(0, len(level), fanout):
            run = level[start : start + fanout]
            if len(run) == 1:
                upper.append(run[0])
                continue
            group = (run[0][0], run[-1][1])
            for band in run:
                parent_of[band] = band_name(*group)
            upper.append(group)
        level = upper
    for band in level:
        parent_of[band] = "*"
    for band, par in parent_of.items():
        rows.append(
            NodeRow(band_name(*band), par, band[0], band[1], where=f"weight_bands: {band_name(*band)!r}")
        )
    return from_rows(rows, source="weight_bands")
