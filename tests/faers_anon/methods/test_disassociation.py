"""Disassociation: the paper's Figs. 1/4/10 example, k^m check, reconstruction, invariants, ARE, I/O."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faers_anon.errors import ConfigError, InputError
from faers_anon.methods import METHODS
from faers_anon.methods._disassociation_horpart import merge_small
from faers_anon.methods._disassociation_verpart import chunk_is_km, cluster_masks, masks_of, verpart
from faers_anon.methods.disassociation import (
    Disassociated,
    DisassociationConfig,
    DisassociationResult,
    ItemAttribute,
    average_relative_error,
    case_items,
    check_km,
    count_queries,
    disassociate,
    pair_workload,
    read_released,
    reconstruct,
    split_items,
    write_released,
)

# Fig. 1 of Loukides et al. 2014 (records r1..r10) and the utility constraints of Fig. 3(b), as the text
# pins them: r1 = {296.00, 296.01, 296.02, 834.0, 944.01} ({296.01, 834.0} only in r1), 296.01 and 695.10
# together only in r2 and r5, 401.0/834.0/944.01 twice in r1..r5, 834.0 and 944.01 twice in r6..r10,
# 296.03 with 294.10 three times, u2 = {692.71, 695.10}, u3 = {401.0, 404.00} held by 4 patients.
FIG1 = [
    ["296.00", "296.01", "296.02", "834.0", "944.01"],
    ["296.00", "296.02", "296.01", "401.0", "944.01", "692.71", "695.10"],
    ["296.00", "296.02", "692.71", "834.0", "695.10"],
    ["296.00", "296.01", "692.71", "401.0"],
    ["296.00", "296.01", "296.02", "692.71", "695.10"],
    ["296.03", "295.04", "404.00", "480.1"],
    ["294.10", "296.03", "834.0", "944.01"],
    ["294.10", "295.04", "296.03", "480.1"],
    ["294.10", "295.04", "404.00"],
    ["294.10", "295.04", "296.03", "834.0", "944.01"],
]
U = [
    ["294.10", "295.04", "296.00", "296.01", "296.02", "296.03"],
    ["692.71", "695.10"],
    ["401.0", "404.00"],
    ["480.1"],
    ["834.0", "944.01"],
]
CODES = (ItemAttribute("codes", "C", "code"),)


def _fig1() -> pl.DataFrame:
    return pl.DataFrame({"caseid": list(range(1, 11)), "codes": FIG1}, schema_overrides={"caseid": pl.Int64})


def _fig_config(**options: Any) -> DisassociationConfig:
    constraints = tuple(tuple(f"C:{c}" for c in u) for u in U)
    return DisassociationConfig(
        k=3, m=2, max_cluster_size=6, attributes=CODES, constraints=constraints, **options
    )


def _subrecords(rows: pl.DataFrame, keys: list[str], size: int) -> list[tuple[str, ...]]:
    """Sorted multiset of one chunk's subrecords (tags removed), empty ones included."""
    grouped = rows.group_by([*keys, "record_in_chunk"]).agg(pl.col("item").sort())
    full = [tuple(i.removeprefix("C:") for i in items) for items in grouped["item"].to_list()]
    return sorted(full + [()] * (size - len(full)))


def _record_chunks(rel: Disassociated) -> dict[tuple[int, int], list[tuple[str, ...]]]:
    sizes = dict(rel.clusters.iter_rows())
    return {
        (c, j): _subrecords(frame, ["cluster_id", "chunk_id"], sizes[c])
        for (c, j), frame in rel.record_chunks.group_by("cluster_id", "chunk_id")
    }


def _item_chunks(rel: Disassociated) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for c, item in rel.item_chunk.iter_rows():
        out.setdefault(c, set()).add(item.removeprefix("C:"))
    return out


P1_C1 = sorted([("296.00", "296.01", "296.02")] * 3 + [("296.00", "296.02"), ("296.00", "296.01")])
P1_C2 = sorted([("692.71", "695.10")] * 3 + [("692.71",), ()])
P2_C1 = sorted(
    [("295.04", "296.03"), ("294.10", "296.03"), ("294.10", "295.04")] + [("294.10", "295.04", "296.03")] * 2
)


def test_horpart_splits_figure_1_on_296_00() -> None:
    rel = disassociate(_fig1(), config=_fig_config(refine=False), rng=np.random.default_rng(0))
    members = rel.members.group_by("cluster_id").agg(pl.col("caseid").sort()).sort("cluster_id")
    assert members["caseid"].to_list() == [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]]
    assert rel.clusters["size"].to_list() == [5, 5]


def test_verpart_gives_the_chunks_of_figure_4() -> None:
    rel = disassociate(_fig1(), config=_fig_config(refine=False), rng=np.random.default_rng(0))
    assert _record_chunks(rel) == {(0, 0): P1_C1, (0, 1): P1_C2, (1, 0): P2_C1}
    assert _item_chunks(rel) == {0: {"401.0", "834.0", "944.01"}, 1: {"404.00", "480.1", "834.0", "944.01"}}
    assert rel.shared_chunks.height == 0 and rel.shared_clusters.height == 0


def test_refining_builds_the_shared_chunk_of_figure_10() -> None:
    rel = disassociate(_fig1(), config=_fig_config(), rng=np.random.default_rng(0))
    assert _record_chunks(rel) == {(0, 0): P1_C1, (0, 1): P1_C2, (1, 0): P2_C1}
    assert _item_chunks(rel) == {0: {"401.0"}, 1: {"404.00", "480.1"}}
    assert rel.shared_clusters.rows() == [(0, 0), (0, 1)]
    shared = _subrecords(rel.shared_chunks, ["shared_id"], 10)
    assert shared == sorted([("834.0", "944.01")] * 3 + [("944.01",), ("834.0",)] + [()] * 5)


def test_section_5_chunk_tests_and_the_constraint_rule() -> None:
    code = {c: i for i, c in enumerate(sorted({c for r in FIG1[:5] for c in r}))}
    owner = np.array([j for j, r in enumerate(FIG1[:5]) for _ in r])
    items = np.array([code[c] for r in FIG1[:5] for c in r])
    masks = masks_of(owner, items)
    first_four = [masks[code[c]] for c in ("296.00", "296.01", "296.02", "692.71")]
    assert chunk_is_km(first_four, k=3, m=2)
    assert not chunk_is_km([*first_four, masks[code["695.10"]]], k=3, m=2)  # 296.01 & 695.10: r2, r5
    # Without constraints 692.71 stays in C1; u2 = {692.71, 695.10} is what moves it to C2 (lines 15-17).
    free = np.full(len(code), -1)
    assert verpart(masks, k=3, m=2, constraint=free)[0][1] == [code["695.10"]]
    tied = free.copy()
    tied[[code[c] for c in U[0] if c in code]] = 0
    tied[[code["692.71"], code["695.10"]]] = 1
    chunks, rest = verpart(masks, k=3, m=2, constraint=tied)
    assert [sorted(c) for c in chunks] == [
        sorted(code[c] for c in ("296.00", "296.01", "296.02")),
        sorted(code[c] for c in ("692.71", "695.10")),
    ]
    assert rest == sorted(code[c] for c in ("401.0", "834.0", "944.01"))


def test_check_km_passes_the_example_and_flags_broken_chunks() -> None:
    rel = disassociate(_fig1(), config=_fig_config(), rng=np.random.default_rng(0))
    report = check_km(rel)
    assert report.ok and report.min_support == 3 and report.chunks == 4
    triples = check_km(rel, m=3)  # {294.10, 295.04, 296.03} is in r8 and r10 only
    assert triples.violating.select("chunk", "items", "support").rows() == [
        ("1:0", ["C:294.10", "C:295.04", "C:296.03"], 2)
    ]
    one = rel.record_chunks.filter(pl.col("item") == "C:695.10").head(1)
    broken = Disassociated(
        **{**_fields(rel), "record_chunks": rel.record_chunks.join(one, on=one.columns, how="anti")}
    )
    bad = check_km(broken)
    assert not bad.ok and ["C:695.10"] in bad.violating["items"].to_list()
    small = Disassociated(**{**_fields(rel), "clusters": rel.clusters.with_columns(size=pl.lit(2, pl.Int64))})
    assert check_km(small).clusters_below_k == 2 and not check_km(small).ok


def _fields(rel: Disassociated) -> dict[str, Any]:
    return {"k": rel.k, "m": rel.m, **rel.tables()}


def _projections(originals: dict[int, set[str]], cases: list[int], domain: set[str]) -> list[tuple[str, ...]]:
    return sorted(
        tuple(sorted(i.removeprefix("C:") for i in originals.get(c, set()) & domain)) for c in cases
    )


def _check_faithful(rel: Disassociated, records: pl.DataFrame, *, k: int, one: bool = False) -> None:
    """Every chunk is the projection of its cluster's (or span's) records; item chunks hold the rest."""
    sets = {c: set(v) for c, v in records.group_by("caseid").agg("item").iter_rows()}
    members = {c: v for c, v in rel.members.group_by("cluster_id").agg(pl.col("caseid").sort()).iter_rows()}
    for (c, _), frame in rel.record_chunks.group_by("cluster_id", "chunk_id"):
        domain = set(frame["item"].to_list())
        assert _subrecords(frame, ["cluster_id", "chunk_id"], len(members[c])) == _projections(
            sets, members[c], domain
        )
    for (s,), frame in rel.shared_chunks.group_by("shared_id"):
        span = [
            x for c in rel.shared_clusters.filter(pl.col("shared_id") == s)["cluster_id"] for x in members[c]
        ]
        domain = set(frame["item"].to_list())
        assert _subrecords(frame, ["shared_id"], len(span)) == _projections(sets, span, domain)
    for c, item in rel.item_chunk.iter_rows():
        support = sum(item in sets.get(x, set()) for x in members[c])
        assert (support == 1) if one else (1 <= support < k)


@pytest.fixture
def drug_cases(random_cases: pl.DataFrame) -> pl.DataFrame:
    """``random_cases`` with 1-4 drugs per case from 25 (seeded), so drugs and reactions both vary."""
    rng = np.random.default_rng(11)
    drugs = [sorted({f"DRUG {int(x)}" for x in rng.zipf(1.6, rng.integers(1, 5)) % 25}) for _ in range(300)]
    return random_cases.with_columns(drug_keys=pl.Series(drugs, dtype=pl.List(pl.String)))


def test_reconstruction_reproduces_every_chunk(drug_cases: pl.DataFrame) -> None:
    config = DisassociationConfig(k=3, m=2, max_joint=4)
    rel = disassociate(drug_cases, config=config, rng=np.random.default_rng(1))
    original = case_items(drug_cases)
    _check_faithful(rel, original, k=3)
    assert rel.shared_chunks.height > 0 and check_km(rel).ok
    again = reconstruct(rel, rng=np.random.default_rng(2))
    _check_faithful(rel, again, k=3, one=True)
    uniform = reconstruct(rel, rng=np.random.default_rng(2), item_support="uniform")
    _check_faithful(rel, uniform, k=3)
    assert set(again["caseid"].to_list()) <= set(original["caseid"].to_list())


@settings(max_examples=40, deadline=None)
@given(
    data=st.lists(st.sets(st.integers(0, 7), max_size=5), min_size=4, max_size=30),
    k=st.integers(2, 4),
    m=st.integers(1, 3),
    extra=st.integers(0, 4),
    refine=st.booleans(),
    seed=st.integers(0, 3),
)
def test_release_is_km_anonymous_and_faithful(
    data: list[set[int]], k: int, m: int, extra: int, refine: bool, seed: int
) -> None:
    if len(data) < k:
        return
    cases = pl.DataFrame(
        {"caseid": list(range(len(data))), "codes": [[f"{i}" for i in sorted(r)] for r in data]},
        schema={"caseid": pl.Int64, "codes": pl.List(pl.String)},
    )
    config = DisassociationConfig(
        k=k, m=m, max_cluster_size=k + extra, refine=refine, max_joint=3, attributes=CODES
    )
    rel = disassociate(cases, config=config, rng=np.random.default_rng(seed))
    assert check_km(rel).ok
    assert rel.members.height == len(data) and rel.clusters["size"].sum() == len(data)
    _check_faithful(rel, case_items(cases, attributes=CODES), k=k)
    _check_faithful(rel, reconstruct(rel, rng=np.random.default_rng(seed)), k=k, one=True)


def test_same_seed_same_tables_other_seed_other_positions() -> None:
    config = _fig_config()
    a = disassociate(_fig1(), config=config, rng=np.random.default_rng(5))
    b = disassociate(_fig1(), config=config, rng=np.random.default_rng(5))
    c = disassociate(_fig1(), config=config, rng=np.random.default_rng(6))
    assert all(a.tables()[n].equals(b.tables()[n]) for n in a.tables())
    assert not a.record_chunks.equals(c.record_chunks)
    assert _record_chunks(a) == _record_chunks(c) and a.item_chunk.equals(c.item_chunk)


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_written_tables_read_back(tmp_path: Path, fmt: Any) -> None:
    rel = disassociate(_fig1(), config=_fig_config(), rng=np.random.default_rng(0))
    paths = write_released(rel, tmp_path / "out", fmt=fmt)
    assert [p.name for p in paths][-1] == "disassociation.json" and paths[0].name == f"clusters.{fmt}"
    back = read_released(tmp_path / "out")
    assert (back.k, back.m) == (3, 2)
    assert all(back.tables()[n].equals(rel.tables()[n]) for n in rel.tables())
    with pytest.raises(InputError, match="disassociation.json"):
        read_released(tmp_path)
    (tmp_path / "out" / f"item_chunk.{fmt}").unlink()
    with pytest.raises(InputError, match="missing table item_chunk"):
        read_released(tmp_path / "out")


def test_are_and_count_queries_by_hand() -> None:
    original = pl.DataFrame(
        {"caseid": [1, 1, 2, 2, 3, 4], "item": ["D:a", "R:x", "D:a", "R:x", "D:a", "R:y"]}
    )
    anonymized = pl.DataFrame(
        {"caseid": [1, 1, 2, 3, 3, 4], "item": ["D:a", "R:x", "D:a", "D:a", "R:x", "R:x"]}
    )
    workload = pair_workload(original)
    assert workload.rows() == [(0, "D:a"), (0, "R:x")]  # (a, y) never co-occurs
    queries = pl.DataFrame({"query_id": [0, 0, 1, 2, 2], "item": ["D:a", "R:x", "D:a", "R:y", "D:a"]})
    assert count_queries(original, queries).rows() == [(0, 2), (1, 3), (2, 0)]
    assert count_queries(anonymized, queries).rows() == [(0, 2), (1, 3), (2, 0)]
    swapped = anonymized.with_columns(
        pl.when(pl.col("caseid") == 1).then(5).otherwise("caseid").alias("caseid")
    )
    assert average_relative_error(original, anonymized, queries) == 0.0  # query 2 has C_O = 0: left out
    shifted = pl.concat([swapped, pl.DataFrame({"caseid": [4], "item": ["D:a"]})])
    # q0: C_A = 3 (cases 3, 4, 5) vs 2 → 0.5; q1: C_A = 4 vs 3 → 1/3; ARE = (0.5 + 1/3) / 2
    assert math.isclose(average_relative_error(original, shifted, queries), (0.5 + 1 / 3) / 2)
    assert pair_workload(original, min_support=3).height == 0
    assert average_relative_error(original, shifted, pair_workload(original, min_support=3)) == 0.0


def test_registry_entry_checks_km_and_keeps_the_lists(drug_cases: pl.DataFrame) -> None:
    result = METHODS["disassociation"](drug_cases, rng=np.random.default_rng(0))
    assert isinstance(result, DisassociationResult)
    assert result.privacy["km_ok"] is True and result.privacy["km_k"] == 5
    assert result.privacy["clusters"] == result.released.clusters.height
    tables = split_items(reconstruct(result.released, rng=np.random.default_rng(0)))
    original = split_items(case_items(drug_cases))
    assert set(tables) == {"drug_key", "pt"}
    for name, frame in tables.items():
        assert frame.columns == ["caseid", name]
        assert set(frame[name].to_list()) <= set(original[name][name].to_list())
        # items in record chunks keep their exact counts; the item chunks' items get one record each
        assert frame.height <= original[name].height
    counted = Counter(tables["drug_key"]["drug_key"].to_list())
    exact = Counter(original["drug_key"]["drug_key"].to_list())
    assert counted["DRUG 1"] == exact["DRUG 1"] > 5


def test_case_items_tags_values_and_drops_empty_entries(make_cases: Any) -> None:
    cases = make_cases(
        [(30.0, "F", 60.0), (40.0, "M", 70.0)],
        drug_keys=[["X", "", "X"], []],
        reactions=[["X"], ["Y"]],
    )
    items = case_items(cases)
    assert items.rows() == [(1000, "D:X"), (1000, "R:X"), (1001, "R:Y")]
    assert split_items(items)["drug_key"].rows() == [(1000, "X")]


def test_merge_small_pools_neighbours_until_k() -> None:
    parts = [np.arange(a, b) for a, b in ((0, 2), (2, 3), (3, 8), (8, 9))]
    assert [c.tolist() for c in merge_small(parts, k=3)] == [[0, 1, 2], [3, 4, 5, 6, 7, 8]]
    assert [c.size for c in merge_small([np.arange(2)], k=3)] == [2]


def test_identical_records_stay_one_cluster() -> None:
    cases = pl.DataFrame({"caseid": list(range(70)), "codes": [["a", "b"]] * 69 + [["a"]]})
    config = DisassociationConfig(k=2, attributes=CODES)
    rel = disassociate(cases, config=config, rng=np.random.default_rng(0))
    assert rel.clusters.rows() == [(0, 70)] and rel.item_chunk.height == 0
    assert _subrecords(rel.record_chunks, ["cluster_id", "chunk_id"], 70) == sorted(
        [("a", "b")] * 69 + [("a",)]
    )


def test_cluster_masks_agree_with_masks_of_on_narrow_and_wide_clusters() -> None:
    rng = np.random.default_rng(4)
    sizes = [5, 70, 3]
    cluster = np.repeat(np.arange(3), [s * 4 for s in sizes])
    local = np.concatenate([np.repeat(np.arange(s), 4) for s in sizes])
    items = rng.integers(0, 9, cluster.size)
    got = cluster_masks(cluster, local, items, 3)
    assert got == [masks_of(local[cluster == c], items[cluster == c]) for c in range(3)]
    assert max(got[1].values()).bit_length() > 64


def test_input_errors() -> None:
    config = _fig_config()
    with pytest.raises(InputError, match="fewer than k = 3"):
        disassociate(_fig1().head(2), config=config, rng=np.random.default_rng(0))
    with pytest.raises(InputError, match="codes"):
        disassociate(_fig1().drop("codes"), config=config, rng=np.random.default_rng(0))
    with pytest.raises(InputError, match="duplicate caseids"):
        disassociate(pl.concat([_fig1(), _fig1().head(1)]), config=config, rng=np.random.default_rng(0))
    empty = disassociate(_fig1().head(0), config=config, rng=np.random.default_rng(0))
    assert empty.clusters.height == 0 and check_km(empty).ok


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"k": 1}, "k must be an integer >= 2"),
        ({"m": 0}, "m must be an integer >= 1"),
        ({"k": 5, "max_cluster_size": 4}, "max_cluster_size must be >= k"),
        ({"max_joint": 1}, "max_joint must be >= 2"),
        ({"attributes": ()}, "distinct alphanumeric tags"),
        ({"attributes": (ItemAttribute("a", "D:", "x"),)}, "distinct alphanumeric tags"),
        ({"attributes": (ItemAttribute("a", "D", "x"), ItemAttribute("a", "R", "y"))}, "distinct columns"),
        ({"constraints": (("D:a",), ("D:a", "R:b"))}, "non-empty and disjoint"),
        ({"constraints": ((),)}, "non-empty and disjoint"),
    ],
)
def test_config_rejects_bad_values(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        DisassociationConfig(**options)


def test_other_bad_options_are_config_errors(tmp_path: Path) -> None:
    rel = disassociate(_fig1(), config=_fig_config(), rng=np.random.default_rng(0))
    with pytest.raises(ConfigError, match="item_support"):
        reconstruct(rel, rng=np.random.default_rng(0), item_support="all")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="fmt"):
        write_released(rel, tmp_path, fmt="json")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="min_support"):
        pair_workload(case_items(_fig1(), attributes=CODES), min_support=0)
    assert DisassociationConfig(k=4).describe()["max_cluster_size"] == 8
