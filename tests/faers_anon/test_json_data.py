"""The one JSON sanitizer (issue 13): every .json the package writes goes through json_data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from faers_anon.json_data import json_data


def test_converts_what_json_cannot_hold() -> None:
    value = {
        1: (np.int64(3), np.float32(0.5)),
        "path": Path("a/b.csv"),
        "tags": {"b", "a"},
        "nan": float("nan"),
        "inf": np.float64("inf"),
        "flag": np.bool_(True),
        "none": None,
    }
    assert json_data(value) == {
        "1": [3, 0.5],
        "path": "a/b.csv",
        "tags": ["a", "b"],
        "nan": None,
        "inf": None,
        "flag": True,
        "none": None,
    }
    json.dumps(json_data(value), allow_nan=False)  # no default hook needed


def test_digits_round_floats_and_other_types_become_text() -> None:
    assert json_data([0.1 + 0.2, 1 / 3], digits=12) == [0.3, 0.333333333333]
    assert json_data(0.1 + 0.2) == 0.30000000000000004
    assert json_data(complex(1, 2)) == "(1+2j)"


def test_strict_raises_instead_of_converting() -> None:
    with pytest.raises(ValueError, match="nan"):
        json_data({"theta": float("nan")}, strict=True)
    with pytest.raises(TypeError, match="of type object"):
        json_data([object()], strict=True)
    assert json_data({"out": Path("x")}, strict=True) == {"out": "x"}
