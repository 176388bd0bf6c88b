"""The release's own class sizes for K + 1 or 2 items (prosecutor risk, SPEC §11) by one sort.

size(c) = min over the case's units u (items, or item pairs a < b) of n(kt, u), the cases of its
K-tuple kt holding u. Every (case, unit) row becomes one ``UInt64`` word kt · 2^(u + r) + u · 2^r + row
(u and r the bits of the largest unit code and case row): numpy sorts the words (its vectorized
sort), after which equal (kt, unit) are runs, n their lengths, and each row's case is in the low bits.
The pairs are written straight into the words by a numba kernel walking each case's sorted items (no
pair table, no case-id search), and the runs are read by a second one. When the word would not fit
in 64 bits, :func:`._units.unit_minima` does it (hashing). Same sizes either way.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from faers_anon._numba_cache import njit, sized
from faers_anon.risk._units import unit_minima

__all__ = ["own_minima"]

Ints = NDArray[np.int64]


@njit(cache=True)
def _words(start: Ints, item: Ints, kt: Ints, width: int, shifts: Ints, pairs: bool) -> NDArray[np.uint64]:
    """kt · 2^shifts[0] + unit · 2^shifts[1] + case for every (case, unit); unit = a · width + b."""
    n = 0
    for c in range(len(start) - 1):
        m = start[c + 1] - start[c]
        n += m * (m - 1) // 2 if pairs else m
    words = np.empty(n, np.uint64)
    at = 0
    for c in range(len(start) - 1):
        high = np.uint64(kt[c]) << np.uint64(shifts[0])
        for i in range(start[c], start[c + 1]):
            if not pairs:
                words[at] = high | (np.uint64(item[i]) << np.uint64(shifts[1])) | np.uint64(c)
                at += 1
                continue
            for j in range(i + 1, start[c + 1]):
                unit = np.uint64(item[i] * width + item[j])
                words[at] = high | (unit << np.uint64(shifts[1])) | np.uint64(c)
                at += 1
    return words


@njit(cache=True)
def _run_minima(words: NDArray[np.uint64], shift: int, n_cases: int) -> Ints:
    """Per case: min over its rows of the length of the row's run of equal words >> shift; 0 if none."""
    out = np.zeros(n_cases, np.int64)
    mask = (np.uint64(1) << np.uint64(shift)) - np.uint64(1)
    first = 0
    for i in range(1, len(words) + 1):
        if i < len(words) and (words[i] >> np.uint64(shift)) == (words[first] >> np.uint64(shift)):
            continue
        n = i - first
        for k in range(first, i):
            c = words[k] & mask
            if out[c] == 0 or n < out[c]:
                out[c] = n
        first = i
    return out


def own_minima(kt: np.ndarray, case_ids: np.ndarray, unit_case: np.ndarray, unit: np.ndarray,
               width: int, *, pairs: bool) -> np.ndarray | None:  # fmt: skip
    """Per case of ``case_ids`` (sorted): min over its units of n(kt, u), 0 when it has no unit; None
    when a word does not fit in 64 bits (then :func:`._units.unit_minima` over a pair table).

    Args:
        kt: each case's K-tuple id (≥ 0, aligned with ``case_ids``); unit_case, unit: the cases'
            distinct items, sorted by case then item (rows of other cases ignored); width: every
            item < width; pairs: units are the pairs a < b of a case's items (else its items).
    """
    n = len(case_ids)
    if n == 0 or len(unit_case) == 0:
        return np.zeros(n, np.int64)
    at = np.minimum(np.searchsorted(case_ids, unit_case), n - 1)
    known = case_ids[at] == unit_case
    start = np.concatenate([[0], np.cumsum(np.bincount(at[known], minlength=n))]).astype(np.int64)
    items = unit[known].astype(np.int64)
    units = max(width, 1) ** 2 if pairs else max(width, 1)
    row_bits, unit_bits = max((n - 1).bit_length(), 1), max((units - 1).bit_length(), 1)
    if int(kt.max(initial=0)).bit_length() + unit_bits + row_bits > 64:  # pragma: no cover - huge codes
        return None if pairs else unit_minima(kt, case_ids, unit_case, unit, width)
    shifts = np.array([unit_bits + row_bits, row_bits], np.int64)
    with sized(n):
        words = np.sort(_words(start, items, kt.astype(np.int64), max(width, 1), shifts, pairs))
        return _run_minima(words, row_bits, n)  # type: ignore[no-any-return]
