"""The planner's rows made cheaper (fifteenth session): :func:`faers_anon.series.units.over`'s rows by class
as a counting sort (the stable argsort's CSR: :func:`faers_anon.series.raised_kernels.csr`), and
:func:`faers_anon.series.units.pseudonym_ids` from the HMAC words as an array (the dict of
:func:`faers_anon.release.pseudonyms.case_pseudonyms` before). (``_members`` against the frames of whole
rows: test_over_theta.)"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from faers_anon._numba_cache import mode
from faers_anon.release.pseudonyms import case_pseudonyms
from faers_anon.series.raised_kernels import csr
from faers_anon.series.units import _by_class, pseudonym_ids


@pytest.mark.parametrize("how", ["compiled", "interpreted"])
@pytest.mark.parametrize("seed", range(5))
def test_rows_by_class_are_the_stable_sorts(seed: int, how: str) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 50))
    rows = rng.integers(0, n, int(rng.integers(0, 2_000))).astype(np.int64)
    with mode(how):
        start, by = _by_class(rows, n)
    want_start, want = csr(rows, np.arange(rows.size, dtype=np.int64), n)
    np.testing.assert_array_equal(start, want_start)
    np.testing.assert_array_equal(by, want)


def _ids_before(cases: pl.DataFrame, key: bytes) -> pl.DataFrame:
    """pseudonym_ids as it was (fourteenth session): through case_pseudonyms' dict."""
    mapping, _ = case_pseudonyms(cases.get_column("caseid").to_list(), key)
    return pl.DataFrame({"caseid": list(mapping), "pseudonym": list(mapping.values())},
                        schema={"caseid": pl.Int64, "pseudonym": pl.Int64})  # fmt: skip


@pytest.mark.parametrize("seed", range(4))
def test_pseudonym_ids_are_the_dicts(seed: int) -> None:
    rng = np.random.default_rng(seed)
    caseids = rng.integers(0, 10**9, int(rng.integers(1, 3_000)))
    cases = pl.DataFrame({"caseid": np.concatenate([caseids, caseids[: caseids.size // 3]])})
    key = bytes(rng.integers(0, 256, 32, dtype=np.uint8))
    assert_frame_equal(pseudonym_ids(cases, key), _ids_before(cases, key))
