"""Journalist class sizes (faers_anon.risk._population) against a brute-force count, and by hand.

The brute force reads SPEC §11's coverage rules one released case at a time (numpy over the raw
cases): age [age_min, age_max) (missing → missing only; the root [0, ∞) → any, missing included),
weight [wt_min, wt_max] (empty → any weight), sex (``*`` any; missing → missing), other fields equal
(``*`` any; missing → missing), and the m known items held. The vectorized code must agree on random
small releases with every such case present.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import polars as pl
import pytest

from faers_anon.risk._codes import encode_fields
from faers_anon.risk._population import Population
from faers_anon.risk._reidentify import KnowledgeSet, _journalist, _Lists

QIDS = ("age_group", "age_min", "age_max", "sex", "wt_min", "wt_max")
AGES = [(None, None), (0.0, None), (0.0, 2.0), (19.0, 45.0), (19.0, None), (45.0, 65.0), (80.0, None)]
WEIGHTS = [(None, None), (50.0, 70.0), (60.0, 60.0), (65.0, 90.0)]


def _random(seed: int) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """A released view and a raw view with every coverage case, plus their drug lists."""
    rng = np.random.default_rng(seed)
    n, m = 60, 90
    ages = [AGES[i] for i in rng.integers(0, len(AGES), n)]
    weights = [WEIGHTS[i] for i in rng.integers(0, len(WEIGHTS), n)]
    view = pl.DataFrame({
        "caseid": np.arange(n, dtype=np.int64),
        "age_group": [str(a) for a in ages],
        "age_min": [a[0] for a in ages], "age_max": [a[1] for a in ages],
        "sex": rng.choice(np.array(["F", "M", "*", None], dtype=object), n).tolist(),
        "wt_min": [w[0] for w in weights], "wt_max": [w[1] for w in weights],
        "rept_cod": rng.choice(np.array(["EXP", "PER", "*", None], dtype=object), n).tolist(),
    }, schema_overrides={"age_min": pl.Float64, "age_max": pl.Float64, "wt_min": pl.Float64,
                         "wt_max": pl.Float64})  # fmt: skip
    raw_age = rng.choice(np.array([np.nan, 0.5, 1.0, 19.0, 30.0, 44.9, 45.0, 70.0, 80.0, 95.0]), m)
    raw_wt = rng.choice(np.array([np.nan, np.nan, 50.0, 60.0, 70.0, 80.0, 90.0]), m)
    raw = pl.DataFrame({
        "caseid": np.arange(1000, 1000 + m, dtype=np.int64),
        "age_years": raw_age, "weight_kg": raw_wt,
        "sex": rng.choice(np.array(["F", "M", None], dtype=object), m).tolist(),
        "rept_cod": rng.choice(np.array(["EXP", "PER", None], dtype=object), m).tolist(),
    }).with_columns(pl.col("age_years", "weight_kg").fill_nan(None))  # fmt: skip
    letters = np.array(list("ABCDE"))
    drugs = [(c, str(d)) for c in range(n) for d in rng.choice(letters, rng.integers(0, 4), replace=False)]
    raw_drugs = [(c, str(d)) for c in range(1000, 1000 + m)
                 for d in rng.choice(letters, rng.integers(0, 5), replace=False)]  # fmt: skip
    schema = {"caseid": pl.Int64, "term": pl.String}
    return (
        view,
        raw,
        pl.DataFrame(drugs, schema=schema, orient="row"),
        pl.DataFrame(raw_drugs, schema=schema, orient="row"),
    )


def _covered(t: dict[str, object], raw: pl.DataFrame, knows: tuple[str, ...]) -> np.ndarray:
    ok = np.ones(raw.height, dtype=bool)
    age, wt = raw["age_years"].to_numpy(), raw["weight_kg"].to_numpy()
    if any(f in knows for f in ("age_group", "age_min", "age_max")):
        lo, hi = t["age_min"], t["age_max"]
        if lo is None:
            ok &= np.isnan(age)
        elif not (lo == 0.0 and hi is None):
            ok &= ~np.isnan(age) & (age >= lo) & (True if hi is None else np.nan_to_num(age) < hi)
    if any(f in knows for f in ("wt_min", "wt_max")) and t["wt_min"] is not None:
        ok &= ~np.isnan(wt) & (np.nan_to_num(wt) >= t["wt_min"]) & (np.nan_to_num(wt) <= t["wt_max"])
    for field in [f for f in knows if f in ("sex", "rept_cod")]:
        values = np.array(raw[field].to_list(), dtype=object)
        if t[field] != "*":
            ok &= np.array([v == t[field] for v in values]) if t[field] is not None else (values == None)  # noqa: E711
    return ok


def _brute(view: pl.DataFrame, raw: pl.DataFrame, t_items: pl.DataFrame, p_items: pl.DataFrame,
           ks: KnowledgeSet) -> list[int]:  # fmt: skip
    held = {c: set(g["term"]) for (c,), g in p_items.group_by("caseid")}
    own = {c: sorted(g["term"]) for (c,), g in t_items.group_by("caseid")}
    raw_ids = raw["caseid"].to_list()
    sizes = []
    for t in view.iter_rows(named=True):
        covered = _covered(t, raw, ks.knows)
        items = own.get(t["caseid"], [])
        m = len(items) if ks.count == "all" else min(int(ks.count or 0), len(items))
        if m == 0:
            sizes.append(int(covered.sum()))
            continue
        sizes.append(min(
            sum(1 for i, p in enumerate(raw_ids) if covered[i] and set(s) <= held.get(p, set()))
            for s in combinations(items, m)
        ))  # fmt: skip
    return sizes


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    "ks",
    [
        KnowledgeSet(knows=QIDS),
        KnowledgeSet(knows=(*QIDS, "rept_cod")),
        KnowledgeSet(knows=("sex", "rept_cod")),
        KnowledgeSet(knows=("wt_min",)),
        KnowledgeSet(knows=QIDS, items="drugs", count=1),
        KnowledgeSet(knows=QIDS, items="drugs", count=2),
        KnowledgeSet(knows=(*QIDS, "rept_cod"), items="drugs", count=2),
        KnowledgeSet(knows=(), items="drugs", count="all"),
    ],
    ids=lambda ks: ks.label(),
)
def test_journalist_sizes_equal_a_brute_force_count(seed: int, ks: KnowledgeSet) -> None:
    view, raw, drugs, raw_drugs = _random(seed)
    pop = Population(view, raw, encode_fields(view, raw, [*QIDS, "rept_cod"]))
    sizes = _journalist(pop, ks, {"drugs": _Lists(drugs, raw_drugs)})
    assert sizes is not None
    expected = _brute(view, raw, drugs, raw_drugs, ks)
    # sizes 0 and 1 read alike (risk 1, unique): pairs of a case already at 1 are not counted
    assert np.maximum(sizes.to_numpy(), 1).tolist() == np.maximum(expected, 1).tolist()


def test_a_released_item_the_raw_list_lacks_is_not_measured() -> None:
    view, raw, drugs, raw_drugs = _random(0)
    pop = Population(view, raw, encode_fields(view, raw, [*QIDS, "rept_cod"]))
    lists = {
        "drugs": _Lists(
            pl.concat([drugs, pl.DataFrame({"caseid": [0], "term": ["DRUG CLASS X"]})]), raw_drugs
        )
    }
    assert _journalist(pop, KnowledgeSet(knows=QIDS, items="drugs", count=1), lists) is None
