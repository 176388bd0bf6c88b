"""The MeSH Age Groups (M01.060) as a strict generalization tree over age in years; the paper's Figure 1.

MeSH is a retrieval vocabulary, not a partition of the age axis. The tree (MeSH 2024, unchanged through
2026) and the scope notes of its age descriptors:

========================  ==========  ====================  ==========================================
descriptor                UI          tree number           scope note (years)
========================  ==========  ====================  ==========================================
Age Groups                D009273     M01.060               none (the root)
Infant                    D007223     M01.060.703           1 to 23 months
Infant, Newborn           D007231     M01.060.703.520       the first 28 days after birth
Child                     D002648     M01.060.406           6 to 12
Child, Preschool          D002675     M01.060.406.448       2 to 5
Adolescent                D000293     M01.060.057           13 to 18
Adult                     D000328     M01.060.116           19 through 44
Young Adult               D055815     M01.060.116.815       19 to 24
Middle Aged               D008875     M01.060.116.630       45 to 64
Aged                      D000368     M01.060.116.100       65 and over (older note: 65 through 79)
Aged, 80 and over         D000369     M01.060.116.100.080   80 and over
Octogenarians             D000087742  M01.060.116.100.080.750  80 to 89 (from the name)
Nonagenarians             D000088642  M01.060.116.100.080.625  90 to 99 (from the name)
Centenarians              D000087662  M01.060.116.100.080.500  100 and over (from the name)
========================  ==========  ====================  ==========================================

The scopes do not nest: Infant's note leaves out its child Newborn, Child's leaves out Preschool, and
Adult's (19-44) leaves out Middle Aged and Aged, which MeSH still files under it (the tree serves
"explode" retrieval). Frail Elderly, Birth Cohort and the birth-weight / gestational-age infant
descriptors are not age bands and are left out.

Construction of the strict tree (every node is a half-open range [lo, hi) in years; children tile parents):

1. Each internal descriptor stands for its *exploded* range, the union of its own scope and its
   descendants': Infant [0, 2), Child [2, 13), Adult [19, inf), Aged [65, inf).
2. The part of a descriptor's own scope that no child covers becomes a leaf named after the descriptor
   and that band: "Infant, 1-23 months" [28 d, 2) (D007223 own scope), "Child, 6-12 years" [6, 13)
   (D002648 own scope), "Aged, 65-79 years" [65, 80) (D000368 without D000369).
3. Adult's own scope [19, 45) is a node "Adult, 19-44 years" between Adult and Young Adult; its part
   without Young Adult is the leaf "Adult, 25-44 years" [25, 45), a band with no MeSH name. Middle Aged
   and Aged sit beside it under Adult, as in MeSH.
4. A descriptor whose range equals its only child's would be a single-child chain; none remains, so every
   level of the tree is a real generalization (a level table that repeats ``Infant [0-2 y)`` at two levels
   names one node, see :func:`hierarchies.from_levels`).
5. Boundaries follow the scope notes with exact ages: Adolescent ends at the 19th birthday, Newborn at
   28 days = 28 / 365.25 years (the current note; FAERS age_grp "N" and ICH E11 also end at 27 days).
6. The root is named ``*`` like every bundled root, and `missing` is a leaf directly under it (SPEC §5).

The result has height 3 (``* > Adult > Adult, 19-44 years > Young Adult``), one more than the paper's
Figure 1 (height 2), because the paper's tree treats "Adult" as a value and a parent at once; with
``split_80_plus=True`` "Aged, 80 and over" is split into Octogenarians, Nonagenarians and Centenarians and
the height is 4.

Ages given in decades (FAERS age_cod DEC) cover ten years, e.g. 6 DEC = [60, 70), which can straddle a
leaf boundary (65). Rule: such an age goes to the smallest node that contains its whole range,
``tree.cover(*age_from_decade(d), closed=False)``; 6 DEC gives "Adult" [19, inf), 2 DEC gives
"Adult, 19-44 years", 0 DEC [0, 10) gives the root. No value is dropped or guessed inside its decade.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hierarchies.build import NodeRow, from_rows
from hierarchies.errors import HierarchyError
from hierarchies.tree import Hierarchy

__all__ = ["NEWBORN_END_YEARS", "age_from_decade", "mesh_age_tree", "paper_example_age_tree"]

NEWBORN_END_YEARS = 28 / 365.25
"""End of "Infant, Newborn" (D007231): the first 28 days after birth, in years of 365.25 days."""

_INF = math.inf

# (name, parent, lo, hi): MeSH descriptor (UI) in the comment; "own" marks a descriptor's own band.
_MESH_ROWS: tuple[tuple[str, str | None, float, float], ...] = (
    ("*", None, math.nan, math.nan),  # D009273 Age Groups; range = union of its children, [0, inf)
    ("Infant", "*", 0.0, 2.0),  # D007223 exploded
    ("Infant, Newborn", "Infant", 0.0, NEWBORN_END_YEARS),  # D007231
    ("Infant, 1-23 months", "Infant", NEWBORN_END_YEARS, 2.0),  # D007223 own
    ("Child", "*", 2.0, 13.0),  # D002648 exploded
    ("Child, Preschool", "Child", 2.0, 6.0),  # D002675
    ("Child, 6-12 years", "Child", 6.0, 13.0),  # D002648 own
    ("Adolescent", "*", 13.0, 19.0),  # D000293
    ("Adult", "*", 19.0, _INF),  # D000328 exploded
    ("Adult, 19-44 years", "Adult", 19.0, 45.0),  # D000328 own
    ("Young Adult", "Adult, 19-44 years", 19.0, 25.0),  # D055815
    ("Adult, 25-44 years", "Adult, 19-44 years", 25.0, 45.0),  # D000328 own minus D055815
    ("Middle Aged", "Adult", 45.0, 65.0),  # D008875
    ("Aged", "Adult", 65.0, _INF),  # D000368 exploded
    ("Aged, 65-79 years", "Aged", 65.0, 80.0),  # D000368 own minus D000369
    ("Aged, 80 and over", "Aged", 80.0, _INF),  # D000369
)

_OVER_80_ROWS: tuple[tuple[str, str | None, float, float], ...] = (
    ("Octogenarians", "Aged, 80 and over", 80.0, 90.0),  # D000087742
    ("Nonagenarians", "Aged, 80 and over", 90.0, 100.0),  # D000088642
    ("Centenarians", "Aged, 80 and over", 100.0, _INF),  # D000087662
)


def mesh_age_tree(*, split_80_plus: bool = False) -> Hierarchy:
    """The bundled MeSH Age Groups tree over age in years, leaves partitioning [0, inf).

    Construction and sources in the module docstring. Leaves (default): Infant, Newborn; Infant, 1-23
    months; Child, Preschool; Child, 6-12 years; Adolescent; Young Adult; Adult, 25-44 years; Middle Aged;
    Aged, 65-79 years; Aged, 80 and over; and `missing`.

    Args:
        split_80_plus: Split "Aged, 80 and over" into Octogenarians [80, 90), Nonagenarians [90, 100) and
            Centenarians [100, inf) (newer descriptors; small bands).

    Returns:
        A numeric tree rooted at ``*`` [0, inf), height 3 (4 with ``split_80_plus``).
    """
    rows = _MESH_ROWS + (_OVER_80_ROWS if split_80_plus else ())
    return from_rows(
        (NodeRow(name, parent, lo, hi, where=f"mesh_age_tree: {name!r}") for name, parent, lo, hi in rows),
        source="mesh_age_tree",
    )


def paper_example_age_tree() -> Hierarchy:
    """The paper's Figure 1 age hierarchy (Lin, Yang & Wang 2016), categorical, height 2.

    The paper names its nodes only through Example 2 and Table 4: ages are values such as "Young Adult",
    "Adult" and "Adolescent"; the tree has height 2; LCA(Young Adult, Adolescent) is the root (height 2) and
    LCA(Young Adult, Adult) is Adult (height 1). This reconstruction takes the MeSH descriptors of 2016 two
    levels deep: ``*`` > Infant > Infant, Newborn; ``*`` > Child > Child, Preschool; ``*`` > Adolescent;
    ``*`` > Adult > Young Adult, Middle Aged, Aged (Aged, 80 and over would make it height 3, so it is not
    in the figure's tree). Internal nodes are values too ("Adult"), so the tree has no ranges; `missing` is a
    leaf under the root.
    """
    rows: tuple[tuple[str, str | None], ...] = (
        ("*", None),
        ("Infant", "*"),
        ("Infant, Newborn", "Infant"),
        ("Child", "*"),
        ("Child, Preschool", "Child"),
        ("Adolescent", "*"),
        ("Adult", "*"),
        ("Young Adult", "Adult"),
        ("Middle Aged", "Adult"),
        ("Aged", "Adult"),
    )
    return from_rows(
        (NodeRow(c, p, where=f"paper_example_age_tree: {c!r}") for c, p in rows),
        source="paper_example_age_tree",
    )


def age_from_decade(decade: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The age range in years [10·d, 10·d + 10) of an age given in decades (FAERS age_cod DEC).

    Map the range to a node with ``tree.cover(lo, hi, closed=False)`` (the smallest node containing the
    whole decade; module docstring).

    Args:
        decade: Decades d, whole numbers >= 0; NaN for a missing age.

    Returns:
        (lo, hi) arrays of the input's shape; NaN where the decade is NaN.

    Raises:
        HierarchyError: a negative, fractional or infinite decade.
    """
    d = np.asarray(decade, dtype=np.float64)
    known = ~np.isnan(d)
    bad = known & (~np.isfinite(d) | (d < 0) | (d != np.floor(d)))
    if bool(np.any(bad)):
        raise HierarchyError(
            f"age_from_decade: decade {d[bad].ravel()[0]:g} (expected a whole number of decades >= 0, or NaN)"
        )
    return 10.0 * d, 10.0 * d + 10.0
