"""k^m-anonymity of the item sets inside each group (faers_anon.anonymize.items; issue 18, bullet 3).

Hand-worked group G (k = 3), eight cases with drug sets:
    c1 {A, B, X}, c2 {A, B}, c3 {A, B}, c4 {A, C}, c5 {A, C}, c6 {C}, c7 {C}, c8 {C}
Supports: A 5, B 3, C 5, X 1. Pairs: AB 3, AC 2, AX 1, BX 1.

m = 1: only X (support 1 < 3) goes, from c1; both strategies agree (VERPART's T_1 is every item of
    support >= k).
m = 2, suppress: round 1 removes X; round 2 finds AC held by 2 < 3 cases (c4, c5): A and C tie at
    support 5, so the later code, C, goes from c4 and c5; C is still held by c6-c8 (3 >= k). Result:
    X from c1, C from c4 and c5.
m = 2, disassociate: VERPART orders A(5), C(5), B(3); A enters T_1; C fails ({A, C} has support 2);
    B enters ({A, B} has 3). T_1 = {A, B}: C is suppressed from all five holders (c4-c8) and X from c1.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from faers_anon.anonymize.items import ItemProtection, case_items, protect_items, suppressed_items
from faers_anon.anonymize.pipeline import AnonymizeConfig
from faers_anon.cli import cli
from faers_anon.errors import ConfigError
from faers_anon.release.config import build_release_config, load_toml

SETS = {1: "ABX", 2: "AB", 3: "AB", 4: "AC", 5: "AC", 6: "C", 7: "C", 8: "C"}
SCHEMA = {"caseid": pl.Int64, "group_id": pl.Int64, "item": pl.String}


def _items(sets: dict[int, str], group: int = 0) -> pl.DataFrame:
    rows = [(c, group, f"D:{i}") for c, s in sets.items() for i in s]
    return pl.DataFrame(rows, schema=SCHEMA, orient="row")


def _gone(items: pl.DataFrame, *, k: int, m: int, strategy: str) -> set[tuple[int, str]]:
    found = suppressed_items(items, ItemProtection(k=k, m=m, strategy=strategy))
    return set(found.iter_rows())


@pytest.mark.parametrize("strategy", ["suppress", "disassociate"])
def test_m1_suppresses_the_items_fewer_than_k_cases_hold(strategy: str) -> None:
    assert _gone(_items(SETS), k=3, m=1, strategy=strategy) == {(1, "D:X")}


def test_m2_suppress_removes_the_rarer_member_of_a_rare_pair_from_its_holders_only() -> None:
    assert _gone(_items(SETS), k=3, m=2, strategy="suppress") == {(1, "D:X"), (4, "D:C"), (5, "D:C")}


def test_m2_disassociate_keeps_only_the_first_record_chunk() -> None:
    expected = {(1, "D:X")} | {(c, "D:C") for c in (4, 5, 6, 7, 8)}
    assert _gone(_items(SETS), k=3, m=2, strategy="disassociate") == expected


def test_groups_are_protected_apart() -> None:
    """Two cases hold Z in each of two groups: 4 holders overall, 2 < k = 3 in each group."""
    items = pl.concat([_items({1: "Z", 2: "Z", 3: "Y", 4: "Y", 5: "Y"}, 0),
                       _items({6: "Z", 7: "Z", 8: "Y", 9: "Y", 10: "Y"}, 1)])  # fmt: skip
    assert _gone(items, k=3, m=1, strategy="suppress") == {(1, "D:Z"), (2, "D:Z"), (6, "D:Z"), (7, "D:Z")}


def _km_holds(kept: pl.DataFrame, k: int, m: int) -> bool:
    """Brute force: every subset of <= m of a case's items is held by >= k cases of its group."""
    sets = {(g, c): set(i) for c, g, i in kept.group_by("caseid", "group_id").agg("item").iter_rows()}
    for (group, _case), own in sets.items():
        peers = [s for (g, _), s in sets.items() if g == group]
        for size in range(1, m + 1):
            for subset in itertools.combinations(sorted(own), size):
                if sum(set(subset) <= s for s in peers) < k:
                    return False
    return True


@pytest.mark.parametrize(("strategy", "m"), [("suppress", 1), ("suppress", 2), ("disassociate", 2)])
def test_the_released_remainder_is_km_anonymous_on_random_groups(strategy: str, m: int) -> None:
    rng = np.random.default_rng(7)
    weights = [0.4, 0.25, 0.15, 0.1, 0.06, 0.04]
    rows = [
        (case, case // 9, f"{'DR'[int(rng.integers(2))]}:{int(item)}")
        for case in range(90)
        for item in rng.choice(6, size=int(rng.integers(0, 5)), replace=False, p=weights)
    ]
    items = pl.DataFrame(rows, schema=SCHEMA, orient="row").unique()
    gone = suppressed_items(items, ItemProtection(k=3, m=m, strategy=strategy))
    kept = items.join(gone, on=["caseid", "item"], how="anti")
    assert _km_holds(kept, 3, m)
    assert not _km_holds(items, 3, m)  # the raw sets were not (the test would pass vacuously otherwise)
    assert 0 < gone.height < items.height


def test_protect_items_nulls_cells_by_canonical_value_and_keeps_every_row() -> None:
    """Cases 1-3 in group 0 (k = 3): warfarin thrice (spelled three ways), aspirin once, PT FALL once."""
    drug = pl.DataFrame({
        "caseid": [1, 2, 3, 3, 1],
        "drug_key": ["WARFARIN", "warfarin", " Warfarin ", "WARFARIN", "ASPIRIN"],
        "drugname": ["COUMADIN", None, None, None, "aspirin"],
        "role_cod": ["PS", "PS", "PS", "C", "SS"],
    })  # fmt: skip
    reac = pl.DataFrame({"caseid": [1, 2], "pt": ["Fall", None]})
    groups = pl.DataFrame({"caseid": [1, 2, 3], "group_id": [0, 0, 0]})
    done = protect_items({"drug": drug, "reac": reac}, groups, protection=ItemProtection(k=3, m=1))
    out = done.tables["drug"]
    assert out.height == drug.height and done.tables["reac"].height == reac.height
    assert out["drug_key"].to_list() == ["WARFARIN", "warfarin", " Warfarin ", "WARFARIN", None]
    assert out["drugname"].to_list() == [None, None, None, None, None]
    assert out["role_cod"].to_list() == drug["role_cod"].to_list()
    assert done.tables["reac"]["pt"].to_list() == [None, None]
    counts = done.counts
    assert counts["cells_suppressed"] == {"drug": {"drug_key": 1, "drugname": 2}, "reac": {"pt": 1}}
    # items: D:WARFARIN x3 cases, D:ASPIRIN (case 1, twice), D:COUMADIN, R:FALL -> 6 (case, item) pairs
    assert counts["case_items"] == 6 and counts["case_items_suppressed"] == 3
    assert counts["cases_with_suppression"] == 1 and counts["distinct_items_gone"] == 3


def test_case_items_tags_drugs_and_reactions_apart() -> None:
    drug = pl.DataFrame({"caseid": [1], "drug_key": ["FALL"]})
    reac = pl.DataFrame({"caseid": [1], "pt": ["fall"]})
    got = case_items({"drug": drug, "reac": reac}, pl.DataFrame({"caseid": [1], "group_id": [4]}))
    assert sorted(got.iter_rows()) == [(1, 4, "D:FALL"), (1, 4, "R:FALL")]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"items_m": 3}, "items-m must be 0 (off), 1 or 2; got 3"),
        ({"items_m": 1, "items_strategy": "generalize"}, "items strategy: unknown 'generalize'"),
        ({"items_m": 1, "model": "k-anonymity"}, "items-m 1 needs a model whose groups are sets of cases"),
    ],
)
def test_config_errors_are_one_line(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        AnonymizeConfig(**options)  # type: ignore[arg-type]


def test_release_toml_and_cli_take_items_m(tmp_path: Path) -> None:
    """Config key items-m (release TOML) and flag --items-m; a bad value is one Error: line."""
    toml = tmp_path / "release.toml"
    toml.write_text('[release]\nitems-m = 2\nitems-strategy = "disassociate"\n', encoding="utf-8")
    config = build_release_config(file_options=load_toml(toml))
    assert (config.anonymize.items_m, config.anonymize.items_strategy) == (2, "disassociate")
    assert config.parameters()["items_m"] == 2
    args = ["anonymize", str(tmp_path), "-o", str(tmp_path / "r"), "--items-m", "3"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output == "Error: items-m must be 0 (off), 1 or 2; got 3\n"
