"""The verifier's per-distinct-value shortcuts give the per-row answers (issue 18, item 6)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import polars as pl

from faers_anon.verify.integrity import _agreement, _is_rendering, _separators
from faers_anon.verify.stated import canonical, canonical_column


def test_canonical_column_equals_canonical_per_row() -> None:
    terms = ["  nausea ", "Nausea", "HEAD\tACHE", None, "", "   ", "head  ache", "nausea"]
    frame = pl.DataFrame({"caseid": list(range(len(terms))), "pt": terms})
    fast = canonical_column(frame.lazy(), "pt", "value").collect().sort("caseid")
    assert fast["value"].to_list() == frame.select(canonical(pl.col("pt")))["pt"].to_list()
    want = ["NAUSEA", "NAUSEA", "HEAD ACHE", None, None, None, "HEAD ACHE", "NAUSEA"]
    assert fast["value"].to_list() == want


def test_separators_names_only_text_columns_holding_them() -> None:
    frame = pl.DataFrame({"a": ["x", "y$z"], "b": ["p", "q"], "c": ["r\n", None], "n": [1, 2]})
    assert _separators(frame) == {"a", "c"}


def test_agreement_reads_a_dollar_as_the_space_the_ascii_holds(tmp_path: Path) -> None:
    parquet = pl.DataFrame(
        {"caseid": [1, 2], "pt": ["A$B", ""], "route": ["ORAL", "IV"], "quarter": "2025Q1"}
    )
    same = tmp_path / "REAC25Q1.txt"
    same.write_text("caseid$pt$route\n1$A B$ORAL\n2$$IV\n", encoding="utf-8")
    assert _agreement("reac", parquet, {"2025Q1": same}) == []
    other = tmp_path / "REAC25Q2.txt"
    other.write_text("caseid$pt$route\n1$A B$ORAL\n2$$IM\n", encoding="utf-8")
    found = _agreement("reac", parquet, {"2025Q1": other})
    assert len(found) == 1 and "line 3" in found[0] and "route" in found[0]


def test_rendering_is_what_the_ascii_rule_accepts(tmp_path: Path) -> None:
    """The bytes of the fast path parse back to the Parquet values, and a changed byte is still found."""
    parquet = pl.DataFrame(
        {
            "caseid": [1, 2, 3],
            "age": [65.0, 0.1, None],
            "fda_dt": [date(2025, 1, 2), None, date(2024, 12, 31)],
            "flag": [True, False, None],
            "pt": ["A B", "", "C"],
            "quarter": "2025Q1",
        }
    )
    text = b"caseid$age$fda_dt$flag$pt\n1$65$20250102$Y$A B\n2$0.1$$N$\n3$$20241231$$C\n"
    assert _is_rendering(parquet.drop("quarter"), text)
    path = tmp_path / "DEMO25Q1.txt"
    path.write_bytes(text)
    assert _agreement("demo", parquet, {"2025Q1": path}) == []
    path.write_bytes(text.replace(b"0.1", b"0.2"))
    assert not _is_rendering(parquet.drop("quarter"), text.replace(b"0.1", b"0.2"))
    assert "line 3 differs" in _agreement("demo", parquet, {"2025Q1": path})[0]
    nan = pl.DataFrame({"x": [1.0, float("nan")], "y": ["a", "b"]})
    assert not _is_rendering(nan, b"x$y\n1$a\nNaN$b\n")  # NaN: parse it
    assert not _is_rendering(pl.DataFrame({"only": ["a"]}), b"only\na\n")


def test_rendering_declines_values_holding_separators(tmp_path: Path) -> None:
    """A '$' (or CR/LF) inside a value: 9 '$' where 4 lines of 3 fields lay out 8 (the same bytes without
    the check would pass); the file is parsed instead, and the space the ascii holds for it is accepted."""
    parquet = pl.DataFrame(
        {"caseid": [1, 2, 3], "pt": ["A$B", "C", "D"], "x": [7, 8, 9], "quarter": "2025Q1"}
    )
    raw = b"caseid$pt$x\n1$A$B$7\n2$C$8\n3$D$9\n"
    assert raw.count(b"$") == 9
    assert not _is_rendering(parquet.drop("quarter"), raw)
    path = tmp_path / "REAC25Q1.txt"
    path.write_bytes(raw)
    assert _agreement("reac", parquet, {"2025Q1": path}) != []  # the raw '$' splits the field
    path.write_bytes(b"caseid$pt$x\n1$A B$7\n2$C$8\n3$D$9\n")
    assert not _is_rendering(parquet.drop("quarter"), path.read_bytes())  # 'A$B' is not 'A B'
    assert _agreement("reac", parquet, {"2025Q1": path}) == []
    assert not _is_rendering(pl.DataFrame({"a": ["x\ry"], "b": [1]}), b"a$b\nx\ry$1\n")
