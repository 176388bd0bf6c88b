"""The tree model: structure, heights, LCA (scalar, pairs, per group), leaf lookup and cover.

Hand-built trees pin the definitions; hypothesis checks the invariants on random trees: the LCA covers
the set and no child of it does; ``leaf_of`` agrees with the leaf ranges; ``cover`` is the smallest node
containing the interval; the table and the climbing LCA agree.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hierarchies import MISSING, Hierarchy, HierarchyError, NodeRow, from_levels, from_rows


def _toy() -> Hierarchy:
    """* > A [0, 10) > A1 [0, 5), A2 [5, 10); * > B [10, 20) (leaf); plus missing."""
    return from_rows(
        [
            NodeRow("*", None),
            NodeRow("A", "*", 0, 10),
            NodeRow("A1", "A", 0, 5),
            NodeRow("A2", "A", 5, 10),
            NodeRow("B", "*", 10, 20),
        ]
    )


def test_structure_heights_depths_and_ranges() -> None:
    t = _toy()
    c = t.code
    assert [t.name(i) for i in range(len(t))] == ["*", "A", "A1", "A2", "B", MISSING]
    assert t.root == c("*") and t.missing == c(MISSING)
    assert t.parent.tolist() == [-1, 0, 1, 1, 0, 0]
    assert t.node_height.tolist() == [2, 1, 0, 0, 0, 0]
    assert t.depth.tolist() == [0, 1, 2, 2, 1, 1]
    assert t.height == 2
    assert t.leaves.tolist() == [c("A1"), c("A2"), c("B"), c(MISSING)]
    assert t.children(c("A")).tolist() == [c("A1"), c("A2")]
    assert t.children(c("B")).size == 0
    assert t.range_of(c("*")) == (0.0, 20.0)  # derived from the children
    assert t.range_of(c("A2")) == (5.0, 10.0)
    assert all(math.isnan(x) for x in t.range_of(t.missing))
    assert t.is_numeric
    assert repr(t) == "Hierarchy(6 nodes, height 2, root '*', numeric)"


def test_arrays_are_read_only() -> None:
    t = _toy()
    with pytest.raises(ValueError, match="read-only"):
        t.parent[0] = 3
    with pytest.raises(ValueError, match="read-only"):
        t.lca_table[0, 0] = 3


def test_is_ancestor_is_inclusive() -> None:
    t = _toy()
    c = t.code
    assert t.is_ancestor(c("A"), c("A1"))
    assert t.is_ancestor(c("A1"), c("A1"))
    assert t.is_ancestor(c("*"), c(MISSING))
    assert not t.is_ancestor(c("A1"), c("A"))
    assert not t.is_ancestor(c("B"), c("A2"))


def test_lca_and_the_missing_rule() -> None:
    t = _toy()
    c = t.code
    assert t.lca([c("A1"), c("A2")]) == c("A")
    assert t.lca([c("A1")]) == c("A1")
    assert t.lca([c("A1"), c("A2"), c("B")]) == c("*")
    assert t.lca([t.missing, t.missing]) == t.missing  # a group all missing stays missing
    assert t.lca([t.missing, c("A1")]) == t.root  # missing with any value: the root
    assert t.node_height[t.missing] == 0


def test_lca_pairs_broadcast_and_by_group() -> None:
    t = _toy()
    c = t.code
    a = np.array([c("A1"), c("A1"), c("B"), t.missing])
    b = np.array([c("A2"), c("A1"), c("A2"), t.missing])
    assert t.lca_pairs(a, b).tolist() == [c("A"), c("A1"), c("*"), t.missing]
    assert t.lca_pairs(a, c("A2")).tolist() == [c("A"), c("A"), c("*"), c("*")]
    groups = np.array([0, 0, 2, 2])
    assert t.lca_by_group(np.array([c("A1"), c("A2"), c("B"), c("B")]), groups).tolist() == [
        c("A"),
        -1,
        c("B"),
    ]
    assert t.lca_by_group(np.array([], dtype=np.int64), np.array([], dtype=np.int64)).size == 0


def test_encode_decode() -> None:
    t = _toy()
    codes = t.encode(["A1", None, "B"])
    assert codes.tolist() == [t.code("A1"), t.missing, t.code("B")]
    assert t.decode(codes).tolist() == ["A1", MISSING, "B"]
    with pytest.raises(HierarchyError, match=r"^code: no node named 'C' \(expected one of"):
        t.encode(["A1", "C"])


def test_leaf_of_and_cover() -> None:
    t = _toy()
    c = t.code
    got = t.leaf_of(np.array([0.0, 4.999, 5.0, 9.99, 10.0, 19.5, np.nan]))
    assert t.decode(got).tolist() == ["A1", "A1", "A2", "A2", "B", "B", MISSING]
    assert t.leaf_of(np.array([[1.0], [12.0]])).shape == (2, 1)
    lo = np.array([1.0, 1.0, 1.0, 7.0, np.nan, 3.0])
    hi = np.array([1.0, 9.0, 12.0, 7.0, np.nan, np.nan])
    assert t.decode(t.cover(lo, hi)).tolist() == ["A1", "A", "*", "A2", MISSING, MISSING]
    # half-open [0, 5) stays in A1, closed [0, 5] reaches A2's 5
    assert t.cover(0.0, 5.0, closed=False).tolist() == c("A1")
    assert t.cover(0.0, 5.0).tolist() == c("A")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda t: t.leaf_of(np.array([3.0, 20.0])),
            r"^leaf_of: 1 value\(s\) outside the tree's range, first 20 ",
        ),
        (
            lambda t: t.leaf_of(np.array([-1.0])),
            r"^leaf_of: 1 value\(s\) outside .*\(expected values in \[0, 20\)",
        ),
        (lambda t: t.cover(5.0, 4.0), r"^cover: empty or reversed interval \[5, 4\] \(expected lo <= hi\)$"),
        (
            lambda t: t.cover(5.0, 5.0, closed=False),
            r"^cover: empty or reversed interval \[5, 5\) \(expected lo < hi\)$",
        ),
        (lambda t: t.lca([]), r"^lca: empty set of nodes \(expected at least one code\)$"),
        (lambda t: t.lca([0, 99]), r"^lca: node code 99 \(expected 0\.\.5\)$"),
        (lambda t: t.lca_pairs(np.array([0.5]), np.array([0])), r"^lca_pairs: codes of dtype float64"),
        (lambda t: t.name(6), r"^name: node code 6 \(expected 0\.\.5\)$"),
        (lambda t: t.children(-1), r"^children: node code -1"),
        (
            lambda t: t.lca_by_group(np.array([0, 1]), np.array([0])),
            r"^lca_by_group: 2 codes but 1 group ids",
        ),
        (lambda t: t.lca_by_group(np.array([0]), np.array([-2])), r"^lca_by_group: group id -2"),
    ],
)
def test_misuse_is_one_clear_error(call: object, message: str) -> None:
    t = _toy()
    with pytest.raises(HierarchyError, match=message):
        call(t)  # type: ignore[operator]


def test_categorical_tree_has_no_numeric_lookup() -> None:
    t = from_rows([NodeRow("x", "*"), NodeRow("y", "*")])
    assert not t.is_numeric and t.height == 1
    with pytest.raises(HierarchyError, match=r"^leaf_of: the tree '\*' has no ranges \(expected a numeric"):
        t.leaf_of(np.array([np.nan]))
    with pytest.raises(HierarchyError, match=r"^cover: the tree '\*' has no ranges"):
        t.cover(1.0, 2.0)


@pytest.mark.parametrize(
    ("names", "parent", "message"),
    [
        ([], [], r"^Hierarchy: no nodes"),
        (["*", "a", "a", MISSING], [-1, 0, 0, 0], r"^Hierarchy: node 'a': child: 'a' is listed twice"),
        (["*", "a", MISSING], [-1, 7, 0], r"^Hierarchy: node 'a': parent: code 7 is not another node"),
        (["*", "a", MISSING], [-1, -1, 0], r"^Hierarchy: node 'a': parent: several roots: '\*' .*, 'a'"),
        (["*", "a", "b", MISSING], [-1, 2, 1, 0], r"^Hierarchy: node 'a': parent: cycle 'a' -> 'b' -> 'a'"),
        (["*", "a", "b"], [-1, 0, 0], r"^Hierarchy: no 'missing' node \(expected a leaf named 'missing'"),
        (["*", "a", MISSING], [-1, 0, 1], r"^Hierarchy: node 'missing': parent: 'missing' hangs under 'a'"),
        (["*", MISSING], [-1, 0], r"^Hierarchy: node '\*': child: the tree holds no value besides 'missing'"),
    ],
)
def test_constructor_validates_arrays(names: list[str], parent: list[int], message: str) -> None:
    n = len(names)
    with pytest.raises(HierarchyError, match=message):
        Hierarchy(np.array(names, dtype=np.str_), np.array(parent), np.full(n, np.nan), np.full(n, np.nan))


def test_constructor_checks_lengths() -> None:
    with pytest.raises(HierarchyError, match=r"^Hierarchy: arrays of lengths names 2, parent \(3,\)"):
        Hierarchy(np.array(["*", MISSING]), np.array([-1, 0, 0]), np.zeros(2), np.zeros(2))


def test_from_levels_collapses_single_child_chains() -> None:
    table = [
        ["N", "Infant", "Infant", "*"],
        ["I", "Infant", "Infant", "*"],
        ["Y", "Adult 19-44", "Adult", "*"],
        ["M", "Middle", "Adult", "*"],
        ["T", "T", "T", "*"],
        ["C", "Child", "Child", "*"],
    ]
    t = from_levels(table, ranges=[(0, 1), (1, 2), (19, 45), (45, 65), (13, 19), (2, 13)])
    assert t.height == 3  # the Y > Adult 19-44 > Adult > * path; the repeated names add no level:
    assert t.node_height[t.code("Infant")] == 1  # "Infant" at levels 1 and 2 is one node
    assert t.depth[t.code("N")] == 2
    assert t.depth[t.code("T")] == 1 and t.node_height[t.code("T")] == 0  # "T" thrice is one leaf
    assert t.name(int(t.parent[t.code("N")])) == "Infant"
    assert t.name(int(t.parent[t.code("Infant")])) == "*"
    assert t.name(int(t.parent[t.code("T")])) == "*"
    assert t.node_height[t.code("Adult")] == 2
    with pytest.raises(HierarchyError, match=r"^levels: row 5: min: gap \[13, 14\) between 'Child' and 'T'"):
        from_levels(table, ranges=[(0, 1), (1, 2), (19, 45), (45, 65), (14, 19), (2, 13)])


# --- invariants on random trees ----------------------------------------------------------------------


@st.composite
def numeric_trees(draw: st.DrawFn) -> Hierarchy:
    """Random numeric trees: [0, 100) split recursively at random cut points, up to depth 4."""
    rows = [NodeRow("*", None)]
    counter = [0]

    def split(name: str, lo: float, hi: float, depth: int) -> None:
        k = draw(st.integers(0 if depth else 2, min(4, int(hi - lo)))) if depth < 4 else 0
        if k < 2:
            return
        cuts = sorted(draw(st.sets(st.integers(int(lo) + 1, int(hi) - 1), min_size=k - 1, max_size=k - 1)))
        bounds = [lo, *map(float, cuts), hi]
        for a, b in zip(bounds, bounds[1:], strict=False):
            counter[0] += 1
            child = f"n{counter[0]}"
            rows.append(NodeRow(child, name, a, b))
            if b - a >= 2:
                split(child, a, b, depth + 1)

    split("*", 0.0, 100.0, 0)
    return from_rows(rows)


@st.composite
def categorical_trees(draw: st.DrawFn) -> Hierarchy:
    """Random categorical trees: node i hangs under a random earlier node; missing under the root."""
    n = draw(st.integers(2, 40))
    parent = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)] + [0]
    names = [f"v{i}" for i in range(n)] + [MISSING]
    return Hierarchy(np.array(names), np.array(parent), np.full(n + 1, np.nan), np.full(n + 1, np.nan))


def _brute_lca(t: Hierarchy, codes: list[int]) -> int:
    common = [a for a in range(len(t)) if all(t.is_ancestor(a, c) for c in codes)]
    return max(common, key=lambda a: int(t.depth[a]))


@settings(max_examples=60, deadline=None)
@given(tree=st.one_of(numeric_trees(), categorical_trees()), data=st.data())
def test_lca_covers_the_set_and_nothing_below_it_does(tree: Hierarchy, data: st.DataObject) -> None:
    codes = data.draw(st.lists(st.integers(0, len(tree) - 1), min_size=1, max_size=6))
    a = tree.lca(codes)
    assert all(tree.is_ancestor(a, c) for c in codes)
    assert not any(all(tree.is_ancestor(k, c) for c in codes) for k in tree.children(a).tolist())
    assert a == _brute_lca(tree, codes)
    assert tree.node_height[a] >= max(int(tree.node_height[c]) for c in codes)
    groups = np.zeros(len(codes), dtype=np.int64)
    assert tree.lca_by_group(np.array(codes), groups).tolist() == [a]
    x, y = np.array(codes), np.array(codes[::-1])
    assert tree.lca_pairs(x, y).tolist() == tree._climb(x, y).tolist()


@settings(max_examples=60, deadline=None)
@given(tree=numeric_trees(), values=st.lists(st.floats(0, 100, exclude_max=True), min_size=1, max_size=20))
def test_leaf_of_agrees_with_leaf_ranges(tree: Hierarchy, values: list[float]) -> None:
    v = np.array(values)
    leaves = tree.leaf_of(v)
    assert set(leaves.tolist()) <= set(tree.leaves.tolist()) - {tree.missing}
    assert np.all(tree.lo[leaves] <= v) and np.all(v < tree.hi[leaves])
    # leaves partition the root's range: their widths add up to it
    value_leaves = [c for c in tree.leaves.tolist() if c != tree.missing]
    assert math.isclose(float(np.sum(tree.hi[value_leaves] - tree.lo[value_leaves])), 100.0)


@settings(max_examples=60, deadline=None)
@given(tree=numeric_trees(), a=st.floats(0, 99.5), width=st.floats(0, 50), closed=st.booleans())
def test_cover_is_the_smallest_node_containing_the_interval(
    tree: Hierarchy, a: float, width: float, closed: bool
) -> None:
    b = min(a + width, 99.9)
    if not closed and b <= a:
        b = a + 0.25
    node = int(tree.cover(a, b, closed=closed))

    def contains(k: int) -> bool:
        return bool(tree.lo[k] <= a and (b <= tree.hi[k] if not closed else b < tree.hi[k]))

    assert contains(node)
    assert not any(contains(k) for k in tree.children(node).tolist())


def test_large_tree_climbs_instead_of_a_table() -> None:
    n = 3000  # above the 2048-node table limit
    parent = np.array([-1] + [(i - 1) // 3 for i in range(1, n)] + [0])
    names = np.array([f"v{i}" for i in range(n)] + [MISSING])
    t = Hierarchy(names, parent, np.full(n + 1, np.nan), np.full(n + 1, np.nan))
    a = np.array([2999, 1500, 4, t.missing])
    b = np.array([2998, 1501, 13, 7])
    got = t.lca_pairs(a, b)
    assert got.tolist() == [_brute_lca(t, [int(x), int(y)]) for x, y in zip(a, b, strict=True)]
    assert "lca_table" not in vars(t)  # the n x n table was not built
