"""Field QIDs in the engine (issue 18): per-level codes, their loss, and the clustering on them."""

from __future__ import annotations

from datetime import date as D  # noqa: N812

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faers_anon.algorithms import QidHierarchies, greedy_cluster, score_candidates
from faers_anon.algorithms._frame import encode
from faers_anon.algorithms._group import new_group, risk
from faers_anon.algorithms._kernel import delta_il
from faers_anon.algorithms._pool import remove_case
from faers_anon.algorithms._search import add_pooled, search
from faers_anon.algorithms._streams import new_streams
from faers_anon.algorithms.types import FieldQid
from faers_anon.io.column_policy import DEFAULT_POLICY, ColumnPolicy
from faers_anon.io.qid_fields import field_codes, generalize_fields
from faers_anon.models import MSKTheta

NO_VALUES = pl.DataFrame(schema={"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})
X, Y = FieldQid(name="x", height=1), FieldQid(name="y", height=2)


def _six() -> pl.DataFrame:
    """Six cases: x (a value, height 1), y (leaf → parent P or Q → *, height 2), weight 70 or 80.

    Codes: x a → [0], b → [1]; y y1 → [0, 0], y2 → [1, 0] (parent P), y3 → [2, 1], y4 → [3, 1] (Q).
    """
    return pl.DataFrame(
        {
            "caseid": [1, 2, 3, 4, 5, 6],
            "wt_min": [70.0, 80.0, 80.0, 70.0, 70.0, 80.0],
            "wt_max": [70.0, 80.0, 80.0, 70.0, 70.0, 80.0],
            "x": [[0], [0], [0], [1], [1], [1]],
            "y": [[0, 0], [1, 0], [0, 0], [2, 1], [3, 1], [2, 1]],
        }
    )


def test_six_cases_two_categorical_qids_hand_worked_grouping() -> None:
    """k = 3, weight domain [70, 80], no sensitive values.

    Weight alone groups {1, 4, 5} (70 kg) and {2, 3, 6} (80 kg): per case W 0, x mixed (1), y at the
    root (y1, y3, y4: parents P, Q → *; 1) → IL = 6 · 2 = 12. Grouping by x, {1, 2, 3} and {4, 5, 6}:
    W = 10 / 10 = 1, x 0, y at the parent (P; Q) 1/2 → IL = 6 · 1.5 = 9, the least of all two-group
    partitions. The greedy finds it from every seed: from 1, case 3 (ΔIL 2·1 = 2; 4 and 5 cost
    2·(1 + 1) = 4), then 2 (3·1.5 − 2 = 2.5); from 4, case 5 (2·½ = 1), then 6 (3·1.5 − 1 = 3.5 < 5
    for case 1). NIL = 9 / (6 · 3) = 0.5.
    """
    hier = QidHierarchies(age=None, sex=None, weight=True, weight_domain=(70.0, 80.0), fields=(X, Y))
    for seed in range(6):
        part = greedy_cluster(
            _six(), probabilities=NO_VALUES, model=MSKTheta(k=3), hierarchies=hier,
            rng=np.random.default_rng(seed),
        )  # fmt: skip
        groups = part.frame.group_by("group_id").agg(pl.col("caseid").sort()).get_column("caseid").to_list()
        assert sorted(groups) == [[1, 2, 3], [4, 5, 6]], seed
    scores = score_candidates(
        _six(),
        group=[1, 3],
        candidates=[2, 4],
        probabilities=NO_VALUES,
        model=MSKTheta(k=3),
        hierarchies=hier,
    )
    assert scores.get_column("il_group").to_list() == pytest.approx([2.0, 2.0])
    assert scores.get_column("il_with").to_list() == pytest.approx([4.5, 9.0])


def _only(*fields: str) -> ColumnPolicy:
    """The default policy with only ``fields`` (and age, sex, wt) as DEMO qids."""
    demo = {
        c: a for c, a in DEFAULT_POLICY.columns["demo"].items() if a != "qid" or c in ("age", "sex", "wt")
    }
    demo |= {f: "qid" for f in fields}
    return ColumnPolicy(
        columns={**DEFAULT_POLICY.columns, "demo": demo}, qids=DEFAULT_POLICY.qids, trees=DEFAULT_POLICY.trees
    )


def test_the_engine_loss_on_a_date_hierarchy_is_the_released_loss() -> None:
    """fda_dt (day → month → quarter → year → *, height 4) and occp_cod (occupation tree, height 2).

    Groups of two (the hand-worked figures of tests/faers_anon/io/test_column_policy_roles.py): fda_dt
    g1 Jan 3 + Jan 20 → 202501 (level 1, loss 1/4); g2 Jan 3 + Mar 1 → 2025Q1 (level 2, loss 1/2); g3
    missing + Jan 3 → * (1); g4 both missing (0). occp_cod g1 MD + PH → health professional (1/2); g2
    MD + CN → * (1); g3 XX + XX → XX (0); g4 CN + LW → not a health professional (1/2). IL(g) = 2 ·
    (fda_dt + occp_cod): 1.5, 3, 2, 1; the release's NIL per field: 0.4375 and 0.5.
    """
    reports = pl.DataFrame(
        {
            "primaryid": [11, 21, 31, 41, 51, 61, 71, 81],
            "caseid": [1, 2, 3, 4, 5, 6, 7, 8],
            "fda_dt": [D(2025, 1, 3), D(2025, 1, 20), D(2025, 1, 3), D(2025, 3, 1), None, D(2025, 1, 3),
                       None, None],
            "occp_cod": ["MD", "PH", "MD", "CN", "XX", "XX", "CN", "LW"],
        }
    )  # fmt: skip
    codes, fields = field_codes(reports, _only("fda_dt", "occp_cod"))
    assert fields == (FieldQid(name="fda_dt", height=4), FieldQid(name="occp_cod", height=2))
    hier = QidHierarchies(age=None, sex=None, weight=False, fields=fields)
    il = []
    for a, b in ((1, 2), (3, 4), (5, 6), (7, 8)):
        scores = score_candidates(
            codes, group=[a], candidates=[b], probabilities=NO_VALUES, model=MSKTheta(k=2), hierarchies=hier
        )
        il.append(scores.item(0, "il_with"))
    assert il == pytest.approx([1.5, 3.0, 2.0, 1.0])
    partition = pl.DataFrame({"caseid": [1, 2, 3, 4, 5, 6, 7, 8], "group_id": [1, 1, 2, 2, 3, 3, 4, 4]})
    _, nil = generalize_fields(partition, reports, _only("fda_dt", "occp_cod"))
    assert sum(il) / 8 == pytest.approx(nil["fda_dt"] + nil["occp_cod"])


def test_a_case_covers_its_versions_like_the_release() -> None:
    """Case 1: versions on Jan 3 and Jan 20 → month level (codes [−1, m, q, y]); case 2: one missing and
    one known version → the root at every level; case 3: all missing → null (missing)."""
    reports = pl.DataFrame(
        {
            "primaryid": [11, 12, 21, 22, 31],
            "caseid": [1, 1, 2, 2, 3],
            "fda_dt": [D(2025, 1, 3), D(2025, 1, 20), None, D(2025, 2, 1), None],
        }
    )
    codes, _ = field_codes(reports, _only("fda_dt"))
    got = dict(zip(codes.get_column("caseid").to_list(), codes.get_column("fda_dt").to_list(), strict=True))
    assert got[1][0] == -1 and min(got[1][1:]) >= 0
    assert got[2] == [-1, -1, -1, -1] and got[3] is None


@st.composite
def _field_quarters(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """Random cases with weight, two field QIDs (heights 1 and 3, small code ranges, some missing or −1
    levels), a few protected values, and a class cap (small caps force coarse class levels)."""
    n = draw(st.integers(2, 24))
    rows = []
    for i in range(n):
        x = draw(st.one_of(st.none(), st.integers(-1, 2).map(lambda v: [v])))
        top = draw(st.integers(0, 1))
        mid = 3 * top + draw(st.integers(0, 2))  # a hierarchy: the leaf determines mid, mid determines top
        leaf = 3 * mid + draw(st.integers(0, 2))
        varies = draw(st.integers(0, 2))  # the case's versions differ below this level (−1 there)
        y = draw(st.one_of(st.none(), st.just([-1 if varies > 0 else leaf, -1 if varies > 1 else mid, top])))
        w = draw(st.one_of(st.none(), st.sampled_from([50.0, 60.0, 75.0])))
        rows.append({"caseid": i + 1, "wt_min": w, "wt_max": w, "x": x, "y": y})
    cases = pl.DataFrame(rows, schema={"caseid": pl.Int64, "wt_min": pl.Float64, "wt_max": pl.Float64,
                                       "x": pl.List(pl.Int64), "y": pl.List(pl.Int64)})  # fmt: skip
    held = draw(st.lists(st.tuples(st.integers(1, n), st.sampled_from(["A", "B"])), max_size=n, unique=True))
    probs = pl.DataFrame(
        {"caseid": [c for c, _ in held], "value": [v for _, v in held], "p": [1.0] * len(held)},
        schema={"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64},
    )
    return cases, probs, draw(st.integers(1, 12))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_field_quarters(), st.integers(0, 2**32 - 1))
def test_search_with_an_unbounded_budget_finds_the_least_delta_il_prime_over_fields(
    q: tuple[pl.DataFrame, pl.DataFrame, int], seed: int
) -> None:
    """The class bounds are lower bounds: with no budget the search returns the exact argmin of ΔIL'."""
    cases, probs, cap = q
    hier = QidHierarchies(age=None, sex=None, weight=True, fields=(X, FieldQid(name="y", height=3)))
    enc = encode(
        cases, probs, MSKTheta(k=3, thetas={"A": 0.5, "B": 0.5}).requirements(), hier, max_classes=cap
    )
    n = enc.caseid.shape[0]
    rng = np.random.default_rng(seed)
    members = rng.permutation(n)[: rng.integers(1, min(n - 1, 4) + 1)]
    for c in members:
        remove_case(enc.pool, enc.cases, int(c))
    g = new_group(enc.tab.lca.shape[0], enc.n_values, 2)
    for c in members:
        add_pooled(g, enc.pool, enc.tab, enc.cases, int(c))
    best = np.inf
    for r in set(range(n)) - set(members.tolist()):
        pr = risk(g, enc.cases, enc.req, r)
        if pr < np.inf:
            best = min(best, delta_il(g, enc.pool, enc.tab, r) * pr)
    found = search(enc.pool, enc.tab, enc.cases, enc.req, g, new_streams(enc.pool, enc.tab), n + 1, 4 * n + 4)
    if best == np.inf:
        assert found == -1
    else:
        got = delta_il(g, enc.pool, enc.tab, found) * risk(g, enc.cases, enc.req, found)
        assert got == pytest.approx(best, rel=1e-12, abs=1e-12)
