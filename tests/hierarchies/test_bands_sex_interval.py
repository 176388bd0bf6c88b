"""Sex tree, weight bands, hierarchy-free intervals, and the builders' own errors."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hierarchies import (
    MISSING,
    Hierarchy,
    HierarchyError,
    NodeRow,
    from_levels,
    from_rows,
    interval,
    mesh_age_tree,
    paper_example_age_tree,
    sex_tree,
    weight_bands,
)


def test_sex_tree() -> None:
    t = sex_tree()
    assert t.height == 1 and not t.is_numeric
    assert sorted(t.decode(t.children(t.root)).tolist()) == ["F", "M", MISSING]
    f, m, miss = t.encode(["F", "M", None]).tolist()
    assert t.lca([f, m]) == t.root and t.name(t.root) == "*"
    assert t.lca([f, f]) == f
    assert t.lca([miss, miss]) == t.missing
    assert t.lca([miss, m]) == t.root
    assert t.node_height[[f, m, miss]].tolist() == [0, 0, 0]


def test_weight_bands_group_pairs_without_single_child_chains() -> None:
    t = weight_bands([0, 10, 20, 30, 40], fanout=2)  # 5 bands with the open top
    assert t.is_numeric and t.range_of(t.root) == (0.0, math.inf)
    got = t.decode(t.leaf_of(np.array([0.0, 15.0, 39.9, 40.0, 600.0, np.nan]))).tolist()
    assert got == ["[0, 10)", "[10, 20)", "[30, 40)", "[40, inf)", "[40, inf)", MISSING]
    for code in range(len(t)):
        kids = t.children(code)
        assert kids.size == 0 or kids.size >= 2, t.name(code)
    # [0,10) [10,20) | [20,30) [30,40) | [40,inf) -> [0,20) [20,40) [40,inf) -> [0,40) [40,inf) -> *
    assert t.name(int(t.parent[t.code("[40, inf)")])) == "*"
    assert t.name(int(t.parent[t.code("[0, 20)")])) == "[0, 40)"
    assert t.height == 3
    assert t.name(t.lca(t.leaf_of(np.array([5.0, 25.0])).tolist())) == "[0, 40)"


def test_weight_bands_closed_top_and_wide_fanout() -> None:
    t = weight_bands(range(0, 70, 10), fanout=3, open_top=False)
    assert t.range_of(t.root) == (0.0, 60.0)
    assert t.height == 2
    assert sorted(t.decode(t.children(t.root)).tolist()) == ["[0, 30)", "[30, 60)", MISSING]
    with pytest.raises(HierarchyError, match=r"^leaf_of: 1 value\(s\) outside the tree's range, first 60 "):
        t.leaf_of(np.array([60.0]))


@pytest.mark.parametrize(
    ("edges", "options", "message"),
    [
        (
            [0, 10],
            {"open_top": False},
            r"^weight_bands: 1 band\(s\) from edges \[0\.0, 10\.0\] \(expected at least",
        ),
        ([0, 10, 10], {}, r"^weight_bands: edges \[0\.0, 10\.0, 10\.0\] \(expected strictly increasing"),
        ([0, math.inf], {}, r"^weight_bands: edges .* hold a non-finite value \(expected finite numbers\)$"),
        ([0, 10, 20], {"fanout": 1}, r"^weight_bands: fanout 1 \(expected an integer >= 2\)$"),
    ],
)
def test_weight_band_errors(edges: list[float], options: dict[str, object], message: str) -> None:
    with pytest.raises(HierarchyError, match=message):
        weight_bands(edges, **options)  # type: ignore[arg-type]


def test_group_range_ignores_missing() -> None:
    assert interval.group_range(np.array([70.0, np.nan, 55.5, 80.0])) == (55.5, 80.0)
    assert interval.group_range(np.array([42.0])) == (42.0, 42.0)
    lo, hi = interval.group_range(np.array([np.nan, np.nan]))
    assert math.isnan(lo) and math.isnan(hi)
    assert all(math.isnan(x) for x in interval.group_range(np.array([])))


def test_group_ranges_per_group() -> None:
    lo, hi = interval.group_ranges(np.array([3.0, np.nan, 1.0, np.nan, 9.0]), np.array([0, 0, 0, 1, 3]))
    assert lo[[0, 3]].tolist() == [1.0, 9.0] and hi[[0, 3]].tolist() == [3.0, 9.0]
    assert np.isnan(lo[[1, 2]]).all() and np.isnan(hi[[1, 2]]).all()
    empty = interval.group_ranges(np.array([]), np.array([], dtype=np.int64))
    assert empty[0].size == empty[1].size == 0
    with pytest.raises(HierarchyError, match=r"^group_ranges: 2 values but 1 group ids"):
        interval.group_ranges(np.array([1.0, 2.0]), np.array([0]))
    with pytest.raises(HierarchyError, match=r"^group_ranges: group id -1 \(expected ids >= 0\)$"):
        interval.group_ranges(np.array([1.0]), np.array([-1]))


def test_normalized_width() -> None:
    assert interval.normalized_width(50.0, 75.0, 0.0, 100.0) == 0.25  # the paper's Example 2
    assert interval.normalized_width(7.0, 7.0, 0.0, 100.0) == 0.0
    assert interval.normalized_width(0.0, 100.0, 0.0, 100.0) == 1.0
    assert interval.normalized_width(3.0, 3.0, 3.0, 3.0) == 0.0  # a point domain loses nothing
    widths = interval.normalized_widths(np.array([0.0, 10.0]), np.array([5.0, 30.0]), 0.0, 40.0)
    assert widths.tolist() == [0.125, 0.5]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((math.nan, 3.0, 0.0, 10.0), r"^normalized_width: a NaN or infinite range bound"),
        ((5.0, 3.0, 0.0, 10.0), r"^normalized_width: range \[5, 3\] \(expected lo <= hi\)$"),
        ((0.0, 11.0, 0.0, 10.0), r"^normalized_width: range \[0, 11\] outside the domain \[0, 10\]"),
        ((0.0, 1.0, 10.0, 0.0), r"^normalized_width: domain \[10, 0\] \(expected finite bounds"),
        ((0.0, 1.0, 0.0, math.inf), r"^normalized_width: domain \[0, inf\]"),
    ],
)
def test_normalized_width_errors(args: tuple[float, float, float, float], message: str) -> None:
    with pytest.raises(HierarchyError, match=message):
        interval.normalized_width(*args)


@settings(max_examples=50, deadline=None)
@given(values=st.lists(st.floats(0, 650) | st.just(math.nan), min_size=1, max_size=30))
def test_group_range_holds_every_known_value_and_width_is_a_share(values: list[float]) -> None:
    v = np.array(values)
    lo, hi = interval.group_range(v)
    known = v[~np.isnan(v)]
    if known.size == 0:
        assert math.isnan(lo) and math.isnan(hi)
        return
    assert lo in known and hi in known
    assert np.all((lo <= known) & (known <= hi))
    assert 0.0 <= interval.normalized_width(lo, hi, 0.0, 650.0) <= 1.0


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([], r"^rows: no rows \(expected child, parent rows\)$"),
        ([NodeRow("", "*")], r"^rows: row 1: child: empty name"),
        (
            [NodeRow("a", "*"), NodeRow("a", "*")],
            r"^rows: row 2: child: 'a' is listed twice, first at rows: row 1",
        ),
    ],
)
def test_from_rows_errors(rows: list[NodeRow], message: str) -> None:
    with pytest.raises(HierarchyError, match=message):
        from_rows(rows)


@pytest.mark.parametrize(
    ("table", "ranges", "message"),
    [
        (
            [["a", "*"], ["b", "x", "*"]],
            None,
            r"^levels: rows of lengths \[2, 3\] \(expected one length >= 2\)$",
        ),
        ([["a"]], None, r"^levels: rows of lengths \[1\]"),
        ([["a", "*"]], [(0, 1), (1, 2)], r"^levels: 2 ranges for 1 rows \(expected one per row\)$"),
        (
            [["a", "x", "*"], ["a", "y", "*"]],
            None,
            r"^levels: row 2: child: leaf 'a' is listed twice, first at",
        ),
        (
            [["a", "x", "*"], ["b", "x", "z"]],
            None,
            r"^levels: row 2: parent: 'x' under 'z' but under '\*' at",
        ),
        ([["a", "x", "*"], ["x", "y", "*"]], None, r"^levels: row 2: parent: 'x' under 'y' but under '\*'"),
        (
            [["a", "a", "x", "*"], ["b", "a", "x", "*"]],
            None,
            r"^levels: child: 'a' is a leaf and an internal",
        ),
        (
            [["a", "*"], ["b", "+"]],
            None,
            r"^levels: row 2: parent: several roots: '\*' \(levels: row 1\), '\+'",
        ),
    ],
)
def test_from_levels_errors(
    table: list[list[str]], ranges: list[tuple[float, float]] | None, message: str
) -> None:
    with pytest.raises(HierarchyError, match=message):
        from_levels(table, ranges=ranges)


@pytest.mark.parametrize(
    "make",
    [
        mesh_age_tree,
        lambda: mesh_age_tree(split_80_plus=True),
        paper_example_age_tree,
        sex_tree,
        lambda: weight_bands(range(0, 160, 10)),
    ],
)
def test_every_bundled_tree_has_missing_as_a_leaf_under_the_root(make: Callable[[], Hierarchy]) -> None:
    t = make()
    assert t.name(t.missing) == MISSING and int(t.parent[t.missing]) == t.root
    assert t.node_height[t.missing] == 0 and t.name(t.root) == "*"
    others = np.array([c for c in range(len(t)) if c != t.missing])
    assert (t.lca_pairs(others, t.missing) == t.root).all()
    assert t.lca([t.missing, t.missing]) == t.missing
