"""The stored super-records read once (issue 14 item 7, fifteenth session): :func:`stored_cases` reads the
stores from the latest back (no sort and ``unique`` of the rows read) and :class:`StoredRows` takes the
republished cases' ``cases`` rows from its frame instead of reading each store's file again; both against
the reading before (every store read, the latest row of each pseudonym kept; every table from its file).
The store's ``cases.parquet`` made from the super-records in memory (:func:`cases_for_store`) is the file
:func:`write_store` makes from the folder."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import polars as pl
from polars.testing import assert_frame_equal

from faers_anon.io.outputs import write_table
from faers_anon.release.manifest import sha256_file
from faers_anon.series.store import StoredRows, cases_for_store, stored_cases, write_store
from faers_anon.series.units import pseudonym_ids

_KEY = b"k" * 32


def _stores(folder: Path, rng: random.Random, *, pseudonyms: bool = True) -> list[dict[str, Any]]:
    """Three stores of random cases (a case in several stores, with other values in each), each with a
    ``cases`` table (lists, a QID, the pseudonym column unless ``pseudonyms`` is False) and a DRUG table."""
    releases = []
    for index in (1, 2, 3):
        ids = rng.sample(range(1, 60), 25)
        cases = pl.DataFrame(
            {"caseid": ids, "age": [rng.choice([None, 1.5, 30.0, 71.0]) for _ in ids],
             "reactions": [[rng.choice("ABCDE") for _ in range(rng.randrange(3))] for _ in ids]},
            schema={"caseid": pl.Int64, "age": pl.Float64, "reactions": pl.List(pl.Utf8)},
        )  # fmt: skip
        if pseudonyms:
            cases = cases.join(
                pseudonym_ids(cases.select("caseid"), _KEY), on="caseid", maintain_order="left"
            )
        drug = pl.DataFrame({"caseid": [c for c in ids for _ in range(2)], "drug_key": [f"D{index}"] * 50})
        store = folder / f"store-{index:04d}"
        store.mkdir()
        files = {}
        for name, frame in (("cases", cases), ("drug", drug)):
            frame.write_parquet(store / f"{name}.parquet")
            files[f"{name}.parquet"] = sha256_file(store / f"{name}.parquet")
        releases.append({"index": index, "store": {"folder": store.name, "files": files}})
    return releases


def _before(folder: Path, releases: list[dict[str, Any]], wanted: pl.Series | None) -> pl.DataFrame:
    """The reading before: every store's rows of the wanted pseudonyms, the latest of each kept."""
    frames = []
    for record in releases:
        cases = pl.read_parquet(folder / record["store"]["folder"] / "cases.parquet")
        if "pseudonym" not in cases.columns:
            cases = cases.join(pseudonym_ids(cases, _KEY), on="caseid")
        cases = cases if wanted is None else cases.filter(pl.col("pseudonym").is_in(wanted.implode()))
        frames.append(cases.with_columns(pl.lit(record["index"], pl.Int64).alias("store")))
    return pl.concat(frames, how="diagonal_relaxed").sort("store").unique("pseudonym", keep="last")


def test_stored_cases_keep_the_latest_row_of_each_case_and_the_rows_the_stored_rows_read(
    tmp_path: Path,
) -> None:
    for seed in range(12):
        rng, folder = random.Random(seed), tmp_path / str(seed)
        folder.mkdir()
        releases = _stores(folder, rng, pseudonyms=seed % 3 != 0)
        every = pl.concat(
            [
                pl.read_parquet(folder / r["store"]["folder"] / "cases.parquet", columns=["caseid"])
                for r in releases
            ]
        ).unique()
        every = pseudonym_ids(every, _KEY).get_column("pseudonym")
        wanted = None if seed % 4 == 1 else every.sample(fraction=0.6, seed=seed)
        got, _ = stored_cases(folder, releases, _KEY, wanted=wanted)
        assert got is not None
        expected = _before(folder, releases, wanted)
        assert_frame_equal(
            got.drop("_row").sort("pseudonym"), expected.select(got.drop("_row").columns).sort("pseudonym")
        )
        plain, taken = StoredRows(folder, releases), StoredRows(folder, releases, cases=got)
        for _ in range(4):  # successive plans: subsets of the stored cases, each from its store
            republish = got.select("caseid", "store").sample(
                fraction=rng.uniform(0.2, 1.0), seed=rng.randrange(99)
            )
            a, b = plain(republish), taken(republish)
            assert sorted(a) == sorted(b) == ["cases", "drug"]
            for name in a:
                assert_frame_equal(a[name], b[name])


def test_the_stores_cases_file_made_from_the_frame_is_the_one_made_from_the_folder(tmp_path: Path) -> None:
    """:func:`cases_for_store` of the super-records written to a folder's ``cases.parquet`` (by the ingest's
    writer, as :meth:`Composition.write` writes them) is byte for byte the file :func:`write_store` makes
    from the folder (read back, pseudonyms joined, sorted by caseid), some pseudonyms known, some derived;
    both written by the ingest's writer, read back as the frame polars' writer wrote before."""
    rng = random.Random(5)
    ids = rng.sample(range(1, 900), 300)
    cases = pl.DataFrame(
        {"caseid": ids, "age": [rng.choice([None, 2.0, 44.5]) for _ in ids],
         "sex": [rng.choice("FM") for _ in ids],
         "reactions": [[rng.choice("ABCDE") for _ in range(rng.randrange(4))] for _ in ids]},
        schema={"caseid": pl.Int64, "age": pl.Float64, "sex": pl.Utf8, "reactions": pl.List(pl.Utf8)},
    )  # fmt: skip
    cases = pl.concat([cases.slice(0, 120), cases.slice(120)], rechunk=False)  # two chunks, as composed
    folder = tmp_path / "composition"
    folder.mkdir()
    write_table(cases, folder / "cases.parquet")
    known = pseudonym_ids(cases.select("caseid").slice(0, 200), _KEY)
    made = cases_for_store(cases, _KEY, known, tmp_path / "store-cases.parquet")
    assert made is not None and cases_for_store(None, _KEY, known, tmp_path / "none") is None
    hashes = write_store(folder, tmp_path / "a", key=_KEY, ids=known)
    given = write_store(folder, tmp_path / "b", key=_KEY, ids=known, cases=made)
    assert hashes == given
    assert (tmp_path / "a" / "cases.parquet").read_bytes() == (tmp_path / "b" / "cases.parquet").read_bytes()
    every = pl.concat([known, pseudonym_ids(cases.select("caseid").slice(200), _KEY)])
    expected = cases.join(every, on="caseid").sort("caseid")  # the rows polars' writer wrote before
    assert_frame_equal(pl.read_parquet(made), expected)
