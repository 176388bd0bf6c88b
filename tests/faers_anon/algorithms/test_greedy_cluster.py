"""Properties of the greedy clustering engine on random small quarters (SPEC §4–§6)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faers_anon.algorithms import QidHierarchies, greedy_cluster
from faers_anon.algorithms._encode import class_basis
from faers_anon.algorithms._frame import Encoded, encode, encode_qids, with_links
from faers_anon.algorithms._group import Group, blocked_bits, cap_bits, is_valid, new_group, risk
from faers_anon.algorithms._kernel import delta_il, stage2_budgets
from faers_anon.algorithms._pool import remove_case
from faers_anon.algorithms._search import add_pooled, prev_free, search
from faers_anon.algorithms._streams import new_streams
from faers_anon.errors import ConfigError, InputError
from faers_anon.models import MSKTheta
from hierarchies import mesh_age_tree, sex_tree

HIER = QidHierarchies.default()
AGE = mesh_age_tree()
SEX = sex_tree()
VOCAB = [f"V{i}" for i in range(12)]


@st.composite
def quarters(draw: st.DrawFn, max_cases: int = 60) -> tuple[pl.DataFrame, pl.DataFrame, int, float]:
    """Cases with missing QIDs, ranged super-records, and P(s|c) in {1, 1/2, 1/3}."""
    n = draw(st.integers(1, max_cases))
    k = draw(st.integers(2, 6))
    theta = draw(st.sampled_from([0.3, 0.5, 0.7, 1.0]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    age = np.where(rng.random(n) < 0.3, np.nan, rng.integers(0, 100, n).astype(float))
    age_hi = np.where(rng.random(n) < 0.2, age + rng.integers(0, 30, n), age)
    wt = np.where(rng.random(n) < 0.4, np.nan, rng.integers(3, 150, n).astype(float))
    wt_hi = np.where(rng.random(n) < 0.2, wt + rng.integers(0, 20, n), wt)
    sex = rng.choice(np.array(["F", "M", "*", None], dtype=object), n, p=[0.45, 0.35, 0.05, 0.15])
    cases = pl.DataFrame(
        {
            "caseid": rng.permutation(np.arange(n) * 7 + 100),
            "n_reports": rng.integers(1, 4, n),
            "age_min": age,
            "age_max": age_hi,
            "sex": sex.tolist(),
            "wt_min": wt,
            "wt_max": wt_hi,
        }
    ).with_columns(pl.col(pl.Float64).fill_nan(None))
    per = rng.integers(0, 4, n)
    caseids = np.repeat(cases.get_column("caseid").to_numpy(), per)
    values = rng.choice(
        VOCAB, per.sum(), p=np.linspace(2, 1, len(VOCAB)) / np.linspace(2, 1, len(VOCAB)).sum()
    )
    p = rng.choice([1.0, 0.5, 1 / 3], per.sum())
    probs = (
        pl.DataFrame({"caseid": caseids, "value": values, "p": p})
        .group_by("caseid", "value")
        .agg(pl.col("p").max())
        .sort("caseid", "value")
    )
    return cases, probs, k, theta


def _run(cases: pl.DataFrame, probs: pl.DataFrame, k: int, theta: float, seed: int = 0):  # noqa: ANN202
    model = MSKTheta(k=k, thetas={v: theta for v in VOCAB})
    return greedy_cluster(
        cases, probabilities=probs, model=model, hierarchies=HIER, rng=np.random.default_rng(seed)
    )


def _invalid_groups(part: pl.DataFrame, probs: pl.DataFrame, k: int, theta: float) -> set[int]:
    """Independent check: < k distinct cases, or some conf = Σp / |q| above θ (+1e-9)."""
    sizes = part.group_by("group_id").agg(pl.col("caseid").n_unique().alias("n"))
    small = set(sizes.filter(pl.col("n") < k).get_column("group_id").to_list())
    conf = (
        part.join(probs, on="caseid")
        .group_by("group_id", "value")
        .agg(pl.col("p").sum().alias("sigma"))
        .join(sizes, on="group_id")
        .filter(pl.col("sigma") / pl.col("n") > theta + 1e-9)
    )
    return small | set(conf.get_column("group_id").to_list())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(quarters())
def test_every_case_placed_and_validity_is_reported_truthfully(q: tuple) -> None:
    cases, probs, k, theta = q
    part = _run(cases, probs, k, theta)
    frame = part.frame
    assert sorted(frame.get_column("caseid").to_list()) == sorted(cases.get_column("caseid").to_list())
    assert frame.get_column("group_id").null_count() == 0
    ids = sorted(frame.get_column("group_id").unique().to_list())
    assert ids == list(range(part.groups))
    bad = _invalid_groups(frame, probs, k, theta)
    assert len(bad) == part.invalid_groups
    if cases.height >= k and part.forced == 0:
        assert not bad


@settings(max_examples=40, deadline=None)
@given(quarters())
def test_without_sensitive_values_every_group_has_k_cases(q: tuple) -> None:
    cases, _, k, _ = q
    empty = pl.DataFrame(schema={"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})
    part = _run(cases, empty, k, 1.0)
    sizes = part.frame.group_by("group_id").len().get_column("len")
    if cases.height >= k:
        assert sizes.min() >= k and part.invalid_groups == 0 and part.forced == 0
    else:
        assert part.groups == 1 and part.invalid_groups == 1


@settings(max_examples=60, deadline=None)
@given(quarters())
def test_released_values_cover_the_raw_values(q: tuple) -> None:
    cases, probs, k, theta = q
    frame = _run(cases, probs, k, theta).frame.join(cases, on="caseid", suffix="_raw")
    # age: the node's [lo, hi) holds [age_min, age_max]; the node is the LCA of the cases' covers
    covers = AGE.cover(
        frame["age_min_raw"].fill_null(np.nan).to_numpy(), frame["age_max_raw"].fill_null(np.nan).to_numpy()
    )
    frame = frame.with_columns(pl.Series("cover", covers))
    for (gid,), grp in frame.group_by("group_id"):
        expected = AGE.lca(grp["cover"].to_list())
        assert set(grp["age_group"].to_list()) == {AGE.name(expected)}, gid
        sex_nodes = SEX.encode(grp["sex_raw"].to_list())
        sex_name = SEX.name(SEX.lca(sex_nodes.tolist()))
        assert set(grp["sex"].to_list()) == {None if sex_name == "missing" else sex_name}
        known = grp.filter(pl.col("wt_min_raw").is_not_null())
        if known.height == grp.height:
            assert grp["wt_min"].min() == known["wt_min_raw"].min()
            assert grp["wt_max"].max() == known["wt_max_raw"].max()
        else:
            assert grp["wt_min"].null_count() == grp.height
    known_age = frame.filter(pl.col("age_min_raw").is_not_null() & (pl.col("age_group") != "missing"))
    assert (known_age["age_min"] <= known_age["age_min_raw"]).all()
    inside = known_age.filter(pl.col("age_max").is_not_null())
    assert (inside["age_max"] > inside["age_max_raw"]).all()
    assert (
        frame.filter(pl.col("age_group") == "missing")["age_min_raw"].null_count()
        == frame.filter(pl.col("age_group") == "missing").height
    )


@settings(max_examples=25, deadline=None)
@given(quarters(), st.integers(0, 1000))
def test_same_seed_same_output(q: tuple, seed: int) -> None:
    cases, probs, k, theta = q
    a = _run(cases, probs, k, theta, seed).frame
    b = _run(cases.sample(fraction=1.0, shuffle=True, seed=seed), probs, k, theta, seed).frame
    assert a.sort("caseid").equals(b.sort("caseid"))


def test_feasible_quarter_is_fully_valid() -> None:
    rng = np.random.default_rng(7)
    n = 400
    cases = pl.DataFrame(
        {
            "caseid": np.arange(n),
            "age_min": rng.integers(0, 90, n).astype(float),
            "age_max": rng.integers(0, 90, n).astype(float) * 0 + np.nan,
            "sex": rng.choice(["F", "M"], n).tolist(),
            "wt_min": rng.normal(70, 15, n).round(),
            "wt_max": np.full(n, np.nan),
        }
    ).with_columns(pl.col("age_max").fill_nan(None), pl.col("wt_max").fill_nan(None))
    cases = cases.with_columns(pl.col("age_min").alias("age_max"), pl.col("wt_min").alias("wt_max"))
    values = rng.choice(VOCAB, n)
    probs = pl.DataFrame({"caseid": np.arange(n), "value": values, "p": np.ones(n)})
    part = _run(cases, probs, 5, 0.4)
    assert part.forced == 0 and part.invalid_groups == 0
    assert not _invalid_groups(part.frame, probs, 5, 0.4)
    sizes = part.frame.group_by("group_id").len().get_column("len")
    assert sizes.min() >= 5 and (sizes == 5).mean() > 0.8


def test_bad_options_and_input() -> None:
    cases = pl.DataFrame({"caseid": [1, 1], "age_min": [1.0, 2.0], "age_max": [1.0, 2.0], "sex": ["F", "M"],
                          "wt_min": [None, None], "wt_max": [None, None]})  # fmt: skip
    probs = pl.DataFrame(schema={"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})
    model = MSKTheta(k=2)
    with pytest.raises(InputError, match="duplicate caseids"):
        greedy_cluster(
            cases, probabilities=probs, model=model, hierarchies=HIER, rng=np.random.default_rng(0)
        )
    unique = cases.with_columns(pl.Series("caseid", [1, 2]))
    with pytest.raises(InputError, match="missing columns"):
        greedy_cluster(
            unique.drop("sex"),
            probabilities=probs,
            model=model,
            hierarchies=HIER,
            rng=np.random.default_rng(0),
        )
    with pytest.raises(ConfigError, match="candidates"):
        greedy_cluster(
            unique,
            probabilities=probs,
            model=model,
            hierarchies=HIER,
            rng=np.random.default_rng(0),
            candidates=0,
        )


def test_empty_cases_give_an_empty_partition() -> None:
    cases = pl.DataFrame(schema={"caseid": pl.Int64, "age_min": pl.Float64, "age_max": pl.Float64,
                                 "sex": pl.Utf8, "wt_min": pl.Float64, "wt_max": pl.Float64})  # fmt: skip
    probs = pl.DataFrame(schema={"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})
    part = _run(cases, probs, 5, 0.5)
    assert part.frame.height == 0 and part.groups == 0


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**12 - 1), st.integers(0, 2**12 - 1))
def test_prev_free_is_the_greatest_unblocked_signature_not_above(x: int, blocked: int) -> None:
    expected = max((y for y in range(x + 1) if y & blocked == 0), default=-1)
    assert prev_free(x, blocked) == expected


def _kernel_inputs(q: tuple) -> Encoded:
    cases, probs, k, theta = q
    model = MSKTheta(k=k, thetas={v: theta for v in VOCAB})
    return encode(cases, probs, model.requirements(), HIER)


def _group(enc: Encoded, members: Iterable[int]) -> Group:
    """A kernel group holding ``members`` (case positions), added in order."""
    g = new_group(enc.tab.lca.shape[0], enc.n_values)
    for c in members:
        add_pooled(g, enc.pool, enc.tab, enc.cases, int(c))
    return g


@settings(max_examples=40, deadline=None)
@given(quarters(), st.integers(0, 2**32 - 1))
def test_signature_masks_only_rule_out_what_the_exact_checks_rule_out(q: tuple, seed: int) -> None:
    enc = _kernel_inputs(q)
    n = enc.caseid.shape[0]
    rng = np.random.default_rng(seed)
    members = rng.permutation(n)[: rng.integers(1, 7)]
    g = _group(enc, members)
    blocked = blocked_bits(g, enc.cases, enc.req)
    caps = cap_bits(g, enc.cases, enc.req)
    for r in range(n):
        sig = int(enc.cases.sig[r])
        if sig & blocked:
            assert risk(g, enc.cases, enc.req, r) == np.inf
        if sig & caps:
            trial = _group(enc, [*members, r])
            assert not is_valid(trial, enc.cases, enc.req)


@settings(max_examples=40, deadline=None)
@given(quarters(), st.integers(0, 2**32 - 1))
def test_stage1_search_with_an_unbounded_budget_finds_the_least_delta_il_prime(q: tuple, seed: int) -> None:
    enc = _kernel_inputs(q)
    n = enc.caseid.shape[0]
    rng = np.random.default_rng(seed)
    members = rng.permutation(n)[: rng.integers(1, min(n, 6) + 1)]
    for c in members:
        remove_case(enc.pool, enc.cases, int(c))
    g = _group(enc, members)
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


def test_k_theta_below_one_builds_groups_of_one_over_theta() -> None:
    # k = 2, θ = 0.25 on every value: a valid group holding a certain value needs >= 4 cases. Eight
    # cases of one QID pattern, values A..D each held by two of them: the answer is two groups of four,
    # each holding A, B, C and D once (conf 1/4). With the paper's η = floor(max(k, |g|+1)·θ) = 0 for
    # |g|+1 < 4 no case holding a value could join any group (every PR infinite), stage 1 would fail
    # and all eight cases would end in one merged group; the η floor of 1 (ms_k_theta "Decision")
    # lets stage 1 build the two groups itself.
    n = 8
    cases = pl.DataFrame(
        {
            "caseid": np.arange(n) + 1,
            "age_min": np.full(n, 40.0),
            "age_max": np.full(n, 40.0),
            "sex": ["F"] * n,
            "wt_min": np.full(n, 70.0),
            "wt_max": np.full(n, 70.0),
        }
    )
    probs = pl.DataFrame({"caseid": np.arange(n) + 1, "value": list("AABBCCDD"), "p": np.ones(n)})
    model = MSKTheta(k=2, thetas={v: 0.25 for v in "ABCD"})
    part = greedy_cluster(
        cases, probabilities=probs, model=model, hierarchies=HIER, rng=np.random.default_rng(3)
    )
    assert (part.groups, part.failed_groups, part.forced, part.merged_groups, part.invalid_groups) == (
        2,
        0,
        0,
        0,
        0,
    )
    held = (
        part.frame.join(probs, on="caseid")
        .group_by("group_id")
        .agg(pl.col("value").sort())
        .get_column("value")
    )
    assert [list(v) for v in held] == [list("ABCD")] * 2


@pytest.mark.parametrize(
    ("m_best", "scan_limit", "expected"),
    [(64, 4096, (1024, 256)), (64, 100, (64, 64)), (1, 4, (1, 1)), (8, 4096, (1024, 32))],
)
def test_stage2_considers_a_quarter_of_the_scan_limit_and_ranks_forced_placements_among_4m(
    m_best: int, scan_limit: int, expected: tuple[int, int]
) -> None:
    assert stage2_budgets(m_best, scan_limit) == expected


def _arrays(enc: Encoded) -> list[np.ndarray]:
    return [enc.caseid, *enc.pool, *enc.tab, *enc.cases, enc.req, np.array([enc.n_values])]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(quarters())
def test_qid_arrays_made_ahead_give_the_same_kernel_arrays(q: tuple) -> None:
    cases, probs, k, theta = q
    req = MSKTheta(k=k, thetas={v: theta for v in VOCAB}).requirements()
    fresh = _arrays(encode(cases, probs, req, HIER))
    ahead = _arrays(
        encode(cases, probs, req, HIER, qids=encode_qids(cases.sample(fraction=1.0, shuffle=True), HIER))
    )
    other = encode_qids(cases.head(cases.height - 1), HIER)  # made for other cases: not used
    assert len(fresh) == len(ahead) == 49
    assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(fresh, ahead, strict=True))
    mixed = _arrays(encode(cases, probs, req, HIER, qids=other))
    assert all(np.array_equal(a, b) for a, b in zip(fresh, mixed, strict=True))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(quarters(), st.integers(0, 2**32 - 1), st.sampled_from([0, 10, 1_000_000]))
def test_a_part_takes_the_same_kernel_arrays_from_the_whole_frames(q: tuple, seed: int, basis: int) -> None:
    # a stratum's arrays taken from its frame's codes and P(s | c) links (made once, no class levels)
    cases, probs, k, theta = q
    req = MSKTheta(k=k, thetas={v: theta for v in VOCAB}).requirements()
    whole = with_links(encode_qids(cases, HIER, classes=False), probs, req)
    rng = np.random.default_rng(seed)
    part = cases.filter(pl.Series(rng.random(cases.height) < 0.6)).sample(
        fraction=1.0, shuffle=True, seed=seed
    )
    with class_basis(basis):
        fresh = _arrays(encode(part, probs, req, HIER))
        taken = _arrays(encode(part, probs, req, HIER, qids=whole))
    assert len(fresh) == len(taken) == 49
    assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(fresh, taken, strict=True))
