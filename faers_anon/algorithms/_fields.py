"""Field QIDs in the clustering kernel: categorical hierarchies given as per-level codes (docs/engine.md).

A field QID f of height H_f (:class:`~faers_anon.algorithms.types.FieldQid`) is stored per pattern as
H_f codes, level 0 (the value) first, in the row ``pat_fcode[p, off_f : off_f + H_f]``: a code ≥ 0 is
the pattern's ancestor at that level, −1 "no common value" (its versions differ, or the level is the
root ``*``), and −2 at every level a missing value. Two units share their level-l ancestor when both
codes are equal and ≥ 0; agreeing at level l implies agreeing at every level above (a hierarchy), so a
group's value is the *lowest* level where every known member agrees, and that level is found from one
member's codes (the group's *representative* pattern) without a tree:

    level(g ∪ {r}) = min { l ≥ level(g) : rep_g[l] = r[l] ≥ 0 },  H_f if none (the root ``*``)

The group's state per field is ``fs[f] = (known, missing, level, rep)``; its loss (SPEC §5, §6):

    F_f(g) = 1                   known > 0 and missing > 0 (a mix is released at the root)
           = 0                   known = 0 (all missing: released missing, nothing generalized)
           = level(g) / H_f      otherwise (level H_f, the root, is full loss)

This is h(C_f, g) / h(C_f) of SPEC §6 for the level trees of :mod:`faers_anon.io.qid_fields` and equals
the loss the release computes for the group (:func:`faers_anon.io.qid_fields.generalize_fields`).

Classes of the pool know a field only down to its *class level* ``f_lc[f]``: ``cls_fcode`` holds the
codes at levels ≥ f_lc (shared by every pattern of the class), −3 below (unknown), −2 when the class is
missing on f. :func:`fields_bound` is then a lower bound of F over the class's patterns: a level below
f_lc counts as a possible agreement unless the codes differ at f_lc (agreement below f_lc would imply
agreement at f_lc).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from faers_anon._numba_cache import njit

I64 = NDArray[np.int64]

MISSING = -2
"""Code of every level of a missing value."""
UNKNOWN = -3
"""Class code of a level below the class level (the class's patterns may differ there)."""
KNOWN, MISS, LEVEL, REP = 0, 1, 2, 3


@njit(cache=True, inline="always")  # type: ignore[misc]
def field_term(known: int, missing: int, level: int, height: int) -> float:
    """F_f(g) from the field's state (module docstring)."""
    if known > 0 and missing > 0:
        return 1.0
    if known == 0:
        return 0.0
    return level / height


@njit(cache=True)  # type: ignore[misc]
def fields_loss(off: I64, height: I64, fs: I64) -> float:
    """Σ_f F_f(g) over the field states given (the rows of ``fs``; 0 when there are none)."""
    total = 0.0
    for f in range(fs.shape[0]):
        total += field_term(fs[f, KNOWN], fs[f, MISS], fs[f, LEVEL], height[f])
    return total


@njit(cache=True, inline="always")  # type: ignore[misc]
def own_level(codes: I64, p: int, o: int, h: int) -> int:
    """The lowest level at which one unit (row p of ``codes``) has a value (H if none)."""
    for lev in range(h):
        if codes[p, o + lev] >= 0:
            return lev
    return h


@njit(cache=True, inline="always")  # type: ignore[misc]
def merge_level(pat_fcode: I64, rep: int, p: int, o: int, h: int, start: int) -> int:
    """min { l ≥ start : rep[l] = row[l] ≥ 0 } over one field's levels (rows ``rep`` and p), H if none.

    Rows are indexed, never sliced: a slice is an array view whose reference count numba updates
    atomically, which cost a third of stage 1.
    """
    for lev in range(start, h):
        c = pat_fcode[p, o + lev]
        if c >= 0 and c == pat_fcode[rep, o + lev]:
            return lev
    return h


@njit(cache=True, inline="always")  # type: ignore[misc]
def fields_with(off: I64, height: I64, fs: I64, pat_fcode: I64, p: int) -> float:
    """Σ_f F_f(g ∪ {r}) for a unit r of pattern p, g unchanged (exact)."""
    total = 0.0
    for f in range(height.shape[0]):
        o, h = off[f], height[f]
        known, miss = fs[f, KNOWN], fs[f, MISS]
        if pat_fcode[p, o] == MISSING:
            total += field_term(known, miss + 1, fs[f, LEVEL], h)
        elif known == 0:
            total += field_term(1, miss, own_level(pat_fcode, p, o, h), h)
        else:
            lev = merge_level(pat_fcode, fs[f, REP], p, o, h, fs[f, LEVEL])
            total += field_term(known + 1, miss, lev, h)
    return total


@njit(cache=True, inline="always")  # type: ignore[misc]
def fields_bound(off: I64, height: I64, lc: I64, fs: I64, pat_fcode: I64, cls_fcode: I64, c: int) -> float:
    """A lower bound of Σ_f F_f(g ∪ {r}) over every unit r of class c (class codes ``cls_fcode[c]``)."""
    total = 0.0
    for f in range(height.shape[0]):
        o, h, c_lev = off[f], height[f], lc[f]
        known, miss = fs[f, KNOWN], fs[f, MISS]
        if cls_fcode[c, o] == MISSING:
            total += field_term(known, miss + 1, fs[f, LEVEL], h)
            continue
        if miss > 0:
            total += 1.0
            continue
        # no member known: the class's own codes, unknown levels count as values
        start = 0 if known == 0 else fs[f, LEVEL]
        rep = fs[f, REP]
        below = c_lev >= h or known == 0 or pat_fcode[rep, o + c_lev] == cls_fcode[c, o + c_lev]
        lev = h
        for x in range(start, h):
            code = cls_fcode[c, o + x]
            if code == UNKNOWN:
                if below:
                    lev = x
                    break
            elif code >= 0 and (known == 0 or code == pat_fcode[rep, o + x]):
                lev = x
                break
        total += field_term(1, 0, lev, h)
    return total


@njit(cache=True)  # type: ignore[misc]
def add_fields(off: I64, height: I64, fs: I64, pat_fcode: I64, p: int) -> None:
    """Update the group's field state with a unit of pattern p (module docstring)."""
    for f in range(height.shape[0]):
        o, h = off[f], height[f]
        if pat_fcode[p, o] == MISSING:
            fs[f, MISS] += 1
        elif fs[f, KNOWN] == 0:
            fs[f, KNOWN] = 1
            fs[f, LEVEL] = own_level(pat_fcode, p, o, h)
            fs[f, REP] = p
        else:
            fs[f, KNOWN] += 1
            fs[f, LEVEL] = merge_level(pat_fcode, fs[f, REP], p, o, h, fs[f, LEVEL])
