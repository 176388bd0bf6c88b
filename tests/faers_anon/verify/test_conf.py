"""conf(q → s, E) of the verifier (verify.conf) on a hand-built release (SPEC §5)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from faers_anon.verify.conf import _group_sums, _low, _pair, case_codes, confidences, with_case_codes


def test_pair_packs_two_codes_into_one_key_and_back() -> None:
    codes = pl.DataFrame(
        {"cid": [0, 1, 4294967295], "vid": [7, 0, 4294967295]},
        schema=[("cid", pl.UInt32), ("vid", pl.UInt32)],
    )
    keys = codes.select(_pair("cid", "vid"))
    assert keys["key"].to_list() == [7, 4294967296, 18446744073709551615]
    back = keys.select((pl.col("key") // (1 << 32)).cast(pl.UInt32).alias("cid"), _low("key", "vid"))
    assert back.equals(codes)


def test_conf_takes_each_cases_largest_weight_over_its_drug_names(tmp_path: Path) -> None:
    """Group 0 = cases 1, 2; group 1 = case 3. E: ASPIRIN → PAIN 0.5, IBUPROFEN → PAIN 0.25.
    Case 1: drug_key ' aspirin ' and drugname 'ASPIRIN' (one canonical key) and IBUPROFEN: P = max(0.5,
    0.25) = 0.5; case 2: reaction 'pain' → P = 1; case 3: IBUPROFEN → 0.25, reaction NAUSEA (unlisted).
    conf(0 → PAIN) = (0.5 + 1) / 2 = 0.75; conf(1 → PAIN) = 0.25 / 1."""
    folder = tmp_path / "parquet"
    folder.mkdir()
    pl.DataFrame({"caseid": [1, 1, 3], "drug_key": [" aspirin ", "IBUPROFEN", "ibuprofen"],
                  "drugname": ["ASPIRIN", None, None]}).write_parquet(folder / "drug.parquet")  # fmt: skip
    pl.DataFrame({"caseid": [2, 3], "pt": ["pain", "NAUSEA"]}).write_parquet(folder / "reac.parquet")
    members = pl.DataFrame({"caseid": ["1", "2", "3"], "group": [0, 0, 1]})
    sizes = pl.DataFrame({"group": [0, 1], "cases": [2, 1]})
    thetas = pl.DataFrame({"value": ["PAIN"], "theta": [0.3]})
    know = pl.DataFrame(
        {"drug_key": ["ASPIRIN", "IBUPROFEN"], "value": ["PAIN", "PAIN"], "weight": [0.5, 0.25]}
    )
    conf, unlisted = confidences(tmp_path, members, sizes, frozenset({"reac"}), thetas, know)
    assert conf.sort("group").select("group", "value", "sigma", "conf").rows() == [
        (0, "PAIN", 1.5, 0.75),
        (1, "PAIN", 0.25, 0.25),
    ]
    assert unlisted["detail"].str.starts_with("value NAUSEA ").to_list() == [True]


def test_integer_case_ids_meet_text_ids_as_their_decimal_form() -> None:
    # the join on integers is the join on text: str(7) = "7"; "007" and "+7" are no decimal form of 7
    members = pl.DataFrame({"caseid": ["7", "007", "+7", "-3", "x"], "group": [0, 1, 2, 3, 4]})
    ids = case_codes(members)
    assert ids.collect().get_column("_int").to_list() == [7, None, None, -3, None]
    rows = pl.LazyFrame({"caseid": [7, -3, 8], "pt": ["A", "B", "C"]})
    joined = with_case_codes(rows, ids).collect().sort("pt")
    assert joined.select("pt", "cid").rows() == [("A", 0), ("B", 3)]
    as_text = pl.LazyFrame({"caseid": ["007", "7"], "pt": ["A", "B"]})
    found = with_case_codes(as_text, ids).collect().sort("pt")
    assert found.select("pt", "cid").rows() == [("A", 1), ("B", 0)]


def test_group_sums_take_each_cases_largest_p_once_per_group_it_is_in() -> None:
    """levels (0.25, 0.5, 1.0). Case 0 (group 0) holds value 3 with p 0.25 and 1.0 -> 1.0, value 5 with
    0.5; case 1 (groups 0 and 1: a split case) holds value 3 with 0.5 twice -> 0.5; case 2 (group 1)
    value 3 with 0.25. sigma(0, 3) = 1.0 + 0.5, sigma(0, 5) = 0.5, sigma(1, 3) = 0.5 + 0.25."""
    levels = np.array([0.25, 0.5, 1.0])
    rows = [(0, 3, 0), (0, 3, 2), (0, 5, 1), (1, 3, 1), (1, 3, 1), (2, 3, 0)]
    pairs = pl.DataFrame(
        {"key": [c * (1 << 32) + v for c, v, _ in rows], "r": [r for _, _, r in rows]},
        schema={"key": pl.UInt64, "r": pl.UInt32},
    )
    cases = pl.DataFrame(
        {"cid": [0, 1, 1, 2], "group": [0, 0, 1, 1]}, schema={"cid": pl.UInt32, "group": pl.Int64}
    )
    group, vid, sigma = _group_sums(pairs, cases, levels)
    assert list(zip(group.tolist(), vid.tolist(), sigma.tolist(), strict=True)) == [
        (0, 3, 1.5),
        (0, 5, 0.5),
        (1, 3, 0.75),
    ]
    one_each = cases.filter(~((pl.col("cid") == 1) & (pl.col("group") == 1)))  # no split: the direct path
    group, vid, sigma = _group_sums(pairs, one_each, levels)
    assert list(zip(group.tolist(), vid.tolist(), sigma.tolist(), strict=True)) == [
        (0, 3, 1.5),
        (0, 5, 0.5),
        (1, 3, 0.25),
    ]
    empty = _group_sums(pairs.clear(), cases, levels)
    assert [len(a) for a in empty] == [0, 0, 0]
