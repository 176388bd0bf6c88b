"""Same content, same bytes: ingest's Parquet files do not depend on how polars chunked the frames."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from faers_anon.io.outputs import Sink, write_rows, write_table
from faers_anon.synthetic import make_quarter, write_quarter


def _chunked(frame: pl.DataFrame, rows: int) -> pl.DataFrame:
    """``frame`` as chunks of ``rows`` rows each (same content)."""
    return pl.concat([frame.slice(i, rows) for i in range(0, frame.height, rows)], rechunk=False)


def _frame(n: int = 60_000) -> pl.DataFrame:
    """A unique text per row (its dictionary passes 1 MiB), a list of texts (its pages pass 1 MiB)."""
    return pl.DataFrame(
        {
            "caseid": range(n),
            "lot_num": [f"US-MAKER-{i:012d}-X" for i in range(n)],
            "reactions": [[f"reaction {i % 997}", f"event {i % 89} of case {i}"] for i in range(n)],
        }
    )


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_write_table_bytes_do_not_depend_on_chunks(tmp_path: Path) -> None:
    frame = _frame()
    digests = set()
    for rows in (frame.height, 30_000, 12_345, 997):
        chunked = _chunked(frame, rows)
        assert chunked.n_chunks() == -(-frame.height // rows)
        write_table(chunked, tmp_path / f"{rows}.parquet")
        assert pl.read_parquet(tmp_path / f"{rows}.parquet").equals(frame)
        digests.add(_digest(tmp_path / f"{rows}.parquet"))
    assert len(digests) == 1


def test_a_unique_text_column_is_written_plain(tmp_path: Path) -> None:
    frame = _frame(100).with_columns(pl.col("lot_num").alias("mfr_num"))
    write_table(frame, tmp_path / "t.parquet")
    chunk = pq.read_metadata(tmp_path / "t.parquet").row_group(0)
    encodings = {chunk.column(i).path_in_schema: chunk.column(i).encodings for i in range(chunk.num_columns)}
    assert "RLE_DICTIONARY" in encodings["lot_num"]
    assert "RLE_DICTIONARY" not in encodings["mfr_num"]


def test_a_list_of_texts_is_written_with_a_dictionary(tmp_path: Path) -> None:
    # its values' Parquet path is reactions.list.element: the bare name wrote them plain
    write_table(_frame(1_000), tmp_path / "t.parquet")
    chunk = pq.read_metadata(tmp_path / "t.parquet").row_group(0)
    encodings = {chunk.column(i).path_in_schema: chunk.column(i).encodings for i in range(chunk.num_columns)}
    assert "RLE_DICTIONARY" in encodings["reactions.list.element"]
    assert chunk.column(2).has_dictionary_page
    assert pl.read_parquet(tmp_path / "t.parquet").equals(_frame(1_000))


def test_numbers_are_written_as_deltas_and_measures_with_a_dictionary(tmp_path: Path) -> None:
    # plain pages of ids and line numbers were most of LZ4's work (the deltas of 1, 2, 3 ... are ~0 bytes)
    frame = pl.DataFrame(
        {
            "line": range(2, 5_002),
            "fda_dt": [date(2025, 1, 1 + i % 5) for i in range(5_000)],
            "primaryids": [[i, i + 7] for i in range(5_000)],
            "age_years": [float(i % 90) for i in range(5_000)],
        },
        schema_overrides={"line": pl.Int64},
    )
    write_table(frame, tmp_path / "t.parquet")
    chunk = pq.read_metadata(tmp_path / "t.parquet").row_group(0)
    encodings = {chunk.column(i).path_in_schema: chunk.column(i).encodings for i in range(chunk.num_columns)}
    assert "DELTA_BINARY_PACKED" in encodings["line"]
    assert "DELTA_BINARY_PACKED" in encodings["fda_dt"]
    assert "DELTA_BINARY_PACKED" in encodings["primaryids.list.element"]
    assert "RLE_DICTIONARY" in encodings["age_years"]
    assert chunk.column(0).total_compressed_size < 1_000  # 5,000 Int64 by steps of 1
    back = pl.read_parquet(tmp_path / "t.parquet")
    assert back.schema == frame.schema
    assert back.equals(frame)


def test_written_slices_and_sink_bytes_do_not_depend_on_chunks(tmp_path: Path) -> None:
    frame = _frame()
    columns, where = [pl.col("caseid"), pl.col("lot_num"), pl.col("reactions")], pl.col("caseid") % 7 != 3
    digests, sunk = set(), set()
    for rows in (frame.height, 997):
        write_rows(_chunked(frame, rows), tmp_path / f"rows{rows}.parquet", where=where, columns=columns)
        digests.add(_digest(tmp_path / f"rows{rows}.parquet"))
        sink = Sink()
        sink.write(tmp_path / f"sink{rows}.parquet", frame.head(0), [_chunked(frame, rows), frame.head(5)])
        assert sink.close() == {tmp_path / f"sink{rows}.parquet": frame.height + 5}
        sunk.add(_digest(tmp_path / f"sink{rows}.parquet"))
    assert len(digests) == 1
    assert len(sunk) == 1


@pytest.fixture(scope="module")
def realistic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20,000 realistic cases: the smallest size whose cases.parquet differed with the thread count."""
    folder = tmp_path_factory.mktemp("realistic") / "quarter"
    write_quarter(make_quarter(20_000, seed=11, quarter="2025Q1", shape="realistic"), folder)
    return folder


def _ingested(source: Path, out: Path, threads: int) -> dict[str, str]:
    env = os.environ | {"POLARS_MAX_THREADS": str(threads)}
    done = subprocess.run(
        [sys.executable, "-m", "faers_anon", "ingest", str(source), "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return {str(p.relative_to(out)): _digest(p) for p in sorted(out.rglob("*")) if p.is_file()}


def test_ingest_bytes_do_not_depend_on_the_thread_count(realistic: Path, tmp_path: Path) -> None:
    one = _ingested(realistic, tmp_path / "one", 1)
    three = _ingested(realistic, tmp_path / "three", 3)
    assert {"cases.parquet", "reports.parquet", "drug.parquet", "ingest_report.json"} <= set(one)
    assert one == three
