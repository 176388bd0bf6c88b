"""The Parquet files of ``faers-anon signals`` / ``compare``: same rows, same bytes, however chunked."""

from __future__ import annotations

import hashlib
from pathlib import Path

import polars as pl

from faers_anon.analysis.signals import _write


def test_parquet_bytes_do_not_depend_on_chunks(tmp_path: Path) -> None:
    n = (1 << 18) + 10_000  # two row groups: polars cut them where its chunks ended
    frame = pl.DataFrame({"drug": [f"DRUG {i % 7_919}" for i in range(n)], "a": range(n)})
    digests = set()
    for rows in (n, n // 3, 997):
        chunked = pl.concat([frame.slice(i, rows) for i in range(0, n, rows)], rechunk=False)
        assert chunked.n_chunks() == -(-n // rows)
        _write(chunked, tmp_path / f"{rows}.parquet", metadata={"ebgm_prior": "{}"})
        assert pl.read_parquet(tmp_path / f"{rows}.parquet").equals(frame)
        digests.add(hashlib.sha256((tmp_path / f"{rows}.parquet").read_bytes()).hexdigest())
    assert len(digests) == 1
