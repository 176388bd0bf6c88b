"""The ledger's lists placed by position in one pass (:func:`faers_anon.series.raised_lists.placed`) and the
positions' order by history as a counting sort (:func:`faers_anon.series.raised_lists.by_key`): the arrays
of the numpy path they replace (a CSR by state row, :func:`.raised_kernels.csr`, gathered into the new order,
:func:`.raised_kernels.permuted`; ``np.argsort(kind="stable")``), on random lists, numbers and orders.
"""

from __future__ import annotations

import numpy as np
import pytest

from faers_anon.series.raised_kernels import csr, permuted
from faers_anon.series.raised_lists import by_key, placed


@pytest.mark.parametrize("seed", range(30))
def test_placed_is_csr_by_row_then_permuted(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_rows, n_terms = int(rng.integers(0, 40)), int(rng.integers(1, 12))
    sizes = rng.integers(0, 5, n_rows)
    start = np.zeros(n_rows + 1, np.int64)
    np.cumsum(sizes, out=start[1:])
    ids = rng.integers(0, n_terms, int(start[-1])).astype(np.int32)
    number = rng.integers(-1, 6, n_terms).astype(np.int64)  # −1: a term without a value
    hist = rng.integers(-1, 4, n_rows).astype(np.int64)  # −1: a row outside the ledger's histories
    order = by_key(hist, 4)
    known = np.flatnonzero(hist >= 0)
    assert order.tolist() == known[np.argsort(hist[known], kind="stable")].tolist()
    rows = np.repeat(np.arange(n_rows, dtype=np.int64), sizes)
    want_start, want = permuted(*csr(rows, number[ids], n_rows), order)
    where = np.full(n_rows, -1, np.int64)
    where[order] = np.arange(order.size, dtype=np.int64)
    got_start, got = placed(start, ids, number, where, order.size)
    assert got_start.tolist() == want_start.tolist()
    assert got.tolist() == want.tolist()
