"""The bundled MeSH age tree, the paper's Figure 1 tree and Example 2, and ages given in decades."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from hierarchies import (
    MISSING,
    NEWBORN_END_YEARS,
    Hierarchy,
    HierarchyError,
    age_from_decade,
    from_levels,
    interval,
    mesh_age_tree,
    paper_example_age_tree,
    sex_tree,
)

LEAVES = [
    ("Infant, Newborn", 0.0, NEWBORN_END_YEARS),
    ("Infant, 1-23 months", NEWBORN_END_YEARS, 2.0),
    ("Child, Preschool", 2.0, 6.0),
    ("Child, 6-12 years", 6.0, 13.0),
    ("Adolescent", 13.0, 19.0),
    ("Young Adult", 19.0, 25.0),
    ("Adult, 25-44 years", 25.0, 45.0),
    ("Middle Aged", 45.0, 65.0),
    ("Aged, 65-79 years", 65.0, 80.0),
    ("Aged, 80 and over", 80.0, math.inf),
]


def _parent(t: Hierarchy, name: str) -> str:
    return t.name(int(t.parent[t.code(name)]))


def test_bundled_tree_shape_height_3() -> None:
    t = mesh_age_tree()
    assert t.height == 3
    assert t.name(t.root) == "*" and t.range_of(t.root) == (0.0, math.inf)
    assert sorted(t.decode(t.children(t.root)).tolist()) == sorted(
        ["Infant", "Child", "Adolescent", "Adult", MISSING]
    )
    assert _parent(t, "Young Adult") == "Adult, 19-44 years"
    assert _parent(t, "Adult, 19-44 years") == "Adult"
    assert _parent(t, "Middle Aged") == "Adult"
    assert _parent(t, "Aged, 80 and over") == "Aged"
    assert _parent(t, "Aged") == "Adult"
    heights = {t.name(i): int(t.node_height[i]) for i in range(len(t))}
    assert heights == {
        "*": 3,
        "Infant": 1,
        "Child": 1,
        "Adult": 2,
        "Adult, 19-44 years": 1,
        "Aged": 1,
        **{name: 0 for name, _, _ in LEAVES},
        MISSING: 0,
    }


def test_bundled_leaves_partition_zero_to_infinity() -> None:
    t = mesh_age_tree()
    value_leaves = [c for c in t.leaves.tolist() if c != t.missing]
    got = sorted((t.range_of(c)[0], t.range_of(c)[1], t.name(c)) for c in value_leaves)
    assert [(name, lo, hi) for lo, hi, name in got] == LEAVES
    assert all(a[1] == b[0] for a, b in zip(got, got[1:], strict=False))


@pytest.mark.parametrize(
    ("age", "leaf"),
    [
        (0.0, "Infant, Newborn"),
        (27 / 365.25, "Infant, Newborn"),
        (28 / 365.25, "Infant, 1-23 months"),  # the 29th day of life
        (1.99, "Infant, 1-23 months"),
        (2.0, "Child, Preschool"),
        (12.99, "Child, 6-12 years"),
        (13.0, "Adolescent"),
        (18.999, "Adolescent"),
        (19.0, "Young Adult"),
        (24.5, "Young Adult"),
        (25.0, "Adult, 25-44 years"),
        (44.9, "Adult, 25-44 years"),
        (45.0, "Middle Aged"),
        (64.9, "Middle Aged"),
        (65.0, "Aged, 65-79 years"),
        (80.0, "Aged, 80 and over"),
        (120.0, "Aged, 80 and over"),
        (math.nan, MISSING),
    ],
)
def test_leaf_of_follows_the_scope_notes(age: float, leaf: str) -> None:
    t = mesh_age_tree()
    assert t.name(int(t.leaf_of(np.array([age]))[0])) == leaf


def test_lca_and_heights_on_the_bundled_tree() -> None:
    t = mesh_age_tree()
    c = t.code
    assert t.lca([c("Young Adult"), c("Adolescent")]) == t.root
    assert t.lca([c("Young Adult"), c("Adult, 25-44 years")]) == c("Adult, 19-44 years")
    assert t.lca([c("Young Adult"), c("Middle Aged")]) == c("Adult")
    assert t.lca([c("Aged, 65-79 years"), c("Aged, 80 and over")]) == c("Aged")
    assert t.lca([c("Infant, Newborn"), c("Infant, 1-23 months")]) == c("Infant")
    assert t.lca([c("Young Adult"), t.missing]) == t.root
    assert t.lca([t.missing]) == t.missing
    assert t.node_height[t.lca([c("Young Adult"), c("Middle Aged")])] / t.height == pytest.approx(2 / 3)


def test_split_80_plus_adds_the_newer_descriptors() -> None:
    t = mesh_age_tree(split_80_plus=True)
    assert t.height == 4
    got = t.decode(t.leaf_of(np.array([80.0, 89.9, 90.0, 99.9, 100.0, 115.0]))).tolist()
    assert got == ["Octogenarians"] * 2 + ["Nonagenarians"] * 2 + ["Centenarians"] * 2
    assert t.children(t.code("Aged, 80 and over")).size == 3


def test_decades_go_to_the_smallest_node_holding_the_whole_decade() -> None:
    t = mesh_age_tree()
    lo, hi = age_from_decade(np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, np.nan]))
    assert lo.tolist()[:3] == [0.0, 10.0, 20.0] and hi.tolist()[:3] == [10.0, 20.0, 30.0]
    got = t.decode(t.cover(lo, hi, closed=False)).tolist()
    assert got == [
        "*",  # [0, 10): Infant and Child
        "*",  # [10, 20): Child, Adolescent, Young Adult
        "Adult, 19-44 years",  # [20, 30) straddles 25
        "Adult, 25-44 years",  # [30, 40)
        "Adult",  # [40, 50) straddles 45
        "Middle Aged",  # [50, 60)
        "Adult",  # [60, 70) straddles 65
        "Aged, 65-79 years",  # [70, 80): the 80 bound is exclusive
        "Aged, 80 and over",
        "Aged, 80 and over",
        MISSING,
    ]


@pytest.mark.parametrize("decade", [-1.0, 2.5, math.inf])
def test_bad_decades_are_errors(decade: float) -> None:
    with pytest.raises(
        HierarchyError, match=r"^age_from_decade: decade .* \(expected a whole number of decades"
    ):
        age_from_decade(np.array([3.0, decade]))


def test_paper_figure_1_tree() -> None:
    """Lin, Yang & Wang 2016, Example 2: the MeSH age tree of height 2 and the sex tree of height 1."""
    age = paper_example_age_tree()
    c = age.code
    assert age.height == 2
    assert not age.is_numeric
    assert age.node_height[age.lca([c("Young Adult"), c("Adolescent")])] == 2
    assert age.lca([c("Young Adult"), c("Adult")]) == c("Adult")
    assert age.node_height[c("Adult")] == 1
    assert age.node_height[c("Young Adult")] == 0
    assert sex_tree().height == 1


def test_paper_example_2_information_loss() -> None:
    """IL(g) = |g| · (Σ width / range + Σ h(C, g) / h(C)) with SPEC §6's corrected numbers."""
    age, sex = paper_example_age_tree(), sex_tree()
    group = {"sex": ["M"] * 4, "age": ["Young Adult"] * 4, "wt_lo": [50.0] * 4, "wt_hi": [75.0] * 4}
    records = {"r5": ("M", "Adolescent", 50.0), "r6": ("F", "Adult", 40.0), "r7": ("M", "Young Adult", 80.0)}

    def il(sexes: list[str], ages: list[str], wts: list[float]) -> float:
        lo, hi = interval.group_range(np.array(wts))
        return len(sexes) * (
            interval.normalized_width(lo, hi, 0.0, 100.0)
            + age.node_height[age.lca(age.encode(ages))] / age.height
            + sex.node_height[sex.lca(sex.encode(sexes))] / sex.height
        )

    assert il(group["sex"], group["age"], group["wt_lo"] + group["wt_hi"]) == pytest.approx(1.0)
    expected = {"r5": 6.25, "r6": 9.25, "r7": 1.5}
    for name, (s, a, w) in records.items():
        got = il([*group["sex"], s], [*group["age"], a], [*group["wt_lo"], *group["wt_hi"], w])
        assert got == pytest.approx(expected[name]), name


def test_bundled_tree_matches_the_shared_level_table(shared_data: Path) -> None:
    """Built from the shared MeSH level table (chains collapsed), the tree is the bundled one.

    The one deliberate difference: Newborn ends at 28 days (current scope note), the table at 1 month.
    """
    with (shared_data / "age_generalization_hierarchy.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    table = [[r["level0_leaf"], r["level1_mesh_band"], r["level2_mesh_top"], r["level3_root"]] for r in rows]
    ranges = [(float(r["min_age_years"]), float(r["max_age_years_exclusive"] or "inf")) for r in rows]
    shared = from_levels(table, ranges=ranges)
    ours = mesh_age_tree()
    assert shared.height == ours.height == 3
    ours_by_range = {
        ours.range_of(i): int(ours.node_height[i]) for i in range(len(ours)) if i != ours.missing
    }
    for i in range(len(shared)):
        if i == shared.missing:
            continue
        lo, hi = shared.range_of(i)
        lo = NEWBORN_END_YEARS if math.isclose(lo, 1 / 12, abs_tol=1e-5) else lo
        hi = NEWBORN_END_YEARS if math.isclose(hi, 1 / 12, abs_tol=1e-5) else hi
        assert ours_by_range[(lo, hi)] == shared.node_height[i], shared.name(i)
    assert len(shared) == len(ours)


def test_descriptor_leaves_keep_the_mesh_scopes(shared_data: Path) -> None:
    with (shared_data / "mesh_age_groups.csv").open(encoding="utf-8") as f:
        facts = {r["name"]: r for r in csv.DictReader(f)}
    t = mesh_age_tree(split_80_plus=True)
    for name in [
        "Child, Preschool",
        "Adolescent",
        "Young Adult",
        "Middle Aged",
        "Octogenarians",
        "Centenarians",
    ]:
        lo, hi = t.range_of(t.code(name))
        assert lo == float(facts[name]["min_age_years"]), name
        assert hi == float(facts[name]["max_age_years_exclusive"] or "inf"), name
    for exploded in ["Adult", "Aged"]:  # MeSH scope starts the exploded range
        assert t.range_of(t.code(exploded))[0] == float(facts[exploded]["min_age_years"])
