"""The synthetic quarter generator and the bundled demo quarter (faers_anon.synthetic)."""

from __future__ import annotations

import importlib.util
import io
import zipfile
from collections import Counter
from pathlib import Path
from types import ModuleType

import polars as pl
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from faers_anon._paths import bundled
from faers_anon.synthetic import (
    DEMO_CASES,
    DEMO_QUARTER,
    DEMO_SEED,
    MALFORMED_KINDS,
    PLANTED_SIGNALS,
    PlantedSignal,
    check_signals,
    demo_readme,
    demo_zip,
    make_quarter,
    quarter_files,
    write_quarter,
)

REPO = Path(__file__).resolve().parents[3]
# FORMAT.md §2.1: the 2014Q3+ headers.
HEADERS = {
    "DEMO": "primaryid$caseid$caseversion$i_f_code$event_dt$mfr_dt$init_fda_dt$fda_dt$rept_cod$auth_num"
    "$mfr_num$mfr_sndr$lit_ref$age$age_cod$age_grp$sex$e_sub$wt$wt_cod$rept_dt$to_mfr$occp_cod$reporter_country"
    "$occr_country",
    "DRUG": "primaryid$caseid$drug_seq$role_cod$drugname$prod_ai$val_vbm$route$dose_vbm$cum_dose_chr"
    "$cum_dose_unit$dechal$rechal$lot_num$exp_dt$nda_num$dose_amt$dose_unit$dose_form$dose_freq",
    "REAC": "primaryid$caseid$pt$drug_rec_act",
    "OUTC": "primaryid$caseid$outc_cod",
    "RPSR": "primaryid$caseid$rpsr_cod",
    "THER": "primaryid$caseid$dsg_drug_seq$start_dt$end_dt$dur$dur_cod",
    "INDI": "primaryid$caseid$indi_drug_seq$indi_pt",
}


@pytest.fixture(scope="module")
def demo_files() -> dict[str, bytes]:
    """The bundled demo zip's entries."""
    with zipfile.ZipFile(demo_zip()) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


@pytest.fixture(scope="module")
def demo() -> dict[str, pl.DataFrame]:
    """The demo quarter's tables as the bundled zip holds them, read back as strings."""
    with zipfile.ZipFile(demo_zip()) as archive:
        tables = {
            name: pl.read_csv(
                io.BytesIO(archive.read(f"ASCII/{name}25Q1.txt")),
                separator="$",
                quote_char=None,
                infer_schema=False,
                truncate_ragged_lines=True,
            )
            for name in HEADERS
        }
        lines = archive.read("Deleted/DELETE25Q1.txt").decode().splitlines()
    tables["DELETE"] = pl.DataFrame({"caseid": [x.strip() for x in lines if x.strip()]})
    return tables


def _lines(data: bytes) -> list[str]:
    return data.decode("ascii").split("\r\n")[:-1]


def test_bundled_demo_is_what_the_script_writes(tmp_path: Path) -> None:
    tables = make_quarter(DEMO_CASES, seed=DEMO_SEED, quarter=DEMO_QUARTER)
    made = write_quarter(tables, tmp_path, zip=True)
    assert made.read_bytes() == demo_zip().read_bytes(), "run scripts/make_demo_quarter.py"
    readme = (bundled("demo") / "README.md").read_text(encoding="utf-8")
    assert readme == demo_readme(tables, cases=DEMO_CASES, seed=DEMO_SEED, quarter=DEMO_QUARTER)
    assert "synthetic" in readme and "AVANDIA" in readme


def test_demo_zip_has_fda_layout(demo_files: dict[str, bytes]) -> None:
    assert demo_zip().stat().st_size < 1_000_000
    assert sorted(demo_files) == sorted([f"ASCII/{t}25Q1.txt" for t in HEADERS] + ["Deleted/DELETE25Q1.txt"])
    for table, header in HEADERS.items():
        data = demo_files[f"ASCII/{table}25Q1.txt"]
        assert data.startswith((header + "\r\n").encode())
        assert b'"' not in data
        assert data.count(b"\n") == data.count(b"\r\n")
    assert demo_files["Deleted/DELETE25Q1.txt"].startswith(b" \n")


def test_same_seed_gives_same_bytes_and_other_seed_differs(tmp_path: Path) -> None:
    first = write_quarter(make_quarter(200, seed=7), tmp_path / "a", zip=True)
    second = write_quarter(make_quarter(200, seed=7), tmp_path / "b", zip=True)
    assert first.name == "faers_ascii_2025q1.zip"
    assert first.read_bytes() == second.read_bytes()
    other = quarter_files(make_quarter(200, seed=8))
    assert other["ASCII/DEMO25Q1.txt"] != quarter_files(make_quarter(200, seed=7))["ASCII/DEMO25Q1.txt"]


def test_folder_output_and_quarter_names(tmp_path: Path) -> None:
    out = write_quarter(make_quarter(50, seed=1, quarter="2023q4"), tmp_path)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.txt")) == sorted(
        [f"ASCII/{t}23Q4.txt" for t in HEADERS] + ["Deleted/DELETE23Q4.txt"]
    )
    demo = pl.read_csv(
        out / "ASCII" / "DEMO23Q4.txt",
        separator="$",
        quote_char=None,
        infer_schema=False,
        truncate_ragged_lines=True,
    )
    assert demo.get_column("fda_dt").str.slice(0, 6).is_in(["202310", "202311", "202312"]).all()


def test_row_shapes(demo: dict[str, pl.DataFrame]) -> None:
    n_cases = demo["DEMO"].get_column("caseid").n_unique()
    reports = demo["DEMO"].height
    assert DEMO_CASES <= n_cases <= DEMO_CASES + 5
    assert 1.1 <= reports / n_cases <= 1.25
    assert 4.2 <= demo["DRUG"].height / n_cases <= 4.8
    assert 3.1 <= demo["REAC"].height / n_cases <= 3.7
    assert 0.55 <= demo["INDI"].height / demo["DRUG"].height <= 0.8
    assert 0.2 <= demo["THER"].height / demo["DRUG"].height <= 0.35
    assert 0.4 <= demo["OUTC"].get_column("primaryid").n_unique() / reports <= 0.65
    assert 0.01 <= demo["RPSR"].height / reports <= 0.1
    unknown = (demo["INDI"].get_column("indi_pt") == "Product used for unknown indication").mean()
    assert 0.1 <= float(unknown) <= 0.25  # type: ignore[arg-type]


def test_missing_values_in_faers_proportions(demo: dict[str, pl.DataFrame]) -> None:
    d = demo["DEMO"].filter(pl.col("primaryid").str.contains(r"^\d+$"))
    share = d.select(
        pl.col("wt").is_null().mean().alias("wt"),
        pl.col("age").is_null().mean().alias("age"),
        (pl.col("sex").is_null() | (pl.col("sex") == "UNK")).mean().alias("sex"),
        (pl.col("wt_cod") == "LBS").sum().alias("lbs"),
    ).row(0, named=True)
    assert 0.68 <= share["wt"] <= 0.82
    assert 0.28 <= share["age"] <= 0.40
    assert 0.06 <= share["sex"] <= 0.14
    assert share["lbs"] >= 20
    units = d.get_column("age_cod").value_counts().sort("count", descending=True)
    assert units.get_column("age_cod")[0] == "YR"
    assert {"MON", "DY", "WK", "DEC"} <= set(units.get_column("age_cod").drop_nulls())
    assert d.filter((pl.col("age") == "150") & (pl.col("age_cod") == "YR")).height >= 1
    assert d.filter((pl.col("wt") == "900") & (pl.col("wt_cod") == "KG")).height >= 1


def test_follow_up_versions(demo: dict[str, pl.DataFrame]) -> None:
    d = demo["DEMO"].filter(pl.col("primaryid").str.contains(r"^\d+$")).unique("primaryid", keep="first")
    assert (d.get_column("primaryid") == d.select(pl.concat_str("caseid", "caseversion")).to_series()).all()
    assert ((d.get_column("i_f_code") == "I") == (d.get_column("caseversion") == "1")).all()
    cases = d.group_by("caseid").agg(
        pl.len().alias("n"),
        pl.col("caseversion").cast(pl.Int64).min().alias("lo"),
        pl.col("caseversion").cast(pl.Int64).max().alias("hi"),
        pl.col("age")
        .sort_by(pl.col("caseversion").cast(pl.Int64))
        .first()
        .is_null()
        .alias("age_first_missing"),
        pl.col("age")
        .sort_by(pl.col("caseversion").cast(pl.Int64))
        .last()
        .is_not_null()
        .alias("age_last_known"),
    )
    multi = cases.filter(pl.col("n") > 1)
    assert multi.height >= 200
    assert (multi.get_column("hi") - multi.get_column("lo") + 1 == multi.get_column("n")).all()
    assert cases.filter(pl.col("lo") > 1).height >= 0.3 * cases.height  # only a late follow-up in the quarter
    assert multi.filter("age_first_missing", "age_last_known").height >= 10  # age filled in by the follow-up


def test_faers_codes_and_dates(demo: dict[str, pl.DataFrame]) -> None:
    assert set(demo["DRUG"].get_column("role_cod").unique()) == {"PS", "SS", "C", "I"}
    assert set(demo["OUTC"].get_column("outc_cod").unique()) == {"DE", "LT", "HO", "DS", "CA", "RI", "OT"}
    assert set(demo["RPSR"].get_column("rpsr_cod").unique()) <= {
        "FGN",
        "SDY",
        "LIT",
        "CSM",
        "HP",
        "UF",
        "CR",
        "DT",
        "OTH",
    }
    d = demo["DEMO"].filter(pl.col("primaryid").str.contains(r"^\d+$"))
    assert d.get_column("fda_dt").str.contains(r"^20250[1-3]\d\d$").all()
    assert d.get_column("event_dt").drop_nulls().str.contains(r"^\d{4}(\d\d(\d\d)?)?$").all()
    assert d.get_column("event_dt").drop_nulls().str.len_chars().n_unique() == 3  # full and partial dates
    assert set(d.get_column("sex").drop_nulls().unique()) == {"F", "M", "UNK"}
    seqs = demo["INDI"].join(
        demo["DRUG"], left_on=["primaryid", "indi_drug_seq"], right_on=["primaryid", "drug_seq"]
    )
    assert seqs.height == demo["INDI"].height


def test_planted_table5_signals_signal_in_their_strata(demo: dict[str, pl.DataFrame]) -> None:
    table = check_signals(demo).filter(pl.col("scope") == "stratum")
    table5 = table.filter(pl.col("drug") != "AMBIEN")
    assert table5.height == 7
    assert set(table5.get_column("drug")) == {"AVANDIA", "TYSABRI", "ZELNORM", "WARFARIN", "REVATIO"}
    assert (table5.get_column("prr") >= 2).all()
    assert (table5.get_column("chi2") >= 4).all()
    assert (table5.get_column("a") >= 3).all()


def test_stratified_signal_is_invisible_overall(demo: dict[str, pl.DataFrame]) -> None:
    rows = (
        check_signals(demo).filter(pl.col("drug") == "AMBIEN").rows_by_key("scope", named=True, unique=True)
    )
    assert rows["stratum"]["prr"] >= 2 and rows["stratum"]["a"] >= 3 and rows["stratum"]["chi2"] >= 4
    assert rows["all"]["prr"] < 2


def test_signals_are_planted_not_background() -> None:
    planted = check_signals(make_quarter(2000, seed=3))
    plain = check_signals(make_quarter(2000, seed=3, signals=()))
    stratum = pl.col("scope") == "stratum"
    assert (plain.filter(stratum).get_column("prr") < 2).sum() >= 6
    assert (planted.filter(stratum).get_column("prr") >= 2).all()


def test_malformed_rows_exactly_as_documented(demo_files: dict[str, bytes]) -> None:
    assert len(MALFORMED_KINDS) == 6
    demo = _lines(demo_files["ASCII/DEMO25Q1.txt"])[1:]
    fields = [line.split("$") for line in demo]
    assert sum(len(f) != 25 for f in fields) == 1
    assert [len(f) for f in fields if len(f) != 25] == [26]
    assert sum(not f[0].isdigit() for f in fields) == 1
    ids = [f[0] for f in fields]
    repeated = [pid for pid, count in Counter(ids).items() if count > 1]
    assert len(repeated) == 1 and Counter(demo)[demo[ids.index(repeated[0])]] == 2
    assert sum(f[14] == "YRS" for f in fields) == 1
    known = set(ids)
    for table in ("DRUG", "REAC"):
        rows = [line.split("$") for line in _lines(demo_files[f"ASCII/{table}25Q1.txt"])[1:]]
        assert sum(r[0] not in known for r in rows) == 1


def test_no_malformed_rows_when_switched_off() -> None:
    tables = make_quarter(300, seed=2, malformed=False)
    files = quarter_files(tables)
    fields = [line.split("$") for line in _lines(files["ASCII/DEMO25Q1.txt"])[1:]]
    assert all(len(f) == 25 and f[0].isdigit() and f[14] != "YRS" for f in fields)
    ids = tables["DEMO"].get_column("primaryid")
    assert ids.n_unique() == ids.len()
    assert tables["REAC"].get_column("primaryid").is_in(ids.implode()).all()


def test_delete_list_names_quarter_cases_and_one_stranger(demo: dict[str, pl.DataFrame]) -> None:
    listed = demo["DELETE"].get_column("caseid")
    present = listed.is_in(demo["DEMO"].get_column("caseid").implode())
    assert listed.len() >= 4 and int((~present).sum()) == 1


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError, match="at least 10"):
        make_quarter(5)
    with pytest.raises(ValueError, match="2014Q3 or later"):
        make_quarter(50, quarter="2013Q4")
    with pytest.raises(ValueError, match="YYYYQn|2025Q1"):
        make_quarter(50, quarter="2025-1")
    with pytest.raises(ValueError, match="p_in"):
        PlantedSignal(drug="AVANDIA", event="Death", p_in=1.5)
    with pytest.raises(ValueError, match="unknown drug"):
        make_quarter(50, signals=(PlantedSignal(drug="NOPE", event="Death"),))
    assert len(PLANTED_SIGNALS) == 8


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scale_script_writes_a_zip_and_rejects_bad_input(tmp_path: Path) -> None:
    main = _script("make_synthetic_quarter").main
    result = CliRunner().invoke(main, ["--cases", "60", "-o", str(tmp_path), "--zip", "--seed", "4"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "faers_ascii_2025q1.zip").is_file() and "DEMO" in result.output
    bad = CliRunner().invoke(main, ["--cases", "60", "-o", str(tmp_path), "--quarter", "2010Q1"])
    assert bad.exit_code == 2 and "Error:" in bad.output and "Traceback" not in bad.output
    assert CliRunner().invoke(main, ["--help"]).exit_code == 0


@settings(max_examples=6, deadline=None)
@given(n_cases=st.integers(min_value=10, max_value=120), seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_tables_link_up_for_any_seed(n_cases: int, seed: int) -> None:
    tables = make_quarter(n_cases, seed=seed, malformed=False)
    demo = tables["DEMO"]
    assert demo.get_column("caseid").n_unique() == n_cases
    joined = demo.select(pl.concat_str("caseid", "caseversion")).to_series()
    assert (demo.get_column("primaryid") == joined).all()
    versions = demo.group_by("caseid").agg(
        pl.len().alias("n"), pl.col("caseversion").cast(pl.Int64).max().alias("hi"),
        pl.col("caseversion").cast(pl.Int64).min().alias("lo"))  # fmt: skip
    assert (versions.get_column("hi") - versions.get_column("lo") + 1 == versions.get_column("n")).all()
    ids = demo.get_column("primaryid").implode()
    for table in ("DRUG", "REAC", "OUTC", "RPSR", "THER", "INDI"):
        assert tables[table].get_column("primaryid").is_in(ids).all(), table
    drug_keys = tables["DRUG"].select("primaryid", "drug_seq")
    for table, seq in (("INDI", "indi_drug_seq"), ("THER", "dsg_drug_seq")):
        linked = tables[table].join(drug_keys, left_on=["primaryid", seq], right_on=["primaryid", "drug_seq"])
        assert linked.height == tables[table].height, table
    assert demo.get_column("primaryid").is_in(tables["DRUG"].get_column("primaryid").implode()).all()
    assert demo.get_column("primaryid").is_in(tables["REAC"].get_column("primaryid").implode()).all()
