"""The verifier's own k^m check (issue 13 bullet 4): hand-worked chunks, and agreement with the producer's
``check_km`` on a disassociated synthetic quarter (two implementations, one answer)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from faers_anon.methods.disassociation import DisassociationConfig, check_km, disassociate, write_released
from faers_anon.synthetic import make_quarter
from faers_anon.verify.disassociation import km_support, km_violations

EMPTY_SHARED = pl.DataFrame(schema={"shared_id": pl.Int64, "record_in_chunk": pl.Int64, "item": pl.String})


def _chunks(rows: list[tuple[int, int, int, str]]) -> dict[str, pl.DataFrame]:
    frame = pl.DataFrame(rows, schema=["cluster_id", "chunk_id", "record_in_chunk", "item"], orient="row")
    return {"record_chunks": frame, "shared_chunks": EMPTY_SHARED}


def test_itemset_supports_are_counted_per_chunk_by_hand() -> None:
    # chunk 0:0 has subrecords {A, B}, {A, B}, {A}; chunk 0:1 has {C}, {C}
    tables = _chunks([(0, 0, 0, "A"), (0, 0, 0, "B"), (0, 0, 1, "A"), (0, 0, 1, "B"), (0, 0, 2, "A"),
                      (0, 1, 0, "C"), (0, 1, 1, "C")])  # fmt: skip
    support = {(c, tuple(i)): n for c, i, n in km_support(tables, 2).iter_rows()}
    assert support == {("r0:0", ("A",)): 3, ("r0:0", ("B",)): 2, ("r0:0", ("A", "B")): 2, ("r0:1", ("C",)): 2}
    assert set(km_support(tables, 1)["items"].list.len()) == {1}  # m = 1: single items only


def test_a_release_below_k_is_named_and_the_members_checked(tmp_path: Path) -> None:
    folder = tmp_path / "disassociated"
    folder.mkdir()
    tables = {
        "clusters": pl.DataFrame({"cluster_id": [0], "size": [3]}),
        "members": pl.DataFrame({"cluster_id": [0, 0, 0], "caseid": [11, 12, 13]}),
        "item_chunk": pl.DataFrame(schema={"cluster_id": pl.Int64, "item": pl.String}),
        "shared_clusters": pl.DataFrame(schema={"shared_id": pl.Int64, "cluster_id": pl.Int64}),
        **_chunks([(0, 0, 0, "A"), (0, 0, 0, "B"), (0, 0, 1, "A"), (0, 0, 1, "B"), (0, 0, 2, "A")]),
    }
    for name, frame in tables.items():
        frame.write_parquet(folder / f"{name}.parquet")
    members = pl.DataFrame({"caseid": ["11", "12", "13", "14"], "group": [0, 0, 0, 0]})
    found = km_violations(tmp_path, members, k=3, m=2).select("rule", "detail").rows()
    assert found == [
        ("disassociated", "members: 1 DEMO case(s) in no cluster, 0 caseid(s) not in DEMO"),
        ("km", "chunk r0:0: itemset ['A', 'B'] in 2 subrecord(s), fewer than k = 3"),
        ("km", "chunk r0:0: itemset ['B'] in 2 subrecord(s), fewer than k = 3"),
    ]


def test_the_verifier_and_the_producer_agree_on_k_m(tmp_path: Path) -> None:
    quarter = make_quarter(400, seed=2)
    drugs = quarter["DRUG"].group_by("caseid").agg(pl.col("prod_ai").drop_nulls().unique().alias("drug_keys"))
    reactions = quarter["REAC"].group_by("caseid").agg(pl.col("pt").drop_nulls().unique().alias("reactions"))
    cases = drugs.join(reactions, on="caseid", how="full", coalesce=True).with_columns(
        pl.col("caseid").cast(pl.Int64), pl.col("drug_keys", "reactions").fill_null([])
    )
    released = disassociate(cases, config=DisassociationConfig(k=3, m=2), rng=np.random.default_rng(0))
    write_released(released, tmp_path / "disassociated")
    tables = {n: pl.read_parquet(tmp_path / "disassociated" / f"{n}.parquet") for n in released.tables()}
    for k in (3, 4, 6):
        producer = check_km(released, k=k, m=2)
        ours = km_support(tables, 2)
        assert ours.height == producer.combinations
        assert ours.filter(pl.col("support") < k).height == producer.violations
    assert producer.violations > 0  # k = 6 > the release's k: both see violations
