"""Bins and swaps of the swapping methods: MDAV clustering (numba) for equi-depth bins, the equi-width grid,
the random cycle within bins, the attacker's success per tuple (``swapping`` module docstring)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from faers_anon._numba_cache import njit

__all__ = ["cyclic_sources", "grid_bins", "mdav_labels", "pair_risk"]


@njit(cache=True)
def _farthest(z: NDArray[np.float64], alive: NDArray[np.int64], m: int, point: NDArray[np.float64]) -> int:
    """Position (in ``alive[:m]``) of the tuple farthest from ``point``; the first one on ties."""
    best, best_d = 0, -1.0
    for pos in range(m):
        i = alive[pos]
        d = 0.0
        for c in range(z.shape[1]):
            t = z[i, c] - point[c]
            d += t * t
        if d > best_d:
            best, best_d = pos, d
    return best


@njit(cache=True)
def _take_nearest(
    z: NDArray[np.float64],
    alive: NDArray[np.int64],
    m: int,
    centre: int,
    k: int,
    labels: NDArray[np.int64],
    label: int,
) -> int:
    """Label the k tuples of ``alive[:m]`` nearest to tuple ``centre`` (itself included), remove them.

    Keeps a sorted buffer of the k best (distance, position); ties go to the earlier position. Returns the
    new count of alive tuples (the survivors are compacted in order to ``alive[:m-k]``).
    """
    bd = np.full(k, np.inf)
    bp = np.full(k, -1, dtype=np.int64)
    for pos in range(m):
        i = alive[pos]
        d = 0.0
        for c in range(z.shape[1]):
            t = z[i, c] - z[centre, c]
            d += t * t
        if d < bd[k - 1]:
            j = k - 1
            while j > 0 and bd[j - 1] > d:
                bd[j] = bd[j - 1]
                bp[j] = bp[j - 1]
                j -= 1
            bd[j] = d
            bp[j] = pos
    for j in range(k):
        labels[alive[bp[j]]] = label
    w = 0
    for pos in range(m):
        if labels[alive[pos]] != label:
            alive[w] = alive[pos]
            w += 1
    return w


@njit(cache=True)
def _centroid(z: NDArray[np.float64], alive: NDArray[np.int64], m: int) -> NDArray[np.float64]:
    out = np.zeros(z.shape[1])
    for pos in range(m):
        for c in range(z.shape[1]):
            out[c] += z[alive[pos], c]
    return out / m


@njit(cache=True)
def mdav_labels(z: NDArray[np.float64], k: int) -> NDArray[np.int64]:
    """MDAV partition of the rows of ``z`` into groups of k..2k-1 rows (Domingo-Ferrer & Mateo-Sanz 2002).

    While at least 3k rows remain: x_r = the row farthest from the centroid, its k nearest rows form a
    group; x_s = the remaining row farthest from x_r, its k nearest rows form a group. Then 2k..3k-1 rows
    left: one group of the k nearest to the row farthest from the centroid, the rest a group; fewer than
    2k: one group. O(n²/k) distance evaluations, O(n) memory. Deterministic (first index on ties).

    Returns:
        Group labels 0..G-1 in order of creation, shape (n,); all zeros when n < 2k.
    """
    n = z.shape[0]
    labels = np.full(n, -1, dtype=np.int64)
    alive = np.arange(n)
    m = n
    g = 0
    while m >= 3 * k:
        r = alive[_farthest(z, alive, m, _centroid(z, alive, m))]
        m = _take_nearest(z, alive, m, r, k, labels, g)
        s = alive[_farthest(z, alive, m, z[r])]
        m = _take_nearest(z, alive, m, s, k, labels, g + 1)
        g += 2
    if m >= 2 * k:
        r = alive[_farthest(z, alive, m, _centroid(z, alive, m))]
        m = _take_nearest(z, alive, m, r, k, labels, g)
        g += 1
    for pos in range(m):
        labels[alive[pos]] = g
    return labels


def grid_bins(z: NDArray[np.float64], t: float) -> tuple[NDArray[np.int64], int, int]:
    """MEWS bins of the rows of ``z`` (values in [0, 1]) for width t: grid cells, one-tuple bins merged.

    Returns:
        (dense bin labels, tuples in one-tuple cells before merging, cells per dimension). A single row is
        one bin (it cannot swap); several rows all in one-tuple cells become one bin.
    """
    per_dim = max(1, math.ceil(1.0 / t - 1e-9))
    cells = np.minimum(np.floor(z / t + 1e-9).astype(np.int64), per_dim - 1)  # a value on a line: upper cell
    uniq, labels = np.unique(cells, axis=0, return_inverse=True)
    labels = labels.ravel()
    counts = np.bincount(labels)
    lonely = np.flatnonzero(counts == 1)
    if lonely.size == 0 or z.shape[0] == 1:
        return labels, int(lonely.size), per_dim
    full = np.flatnonzero(counts >= 2)
    target = np.zeros(counts.size, dtype=np.int64)
    target[full] = full
    if full.size == 0:
        target[:] = 0
    else:
        for start in range(0, lonely.size, 4096):
            part = lonely[start : start + 4096]
            cheb = np.abs(uniq[part][:, None, :] - uniq[full][None, :, :]).max(axis=2)
            target[part] = full[np.argmin(cheb, axis=1)]
    _, dense = np.unique(target[labels], return_inverse=True)
    return dense.ravel().astype(np.int64), int(lonely.size), per_dim


def cyclic_sources(labels: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.int64]:
    """src[i] = the row whose values row i receives: a uniformly random cycle through each bin."""
    n = labels.size
    order = np.lexsort((rng.random(n), labels))
    lab = labels[order]
    starts = np.r_[0, np.flatnonzero(np.diff(lab)) + 1]
    ends = np.r_[starts[1:], n]
    nxt = np.arange(1, n + 1)
    nxt[ends - 1] = starts
    src = np.empty(n, dtype=np.int64)
    src[order] = order[nxt]
    return src


def pair_risk(labels: NDArray[np.int64], src: NDArray[np.int64]) -> NDArray[np.float64]:
    """Attacker's success per tuple under one partitioning: [bin(i) = bin(src(i))] / (N_bin(i) − 1)."""
    size = np.bincount(labels)[labels].astype(np.float64)
    same = (labels == labels[src]).astype(np.float64)
    return np.where(size >= 2, same / np.maximum(size - 1, 1), same)
