"""Rule 6's raise check reads a published case's current lists only where they differ from its ledger lists
(:func:`faers_anon.series.raised_lists.same_lists`; docs/series.md §6, sixteenth session): P through the
same lists twice is P through them once (a max), so leaving the copy out changes no P, no sum and no
result. Random ledgers whose published cases carry their ledger lists (verbatim terms, in their order or
another), other lists, or the ledger's with a term changed: the positions found are those whose numbered
lists are the same, and every pass keeps per value the very arrays a check reading every copy finds, with
the reference's pairs (tests/faers_anon/series/raise_reference.py).
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import faers_anon.series.raised_arrays as raised_arrays
from faers_anon.series.raised import Step, check
from faers_anon.series.raised_arrays import Ledger
from faers_anon.series.raised_lists import Lists
from tests.faers_anon.series.raise_reference import reference
from tests.faers_anon.series.test_raised_arrays import _LIST, _config, _random_e, _random_ledger
from tests.faers_anon.series.test_raised_moved import _memo


def _published(rng: random.Random, state: pl.DataFrame) -> pl.DataFrame:
    """Some of the ledger's cases with their ledger lists, the same terms in another order, other lists, or
    a term more."""
    cases = state.sample(fraction=rng.uniform(0.2, 0.9), seed=rng.randint(0, 10**6))
    rows = []
    for caseid, history, reactions, indications, drugs in cases.iter_rows():
        lists = [reactions, indications, drugs]
        pick = rng.random()
        if pick < 0.15:
            lists = [list(reversed(x)) for x in lists]
        elif pick < 0.3:
            lists[rng.randrange(3)] = rng.sample(["a", "B", "D1", "D6"], rng.randint(0, 2))
        elif pick < 0.4:
            lists[2] = [*lists[2], rng.choice(["D1", "D2", "D7"])]
        rows.append((caseid, caseid, "u", history, lists[1], lists[0], lists[2]))
    schema = {"caseid": pl.Int64, "pseudonym": pl.Int64, "unit": pl.Utf8, "history": pl.Utf8,
              "indications": _LIST, "reactions": _LIST, "drug_keys": _LIST}  # fmt: skip
    return pl.DataFrame(rows, orient="row", schema=schema)


def _by_hand(ledger: Ledger, published: pl.DataFrame) -> set[int]:
    """The positions whose published lists hold the ledger's numbers in order, compared row by row."""
    current = ledger._published
    assert current is not None
    found = set()
    mine, own = current.lists, ledger.lists
    for row, p in enumerate(current.position.tolist()):
        same = all(
            m[0][row + 1] - m[0][row] == o[0][p + 1] - o[0][p]
            and m[1][m[0][row] : m[0][row + 1]].tolist() == o[1][o[0][p] : o[0][p + 1]].tolist()
            for m, o in (
                ((mine.own_start, mine.own), (own.own_start, own.own)),
                ((mine.drug_start, mine.drug), (own.drug_start, own.drug)),
            )
        )
        if p >= 0 and same:
            found.add(p)
    return found


@pytest.mark.parametrize("seed", range(40))
def test_a_copy_of_the_ledger_lists_is_not_read_and_changes_nothing(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(7000 + seed)
    config = _config(tmp_path, {"K": ["A", "B"], "L": ["C", "E", "G"]})
    state, past = _random_ledger(rng)
    earlier = _random_e(rng, ["D1", "D2", "D3", "D4"], ["A", "B", "C", "E"], rng.randint(0, 8))
    thetas = {v: round(rng.uniform(0.2, 0.95), 2) for v in ["A", "B", "C", "E", "F", "class:K", "class:L"]}
    skipping, reading = Step(), Step()
    copies = 0
    for _ in range(3):
        published = _published(rng, state)
        current = _random_e(
            rng, ["D1", "D2", "D3", "D6", "d7"], ["A", "B", "C", "F", "G"], rng.randint(3, 12)
        )
        args = (published, past, state, earlier, current, thetas, config)
        want = reference(*args)
        found = check(*args, skipping)
        assert found[0].rows() == want[0] and set(found[1].rows()) == want[1]
        with monkeypatch.context() as m:  # every published copy read, as before
            m.setattr(raised_arrays, "same_lists", lambda *a: np.zeros(0, np.int64))
            check(*args, reading)
        if skipping.ledger is None or reading.ledger is None:
            continue
        ledger = skipping.ledger[2]
        assert ledger._published is not None
        skipped = set(np.flatnonzero((ledger._published.cur_at >= 0) & (ledger._published.read < 0)).tolist())
        assert skipped == _by_hand(ledger, published)
        copies += len(skipped)
        wanted = sorted(ledger._memo)
        assert wanted == sorted(reading.ledger[2]._memo)
        assert _memo(ledger, wanted) == _memo(reading.ledger[2], wanted)
    assert copies > 0  # some published lists were the ledger's


def test_the_published_lists_are_held_in_position_order(tmp_path: Path) -> None:
    # the kernel reads a published case's lists at its position: rows by position, each row's lists those
    # of its case's first published row
    rng = random.Random(3)
    config = _config(tmp_path, {"K": ["A", "B"]})
    state, past = _random_ledger(rng)
    published = _published(rng, state)
    published = pl.concat([published, published.slice(0, 2)]).sample(fraction=1.0, shuffle=True, seed=1)
    step = Step()
    ledger = step.arrays(state, past, config)
    current, _ = ledger._current(published)
    assert (np.diff(current.position) > 0).all()
    first = published.unique("pseudonym", keep="first", maintain_order=True)
    ids = ledger.ids.gather(current.position).to_list()
    again = ledger.numbers.lists(first.join(pl.DataFrame({"pseudonym": ids}), on="pseudonym", how="right")
                                 .select(first.columns))  # fmt: skip
    assert isinstance(again, Lists)
    for name in ("own_start", "own", "drug_start", "drug"):
        assert getattr(current.lists, name).tolist() == getattr(again, name).tolist()
