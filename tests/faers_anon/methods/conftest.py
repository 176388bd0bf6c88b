"""Hand-made cases frames (the cases.parquet contract) for the method tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import polars as pl
import pytest

CasesBuilder = Callable[..., pl.DataFrame]


def build_cases(
    rows: Sequence[tuple[float | None, str | None, float | None]],
    *,
    indications: Sequence[Sequence[str]] | None = None,
    reactions: Sequence[Sequence[str]] | None = None,
    drug_keys: Sequence[Sequence[str]] | None = None,
    first_caseid: int = 1000,
) -> pl.DataFrame:
    """A cases frame from (age, sex, weight) points; None is missing; lists default to one value per case."""
    n = len(rows)
    age = [r[0] for r in rows]
    wt = [r[2] for r in rows]
    lists: dict[str, Any] = {
        "indications": indications if indications is not None else [[f"IND {i}"] for i in range(n)],
        "reactions": reactions if reactions is not None else [[f"REAC {i}"] for i in range(n)],
        "drug_keys": drug_keys if drug_keys is not None else [["DRUG"] for _ in range(n)],
    }
    return pl.DataFrame(
        {
            "caseid": pl.Series(range(first_caseid, first_caseid + n), dtype=pl.Int64),
            "age_min": pl.Series(age, dtype=pl.Float64),
            "age_max": pl.Series(age, dtype=pl.Float64),
            "sex": pl.Series([r[1] for r in rows], dtype=pl.String),
            "wt_min": pl.Series(wt, dtype=pl.Float64),
            "wt_max": pl.Series(wt, dtype=pl.Float64),
            **{k: pl.Series(v, dtype=pl.List(pl.String)) for k, v in lists.items()},
        }
    )


@pytest.fixture
def random_cases() -> pl.DataFrame:
    """300 cases with missing values, repeated QIDs and overlapping sensitive lists (seeded)."""
    rng = np.random.default_rng(7)
    n = 300
    age = np.round(rng.gamma(4.0, 13.0, n))
    wt = np.round(rng.normal(75.0, 14.0, n))
    sex = rng.choice(np.array(["F", "M", "*", ""], dtype=object), n, p=[0.5, 0.38, 0.02, 0.1])
    rows = [
        (
            None if rng.random() < 0.15 else float(a),
            None if s == "" else str(s),
            None if rng.random() < 0.35 else float(w),
        )
        for a, s, w in zip(age, sex, wt, strict=True)
    ]
    inds = [[f"IND {int(x)}"] if x < 25 else [] for x in rng.integers(0, 35, n)]
    reacs = [sorted({f"REAC {int(x)}" for x in rng.integers(0, 40, 2)}) for _ in range(n)]
    return build_cases(rows, indications=inds, reactions=reacs)


@pytest.fixture
def make_cases() -> CasesBuilder:
    """:func:`build_cases`, for tests that write their own table."""
    return build_cases
