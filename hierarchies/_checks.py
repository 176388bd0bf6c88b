"""Validation of a tree given as arrays: one root, no cycles, the `missing` leaf, ranges that tile.

Every check raises :class:`HierarchyError` with a one-line message "where: field: what is wrong (expected
what)". ``where(i)`` renders the location of node ``i`` (``"ages.csv:7"`` for a CSV row, ``"Hierarchy:
node 'Adult'"`` for arrays built in code), so the CSV loader and the array constructor share one set of
rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from hierarchies.errors import HierarchyError

MISSING = "missing"
"""Name of the leaf that holds missing values; it sits directly under the root (SPEC §5)."""

Where = Callable[[int], str]


def _fmt(x: float) -> str:
    """Render a bound compactly: ``19``, ``0.0767``, ``inf``."""
    return f"{x:g}"


def _children_lists(parent: NDArray[np.int64]) -> list[list[int]]:
    kids: list[list[int]] = [[] for _ in range(len(parent))]
    for i, p in enumerate(parent.tolist()):
        if p >= 0:
            kids[p].append(i)
    return kids


def check_structure(names: list[str], parent: NDArray[np.int64], where: Where) -> int:
    """Check names, parent codes, the single root and the absence of cycles; return the root's code.

    Raises:
        HierarchyError: empty or duplicate name, parent code out of range, no root or several roots, cycle.
    """
    n = len(names)
    if n == 0:
        raise HierarchyError("Hierarchy: no nodes (expected a root and at least one value)")
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if not name:
            raise HierarchyError(f"{where(i)}: child: empty name (expected a node name)")
        if name in seen:
            raise HierarchyError(
                f"{where(i)}: child: {name!r} is listed twice, first at {where(seen[name])} "
                "(expected each child once)"
            )
        seen[name] = i
    for i, p in enumerate(parent.tolist()):
        if p < -1 or p >= n or p == i:
            raise HierarchyError(
                f"{where(i)}: parent: code {p} is not another node (expected -1 for the root or 0..{n - 1})"
            )
    roots = [i for i, p in enumerate(parent.tolist()) if p == -1]
    if not roots:
        raise HierarchyError(
            f"{where(0)}: parent: no root, every node has a parent (expected one node without a parent)"
        )
    if len(roots) > 1:
        listed = ", ".join(f"{names[r]!r} ({where(r)})" for r in roots[:5])
        raise HierarchyError(f"{where(roots[1])}: parent: several roots: {listed} (expected one root)")
    root = roots[0]
    reaches = np.zeros(n, dtype=bool)
    reaches[root] = True
    for start in range(n):
        path: list[int] = []
        on_path: set[int] = set()
        node = start
        while not reaches[node]:
            if node in on_path:
                cycle = path[path.index(node) :] + [node]
                shown = " -> ".join(repr(names[c]) for c in cycle)
                raise HierarchyError(
                    f"{where(node)}: parent: cycle {shown} (expected every node to lead up to the root)"
                )
            path.append(node)
            on_path.add(node)
            node = int(parent[node])
        reaches[path] = True
    return root


def check_missing(names: list[str], parent: NDArray[np.int64], root: int, where: Where) -> int:
    """Check that the `missing` leaf exists, is a leaf and hangs directly under the root; return its code."""
    if MISSING not in names:
        raise HierarchyError(
            f"Hierarchy: no {MISSING!r} node (expected a leaf named {MISSING!r} directly under the root)"
        )
    m = names.index(MISSING)
    if m == root:
        raise HierarchyError(f"{where(m)}: parent: {MISSING!r} is the root (expected a leaf under the root)")
    if int(parent[m]) != root:
        raise HierarchyError(
            f"{where(m)}: parent: {MISSING!r} hangs under {names[int(parent[m])]!r} "
            f"(expected it directly under the root {names[root]!r})"
        )
    if bool(np.any(parent == m)):
        child = int(np.flatnonzero(parent == m)[0])
        raise HierarchyError(
            f"{where(child)}: parent: {names[child]!r} hangs under {MISSING!r} "
            f"(expected {MISSING!r} to be a leaf)"
        )
    if len(names) < 3:
        raise HierarchyError(
            f"{where(root)}: child: the tree holds no value besides {MISSING!r} (expected at least one value)"
        )
    return m


def check_ranges(
    names: list[str],
    parent: NDArray[np.int64],
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
    missing: int,
    where: Where,
) -> bool:
    """Check node ranges; return True for a numeric-backed tree, False for a categorical one.

    A tree is categorical when every range is NaN. Otherwise it is numeric and: the `missing` leaf has no
    range; every other node has lo < hi (lo may be -inf, hi may be +inf for an open top band); the
    children of each node (other than `missing`) tile the node's [lo, hi) exactly: each lies inside
    it, they neither overlap nor leave gaps, the first starts at its lo and the last ends at its hi. So the
    leaves partition the root's range and each node's range is the union of its leaves' ranges.

    Raises:
        HierarchyError: a range on `missing`, a node without range, min >= max, a child range outside its
            parent's, overlapping siblings, a gap.
    """
    others = np.ones(len(names), dtype=bool)
    others[missing] = False
    given = ~(np.isnan(lo) & np.isnan(hi))
    if not bool(np.any(given & others)):
        if bool(given[missing]):
            raise HierarchyError(f"{where(missing)}: min: {MISSING!r} has a range (expected none)")
        return False
    if bool(given[missing]):
        raise HierarchyError(f"{where(missing)}: min: {MISSING!r} has a range (expected none)")
    for i in np.flatnonzero(others).tolist():
        a, b = float(lo[i]), float(hi[i])
        if math.isnan(a) or math.isnan(b):
            field = "min" if math.isnan(a) else "max"
            raise HierarchyError(
                f"{where(i)}: {field}: {names[i]!r} has no {field} in a numeric tree "
                "(expected both min and max on every node but 'missing')"
            )
        if not a < b:
            raise HierarchyError(
                f"{where(i)}: min: {names[i]!r} has min {_fmt(a)} >= max {_fmt(b)} (expected min < max)"
            )
    for p, kids in enumerate(_children_lists(parent)):
        kids = [c for c in kids if c != missing]
        if not kids:
            continue
        plo, phi = float(lo[p]), float(hi[p])
        for c in kids:
            if float(lo[c]) < plo or float(hi[c]) > phi:
                raise HierarchyError(
                    f"{where(c)}: min: {names[c]!r} [{_fmt(lo[c])}, {_fmt(hi[c])}) lies outside its parent "
                    f"{names[p]!r} [{_fmt(plo)}, {_fmt(phi)}) (expected a child range inside its parent's)"
                )
        kids.sort(key=lambda c: (float(lo[c]), float(hi[c])))
        if float(lo[kids[0]]) > plo:
            raise HierarchyError(
                f"{where(kids[0])}: min: gap [{_fmt(plo)}, {_fmt(lo[kids[0]])}) in {names[p]!r}: no child "
                "covers it (expected the children to tile their parent)"
            )
        for a, b in zip(kids, kids[1:], strict=False):
            end, start = float(hi[a]), float(lo[b])
            if end > start:
                raise HierarchyError(
                    f"{where(b)}: min: {names[b]!r} [{_fmt(start)}, {_fmt(hi[b])}) overlaps {names[a]!r} "
                    f"[{_fmt(lo[a])}, {_fmt(end)}) (expected sibling ranges not to overlap)"
                )
            if end < start:
                raise HierarchyError(
                    f"{where(b)}: min: gap [{_fmt(end)}, {_fmt(start)}) between {names[a]!r} and "
                    f"{names[b]!r} "
                    "(expected the children to tile their parent)"
                )
        if float(hi[kids[-1]]) < phi:
            raise HierarchyError(
                f"{where(kids[-1])}: max: gap [{_fmt(hi[kids[-1]])}, {_fmt(phi)}) in {names[p]!r}: no child "
                "covers it (expected the children to tile their parent)"
            )
    return True
