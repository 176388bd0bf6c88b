"""``numpy.unique(keys, return_inverse=True, return_counts=True)`` for UInt64 keys, by one value sort.

numpy sorts UInt64 values with its vectorized sort (~0.07 s for 5.7M keys) but ``argsort`` and
``unique(return_inverse=True)`` (which argsorts) take ~1.5 s. When ``key · 2^b + row`` fits in 64 bits
(b the bits of the largest row number), sorting those words gives the sorted keys (high bits) and
the rows in key order (low bits) at once; runs of equal keys give the distinct keys, the counts and
each row's distinct index. Otherwise ``numpy.unique`` itself. Same arrays either way.
"""

from __future__ import annotations

import numpy as np

__all__ = ["unique_inverse"]


def unique_inverse(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct ``keys`` (ascending, UInt64), each key's index among them, and their counts."""
    n = len(keys)
    row_bits = max((n - 1).bit_length(), 1)
    if n == 0 or int(keys.max()).bit_length() + row_bits > 64:
        distinct, which, counts = np.unique(keys.astype(np.uint64), return_inverse=True, return_counts=True)
        return distinct, which.ravel().astype(np.int64), counts.astype(np.int64)
    shift = np.uint64(row_bits)
    words = np.sort((keys.astype(np.uint64) << shift) | np.arange(n, dtype=np.uint64))
    ordered = words >> shift
    new = np.empty(n, bool)
    new[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    which = np.empty(n, np.int64)
    which[(words & np.uint64((1 << row_bits) - 1)).astype(np.int64)] = np.cumsum(new, dtype=np.int64) - 1
    return ordered[starts], which, np.diff(np.append(starts, n)).astype(np.int64)
