"""The release's own class sizes for K + 1 or 2 items (prosecutor risk, SPEC §11) by one sort.

size(c) = min over the case's units u (items, or item pairs a < b) of n(kt, u), the cases of its
K-tuple kt holding u. Every (case, unit) row becomes one ``UInt64`` word unit · 2^(k + r) + kt · 2^r + row
(k and r the bits of the largest K-tuple id and case row): numpy sorts the words (its vectorized
sort), after which equal (kt, unit) are runs, n their lengths, and each row's case is in the low bits.
The pairs are written straight into the words by a numba kernel walking each case's sorted items (no
pair table, no case-id search), and the runs are read by a second one. When the word would not fit
in 64 bits, the caller uses :func:`._units.unit_minima` (hashing). Same sizes either way.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from faers_anon._numba_cache import njit, sized

__all__ = ["item_lists", "own_minima", "words"]

Ints = NDArray[np.int64]


@njit(cache=True)
def words(start: Ints, item: Ints, tag: Ints, width: int, shifts: Ints, pairs: bool) -> NDArray[np.uint64]:
    """unit · 2^shifts[0] + tag · 2^shifts[1] (+ the case's row when shifts[2] = 1) for every (case,
    unit) of the cases whose tag is ≥ 0; unit = a · width + b for a pair a < b of the case's items."""
    n = 0
    for c in range(len(start) - 1):
        m = start[c + 1] - start[c] if tag[c] >= 0 else 0
        n += m * (m - 1) // 2 if pairs else m
    out = np.empty(n, np.uint64)
    at = 0
    for c in range(len(start) - 1):
        if tag[c] < 0:
            continue
        low = (np.uint64(tag[c]) << np.uint64(shifts[1])) | np.uint64(c * shifts[2])
        for i in range(start[c], start[c + 1]):
            if not pairs:
                out[at] = (np.uint64(item[i]) << np.uint64(shifts[0])) | low
                at += 1
                continue
            for j in range(i + 1, start[c + 1]):
                out[at] = (np.uint64(item[i] * width + item[j]) << np.uint64(shifts[0])) | low
                at += 1
    return out


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


def own_minima(kt: np.ndarray, lists: tuple[Ints, Ints], width: int, *, pairs: bool) -> np.ndarray | None:
    """Per case: min over its units of n(kt, u), 0 when it has no unit; None when a word would not
    fit in 64 bits (then :func:`._units.unit_minima`, hashing).

    Args:
        kt: each case's K-tuple id (≥ 0); lists: each case's distinct items, sorted (:func:`item_lists`);
            width: every item < width; pairs: units are the pairs a < b of a case's items (else its items).
    """
    start, items = lists
    n = len(start) - 1
    if n == 0 or len(items) == 0:
        return np.zeros(n, np.int64)
    units = max(width, 1) ** 2 if pairs else max(width, 1)
    row_bits, kt_bits = max((n - 1).bit_length(), 1), max(int(kt.max(initial=0)).bit_length(), 1)
    if kt_bits + (units - 1).bit_length() + row_bits > 64:  # pragma: no cover - huge codes
        return None
    shifts = np.array([kt_bits + row_bits, row_bits, 1], np.int64)
    with sized(n):
        packed = np.sort(words(start, items, kt.astype(np.int64), max(width, 1), shifts, pairs))
        return _run_minima(packed, row_bits, n)  # type: ignore[no-any-return]


def item_lists(case_ids: np.ndarray, unit_case: np.ndarray, unit: np.ndarray) -> tuple[Ints, Ints]:
    """CSR ``start`` (one slot per case of ``case_ids``, sorted) and the items of the rows (sorted by
    case, then item) whose case is among ``case_ids``.

    When every row's case is among them (the usual case), the starts are the case ids' positions in
    the rows (one binary search per case); otherwise each row's case is searched."""
    if len(case_ids) == 0:
        return np.zeros(1, np.int64), np.zeros(0, np.int64)
    first = np.searchsorted(unit_case, case_ids, side="left")
    last = np.searchsorted(unit_case, case_ids, side="right")
    if first[0] == 0 and last[-1] == len(unit_case) and np.array_equal(first[1:], last[:-1]):
        return np.append(first, len(unit_case)).astype(np.int64), unit.astype(np.int64)
    at = np.minimum(np.searchsorted(case_ids, unit_case), len(case_ids) - 1)
    known = case_ids[at] == unit_case
    start = np.concatenate([[0], np.cumsum(np.bincount(at[known], minlength=len(case_ids)))])
    return start.astype(np.int64), unit[known].astype(np.int64)
