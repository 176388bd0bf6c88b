"""Drug-name keys: normalization, salts, combinations, brand → ingredient lookup (SPEC §3)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge import SALT_WORDS, KnowledgeError, drug_key_expr, load_drug_names, name_key_expr

UNII = Path("drug_names/fda_unii_names_bn_of/unii_names_bn_of.tsv")


def _keys(names: Sequence[str | None], lookup: pl.DataFrame | None = None) -> list[str | None]:
    frame = pl.DataFrame({"name": names}, schema={"name": pl.Utf8})
    return frame.select(name_key_expr(pl.col("name"), lookup=lookup)).to_series().to_list()


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("  avandia   4mg ", "AVANDIA"),
        ("Rosiglitazone Maleate", "ROSIGLITAZONE"),
        ("ROSIGLITAZONE", "ROSIGLITAZONE"),
        ("LIPITOR (ATORVASTATIN CALCIUM) 20 MG TABLETS", "LIPITOR"),
        ("ATORVASTATIN CALCIUM TRIHYDRATE", "ATORVASTATIN"),
        ("METFORMIN HCL.", "METFORMIN"),
        ("SODIUM VALPROATE", "VALPROATE"),
        ("VALPROATE SODIUM", "VALPROATE"),
        ("METHYLPREDNISOLONE SODIUM SUCCINATE", "METHYLPREDNISOLONE"),
        ("SODIUM CHLORIDE", "SODIUM CHLORIDE"),
        ("POTASSIUM CHLORIDE", "POTASSIUM CHLORIDE"),
        ("FERROUS SULFATE", "FERROUS SULFATE"),
        ("LITHIUM CARBONATE", "LITHIUM"),
        ("MYCOPHENOLATE MOFETIL", "MYCOPHENOLATE MOFETIL"),
        ("ESTROGENS, CONJUGATED", "ESTROGENS, CONJUGATED"),
        ("INSULIN 70/30", "INSULIN 70/30"),
        ("SULFAMETHOXAZOLE\\TRIMETHOPRIM", "SULFAMETHOXAZOLE\\TRIMETHOPRIM"),
        ("TRIMETHOPRIM AND SULFAMETHOXAZOLE", "SULFAMETHOXAZOLE\\TRIMETHOPRIM"),
        ("trimethoprim/sulfamethoxazole", "SULFAMETHOXAZOLE\\TRIMETHOPRIM"),
        ("HYDROCODONE/APAP 10/325 MG", "APAP\\HYDROCODONE"),
        ("DICLOFENAC\\DICLOFENAC SODIUM", "DICLOFENAC"),
        ("POLYETHYLENE GLYCOL 3350\\SODIUM CHLORIDE", "POLYETHYLENE GLYCOL 3350\\SODIUM CHLORIDE"),
        ("Estradiol valerate/Dienogest", "DIENOGEST\\ESTRADIOL"),
        ("(10 MG)", None),
        ("  ", None),
        (None, None),
    ],
)
def test_name_keys_without_lookup(name: str | None, key: str | None) -> None:
    assert _keys([name]) == [key]


def test_brand_names_map_to_ingredients_with_the_unii_lookup(shared_data: Path) -> None:
    lookup = load_drug_names(shared_data / UNII)
    names = ["AVANDIA", "Tylenol", "PARACETAMOL", "COUMADIN 5 MG", "TYLENOL/CODEINE", "ZELNORM", "NOT A DRUG"]
    expected = ["ROSIGLITAZONE", "ACETAMINOPHEN", "ACETAMINOPHEN", "WARFARIN", "ACETAMINOPHEN\\CODEINE"]
    assert _keys(names, lookup) == [*expected, "TEGASEROD", "NOT A DRUG"]
    assert lookup["name"].is_unique().all()


def test_drug_key_prefers_prod_ai_and_falls_back_to_drugname() -> None:
    rows = pl.DataFrame(
        {
            "prod_ai": ["ROSIGLITAZONE MALEATE", None, "  ", None],
            "drugname": ["AVANDIA", "Avandia 8mg", "X", None],
        }
    )
    keys = rows.select(drug_key_expr(pl.col("prod_ai"), pl.col("drugname"))).to_series().to_list()
    assert keys == ["ROSIGLITAZONE", "AVANDIA", "X", None]
    legacy = rows.select(drug_key_expr(pl.lit(None, pl.Utf8), pl.col("drugname"))).to_series().to_list()
    assert legacy == ["AVANDIA", "AVANDIA", "X", None]


def test_lookup_drops_ambiguous_and_identity_rows(tmp_path: Path) -> None:
    path = tmp_path / "names.csv"
    path.write_text(
        "name,substance\nBRANDA,ALPHA\nbranda (x),BETA\nBRANDB,BETA\nGAMMA,GAMMA\n", encoding="utf-8"
    )
    assert load_drug_names(path).rows() == [("BRANDB", "BETA")]
    bad = tmp_path / "bad.tsv"
    bad.write_text("Name\tUNII\nX\t1\n", encoding="utf-8")
    with pytest.raises(KnowledgeError, match=r"bad.tsv:1: drug-name lookup header \['Name', 'UNII'\] lacks"):
        load_drug_names(bad)


_WORDS = st.sampled_from(
    ["ROSIGLITAZONE", "WARFARIN", "ALPHA", "BETA", "INSULIN", "VITAMIN D", *SALT_WORDS[:12]]
)
_INGREDIENT = st.lists(_WORDS, min_size=1, max_size=3).map(" ".join)


@settings(deadline=None, max_examples=60)  # polars calls: timing varies on a shared machine
@given(st.lists(_INGREDIENT, min_size=1, max_size=4))
def test_combination_keys_ignore_order_and_separator_and_are_stable(parts: list[str]) -> None:
    forward, backward, slashed = " AND ".join(parts), "\\".join(reversed(parts)), " / ".join(parts)
    first, second, third = _keys([forward, backward, slashed])
    assert first == second == third
    assert first is not None and _keys([first]) == [first]  # a key is its own key
    assert first.split("\\") == sorted(set(first.split("\\")))


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("VITAMIN A                          /00056001/", "VITAMIN A"),
        ("AMLODIPINE BESYLATE TABLETS USP, 5 MG", "AMLODIPINE"),
        ("oxycodone hcl tablets (rhodes 91?490)", "OXYCODONE"),
        ("SENNOSIDES A AND B", "SENNOSIDES A-B"),
        ("DOCUSATE SODIUM;SENNOSIDE A+B", "DOCUSATE\\SENNOSIDE A-B"),
        ("Gammagard s/d", "GAMMAGARD S-D"),
        ("abacavir w/lamivudine", "ABACAVIR\\LAMIVUDINE"),
        ("Potassium chloride w/sodium chloride", "POTASSIUM CHLORIDE\\SODIUM CHLORIDE"),
        ("CALCIUM 500+D", "CALCIUM 500\\D"),
        ("systane (hypromellose 2910 (4000 mpa.s))", "SYSTANE"),
        ("aspirin + caffeine (formulation unknown) (acetaminophen", "ASPIRIN\\CAFFEINE"),
        ("SODIUM CHLORIDE INJECTION", "SODIUM CHLORIDE"),
        ("INJECTION", "INJECTION"),
    ],
)
def test_real_faers_drugname_quirks(name: str, key: str) -> None:
    assert _keys([name]) == [key]
