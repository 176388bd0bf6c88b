"""The ledger's entries read back from a release: the same rows as the hash group-by they replaced.

Random release folders (several reports per case with differing tuples, nulls in the QIDs, blank and
duplicate terms, a case without values, a table missing) against :func:`_reference`, the reading as it
was before the fourteenth session (docs/series.md, "The ledger's update cheaper").
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import polars as pl
import pytest

from faers_anon.series.ledger import _CANONICAL, _LISTS, _SCHEMA, REGION, _published_qids, ledger_entries
from knowledge.values import value_key_expr

_QIDS = ["age_group", "age_min", "age_max", "sex", "wt_min", "wt_max", "fda_dt", "occr_country"]


def _reference(release: Path, index: int) -> pl.DataFrame:
    """The entries as ``ledger_entries`` read them before (a hash group-by, a dense rank of every case)."""
    demo = pl.read_parquet(release / "parquet" / "demo.parquet")
    region = [c for c in REGION if c in demo.columns]
    tuple_ = [c for c in dict.fromkeys([*region, *_published_qids(release)]) if c in demo.columns]
    cases = (
        demo.group_by("caseid", maintain_order=True)
        .agg(pl.col(tuple_).first(), pl.col("primaryid").unique().sort().alias("reports"))
        .with_columns(pl.struct(tuple_).rank("dense").sub(1).cast(pl.UInt32).alias("group"))
        .with_columns(pl.len().over("group").cast(pl.UInt32).alias("group_size"))
    )
    for table, (column, name) in _LISTS.items():
        path = release / "parquet" / f"{table}.parquet"
        if not path.is_file():
            values = pl.DataFrame(schema={"caseid": pl.Int64, name: pl.List(pl.Utf8)})
        else:
            rows = pl.read_parquet(path, columns=["caseid", column]).drop_nulls()
            if column in _CANONICAL:
                rows = rows.with_columns(value_key_expr(pl.col(column)).alias(column))
            rows = rows.sort(rows.columns).unique(maintain_order=True)
            values = rows.group_by("caseid", maintain_order=True).agg(pl.col(column).alias(name))
        cases = cases.join(values, on="caseid", how="left").with_columns(
            pl.col(name).fill_null(pl.lit([], pl.List(pl.Utf8)))
        )
    missing = [pl.lit(None, _SCHEMA[c]).alias(c) for c in REGION if c not in region]
    return (
        cases.with_columns(*missing, pl.lit(index, pl.UInt32).alias("release"))
        .select(list(_SCHEMA))
        .cast(_SCHEMA)  # type: ignore[arg-type]
        .sort("caseid")
    )


def _release(folder: Path, rng: random.Random, *, drop: str | None) -> Path:
    (folder / "parquet").mkdir(parents=True)
    cases = rng.sample(range(-(2**40), 2**40), rng.randint(0, 60))
    ages = [("Adult", 25.0, 45.0), ("Child", 2.0, 12.0), (None, None, None), ("Adult", 25.0, None)]
    reports = []
    for case in cases:
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            age = rng.choice(ages)
            reports.append((rng.randrange(2**50), case, *age, rng.choice(["F", "M", None]),
                            rng.choice([70.0, 80.0, None]), rng.choice([90.0, None]),
                            rng.choice(["2024", "2023"]), rng.choice(["US", "FR", None])))  # fmt: skip
    if reports and rng.random() < 0.3:
        reports.append(reports[0])  # a report listed twice
    rng.shuffle(reports)
    schema = {"primaryid": pl.Int64, "caseid": pl.Int64, "age_group": pl.Utf8, "age_min": pl.Float64,
              "age_max": pl.Float64, "sex": pl.Utf8, "wt_min": pl.Float64, "wt_max": pl.Float64,
              "fda_dt": pl.Utf8, "occr_country": pl.Utf8}  # fmt: skip
    pl.DataFrame(reports, orient="row", schema=schema).write_parquet(folder / "parquet" / "demo.parquet")
    terms = ["Pyrexia", "pyrexia ", "PYREXIA", "  ", "", "Rash  x", "rash x", "Death", None]
    for table, (column, _) in _LISTS.items():
        if table == drop:
            continue
        rows = [(rng.choice(cases) if cases else 0, rng.choice(terms)) for _ in range(rng.randint(0, 120))]
        frame = pl.DataFrame(rows, orient="row", schema={"caseid": pl.Int64, column: pl.Utf8})
        frame.write_parquet(folder / "parquet" / f"{table}.parquet")
    qids = [q for q in _QIDS if rng.random() < 0.8]
    (folder / "manifest.json").write_text(json.dumps({"columns": {"demo": {"qid": qids}}}))
    return folder


@pytest.mark.parametrize("seed", range(40))
def test_entries_are_the_reference_rows(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    release = _release(tmp_path / "r", rng, drop=rng.choice([None, None, "indi", "outc"]))
    assert ledger_entries(release, 3).equals(_reference(release, 3))
