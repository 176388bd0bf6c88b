"""``load_csv``: the file format, and every validation error naming file, line and field."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from hierarchies import MISSING, HierarchyError, load_csv

NUMERIC = """\
# ages in years; internal ranges may be left empty
child,parent,min,max
*,,,
young,*,,
"baby, newborn",young,0,1
kid,young,1,13
grown,*,13,inf
"""


def _write(tmp_path: Path, text: str, name: str = "tree.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_numeric_csv_with_comments_quotes_and_derived_ranges(tmp_path: Path) -> None:
    t = load_csv(_write(tmp_path, NUMERIC))
    assert t.is_numeric and t.height == 2
    assert t.range_of(t.code("young")) == (0.0, 13.0)
    assert t.range_of(t.root) == (0.0, math.inf)
    assert t.decode(t.leaf_of(np.array([0.5, 12.0, 99.0, np.nan]))).tolist() == [
        "baby, newborn",
        "kid",
        "grown",
        MISSING,
    ]
    assert t.name(int(t.parent[t.missing])) == "*"


def test_categorical_csv_with_implicit_root_bom_and_listed_missing(tmp_path: Path) -> None:
    text = "\ufeffChild , Parent\nF,*\nM,*\n\nmissing,*\n"
    t = load_csv(_write(tmp_path, text))
    assert not t.is_numeric
    assert t.name(t.root) == "*" and t.height == 1
    assert sorted(t.decode(t.leaves).tolist()) == ["F", "M", MISSING]


def test_given_internal_range_that_matches_its_children_is_kept(tmp_path: Path) -> None:
    text = "child,parent,min,max\n*,,0,20\na,*,0,10\nb,*,10,20\n"
    t = load_csv(_write(tmp_path, text))
    assert t.range_of(t.root) == (0.0, 20.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"^.*tree\.csv: empty file \(expected a header child,parent\[,min,max\] and rows\)$"),
        ("# only a comment\n", r"tree\.csv: empty file"),
        ("child,parent\n", r"^tree\.csv: no rows after the header"),
        ("child,parent,min,mx\na,*,0,1\n", r"^tree\.csv:1: header: columns child,parent,min,mx \(expected"),
        ("child,parent,min\na,*,0\n", r"^tree\.csv:1: header: columns child,parent,min "),
        ("parent,child\na,*\n", r"^tree\.csv:1: header: columns parent,child "),
        ("child,parent\na,*,x\n", r"^tree\.csv:2: row: 3 fields \(expected 2: child,parent\)$"),
        ("child,parent\n,*\n", r"^tree\.csv:2: child: empty name \(expected a node name\)$"),
        ("child,parent,min,max\na,*,0,abc\n", r"^tree\.csv:2: max: cannot read 'abc' as a number \(expected"),
        ("child,parent,min,max\na,*,nan,3\n", r"^tree\.csv:2: min: cannot read 'nan' as a number"),
        (
            "child,parent,min,max\na,*,5,5\nb,*,5,6\n",
            r"^tree\.csv:2: min: min 5 >= max 5 \(expected min < max\)$",
        ),
        (
            "child,parent\na,*\nb,*\na,b\n",
            r"^tree\.csv:4: child: 'a' is listed twice, first at tree\.csv:2 \(expected each child once\)$",
        ),
        (
            "child,parent\n*,\na,*\nb,Adlt\n",
            r"^tree\.csv:4: parent: unknown node 'Adlt' \(expected a name listed as a child\)$",
        ),
        (
            "child,parent\na,*\nb,Adlt\n",
            r"^tree\.csv:3: parent: several roots: '\*' \(tree\.csv:2\), 'Adlt' \(tree\.csv:3\) \(",
        ),
        ("child,parent\n*,\nx,\na,*\n", r"^tree\.csv:3: parent: several roots: '\*' \(tree\.csv:2\), 'x'"),
        (
            "child,parent\na,b\nb,a\n",
            r"^tree\.csv:2: parent: no root, every node has a parent \(expected one",
        ),
        (
            "child,parent\n*,\na,*\nb,c\nc,d\nd,b\n",
            r"^tree\.csv:4: parent: cycle 'b' -> 'c' -> 'd' -> 'b' \(expected every node to lead up",
        ),
        (
            "child,parent\nx,*\na,x\nmissing,a\n",
            r"^tree\.csv:4: parent: 'missing' hangs under 'a' \(expected it",
        ),
        (
            "child,parent\nmissing,*\na,missing\n",
            r"^tree\.csv:3: parent: 'a' hangs under 'missing' \(expected",
        ),
        ("child,parent,min,max\na,*,0,1\nmissing,*,1,2\n", r"^tree\.csv:3: min: 'missing' has a range"),
        ("child,parent\n*,\n", r"^tree\.csv:2: child: the tree holds no value besides 'missing'"),
        (
            "child,parent,min,max\na,*,0,10\nb,*,,\n",
            r"^tree\.csv:3: min: 'b' has no min in a numeric tree \(expected both min and max",
        ),
        ("child,parent,min,max\na,*,0,10\nb,*,10,\n", r"^tree\.csv:3: max: 'b' has no max in a numeric tree"),
        (
            "child,parent,min,max\na,*,0,10\na1,a,0,5\na2,a,5,12\nb,*,10,20\n",
            r"^tree\.csv:4: min: 'a2' \[5, 12\) lies outside its parent 'a' \[0, 10\) \(expected a",
        ),
        (
            "child,parent,min,max\na,*,0,10\nb,*,8,20\n",
            r"^tree\.csv:3: min: 'b' \[8, 20\) overlaps 'a' \[0, 10\) \(expected sibling ranges not",
        ),
        (
            "child,parent,min,max\na,*,0,10\nb,*,12,20\n",
            r"^tree\.csv:3: min: gap \[10, 12\) between 'a' and 'b' \(expected the children to",
        ),
        (
            "child,parent,min,max\n*,,0,30\na,*,0,10\nb,*,10,20\n",
            r"^tree\.csv:4: max: gap \[20, 30\) in '\*': no child covers it \(expected the children to tile",
        ),
        (
            "child,parent,min,max\n*,,0,20\na,*,2,10\nb,*,10,20\n",
            r"^tree\.csv:3: min: gap \[0, 2\) in '\*': no child covers it",
        ),
        (
            "child,parent,min,max\na,*,0,10\na1,a,0,4\na2,a,6,10\nb,*,10,20\n",
            r"^tree\.csv:4: min: gap \[4, 6\) between 'a1' and 'a2'",
        ),
    ],
)
def test_every_validation_error_names_file_line_and_field(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(HierarchyError, match=message):
        load_csv(_write(tmp_path, text))


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(HierarchyError, match=r"nope\.csv: cannot read the file: No such file or directory"):
        load_csv(tmp_path / "nope.csv")
    bad = tmp_path / "latin1.csv"
    bad.write_bytes("child,parent\nm\xe4dchen,*\n".encode("latin-1"))
    with pytest.raises(HierarchyError, match=r"latin1\.csv: cannot read the file: not UTF-8 text"):
        load_csv(bad)


def test_messages_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(HierarchyError) as info:
        load_csv(_write(tmp_path, "child,parent\na,b\nb,a\n"))
    assert "\n" not in str(info.value)
