"""The tree model of a value generalization hierarchy (SPEC §2, §5, §6; docs/architecture.md "Hierarchies").

A :class:`Hierarchy` holds nodes ``0..n-1`` as parallel arrays. Definitions used throughout:

* height of a node: 0 for a leaf, 1 + the largest height of its children otherwise; the tree's ``height``
  is the root's. These are h(C_j, g) (height of the group's LCA) and h(C_j) of the information loss,
  Lin, Yang & Wang 2016, Definition 4; SPEC §6.
* depth of a node: 0 for the root, 1 + its parent's depth otherwise.
* numeric-backed tree: every node but `missing` carries a half-open range [lo, hi) (hi may be +inf for an
  open top band) and the children of each node tile its range, so the leaves partition the root's range.
  A categorical tree has NaN ranges everywhere.
* `missing`: the leaf that holds missing values, directly under the root, so that the LCA of `missing`
  and any value is the root while a group whose cases are all missing stays `missing` (SPEC §5).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hierarchies._checks import MISSING, check_missing, check_ranges, check_structure
from hierarchies.errors import HierarchyError

__all__ = ["MISSING", "Hierarchy"]

_TABLE_LIMIT = 2048
"""Trees up to this many nodes answer ``lca_pairs`` from the precomputed n x n table; larger ones climb."""


def _frozen(a: NDArray[np.generic]) -> NDArray[np.generic]:
    a.flags.writeable = False
    return a


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """A rooted tree over the values of one attribute, with vectorized LCA and leaf lookup.

    Build one with :func:`hierarchies.from_rows`, :func:`hierarchies.load_csv` or a bundled tree
    (:func:`hierarchies.mesh_age_tree`, :func:`hierarchies.sex_tree`, :func:`hierarchies.weight_bands`);
    the constructor takes the arrays below and validates them (one root, no cycle, a `missing` leaf directly
    under the root, ranges that tile). Instances are immutable (read-only arrays); equality is identity.

    Attributes:
        names: Node names (unique, non-empty), shape (n,).
        parent: Parent code of each node, -1 for the root, shape (n,).
        lo: Lower bound (inclusive) of each node's range in the attribute's unit; NaN in categorical trees
            and on `missing`.
        hi: Upper bound (exclusive) of each node's range, +inf for an open top band; NaN as for ``lo``.
        node_height: Height of each node (leaf 0, internal 1 + max child height).
        depth: Depth of each node (root 0).
        height: Height of the tree = ``node_height[root]`` = h(C) of SPEC §6.
        root: Code of the root.
        missing: Code of the `missing` leaf.
        leaves: Codes of all leaves, `missing` included, in increasing code order.
        is_numeric: True when nodes carry ranges.
    """

    names: NDArray[np.str_]
    parent: NDArray[np.int64]
    lo: NDArray[np.float64]
    hi: NDArray[np.float64]
    node_height: NDArray[np.int64] = field(init=False, repr=False)
    depth: NDArray[np.int64] = field(init=False, repr=False)
    height: int = field(init=False)
    root: int = field(init=False)
    missing: int = field(init=False)
    leaves: NDArray[np.int64] = field(init=False, repr=False)
    is_numeric: bool = field(init=False)
    _index: dict[str, int] = field(init=False, repr=False)
    _children: tuple[NDArray[np.int64], ...] = field(init=False, repr=False)
    _pre: NDArray[np.int64] = field(init=False, repr=False)
    _size: NDArray[np.int64] = field(init=False, repr=False)
    _value_leaves: NDArray[np.int64] = field(init=False, repr=False)
    _edges: NDArray[np.float64] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        names_list = [str(x) for x in np.asarray(self.names).tolist()]
        parent = np.asarray(self.parent, dtype=np.int64).copy()
        lo = np.asarray(self.lo, dtype=np.float64).copy()
        hi = np.asarray(self.hi, dtype=np.float64).copy()
        n = len(names_list)
        if not (parent.shape == lo.shape == hi.shape == (n,)):
            raise HierarchyError(
                f"Hierarchy: arrays of lengths names {n}, parent {parent.shape}, lo {lo.shape}, "
                f"hi {hi.shape} "
                "(expected four arrays of one length)"
            )

        def where(i: int) -> str:
            return f"Hierarchy: node {names_list[i]!r}"

        root = check_structure(names_list, parent, where)
        missing = check_missing(names_list, parent, root, where)
        numeric = check_ranges(names_list, parent, lo, hi, missing, where)

        kids: list[list[int]] = [[] for _ in range(n)]
        for i, p in enumerate(parent.tolist()):
            if p >= 0:
                kids[p].append(i)
        depth = np.zeros(n, dtype=np.int64)
        pre = np.zeros(n, dtype=np.int64)
        order: list[int] = []
        stack = [root]
        while stack:
            node = stack.pop()
            pre[node] = len(order)
            order.append(node)
            for c in reversed(kids[node]):
                depth[c] = depth[node] + 1
                stack.append(c)
        node_height = np.zeros(n, dtype=np.int64)
        size = np.ones(n, dtype=np.int64)
        for node in reversed(order):
            p = int(parent[node])
            if p >= 0:
                node_height[p] = max(node_height[p], node_height[node] + 1)
                size[p] += size[node]
        leaves = np.array([i for i in range(n) if not kids[i]], dtype=np.int64)
        value_leaves = np.array([c for c in leaves.tolist() if c != missing], dtype=np.int64)
        if numeric:
            value_leaves = value_leaves[np.argsort(lo[value_leaves], kind="stable")]
            edges = np.append(lo[value_leaves], hi[root])
        else:
            edges = np.empty(0, dtype=np.float64)

        set_ = object.__setattr__
        set_(self, "names", _frozen(np.array(names_list, dtype=np.str_)))
        set_(self, "parent", _frozen(parent))
        set_(self, "lo", _frozen(lo))
        set_(self, "hi", _frozen(hi))
        set_(self, "node_height", _frozen(node_height))
        set_(self, "depth", _frozen(depth))
        set_(self, "height", int(node_height[root]))
        set_(self, "root", root)
        set_(self, "missing", missing)
        set_(self, "leaves", _frozen(leaves))
        set_(self, "is_numeric", numeric)
        set_(self, "_index", {name: i for i, name in enumerate(names_list)})
        set_(self, "_children", tuple(_frozen(np.array(k, dtype=np.int64)) for k in kids))
        set_(self, "_pre", _frozen(pre))
        set_(self, "_size", _frozen(size))
        set_(self, "_value_leaves", _frozen(value_leaves))
        set_(self, "_edges", _frozen(edges))

    def __repr__(self) -> str:
        kind = "numeric" if self.is_numeric else "categorical"
        root = str(self.names[self.root])
        return f"Hierarchy({len(self.names)} nodes, height {self.height}, root {root!r}, {kind})"

    def __len__(self) -> int:
        return len(self.names)

    # --- names and structure -------------------------------------------------------------------------

    def code(self, name: str) -> int:
        """Code of the node called ``name``.

        Raises:
            HierarchyError: no node has that name.
        """
        try:
            return self._index[name]
        except KeyError:
            shown = ", ".join(repr(str(x)) for x in self.names[:8]) + (", ..." if len(self.names) > 8 else "")
            raise HierarchyError(f"code: no node named {name!r} (expected one of {shown})") from None

    def name(self, code: int) -> str:
        """Name of the node with code ``code`` (0 <= code < n)."""
        return str(self.names[self._check_code(code, "name")])

    def encode(self, values: Iterable[str | None]) -> NDArray[np.int64]:
        """Codes of node names, vectorized; ``None`` (a missing value) maps to `missing`.

        Raises:
            HierarchyError: a value names no node (the message shows the first such value).
        """
        index, missing = self._index, self.missing
        items = list(values)
        out = np.array([missing if v is None else index.get(v, -1) for v in items], dtype=np.int64)
        if bool(np.any(out < 0)):
            self.code(str(items[int(np.flatnonzero(out < 0)[0])]))
        return out

    def decode(self, codes: ArrayLike) -> NDArray[np.str_]:
        """Names of an array of codes, same shape."""
        c = self._check_codes(np.asarray(codes), "decode")
        return self.names[c]

    def children(self, code: int) -> NDArray[np.int64]:
        """Codes of the children of ``code`` in increasing code order (empty for a leaf)."""
        return self._children[self._check_code(code, "children")]

    def is_ancestor(self, a: int, b: int) -> bool:
        """True when ``a`` lies on the path from ``b`` up to the root, ``b`` itself included (a == b)."""
        a = self._check_code(a, "is_ancestor")
        b = self._check_code(b, "is_ancestor")
        return bool(self._pre[a] <= self._pre[b] < self._pre[a] + self._size[a])

    def range_of(self, code: int) -> tuple[float, float]:
        """The node's range [lo, hi) as floats; (nan, nan) on `missing` and in categorical trees."""
        c = self._check_code(code, "range_of")
        return float(self.lo[c]), float(self.hi[c])

    # --- lowest common ancestors ---------------------------------------------------------------------

    def lca(self, codes: Iterable[int]) -> int:
        """Lowest common ancestor of a non-empty set of nodes.

        Uses the pre-order property: the LCA of a set is the LCA of its members with the smallest and the
        largest pre-order index. A single node is its own LCA; all `missing` stays `missing`; `missing`
        with any value gives the root (SPEC §5).

        Raises:
            HierarchyError: the set is empty or holds a code outside 0..n-1.
        """
        arr = self._check_codes(np.fromiter((int(c) for c in codes), dtype=np.int64), "lca")
        if arr.size == 0:
            raise HierarchyError("lca: empty set of nodes (expected at least one code)")
        pre = self._pre[arr]
        first, last = arr[np.argmin(pre)], arr[np.argmax(pre)]
        return int(self._climb(np.array([first]), np.array([last]))[0])

    def lca_pairs(self, a: ArrayLike, b: ArrayLike) -> NDArray[np.int64]:
        """Element-wise LCA of two broadcastable code arrays.

        Trees of up to 2048 nodes read a precomputed n x n table (:attr:`lca_table`); larger trees climb
        parent pointers, O(height) numpy steps.
        """
        x = self._check_codes(np.asarray(a), "lca_pairs")
        y = self._check_codes(np.asarray(b), "lca_pairs")
        x, y = np.broadcast_arrays(x, y)
        if len(self.names) <= _TABLE_LIMIT:
            return np.asarray(self.lca_table[x, y], dtype=np.int64)
        return self._climb(x.ravel(), y.ravel()).reshape(x.shape)

    def lca_by_group(self, codes: ArrayLike, groups: ArrayLike) -> NDArray[np.int64]:
        """LCA of the codes of each group, vectorized.

        Args:
            codes: Node codes, shape (m,).
            groups: Group id of each code, integers 0..G-1, shape (m,).

        Returns:
            Shape (G,) with G = max(groups) + 1: the LCA of each group's codes, -1 for an id with no codes.
        """
        c = self._check_codes(np.asarray(codes), "lca_by_group").ravel()
        g = np.asarray(groups, dtype=np.int64).ravel()
        if g.shape != c.shape:
            raise HierarchyError(
                f"lca_by_group: {c.size} codes but {g.size} group ids (expected one per code)"
            )
        if g.size == 0:
            return np.empty(0, dtype=np.int64)
        if int(g.min()) < 0:
            raise HierarchyError(f"lca_by_group: group id {int(g.min())} (expected ids >= 0)")
        n_groups = int(g.max()) + 1
        big = np.iinfo(np.int64).max
        pre = self._pre[c]
        lo_pre = np.full(n_groups, big, dtype=np.int64)
        hi_pre = np.full(n_groups, -1, dtype=np.int64)
        np.minimum.at(lo_pre, g, pre)
        np.maximum.at(hi_pre, g, pre)
        present = hi_pre >= 0
        by_pre = np.argsort(self._pre)
        out = np.full(n_groups, -1, dtype=np.int64)
        out[present] = self.lca_pairs(by_pre[lo_pre[present]], by_pre[hi_pre[present]])
        return out

    @cached_property
    def lca_table(self) -> NDArray[np.int64]:
        """The n x n table of pairwise LCAs (read-only; n^2 int64, computed on first use)."""
        n = len(self.names)
        a, b = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        table = self._climb(a.ravel(), b.ravel()).reshape(n, n)
        table.flags.writeable = False
        return table

    def _climb(self, a: NDArray[np.int64], b: NDArray[np.int64]) -> NDArray[np.int64]:
        """Pairwise LCA by lifting the deeper node, then both, until they meet."""
        a = np.array(a, dtype=np.int64)
        b = np.array(b, dtype=np.int64)
        depth, parent = self.depth, self.parent
        while True:
            da, db = depth[a], depth[b]
            if not bool(np.any(da != db)):
                break
            a, b = np.where(da > db, parent[a], a), np.where(db > da, parent[b], b)
        while True:
            differ = a != b
            if not bool(np.any(differ)):
                return a
            a, b = np.where(differ, parent[a], a), np.where(differ, parent[b], b)

    # --- numeric lookup ------------------------------------------------------------------------------

    def leaf_of(self, values: ArrayLike) -> NDArray[np.int64]:
        """The leaf whose range [lo, hi) holds each value, vectorized (np.searchsorted over leaf bounds).

        NaN maps to `missing`. Same shape as ``values``.

        Raises:
            HierarchyError: the tree is categorical, or a value (+inf included) lies outside the root's range.
        """
        v = np.asarray(values, dtype=np.float64)
        self._require_numeric("leaf_of")
        out = np.full(v.shape, self.missing, dtype=np.int64)
        known = ~np.isnan(v)
        kv = v[known]
        outside = (kv < self._edges[0]) | (kv >= self._edges[-1])
        if bool(np.any(outside)):
            bad = kv[outside]
            raise HierarchyError(
                f"leaf_of: {bad.size} value(s) outside the tree's range, first {bad[0]:g} "
                f"(expected values in [{self._edges[0]:g}, {self._edges[-1]:g}) or NaN)"
            )
        idx = np.searchsorted(self._edges, kv, side="right") - 1
        out[known] = self._value_leaves[idx]
        return out

    def cover(self, lo: ArrayLike, hi: ArrayLike, *, closed: bool = True) -> NDArray[np.int64]:
        """Smallest node whose range contains each interval, vectorized.

        With ``closed=True`` (default) the interval is [lo, hi] with both ends values that occurred, as the
        [min, max] of a case's versions (SPEC §4); lo == hi is a single value and gives ``leaf_of(lo)``.
        With ``closed=False`` it is [lo, hi), lo < hi, as a FAERS age given in decades,
        :func:`hierarchies.age_from_decade`. As the leaves tile every node's range, the smallest node
        containing the interval is the LCA of the leaves of its two ends (for [lo, hi): of lo and of the
        largest float below hi). A NaN end maps to `missing`.

        Raises:
            HierarchyError: categorical tree, lo > hi (closed) or lo >= hi (half-open), an end outside the
                root's range.
        """
        a, b = np.broadcast_arrays(np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64))
        self._require_numeric("cover")
        nan = np.isnan(a) | np.isnan(b)
        bad = ~nan & ((a > b) if closed else (a >= b))
        if bool(np.any(bad)):
            i = int(np.flatnonzero(bad.ravel())[0])
            shown = f"[{a.ravel()[i]:g}, {b.ravel()[i]:g}{']' if closed else ')'}"
            raise HierarchyError(
                f"cover: empty or reversed interval {shown} (expected lo {'<=' if closed else '<'} hi)"
            )
        top = b if closed else np.nextafter(b, -np.inf)
        a = np.where(nan, np.nan, a)
        top = np.where(nan, np.nan, top)
        return self.lca_pairs(self.leaf_of(a), self.leaf_of(top))

    # --- helpers -------------------------------------------------------------------------------------

    def _require_numeric(self, where: str) -> None:
        if not self.is_numeric:
            raise HierarchyError(
                f"{where}: the tree {self.name(self.root)!r} has no ranges (expected a numeric-backed tree)"
            )

    def _check_code(self, code: int, where: str) -> int:
        c = int(code)
        if not 0 <= c < len(self.names):
            raise HierarchyError(f"{where}: node code {c} (expected 0..{len(self.names) - 1})")
        return c

    def _check_codes(self, codes: NDArray[np.generic], where: str) -> NDArray[np.int64]:
        if codes.size and not np.issubdtype(codes.dtype, np.integer):
            raise HierarchyError(f"{where}: codes of dtype {codes.dtype} (expected integer node codes)")
        c = codes.astype(np.int64, copy=False)
        if c.size and (int(c.min()) < 0 or int(c.max()) >= len(self.names)):
            bad = c[(c < 0) | (c >= len(self.names))]
            raise HierarchyError(f"{where}: node code {int(bad[0])} (expected 0..{len(self.names) - 1})")
        return c
