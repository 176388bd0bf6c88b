"""A series' engine (frozen bundles placed around it) takes its strata's kernel arrays from the whole
cases frame's, P(s | c) read once (:func:`faers_anon.anonymize.pipeline.partition_cases`): the same
partition as when each stratum made its own arrays and read P(s | c) again."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from faers_anon.algorithms import _frame
from faers_anon.anonymize import pipeline
from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.partition import PARTITION_SCHEMA
from faers_anon.io.ingest import demo_source, ingest_quarters


def _frozen(ingested: Path, path: Path, cases: int) -> Path:
    """Bundles of 5 of the first ``cases`` cases, each with one generalized QID tuple."""
    ids = pl.read_parquet(ingested / "cases.parquet").get_column("caseid").sort().head(cases)
    frame = pl.DataFrame({"caseid": ids}).with_columns(
        (pl.int_range(pl.len()) // 5).alias("bundle"), pl.lit(0, pl.Int64).alias("group_id"),
        pl.lit("*").alias("age_group"), pl.lit(None, pl.Float64).alias("age_min"),
        pl.lit(None, pl.Float64).alias("age_max"), pl.lit("*").alias("sex"),
        pl.lit(None, pl.Float64).alias("wt_min"), pl.lit(None, pl.Float64).alias("wt_max"),
    )  # fmt: skip
    frame.select(*PARTITION_SCHEMA, "bundle").write_parquet(path)
    return path


@pytest.mark.parametrize("cases", [0, 40])
def test_a_series_engine_reads_the_whole_frames_arrays_with_the_same_partition(
    cases: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingested = ingest_quarters([demo_source()], tmp_path / "ingested").out
    config = replace(AnonymizeConfig(k=5, theta=0.4), frozen=_frozen(ingested, tmp_path / "f.parquet", cases))
    links: list[int] = []
    read = _frame._links
    monkeypatch.setattr(_frame, "_links", lambda *a: links.append(1) or read(*a))
    new = pipeline.anonymize_folder(ingested, None, config=config)
    assert len(links) == 1  # P(s | c) in CSR form once, whatever the strata
    engine_inputs = pipeline.engine_inputs
    monkeypatch.setattr(pipeline, "engine_inputs", lambda *a, **k: engine_inputs(*a, **{**k, "whole": False}))
    old = pipeline.anonymize_folder(ingested, None, config=config)  # each stratum its own arrays (before)
    assert len(links) > 2
    assert new.frame.equals(old.frame) and new.frame.height == old.frame.height
    assert (new.measures.nil, new.dr) == (old.measures.nil, old.dr)
