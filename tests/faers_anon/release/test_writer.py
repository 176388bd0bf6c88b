"""Release writer (SPEC §4, §10): hand-built ingested folders and partitions → release folder."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import tempfile
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faers_anon import __version__
from faers_anon.errors import ConfigError, InputError
from faers_anon.io.column_policy import DEFAULT_POLICY, QID_COLUMNS, ColumnPolicy
from faers_anon.keys import load_key
from faers_anon.release import writer as release_writer
from faers_anon.release.manifest import fingerprint, hash_tree, sha256_file
from faers_anon.release.pseudonyms import case_pseudonyms
from faers_anon.release.writer import restricted_path, write_release

D = dt.date
TABLE_FILES = {"demo": "reports", "drug": "drug", "reac": "reac", "indi": "indi", "outc": "outc",
               "ther": "ther", "rpsr": "rpsr"}  # fmt: skip


def _lines(frame: pl.DataFrame, source: str) -> pl.DataFrame:
    return frame.with_columns(
        pl.lit(source).alias("source_file"), (pl.int_range(pl.len()) + 2).cast(pl.Int64).alias("line")
    )


def _reports(rows: list[tuple[int, int, str, float | None, str | None, float | None]]) -> pl.DataFrame:
    """Reports rows: (primaryid, caseid, quarter, age_years, sex, weight_kg), plus identifying columns."""
    frame = pl.DataFrame(
        rows,
        schema={"primaryid": pl.Int64, "caseid": pl.Int64, "quarter": pl.String, "age_years": pl.Float64,
                "sex": pl.String, "weight_kg": pl.Float64},
        orient="row",
    )  # fmt: skip
    return frame.with_columns(
        caseversion=pl.col("primaryid") % 10,
        i_f_code=pl.lit("F"),
        event_dt=pl.lit(D(2023, 12, 1)),
        fda_dt=pl.lit(D(2024, 1, 15)),
        init_fda_dt=pl.lit(D(2024, 1, 10)),
        mfr_dt=pl.lit(D(2024, 1, 5)),
        rept_dt=pl.lit(D(2024, 1, 6)),
        age=pl.col("age_years"),
        age_cod=pl.lit("YR"),
        age_grp=pl.lit("A"),
        wt=pl.col("weight_kg"),
        wt_cod=pl.lit("KG"),
        rept_cod=pl.lit("EXP"),
        auth_num=pl.lit("AUTH-1"),
        mfr_num=pl.format("US-ACME-{}", pl.col("primaryid")),
        mfr_sndr=pl.lit("ACME"),
        lit_ref=pl.lit("Doe J. A case of X. J Case Rep 2024"),
        e_sub=pl.lit("Y"),
        to_mfr=pl.lit(None, pl.String),
        occp_cod=pl.lit("MD"),
        reporter_country=pl.lit("US"),
        occr_country=pl.lit("US"),
        is_latest=pl.lit(True),
    ).pipe(_lines, "DEMO.txt")


def _children(reports: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Two drugs, one reaction, one indication, … per report; a `$` in one drug name."""
    keys = reports.select("primaryid", "caseid", "quarter")
    drug = pl.concat(
        [
            keys.with_columns(drug_seq=pl.lit(1, pl.Int64), drugname=pl.lit("PARACETAMOL$500"),
                              prod_ai=pl.lit("ACETAMINOPHEN"), drug_key=pl.lit("ACETAMINOPHEN")),
            keys.with_columns(drug_seq=pl.lit(2, pl.Int64), drugname=pl.lit("Aspirin"),
                              prod_ai=pl.lit(None, pl.String), drug_key=pl.lit("ASPIRIN")),
        ]
    ).with_columns(role_cod=pl.lit("PS"), dose_vbm=pl.lit("500 MG TID"), lot_num=pl.lit("LOT42"),
                   exp_dt=pl.lit("20251231"), nda_num=pl.lit("020000"), dose_amt=pl.lit("500"))  # fmt: skip
    return {
        "drug": _lines(drug.sort("primaryid", "drug_seq"), "DRUG.txt"),
        "reac": _lines(
            keys.with_columns(pt=pl.lit("Headache"), drug_rec_act=pl.lit(None, pl.String)), "REAC"
        ),
        "indi": _lines(keys.with_columns(indi_drug_seq=pl.lit(1, pl.Int64), indi_pt=pl.lit("Pain")), "INDI"),
        "outc": _lines(keys.with_columns(outc_cod=pl.lit("HO")), "OUTC.txt"),
        "ther": _lines(
            keys.with_columns(
                dsg_drug_seq=pl.lit(1, pl.Int64),
                start_dt=pl.lit(D(2023, 11, 1)),
                end_dt=pl.lit(D(2023, 12, 2)),
                dur=pl.lit("31"),
                dur_cod=pl.lit("DAY"),
            ),
            "THER.txt",
        ),  # fmt: skip
        "rpsr": _lines(keys.with_columns(rpsr_cod=pl.lit("HP")), "RPSR.txt"),
    }


def make_ingested(root: Path, reports: pl.DataFrame) -> Path:
    """Write an ingested folder per docs/architecture.md, with one quarantined DEMO row."""
    root.mkdir(parents=True, exist_ok=True)
    tables = {"demo": reports, **_children(reports)}
    for table, frame in tables.items():
        frame.write_parquet(root / f"{TABLE_FILES[table]}.parquet")
    (root / "rejects").mkdir(exist_ok=True)
    pl.DataFrame(
        {
            "source_file": ["DEMO24Q1.txt"],
            "line": [9],
            "reason": ["age_is_number"],
            "age": ["3O"],
            "sex": ["F"],
        }
    ).write_parquet(root / "rejects" / "demo.parquet")
    return root


REPORTS = [
    (101, 10, "2024Q1", 34.0, "F", 60.0),
    (102, 10, "2024Q2", 35.0, "F", 62.5),
    (201, 20, "2024Q1", 70.0, "M", None),
    (301, 30, "2024Q2", None, None, None),
]
PARTITION = pl.DataFrame(
    {
        "caseid": [10, 20, 30],
        "group_id": [0, 0, 1],
        "age_group": ["Adult", "Adult", "missing"],
        "age_min": [19.0, 19.0, None],
        "age_max": [1 / 12 + 79, 1 / 12 + 79, None],
        "sex": ["*", "*", None],
        "wt_min": [None, None, None],
        "wt_max": [None, None, None],
    },
    schema_overrides={"wt_min": pl.Float64, "wt_max": pl.Float64},
)
KNOWLEDGE = pl.DataFrame({"drug_key": ["ASPIRIN", "ACETAMINOPHEN", "ACETAMINOPHEN"],
                          "disease": ["Pain", "Headache", "Fever"], "weight": [1.0, 0.5, 0.5]})  # fmt: skip
THRESHOLDS = pl.DataFrame({"value": ["HEADACHE", "PAIN"], "theta": [0.6, 1.0]})
PARAMS: dict[str, object] = {"model": "ms-k-theta", "k": 2, "theta": 0.6, "seed": 7}
# the default policy with the outcome's full hierarchy (exact set first): the rows below keep their codes
FULL_OUTCOME = ColumnPolicy(
    columns=DEFAULT_POLICY.columns,
    qids={**DEFAULT_POLICY.qids, "outcome": "outcome"},
    trees=DEFAULT_POLICY.trees,
)


def _write(ingested: Path, out: Path, **options: object) -> release_writer.ReleaseWritten:
    kwargs: dict[str, object] = {"knowledge": KNOWLEDGE, "thresholds": THRESHOLDS, "parameters": PARAMS,
                                 "policy": FULL_OUTCOME}  # fmt: skip
    kwargs.update(options)
    partition = kwargs.pop("partition", PARTITION)
    assert isinstance(partition, pl.DataFrame)
    return write_release(ingested, partition, out, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def ingested(tmp_path: Path) -> Path:
    return make_ingested(tmp_path / "ingested", _reports(REPORTS))


@pytest.fixture
def release(ingested: Path, tmp_path: Path) -> Path:
    return _write(ingested, tmp_path / "release").path


def _pseudo() -> dict[int, int]:
    """Raw caseid → case pseudonym under the session's agency key (faers_anon.release.pseudonyms)."""
    return case_pseudonyms([10, 20, 30], load_key(None).pseudonym_key)[0]


def _report(caseid: int, version: int) -> int:
    """Report pseudonym: case pseudonym * 1000 + keyed offset (HMAC "slot:<caseid>" mod 500) + version."""
    digest = hmac.new(load_key(None).pseudonym_key, f"slot:{caseid}".encode(), hashlib.sha256).digest()
    return _pseudo()[caseid] * 1000 + int.from_bytes(digest[:8], "big") % 500 + version


def test_every_report_row_carries_its_case_group_qids(release: Path) -> None:
    demo = pl.read_parquet(release / "parquet" / "demo.parquet")
    case = _pseudo()
    # report pseudonym = case pseudonym * 1000 + keyed offset + version; rows by quarter (one: the
    # release's, docs/formats.md "The quarter column"), then pseudonym
    reports = sorted([_report(10, 1), _report(20, 1), _report(10, 2), _report(30, 1)])
    assert demo["primaryid"].to_list() == reports and set(demo["quarter"]) == {"2024Q2"}
    assert (demo["primaryid"] // 1000).to_list() == demo["caseid"].to_list()
    expected = PARTITION.drop("group_id").with_columns(pl.col("caseid").replace_strict(case))
    joined = demo.select("caseid", *QID_COLUMNS).join(expected, on="caseid", how="left", suffix="_p")
    for name in QID_COLUMNS:
        assert joined[name].equals(joined[f"{name}_p"], null_equal=True), name
    assert demo.filter(pl.col("caseid") == case[10])["sex"].to_list() == ["*", "*"]  # raw F replaced


def test_rows_in_equal_rows_out_per_table_and_quarter(release: Path, ingested: Path) -> None:
    manifest = json.loads((release / "manifest.json").read_text())
    for table, stem in TABLE_FILES.items():
        raw = pl.read_parquet(ingested / f"{stem}.parquet")
        out = pl.read_parquet(release / "parquet" / f"{table}.parquet")
        assert out.height == raw.height == manifest["counts"][table]["rows_out"]
        assert set(raw["quarter"]) == {"2024Q1", "2024Q2"}  # one set of files, the release's quarter
        assert not (release / "ascii" / f"{table.upper()}24Q1.txt").exists()
        text = pl.read_csv(
            release / "ascii" / f"{table.upper()}24Q2.txt", separator="$", quote_char=None, infer_schema=False
        )
        assert text.height == raw.height == manifest["counts"][table]["quarters"]["2024Q2"]["rows_out"]
        assert list(manifest["counts"][table]["quarters"]) == ["2024Q2"]
        assert manifest["counts"][table]["quarters"]["2024Q2"]["rows_in"] == raw.height


def test_identifying_and_raw_qid_columns_are_absent(release: Path) -> None:
    demo = pl.read_parquet(release / "parquet" / "demo.parquet")
    for gone in (
        "age",
        "age_cod",
        "age_grp",
        "wt",
        "wt_cod",
        "age_years",
        "weight_kg",
        "mfr_num",
        "auth_num",
        "lit_ref",
        "event_dt",
        "mfr_dt",
        "rept_dt",
        "caseversion",
        "source_file",
    ):
        assert gone not in demo.columns, gone  # fmt: skip
    assert {"fda_dt", "init_fda_dt", "mfr_sndr", "is_latest", "quarter"} <= set(demo.columns)
    # the policy's DEMO qids are published only as their group's common value (issue 18)
    qids = ["age_group", "age_min", "age_max", "sex", "wt_min", "wt_max"]
    fields = ["fda_dt", "init_fda_dt", "mfr_sndr", "occr_country", "reporter_country", "occp_cod"]
    per_group = demo.group_by(qids).agg(pl.col(fields).n_unique())
    assert per_group.select(pl.max_horizontal(fields).max()).item() == 1
    drug = pl.read_parquet(release / "parquet" / "drug.parquet")
    assert not {"lot_num", "exp_dt", "dose_vbm", "drugname", "prod_ai", "nda_num"} & set(drug.columns)
    assert "drug_key" in drug.columns
    ther = pl.read_parquet(release / "parquet" / "ther.parquet")
    assert not {"start_dt", "end_dt"} & set(ther.columns)
    for path in (release / "ascii").iterdir():
        body = path.read_text()
        assert "LOT42" not in body and "US-ACME" not in body and "Doe J." not in body


def test_ascii_layout_parses_back_to_the_parquet_values(
    release: Path, ingested: Path, tmp_path: Path
) -> None:
    names = sorted(p.name for p in (release / "ascii").iterdir())
    assert names == sorted(f"{t}24Q2.txt" for t in ("DEMO", "DRUG", "REAC", "INDI", "OUTC", "THER", "RPSR"))
    q1_ids = [str(_report(10, 1)), str(_report(20, 1))]  # the reports read from 2024Q1
    demo_all = pl.read_csv(
        release / "ascii" / "DEMO24Q2.txt", separator="$", quote_char=None, infer_schema=False
    )
    demo_q1 = demo_all.filter(pl.col("primaryid").is_in(q1_ids))
    assert demo_q1.columns == [
        "primaryid", "caseid", "i_f_code", "init_fda_dt", "fda_dt", "rept_cod", "mfr_sndr",
        "age_group", "age_min", "age_max", "sex", "e_sub", "wt_min", "wt_max", "to_mfr", "occp_cod",
        "reporter_country", "occr_country", "outcome",
    ]  # fmt: skip
    case = _pseudo()
    first = min(case[10], case[20])
    first_id = min(_report(10, 1), _report(20, 1))
    # the group's two cases agree on every DEMO qid field: released at the finest level (the day)
    assert demo_q1.row(0) == (str(first_id), str(first), "F", "20240110", "20240115", "EXP",
                              "ACME", "Adult", "19", "79.08333333333333", "*", "Y", None, None, None,
                              "MD", "US", "US", "HO")  # fmt: skip
    # the OUTC set (every report: HO) is a qid too: the group agrees on the exact set, so OUTC keeps HO
    outc = pl.read_csv(release / "ascii" / "OUTC24Q2.txt", separator="$", quote_char=None, infer_schema=False)
    assert set(outc["outc_cod"]) == {"HO"} and outc.height == demo_all.height
    parquet = pl.read_parquet(release / "parquet" / "demo.parquet")
    assert demo_all["age_max"].cast(pl.Float64).equals(parquet["age_max"])
    drug_q1 = pl.read_csv(
        release / "ascii" / "DRUG24Q2.txt", separator="$", quote_char=None, infer_schema=False
    ).filter(pl.col("primaryid").is_in(q1_ids))
    assert drug_q1.columns[-1] == "drug_key"
    assert drug_q1.filter(pl.col("drug_seq") == "1")["drug_key"].to_list() == ["ACETAMINOPHEN"] * 2
    assert "drugname" not in drug_q1.columns  # the default publishes one drug column (issue 18)
    policy = DEFAULT_POLICY.with_actions("drug", drugname="keep")
    kept = _write(ingested, tmp_path / "kept", policy=policy).path
    drug = pl.read_parquet(kept / "parquet" / "drug.parquet")
    assert drug["drugname"].str.contains("$", literal=True).sum() == 4  # parquet keeps the exact value
    manifest = json.loads((kept / "manifest.json").read_text())
    assert manifest["counts"]["drug"]["ascii_replaced_cells"] == 4


def test_knowledge_thresholds_and_rejects_travel_with_the_release(release: Path) -> None:
    assert (release / "knowledge.csv").read_text() == (
        "drug_key,disease,weight\nACETAMINOPHEN,Fever,0.5\nACETAMINOPHEN,Headache,0.5\nASPIRIN,Pain,1\n"
    )
    assert (release / "thresholds.csv").read_text() == "value,theta\nHEADACHE,0.6\nPAIN,1\n"
    rejects = pl.read_parquet(release / "rejects" / "demo.parquet")
    assert rejects.columns == ["source_file", "line", "reason"]  # raw values of the row are not published
    assert rejects.row(0) == ("DEMO24Q1.txt", 9, "age_is_number")


def test_manifest_records_version_parameters_hashes_and_counts(release: Path, ingested: Path) -> None:
    manifest = json.loads((release / "manifest.json").read_text())
    assert manifest["tool"] == {"name": "faers-anon", "version": __version__}
    assert manifest["parameters"] == PARAMS
    assert manifest["inputs"] == hash_tree(ingested)
    assert "rejects/demo.parquet" in manifest["inputs"]
    written = {p.relative_to(release).as_posix() for p in release.rglob("*") if p.is_file()}
    assert set(manifest["outputs"]) == written - {"manifest.json", "certificate.json"}
    for rel, digest in manifest["outputs"].items():
        assert sha256_file(release / rel) == digest
    assert manifest["counts"]["rejects"] == {"demo.parquet": 1}
    assert manifest["counts"]["groups"] == 2
    assert manifest["columns"]["demo"]["replaced"] == sorted(
        ["age", "sex", "wt", "i_f_code", "init_fda_dt", "fda_dt", "rept_cod", "mfr_sndr", "e_sub", "to_mfr",
         "occp_cod", "reporter_country", "occr_country", "outcome"]
    )  # fmt: skip
    assert "lot_num" in manifest["columns"]["drug"]["dropped"]
    dt.datetime.fromisoformat(manifest["created"])


def test_same_inputs_give_byte_identical_files(ingested: Path, tmp_path: Path) -> None:
    first = _write(ingested, tmp_path / "a")
    second = _write(ingested, tmp_path / "b")
    assert hash_tree(first.path, exclude=frozenset({"manifest.json"})) == hash_tree(
        second.path, exclude=frozenset({"manifest.json"})
    )
    assert fingerprint(first.manifest) == fingerprint(second.manifest)


def test_existing_release_needs_force(ingested: Path, release: Path) -> None:
    before = hash_tree(release)
    with pytest.raises(ConfigError) as err:
        _write(ingested, release)
    assert str(err.value) == f"{release}: already exists (use --force to replace it)"
    assert hash_tree(release) == before
    again = _write(ingested, release, force=True, extra_files={"report.json": b"{}\n"})
    assert (release / "report.json").read_bytes() == b"{}\n"
    assert again.manifest["outputs"]["report.json"] == sha256_file(release / "report.json")
    assert sorted(p.name for p in release.parent.iterdir()) == ["ingested", "release"]


def test_a_failure_mid_write_leaves_no_folder(
    ingested: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(frame: pl.DataFrame, path: Path) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(release_writer, "_write_csv", boom)
    with pytest.raises(RuntimeError, match="disk on fire"):
        _write(ingested, tmp_path / "release")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ingested"]


def test_an_unwritable_output_is_one_input_error(ingested: Path, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a folder")
    with pytest.raises(InputError) as err:
        _write(ingested, tmp_path / "afile" / "release")
    assert str(err.value).startswith("release: cannot write the release (")
    assert "\n" not in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "ingested"]


def test_restricted_columns_go_beside_the_release(ingested: Path, tmp_path: Path) -> None:
    policy = DEFAULT_POLICY.with_actions("drug", lot_num="restricted").with_actions("demo", age="restricted")
    written = _write(
        ingested, tmp_path / "release", policy=ColumnPolicy(columns=policy.columns, rejects="restricted")
    )
    assert written.restricted == restricted_path(tmp_path / "release") == tmp_path / "release-restricted"
    hidden = pl.read_parquet(tmp_path / "release-restricted" / "parquet" / "drug.parquet")
    public = pl.read_parquet(tmp_path / "release" / "parquet" / "drug.parquet")
    assert hidden.columns == ["row", "quarter", "primaryid", "caseid", "lot_num"]
    assert hidden["primaryid"].equals(public[hidden["row"].to_list()]["primaryid"])
    assert "lot_num" not in public.columns
    age = pl.read_parquet(tmp_path / "release-restricted" / "parquet" / "demo.parquet")
    ages = {_report(10, 1): 34.0, _report(10, 2): 35.0, _report(20, 1): 70.0, _report(30, 1): None}
    assert dict(zip(age["primaryid"], age["age"], strict=True)) == ages
    full = pl.read_parquet(tmp_path / "release-restricted" / "rejects" / "demo.parquet")
    assert full["age"].to_list() == ["3O"]
    assert written.manifest["restricted"]["folder"] == "release-restricted"
    assert not list((tmp_path / "release").rglob("*restricted*"))


def test_partition_must_hold_every_case_once(ingested: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"1 ingested case\(s\) have no group \(e.g. caseid 30\)"):
        _write(ingested, tmp_path / "r", partition=PARTITION.filter(pl.col("caseid") != 30))
    with pytest.raises(ConfigError, match="caseid 20 has 2 rows"):
        _write(ingested, tmp_path / "r", partition=pl.concat([PARTITION, PARTITION[1]]))
    with pytest.raises(ConfigError, match="missing column"):
        _write(ingested, tmp_path / "r", partition=PARTITION.drop("wt_max"))
    with pytest.raises(ConfigError, match="column.s. quarter cannot be QIDs"):
        _write(ingested, tmp_path / "r", partition=PARTITION.with_columns(quarter=pl.lit("x")))
    with pytest.raises(
        ConfigError, match=r"knowledge: missing column\(s\) weight \(expected drug_key, disease"
    ):
        _write(ingested, tmp_path / "r", knowledge=KNOWLEDGE.drop("weight"))
    assert not (tmp_path / "r").exists()


def test_missing_ingested_table_names_the_file(ingested: Path, tmp_path: Path) -> None:
    (ingested / "ther.parquet").unlink()
    with pytest.raises(InputError, match=r"^ther.parquet: missing ingested table"):
        _write(ingested, tmp_path / "r")


def test_extra_file_names_cannot_shadow_the_layout(ingested: Path, tmp_path: Path) -> None:
    for bad in ("manifest.json", "../x", "ascii/DEMO24Q1.txt"):
        with pytest.raises(ConfigError, match="extra file name"):
            _write(ingested, tmp_path / "r", extra_files={bad: b""})


@settings(max_examples=15, deadline=None)
@given(
    cases=st.lists(
        st.tuples(st.integers(1, 4), st.sampled_from(["F", "M", None]), st.sampled_from([None, 20.0, 41.5])),
        min_size=1,
        max_size=6,
    ),
    groups=st.lists(st.integers(0, 2), min_size=6, max_size=6),
)
def test_property_every_version_of_a_case_lands_in_its_group(
    cases: list[tuple[int, str | None, float | None]], groups: list[int]
) -> None:
    rows = []
    for caseid, (versions, sex, age) in enumerate(cases, start=1):
        for version in range(1, versions + 1):
            rows.append((caseid * 10 + version, caseid, f"2024Q{version % 2 + 1}", age, sex, None))
    partition = pl.DataFrame(
        {"caseid": list(range(1, len(cases) + 1)), "group_id": groups[: len(cases)]}
    ).with_columns(
        age_group=pl.format("G{}", "group_id"),
        age_min=pl.col("group_id").cast(pl.Float64),
        age_max=pl.col("group_id").cast(pl.Float64) + 0.1,
        sex=pl.lit("*"),
        wt_min=pl.lit(None, pl.Float64),
        wt_max=pl.lit(None, pl.Float64),
    )
    with tempfile.TemporaryDirectory() as tmp:
        ingested = make_ingested(Path(tmp) / "in", _reports(rows))
        written = _write(ingested, Path(tmp) / "out", partition=partition)
        demo = pl.read_parquet(written.path / "parquet" / "demo.parquet")
    assert demo.height == len(rows) == written.manifest["counts"]["demo"]["rows_in"]
    per_case = demo.group_by("caseid").agg(
        pl.col("age_group").n_unique().alias("n"), pl.col("age_group").first()
    )
    assert per_case["n"].max() == 1
    expected = partition.select("caseid", pl.col("age_group").alias("want"))
    assert per_case.join(expected, on="caseid").filter(pl.col("age_group") != pl.col("want")).height == 0


def test_kept_rejects_lose_their_raw_ids(tmp_path: Path) -> None:
    ingested = make_ingested(tmp_path / "ingested", _reports(REPORTS))
    pl.DataFrame(
        {"source_file": ["DRUG24Q1.txt"], "line": [4], "reason": ["report_unknown"], "primaryid": ["999001"],
         "caseid": ["999"], "drugname": ["X"]}
    ).write_parquet(ingested / "rejects" / "drug.parquet")  # fmt: skip
    written = _write(ingested, tmp_path / "release", policy=ColumnPolicy(columns=DEFAULT_POLICY.columns,
                                                                         rejects="keep"))  # fmt: skip
    kept = pl.read_parquet(written.path / "rejects" / "drug.parquet")
    assert kept.columns == ["source_file", "line", "reason", "drugname"]
    assert pl.read_parquet(written.path / "rejects" / "demo.parquet").columns == [
        "source_file", "line", "reason", "age", "sex"
    ]  # fmt: skip


def test_a_follow_up_in_a_later_quarter_keeps_its_case_pseudonym(tmp_path: Path) -> None:
    first = make_ingested(tmp_path / "q1", _reports([(101, 10, "2024Q1", 34.0, "F", 60.0),
                                                     (201, 20, "2024Q1", 70.0, "M", None)]))  # fmt: skip
    later = make_ingested(tmp_path / "q2", _reports([(102, 10, "2024Q2", 35.0, "F", 62.5),
                                                     (301, 30, "2024Q2", None, None, None)]))  # fmt: skip
    one = _write(first, tmp_path / "r1", partition=PARTITION.filter(pl.col("caseid") != 30))
    two = _write(later, tmp_path / "r2", partition=PARTITION.filter(pl.col("caseid") != 20))
    demo1 = pl.read_parquet(one.path / "parquet" / "demo.parquet")
    demo2 = pl.read_parquet(two.path / "parquet" / "demo.parquet")
    case = _pseudo()
    assert set(demo1["caseid"]) == {case[10], case[20]} and set(demo2["caseid"]) == {case[10], case[30]}
    assert set(demo1["primaryid"]) & set(demo2["primaryid"]) == set()  # versions 1 and 2: other reports
    assert _report(10, 2) in set(demo2["primaryid"]) and _report(10, 1) in set(demo1["primaryid"])
