"""The planner's rows made cheaper (fifteenth session): the rows by class of
:func:`faers_anon.series.units.over` as a counting sort (the CSR of a stable argsort:
:func:`faers_anon.series.raised_kernels.csr`),
:func:`faers_anon.series.units.pseudonym_ids` from the HMAC words as an array (the dict of
:func:`faers_anon.release.pseudonyms.case_pseudonyms` before), the planner's levels on the members without
their list columns. (``_members`` against the frames of whole rows: test_over_theta.)"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from faers_anon._numba_cache import mode
from faers_anon.release.pseudonyms import case_pseudonyms
from faers_anon.series.placement import _EXPOSED, _LISTS, Memo, _members, _place
from faers_anon.series.raised_kernels import csr
from faers_anon.series.units import _by_class, pseudonym_ids
from tests.faers_anon.series.test_over_theta import _random_members


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
    ids = pseudonym_ids(cases, key)
    assert_frame_equal(ids, _ids_before(cases, key))
    assert ids.get_column("caseid").to_list() == sorted(set(caseids.tolist()))  # one row per case, in order
    assert ids.get_column("pseudonym").n_unique() == ids.height  # distinct pseudonyms
    other = bytes(b ^ 1 for b in key)  # another key: other pseudonyms (the HMAC, not the caseid, decides)
    assert not (pseudonym_ids(cases, other).get_column("pseudonym") == ids.get_column("pseudonym")).any()


def _fake_probabilities(seen: list[pl.DataFrame]) -> Callable[[pl.DataFrame], pl.DataFrame]:
    """P(s | c) of a frame of members from its own lists (reactions p 1, indications p 0.5), recording
    every frame it is asked for."""

    def probabilities(frame: pl.DataFrame) -> pl.DataFrame:
        seen.append(frame)
        parts = [frame.select("caseid", pl.col(name).alias("value"), pl.lit(p).alias("p")).explode("value")
                 for name, p in (("reactions", 1.0), ("indications", 0.5))]  # fmt: skip
        return pl.concat(parts).drop_nulls("value").group_by("caseid", "value", maintain_order=True).max()

    return probabilities


@pytest.mark.parametrize(("seed", "n"), [(seed, n) for seed in range(4) for n in (300, 3_000)])
def test_placement_without_lists_gives_the_whole_rows_placement(seed: int, n: int) -> None:
    """The planner's levels on the members without their list columns (``_x``: exposed values counted
    once, ``_r``: the row P gathers) place the units of the levels on whole rows, rows and order, and
    P is asked of the same rows."""
    members = _members(*_random_members(seed, n))
    thetas = {f"T{i}": 0.35 for i in range(0, 31, 2)}
    seen_whole: list[pl.DataFrame] = []
    placed, left = _place(members, k=3, probabilities=Memo(_fake_probabilities(seen_whole)), thetas=thetas)
    seen_light: list[pl.DataFrame] = []
    light = members.select(pl.exclude(_LISTS), _EXPOSED.alias("_x"), pl.int_range(pl.len()).alias("_r"))
    fake = _fake_probabilities(seen_light)
    placed_l, left_l = _place(light, k=3, probabilities=Memo(lambda f: fake(members[f.get_column("_r")])),
                              thetas=thetas)  # fmt: skip
    assert placed.height > 0 and left.height > 0
    assert_frame_equal(placed_l.drop("_x", "_r"), placed.drop(_LISTS))
    assert_frame_equal(left_l.drop("_x", "_r"), left.drop(_LISTS))
    assert len(seen_light) == len(seen_whole)
    for got, want in zip(seen_light, seen_whole, strict=True):
        assert_frame_equal(got, want)
