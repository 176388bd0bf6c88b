"""The value codes of the earlier check's P before (:meth:`faers_anon.series.earlier_arrays._Before._codes`)
are those of casting every text twice (the code before the sixteenth session): new texts numbered after the
known ones in the order they first appear, −1 for a null, the same names kept, over random calls.
"""

from __future__ import annotations

import random

import numpy as np
import polars as pl
import pytest

from faers_anon.series.earlier_arrays import _Before


def _twice(names: list[str], values: pl.Series) -> np.ndarray:
    """The old codes: every text cast, the new ones numbered, every text cast again."""
    codes = values.cast(pl.Enum(names), strict=False).to_physical().cast(pl.Int64)
    new = values.filter(codes.is_null()).drop_nulls().unique(maintain_order=True)
    if new.len():
        names += new.to_list()
        codes = values.cast(pl.Enum(names), strict=False).to_physical().cast(pl.Int64)
    return codes.fill_null(-1).to_numpy()


@pytest.mark.parametrize("seed", range(20))
def test_codes_are_the_two_casts(seed: int) -> None:
    rng = random.Random(seed)
    pool = [f"V{i}" for i in range(rng.randint(1, 40))]
    cached, names = _Before(1), []
    for _ in range(rng.randint(1, 6)):
        values = [rng.choice(pool) if rng.random() > 0.1 else None for _ in range(rng.randint(0, 60))]
        series = pl.Series(values, dtype=pl.Utf8)
        np.testing.assert_array_equal(cached._codes(series), _twice(names, series))
        assert cached.names == names
