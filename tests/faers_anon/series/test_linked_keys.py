"""E's drug keys made canonical once per process (:func:`faers_anon.series.linked._drug_keys`, sixteenth
session): the keys of :func:`knowledge.drug_names.name_key_expr` whatever was read before, and E read
(:func:`.linked.read`) the same as with the keys made on the whole column."""

from __future__ import annotations

import random

import polars as pl
import pytest

from faers_anon.series import linked
from knowledge.drug_names import name_key_expr

_NAMES = ["aspirin", "ASPIRIN ", "Tylenol/Codeine", "ACETAMINOPHEN\\CODEINE", "  ", "x", "IBUPROFEN.",
          "hydrochlorothiazide; lisinopril", "METFORMIN HCL", "a/b/c", "(NAPROXEN)"]  # fmt: skip


@pytest.mark.parametrize("seed", range(12))
def test_keys_are_name_key_expr_whatever_came_before(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    monkeypatch.setattr(linked, "_NAME_KEYS", {})
    if seed % 3 == 2:
        monkeypatch.setattr(linked, "_NAME_KEYS_MAX", 4)  # starts again on the way
    for _ in range(4):  # several E, overlapping names
        keys = pl.Series(
            "drug_key", [rng.choice([*_NAMES, None]) for _ in range(rng.randint(0, 30))], pl.Utf8
        )
        expected = keys.to_frame().select(name_key_expr(pl.col("drug_key"))).to_series()
        assert linked._drug_keys(keys).equals(expected, check_names=True)


def test_read_is_the_same_as_with_the_whole_column(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    monkeypatch.setattr(linked, "_NAME_KEYS", {"ASPIRIN": "ASPIRIN"})
    for _ in range(3):
        e = pl.DataFrame({
            "drug_key": [rng.choice(_NAMES[:4] + _NAMES[5:]) for _ in range(40)],
            "disease": [rng.choice(["pain", "Fever ", "HEADACHE", "pain  relief"]) for _ in range(40)],
            "weight": [rng.choice([0.25, 0.5, 1.0]) for _ in range(40)],
        })  # fmt: skip
        got = linked.read(e)
        monkeypatch.setattr(
            linked, "_drug_keys", lambda s: s.to_frame().select(name_key_expr(pl.col("drug_key"))).to_series()
        )
        want = linked.read(e.clone())
        monkeypatch.undo()
        monkeypatch.setattr(linked, "_NAME_KEYS", {"ASPIRIN": "ASPIRIN"})
        assert got.drugs.equals(want.drugs) and got.values.equals(want.values)
        assert (got.start == want.start).all() and (got.value == want.value).all()
        assert (got.weight == want.weight).all()
