"""The renewal of P(s | c) after E changed (:mod:`faers_anon.series.renew`): the cut lists and the order.

Hand-built lists with worked answers, and random frames against the computations they replace
(``list.filter`` with ``is_in`` for the cut, a text sort for the order).
"""

from __future__ import annotations

import random

import polars as pl
from polars.testing import assert_frame_equal

from faers_anon.series.renew import in_order, only_terms, renewed

_LIST = pl.List(pl.Utf8)


def _frame(rows: list[tuple[int, list[str] | None, list[str] | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows, orient="row", schema={"caseid": pl.Int64, "indications": _LIST, "reactions": _LIST}
    )


def test_only_terms_keeps_the_terms_read_as_a_wanted_value() -> None:
    # "headache " and "Headache" are read as HEADACHE; NAUSEA is not wanted; a null list stays null
    frame = _frame([(1, ["headache ", "Nausea"], ["Headache"]), (2, ["NAUSEA"], None), (3, [], ["rash"])])
    cut = only_terms(frame, ["HEADACHE", "RASH"])
    assert cut.get_column("caseid").to_list() == [1, 2, 3]
    assert [sorted(x) if x is not None else None for x in cut.get_column("indications").to_list()] == [
        ["headache "], [], []]  # fmt: skip
    assert cut.get_column("reactions").to_list() == [["Headache"], None, ["rash"]]


def test_only_terms_equals_list_filter_on_random_lists() -> None:
    rng = random.Random(7)
    words = ["Headache", "HEADACHE", "nausea", "Rash ", "rash", "Pain", "Fever", "dizziness"]
    for _ in range(20):

        def some() -> list[str] | None:
            return None if rng.random() < 0.1 else rng.sample(words, rng.randint(0, 4))

        rows = [(c, some(), some()) for c in range(40)]
        frame = _frame(rows).sample(fraction=1.0, shuffle=True, seed=rng.randint(0, 99))
        reads = rng.sample(["HEADACHE", "NAUSEA", "RASH", "PAIN", "FEVER"], rng.randint(0, 3))
        keep = [w for w in words if " ".join(w.upper().split()) in reads]
        own = ("indications", "reactions")
        expected = frame.with_columns(pl.col(n).list.filter(pl.element().is_in(keep)) for n in own)
        got = only_terms(frame, reads)
        assert got.get_column("caseid").to_list() == frame.get_column("caseid").to_list()
        for name in ("indications", "reactions"):
            want = [None if x is None else sorted(x) for x in expected.get_column(name).to_list()]
            assert [None if x is None else sorted(x) for x in got.get_column(name).to_list()] == want


def test_in_order_is_the_text_sort() -> None:
    # "class:X" sorts after "Z" (lower case after upper), "É" after "class:" (UTF-8 bytes)
    frame = pl.DataFrame({"caseid": [2, 1, 2, 1, 1], "value": ["class:X", "É", "Z", "class:X", "A"],
                          "p": [0.1, 0.2, 0.3, 0.4, 0.5]})  # fmt: skip
    assert in_order(frame).rows() == [(1, "A", 0.5), (1, "class:X", 0.4), (1, "É", 0.2), (2, "Z", 0.3),
                                      (2, "class:X", 0.1)]  # fmt: skip
    rng = random.Random(3)
    for _ in range(10):
        keys = {
            (rng.randint(0, 30), rng.choice(["A", "B", "b", "outc:DE", "class:C", "Ä", "AA"]))
            for _ in range(80)
        }
        frame = pl.DataFrame(sorted(keys), orient="row", schema={"caseid": pl.Int64, "value": pl.Utf8})
        shuffled = frame.sample(fraction=1.0, shuffle=True, seed=rng.randint(0, 99))
        assert_frame_equal(in_order(shuffled), shuffled.sort("caseid", "value"))


def test_renewed_replaces_only_the_changed_values_of_the_cases_again() -> None:
    rows = pl.DataFrame({"caseid": [1, 1, 2, 2], "value": ["X", "Y", "X", "Y"], "p": [0.5, 1.0, 0.5, 0.2]})
    # case 1 holds a changed drug: X becomes 0.7, Y (not a changed value) keeps its row; a fresh row of a
    # value outside the changed ones is not taken; case 2 is not computed again
    fresh = pl.DataFrame({"caseid": [1, 1], "value": ["X", "Y"], "p": [0.7, 0.9]})
    out = renewed(rows, pl.DataFrame({"caseid": [1]}), fresh, ["X"])
    assert out.rows() == [(1, "X", 0.7), (1, "Y", 1.0), (2, "X", 0.5), (2, "Y", 0.2)]
    # a changed value the case no longer reaches loses its row
    gone = renewed(rows, pl.DataFrame({"caseid": [2]}), fresh.clear(), ["Y"])
    assert gone.rows() == [(1, "X", 0.5), (1, "Y", 1.0), (2, "X", 0.5)]
