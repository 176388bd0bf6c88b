"""The partition contract (faers_anon/anonymize/partition.py): one frame shape for every anonymizer.

Every producer (the greedy engine, Mondrian, each method of the registry) returns a frame with exactly
PARTITION_SCHEMA, one row per case, every case of the input once; the released QID-groups are the
distinct QID tuples (released_groups), hand-worked below.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from faers_anon.algorithms import greedy_cluster
from faers_anon.algorithms.mondrian import mondrian
from faers_anon.algorithms.types import QidHierarchies
from faers_anon.anonymize.partition import PARTITION_SCHEMA, QID_COLUMNS, released_groups
from faers_anon.methods import METHODS
from faers_anon.models import KAnonymity, LDiversity

QIDS = ("age_group", "age_min", "age_max", "sex", "wt_min", "wt_max")


def test_the_schema_and_the_released_qid_columns() -> None:
    assert list(PARTITION_SCHEMA) == ["caseid", "group_id", *QIDS]
    assert QID_COLUMNS == QIDS
    assert [str(t) for t in PARTITION_SCHEMA.values()] == [
        "Int64", "Int64", "String", "Float64", "Float64", "String", "Float64", "Float64",
    ]  # fmt: skip


def _frame(rows: list[tuple[int, int, str | None, str | None, float | None]]) -> pl.DataFrame:
    """(caseid, group_id, age_group, sex, wt) with age range 0–1 and a point weight."""
    return pl.DataFrame(
        {
            "caseid": [r[0] for r in rows],
            "group_id": [r[1] for r in rows],
            "age_group": [r[2] for r in rows],
            "age_min": [0.0] * len(rows),
            "age_max": [1.0] * len(rows),
            "sex": [r[3] for r in rows],
            "wt_min": [r[4] for r in rows],
            "wt_max": [r[4] for r in rows],
        },
        schema=PARTITION_SCHEMA,
    )


def test_released_groups_merge_groups_with_one_tuple_and_number_them_in_sorted_order() -> None:
    """Engine groups 7 and 3 release the same tuple (one group to an attacker); nulls sort last."""
    frame = _frame([
        (1, 7, "Infant", "F", 5.0),
        (2, 3, "Infant", "F", 5.0),
        (3, 9, "Infant", None, 5.0),
        (4, 8, "Aged", "M", None),
        (5, 8, "Aged", "M", None),
    ])  # fmt: skip
    out = released_groups(frame)
    assert out.columns == frame.columns
    # sorted tuples: (Aged, M, null) → 0, (Infant, F, 5) → 1, (Infant, null, 5) → 2
    assert dict(zip(out["caseid"], out["group_id"], strict=True)) == {1: 1, 2: 1, 3: 2, 4: 0, 5: 0}


def test_released_groups_keep_the_report_column_of_a_report_level_frame() -> None:
    frame = (
        _frame([(1, 0, "Aged", "F", 60.0), (1, 1, "Aged", "F", 60.0)])
        .with_columns(primaryid=pl.Series([11, 12]))
        .select("primaryid", *PARTITION_SCHEMA)
    )
    out = released_groups(frame)
    assert out.columns == frame.columns and out["group_id"].to_list() == [0, 0]


def _cases() -> pl.DataFrame:
    rng = np.random.default_rng(3)
    n = 60
    age = rng.integers(1, 90, n).astype(float)
    wt = np.where(rng.random(n) < 0.2, np.nan, rng.integers(40, 110, n).astype(float))
    return pl.DataFrame(
        {
            "caseid": np.arange(100, 100 + n, dtype=np.int64),
            "age_min": age,
            "age_max": age,
            "sex": rng.choice(["F", "M"], n).tolist(),
            "wt_min": wt,
            "wt_max": wt,
            "indications": [[f"I{i % 7}"] for i in range(n)],
            "reactions": [[f"R{i % 5}"] for i in range(n)],
            "drug_keys": [[f"D{i % 4}"] for i in range(n)],
        }
    ).with_columns(pl.col("wt_min", "wt_max").fill_nan(None))


def _producers() -> dict[str, pl.DataFrame]:
    cases = _cases()
    h = QidHierarchies.default()
    values = pl.DataFrame(
        {
            "caseid": np.concatenate([cases["caseid"].to_numpy()] * 2),
            "value": [f"indications:I{i % 7}" for i in range(60)]
            + [f"reactions:R{i % 5}" for i in range(60)],
            "p": [1.0] * 120,
        }
    )
    empty = pl.DataFrame(schema={"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})
    frames = {
        "greedy": greedy_cluster(
            cases, probabilities=empty, model=KAnonymity(k=3), hierarchies=h, rng=np.random.default_rng(0)
        ).frame,  # fmt: skip
        "mondrian": mondrian(cases, probabilities=values, model=LDiversity(k=2), hierarchies=h).frame,
    }
    for name, method in METHODS.items():
        frames[name] = method(cases, rng=np.random.default_rng(0)).release
    return frames


@pytest.mark.parametrize("producer", ["greedy", "mondrian", *sorted(METHODS)])
def test_every_anonymizer_returns_the_partition_frame_with_every_case_once(producer: str) -> None:
    frame = _producers()[producer]
    assert dict(frame.schema) == dict(PARTITION_SCHEMA), producer
    assert sorted(frame["caseid"].to_list()) == list(range(100, 160))
    assert frame["group_id"].null_count() == 0
    ids = frame["group_id"].unique().sort().to_list()
    assert ids == list(range(len(ids)))  # dense 0..G-1
