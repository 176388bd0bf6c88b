"""Hierarchy-free numeric generalization: a group's [min, max] and its width normalized by the domain.

Numeric QIDs without a hierarchy (weight, SPEC §5-§6) are generalized to the group's closed range
[min, max] of known values. Their share of the information loss is (max(N_i,g) − min(N_i,g)) /
(max(N_i) − min(N_i)) (Lin, Yang & Wang 2016, Definition 4; SPEC §6). Missing values (NaN) are not
values of the range; how a group mixing missing and known values is charged (full loss, SPEC §5) is the
caller's rule, as only the caller knows which cases were missing.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from hierarchies.errors import HierarchyError

__all__ = ["group_range", "group_ranges", "normalized_width", "normalized_widths"]


def group_range(values: ArrayLike) -> tuple[float, float]:
    """The closed range (min, max) of the known values, NaN ignored.

    Returns:
        (min, max) with min <= max; (nan, nan) when there is no known value (empty or all NaN), which is the
        group's `missing` (SPEC §5).
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[~np.isnan(v)]
    if v.size == 0:
        return math.nan, math.nan
    return float(v.min()), float(v.max())


def group_ranges(values: ArrayLike, groups: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-group closed range of the known values, vectorized (NaN ignored).

    Args:
        values: Values, shape (m,).
        groups: Group id of each value, integers 0..G-1, shape (m,).

    Returns:
        (lo, hi) of shape (G,), G = max(groups) + 1; NaN for a group with no known value.

    Raises:
        HierarchyError: shapes differ or a group id is negative.
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    g = np.asarray(groups, dtype=np.int64).ravel()
    if v.shape != g.shape:
        raise HierarchyError(f"group_ranges: {v.size} values but {g.size} group ids (expected one per value)")
    if g.size == 0:
        return np.empty(0, dtype=np.float64), np.empty(0, dtype=np.float64)
    if int(g.min()) < 0:
        raise HierarchyError(f"group_ranges: group id {int(g.min())} (expected ids >= 0)")
    n_groups = int(g.max()) + 1
    lo = np.full(n_groups, np.nan)
    hi = np.full(n_groups, np.nan)
    np.fmin.at(lo, g, v)
    np.fmax.at(hi, g, v)
    return lo, hi


def normalized_width(lo: float, hi: float, domain_lo: float, domain_hi: float) -> float:
    """(hi − lo) / (domain_hi − domain_lo): a group range's width as a share of the attribute's range.

    Source: the numeric term of Lin, Yang & Wang 2016, Definition 4; SPEC §6.

    Returns:
        A value in [0, 1]: 0 for a single value, 1 for the whole domain. When the domain is a single point
        (every value equal, domain_lo == domain_hi) the result is 0: no generalization lost anything.

    Raises:
        HierarchyError: a NaN or infinite bound (a missing group has no width; the caller decides its loss),
            lo > hi, domain_lo > domain_hi, or [lo, hi] not inside the domain.
    """
    return float(normalized_widths(lo, hi, domain_lo, domain_hi))


def normalized_widths(
    lo: ArrayLike, hi: ArrayLike, domain_lo: float, domain_hi: float
) -> NDArray[np.float64]:
    """Element-wise :func:`normalized_width` over broadcastable arrays of ranges (same rules and errors)."""
    a, b = np.broadcast_arrays(np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64))
    dlo, dhi = float(domain_lo), float(domain_hi)
    if not (math.isfinite(dlo) and math.isfinite(dhi)) or dlo > dhi:
        raise HierarchyError(
            f"normalized_width: domain [{dlo:g}, {dhi:g}] "
            "(expected finite bounds with domain_lo <= domain_hi)"
        )
    if not bool(np.all(np.isfinite(a) & np.isfinite(b))):
        raise HierarchyError(
            "normalized_width: a NaN or infinite range bound (expected the finite [min, max] of known values)"
        )
    if bool(np.any(a > b)):
        i = int(np.flatnonzero((a > b).ravel())[0])
        raise HierarchyError(
            f"normalized_width: range [{a.ravel()[i]:g}, {b.ravel()[i]:g}] (expected lo <= hi)"
        )
    outside = (a < dlo) | (b > dhi)
    if bool(np.any(outside)):
        i = int(np.flatnonzero(outside.ravel())[0])
        raise HierarchyError(
            f"normalized_width: range [{a.ravel()[i]:g}, {b.ravel()[i]:g}] outside the domain "
            f"[{dlo:g}, {dhi:g}] (expected a range inside the domain)"
        )
    if dhi == dlo:
        return np.zeros(a.shape, dtype=np.float64)
    return np.asarray((b - a) / (dhi - dlo), dtype=np.float64)
