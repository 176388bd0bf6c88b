"""The writer's table rows (issue 18 item 6): packed sort keys, dropped columns, ascii text as is."""

from __future__ import annotations

import hashlib
from pathlib import Path

import polars as pl

from faers_anon.io.column_policy import DEFAULT_POLICY, ShapedTable
from faers_anon.release.writer_tables import (
    ROW_GROUP,
    published,
    published_columns,
    sort_key,
    write_parquet,
    write_tables,
)


def _sorted(frame: pl.DataFrame, keys: list[str], **options: int) -> list[int]:
    return frame.sort(sort_key(frame, keys, **options), maintain_order=True)["row"].to_list()


def test_the_packed_key_sorts_as_the_four_keys_ties_in_input_order() -> None:
    frame = pl.DataFrame(
        {
            "quarter": ["2025Q1", "2024Q4", "2025Q1", "2025Q1", "2024Q4", "2025Q1"],
            "primaryid": [9 * 10**18, 5, 9 * 10**18, 7, 5, 9 * 10**18],
            "source_file": ["B.txt", "A.txt", "A.txt", "A.txt", "A.txt", "A.txt"],
            "line": [1, 40, 3, 2, 40, 3],
            "row": [0, 1, 2, 3, 4, 5],
        }
    )
    keys = ["quarter", "primaryid", "source_file", "line"]
    # 2024Q4 first (rows 1 and 4 tie: input order), then report 7, then 9e18: A.txt line 3 (rows 2, 5
    # tie), B.txt line 1
    assert _sorted(frame, keys) == [1, 4, 3, 2, 5, 0]
    assert len(sort_key(frame, keys)) == 1  # 1 + 2 + 1 + 2 bits (4 lines: ranks, not 1..40)
    # too few bits to pack: the keys themselves, the same order
    assert len(sort_key(frame, keys, bits=5)) == 4 and _sorted(frame, keys, bits=5) == [1, 4, 3, 2, 5, 0]
    with_null = frame.with_columns(pl.Series("line", [1, None, 3, 2, 40, 3]))
    assert len(sort_key(with_null, keys)) == 4  # a null: sorted as is (nulls first)
    assert _sorted(with_null, keys) == [1, 4, 3, 2, 5, 0]


def test_dropped_columns_are_read_as_named_empty_stand_ins() -> None:
    names = ["primaryid", "caseid", "drug_seq", "drugname", "lot_num", "drug_key", "quarter", "line"]
    # drugname and lot_num are dropped by the bundled policy; ids and the order's keys are always read
    assert published("drug", names, DEFAULT_POLICY) == [
        "primaryid", "caseid", "drug_seq", "drug_key", "quarter", "line"
    ]  # fmt: skip
    read = pl.DataFrame(
        {
            "primaryid": [1],
            "caseid": [2],
            "drug_seq": [1],
            "drug_key": ["X"],
            "quarter": ["2025Q1"],
            "line": [2],
        }
    )
    frame = published_columns("drug", names, DEFAULT_POLICY, read)
    assert (
        frame.columns == names
        and frame.schema["drugname"] == pl.Null
        and frame["drug_key"].to_list() == ["X"]
    )
    assert published("outc", ["primaryid", "anything"], DEFAULT_POLICY) == ["primaryid", "anything"]


def test_ascii_text_replaces_only_where_needed_and_counts_the_cells(tmp_path: Path) -> None:
    public = pl.DataFrame(
        {
            "primaryid": [12, 3],
            "pt": ["A$B", "C"],
            "route": ["ORAL", None],
            "dose": [18.0, 0.5],
            "quarter": ["2025Q1", "2025Q1"],
        }
    )
    shaped = {"reac": ShapedTable(public=public, restricted=None, columns={})}
    counts = write_tables(tmp_path, shaped, {"reac": public})
    text = (tmp_path / "ascii" / "REAC25Q1.txt").read_text()
    assert text == "primaryid$pt$route$dose\n12$A B$ORAL$18\n3$C$$0.5\n"
    assert counts["reac"]["ascii_replaced_cells"] == 1
    assert counts["reac"]["quarters"] == {"2025Q1": {"rows_in": 2, "rows_out": 2, "superseded_left_out": 0}}


def test_parquet_bytes_do_not_depend_on_chunks(tmp_path: Path) -> None:
    n = ROW_GROUP + 10_000  # two row groups: polars cut them where its chunks ended
    frame = pl.DataFrame({"primaryid": range(n), "drugname": [f"DRUG {i % 7_919}" for i in range(n)]})
    digests = set()
    for rows in (n, n // 3, 997):
        chunked = pl.concat([frame.slice(i, rows) for i in range(0, n, rows)], rechunk=False)
        assert chunked.n_chunks() == -(-n // rows)
        write_parquet(chunked, tmp_path / f"{rows}.parquet")
        assert pl.read_parquet(tmp_path / f"{rows}.parquet").equals(frame)
        digests.add(hashlib.sha256((tmp_path / f"{rows}.parquet").read_bytes()).hexdigest())
    assert len(digests) == 1
