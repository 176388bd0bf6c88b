"""Build a :class:`Hierarchy` from (child, parent[, lo, hi]) rows: the CSV loader's and bundled trees' core.

Decisions (shared by :func:`hierarchies.load_csv` and every bundled tree):

* The root is the one node without a parent: either a row whose parent is empty, or a name that appears
  only as a parent. When some row has an empty parent, a parent that is never listed as a child is an
  unknown parent (most likely a typo); otherwise such names are roots, and more than one is an error.
* A `missing` leaf is added directly under the root when the rows do not list it; when they do, it must be
  a leaf directly under the root without a range (SPEC §5).
* Numeric trees: leaves need both bounds; an internal node may leave its bounds empty, and then takes
  [min of its children's lo, max of their hi). Children must tile their parent (no gap, no overlap).
* Rows are kept as given: nothing is collapsed. A level table whose consecutive levels repeat a node
  (``Infant`` at levels 1 and 2) is one node per name, see :func:`from_levels`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from hierarchies._checks import MISSING, check_missing, check_ranges, check_structure
from hierarchies.errors import HierarchyError
from hierarchies.tree import Hierarchy

__all__ = ["NodeRow", "from_levels", "from_rows"]


@dataclass(frozen=True)
class NodeRow:
    """One edge of a tree: ``child`` hangs under ``parent`` (None or "" for the root).

    Attributes:
        child: Node name.
        parent: Parent name; None or "" makes ``child`` the root.
        lo: Inclusive lower bound of the node's range; NaN when not given.
        hi: Exclusive upper bound (+inf for an open top band); NaN when not given.
        where: Location shown in error messages, e.g. ``"ages.csv:7"``; empty for the row's index.
    """

    child: str
    parent: str | None
    lo: float = math.nan
    hi: float = math.nan
    where: str = ""


def from_rows(rows: Iterable[NodeRow], /, *, source: str = "rows") -> Hierarchy:
    """Build and validate a tree from parent-child rows (the decisions are in the module docstring).

    Args:
        rows: One row per node except, optionally, the root and `missing`.
        source: Name used in error messages for rows without ``where`` (``"rows: row 3"``).

    Raises:
        HierarchyError: duplicate child, unknown parent, no root or several roots, cycle, misplaced `missing`,
            and every range error of a numeric tree (missing bound, min >= max, child outside its parent, gap,
            overlap), each naming the row.
    """
    rows = list(rows)
    wheres: list[str] = []
    names: list[str] = []
    parents: list[str | None] = []
    lo: list[float] = []
    hi: list[float] = []
    first: dict[str, int] = {}
    for i, row in enumerate(rows):
        where = row.where or f"{source}: row {i + 1}"
        if not row.child:
            raise HierarchyError(f"{where}: child: empty name (expected a node name)")
        if row.child in first:
            raise HierarchyError(
                f"{where}: child: {row.child!r} is listed twice, first at {wheres[first[row.child]]} "
                "(expected each child once)"
            )
        first[row.child] = len(names)
        wheres.append(where)
        names.append(row.child)
        parents.append(row.parent or None)
        lo.append(float(row.lo))
        hi.append(float(row.hi))
    if not names:
        raise HierarchyError(f"{source}: no rows (expected child, parent rows)")

    explicit_root = any(p is None for p in parents)
    for i, p in enumerate(parents):
        if p is not None and p not in first:
            if explicit_root:
                raise HierarchyError(
                    f"{wheres[i]}: parent: unknown node {p!r} (expected a name listed as a child)"
                )
            first[p] = len(names)
            wheres.append(wheres[i])  # the first row that names it as a parent
            names.append(p)
            parents.append(None)
            lo.append(math.nan)
            hi.append(math.nan)
    parent = np.array([-1 if p is None else first[p] for p in parents], dtype=np.int64)

    def where_of(i: int) -> str:
        return wheres[i]

    root = check_structure(names, parent, where_of)
    if MISSING not in first:
        first[MISSING] = len(names)
        wheres.append(f"{source}: {MISSING!r} (added under the root)")
        names.append(MISSING)
        parent = np.append(parent, root)
        lo.append(math.nan)
        hi.append(math.nan)
    missing = check_missing(names, parent, root, where_of)
    lo_a, hi_a = np.array(lo, dtype=np.float64), np.array(hi, dtype=np.float64)
    _derive_internal_ranges(parent, lo_a, hi_a, missing)
    check_ranges(names, parent, lo_a, hi_a, missing, where_of)
    return Hierarchy(np.array(names, dtype=np.str_), parent, lo_a, hi_a)


def _derive_internal_ranges(parent: np.ndarray, lo: np.ndarray, hi: np.ndarray, missing: int) -> None:
    """Fill empty bounds of internal nodes with their children's [min lo, max hi), deepest first (in place).

    Only in numeric trees (some node but `missing` has a bound). A bound that is given is kept, so a parent
    that disagrees with its children is reported by the range checks; NaN bounds of children are skipped
    (and reported there too).
    """
    others = np.ones(len(parent), dtype=bool)
    others[missing] = False
    if not bool(np.any(others & ~(np.isnan(lo) & np.isnan(hi)))):
        return
    empty_lo, empty_hi = np.isnan(lo), np.isnan(hi)
    depth = np.zeros(len(parent), dtype=np.int64)
    for i in range(len(parent)):
        node = i
        while parent[node] >= 0:
            node = int(parent[node])
            depth[i] += 1
    for i in np.argsort(-depth, kind="stable").tolist():
        p = int(parent[i])
        if p < 0 or i == missing:
            continue
        if empty_lo[p]:
            lo[p] = np.fmin(lo[p], lo[i])
        if empty_hi[p]:
            hi[p] = np.fmax(hi[p], hi[i])


def from_levels(
    table: Sequence[Sequence[str]],
    /,
    *,
    ranges: Sequence[tuple[float, float]] | None = None,
    source: str = "levels",
) -> Hierarchy:
    """Build a tree from a level table (one row per leaf: leaf, level 1, ..., top), as ARX hierarchies.

    A node is identified by its name, so a name repeated at consecutive levels of a row (a single-child
    chain such as ``Infant [0-2 y)`` at levels 1 and 2) is one node: the chain collapses and does not add
    to the height. The top column must hold one name (the root). Each distinct name must have one parent
    across all rows.

    Args:
        table: Rows of names, all of one length >= 2; column 0 the leaves, the last column the root.
        ranges: Optional [lo, hi) of each row's leaf, one per row: internal ranges are derived.
        source: Name used in error messages (``"levels: row 3"``).

    Raises:
        HierarchyError: ragged rows, a name with two parents, a name that is both leaf and internal, and
            every error of :func:`from_rows`.
    """
    if ranges is not None and len(ranges) != len(table):
        raise HierarchyError(f"{source}: {len(ranges)} ranges for {len(table)} rows (expected one per row)")
    widths = {len(r) for r in table}
    if len(widths) != 1 or min(widths, default=0) < 2:
        raise HierarchyError(f"{source}: rows of lengths {sorted(widths)} (expected one length >= 2)")
    parent_of: dict[str, str | None] = {}
    where: dict[str, str] = {}
    leaf_range: dict[str, tuple[float, float]] = {}
    leaf_row: dict[str, int] = {}
    for i, row in enumerate(table):
        chain = [row[0]]
        for name in row[1:]:
            if name != chain[-1]:
                chain.append(name)
        if chain[0] in leaf_row:
            raise HierarchyError(
                f"{source}: row {i + 1}: child: leaf {chain[0]!r} is listed twice, first at {source}: row "
                f"{leaf_row[chain[0]]} (expected one row per leaf)"
            )
        leaf_row[chain[0]] = i + 1
        if ranges is not None:
            leaf_range[chain[0]] = (float(ranges[i][0]), float(ranges[i][1]))
        for child, par in zip(chain, [*chain[1:], None], strict=True):
            known = parent_of.get(child, par)
            if child in parent_of and known != par:
                raise HierarchyError(
                    f"{source}: row {i + 1}: parent: {child!r} under {par!r} but under {known!r} at "
                    f"{where[child]} (expected one parent per name)"
                )
            if child not in parent_of:
                parent_of[child] = par
                where[child] = f"{source}: row {i + 1}"
    leaves = {row[0] for row in table}
    internal = {p for p in parent_of.values() if p is not None}
    both = sorted(leaves & internal)
    if both:
        raise HierarchyError(
            f"{source}: child: {both[0]!r} is a leaf and an internal node (expected one role)"
        )
    nan = (math.nan, math.nan)
    return from_rows(
        (NodeRow(c, p, *leaf_range.get(c, nan), where=where[c]) for c, p in parent_of.items()),
        source=source,
    )
