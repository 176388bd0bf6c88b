"""Issue 17's forgery table on the demo quarter: every forgery fails `faers-anon verify`; no raw id and
no key anywhere in the release."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from faers_anon.anonymize.pipeline import AnonymizeConfig, anonymize_folder
from faers_anon.cli import cli
from faers_anon.io.ingest import demo_source, ingest_quarters
from faers_anon.keys import AgencyKey, load_key
from faers_anon.release.certificate import seal
from faers_anon.verify import integrity
from faers_anon.verify.verifier import Verdict, verify_release


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(ingested demo, its release at k 5, θ 0.4, the agency key file)."""
    root = tmp_path_factory.mktemp("forge")
    ingested = ingest_quarters([demo_source()], root / "ingested").out
    key_file = root / "agency.key"
    config = AnonymizeConfig(k=5, theta=0.4, on_infeasible="raise-theta", key_file=key_file)
    anonymize_folder(ingested, root / "release", config=config)
    return ingested, root / "release", key_file


@pytest.fixture
def copy(made: tuple[Path, Path, Path], tmp_path: Path) -> Path:
    return Path(shutil.copytree(made[1], tmp_path / "release"))


def _verify(release: Path, made: tuple[Path, Path, Path], **options: object) -> Verdict:
    return verify_release(release, public_key=load_key(made[2]).public_key, **options)  # type: ignore[arg-type]


def _rehash(release: Path, *, resign: AgencyKey | None = None, counts: bool = False) -> None:
    """What a forger does: recompute every SHA-256 (and the counts) in manifest.json, maybe re-sign."""
    manifest = json.loads((release / "manifest.json").read_text())
    for rel in manifest["outputs"]:
        manifest["outputs"][rel] = hashlib.sha256((release / rel).read_bytes()).hexdigest()
    if counts:
        demo = pl.read_parquet(release / "parquet" / "demo.parquet")
        manifest["counts"]["demo"]["rows_out"] = demo.height
        manifest["counts"]["cases"] = demo["caseid"].n_unique()
        for quarter, entry in manifest["counts"]["demo"]["quarters"].items():
            entry["rows_out"] = demo.filter(pl.col("quarter") == quarter).height
    (release / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    if resign is not None:
        seal(release, resign)


FORGER = AgencyKey.from_secret(b"\x07" * 32)


def test_the_genuine_release_verifies_with_the_agency_key_only(made: tuple[Path, Path, Path]) -> None:
    verdict = _verify(made[1], made)
    assert verdict.ok, verdict.summary()
    assert not verify_release(made[1], public_key=FORGER.public_key).ok
    pub = made[2].with_name(made[2].name + ".pub")
    result = CliRunner().invoke(cli, ["verify", str(made[1]), "--public-key", str(pub)])
    assert result.exit_code == 0, result.output
    untrusted = verify_release(made[1], public_key=None, check_hashes=True)  # session key: not the signer
    assert "certificate" in untrusted.violations["rule"].to_list()


def test_a_raised_threshold_with_a_rehashed_manifest_fails(copy: Path, made: tuple[Path, Path, Path]) -> None:
    stated = made[1] / "thresholds.csv"  # what the agency published apart from the release
    text = copy.joinpath("thresholds.csv").read_text()
    value = next(line.split(",")[0] for line in text.splitlines()[1:] if ",0.4," in line)
    copy.joinpath("thresholds.csv").write_text(text.replace(f"{value},0.4,", f"{value},0.99,", 1))
    _rehash(copy)
    rules = _verify(copy, made).violations["rule"].to_list()
    assert "certificate" in rules and "integrity" not in rules  # the hashes match, the signature not
    _rehash(copy, resign=FORGER)
    verdict = _verify(copy, made, thresholds=stated)
    details = verdict.violations["detail"].to_list()
    assert not verdict.ok and any("not by the trusted key" in d for d in details)
    assert f"thresholds: {value}: the release says 0.99, the agency states 0.4" in details


def test_a_dropped_disease_fails_and_is_named_against_the_stated_knowledge(
    copy: Path, made: tuple[Path, Path, Path]
) -> None:
    lines = copy.joinpath("knowledge.csv").read_text().splitlines(keepends=True)
    drug, disease, weight = lines[1].rstrip("\n").split(",")
    copy.joinpath("knowledge.csv").write_text("".join(lines[:1] + lines[2:]))
    _rehash(copy, resign=FORGER)
    verdict = _verify(copy, made, knowledge=made[1] / "knowledge.csv")
    details = verdict.violations["detail"].to_list()
    assert not verdict.ok and "certificate" in verdict.violations["rule"].to_list()
    key = " ".join(disease.upper().split())
    stated = f"knowledge: {drug} / {key}: the release says None, the agency states {float(weight)}"
    assert stated in details


def test_a_small_group_padded_with_four_fake_cases_fails(copy: Path, made: tuple[Path, Path, Path]) -> None:
    demo = pl.read_parquet(copy / "parquet" / "demo.parquet")
    qids = ["age_group", "age_min", "age_max", "sex", "wt_min", "wt_max"]
    sizes = demo.group_by(qids).agg(pl.col("caseid").n_unique().alias("n"))
    target = sizes.filter(pl.col("n") == sizes["n"].min()).head(1).drop("n")
    row = demo.join(target, on=qids, nulls_equal=True).head(1)
    fakes = [row.with_columns(caseid=pl.lit(9 * 10**15 + i), primaryid=pl.lit(i, pl.Int64)) for i in range(4)]
    fake = pl.concat(fakes)
    pl.concat([demo, fake]).write_parquet(copy / "parquet" / "demo.parquet")
    _rehash(copy, counts=True)
    verdict = _verify(copy, made)
    rules = set(verdict.violations["rule"].to_list())
    assert not verdict.ok and "certificate" in rules and "ascii" in rules  # ascii lacks the fakes
    counts = verdict.violations.filter(pl.col("rule") == "counts")["detail"].to_list()
    # parquet counts forged (3,529 rows before the version counts left 89 superseded reports out at θ 0.4)
    assert counts == [f"demo 2025Q1: {demo.height} ascii rows, manifest.json says {demo.height + 4}"]
    _rehash(copy, counts=True, resign=FORGER)
    assert "certificate" in set(_verify(copy, made).violations["rule"].to_list())


def test_a_case_moved_in_the_ascii_copy_only_fails(copy: Path, made: tuple[Path, Path, Path]) -> None:
    path = next((copy / "ascii").glob("DEMO*.txt"))
    lines = path.read_text().splitlines(keepends=True)
    header = lines[0].rstrip("\n").split("$")
    fields = lines[1].rstrip("\n").split("$")
    sex = header.index("sex")
    fields[sex] = "M" if fields[sex] != "M" else "F"
    path.write_text("".join([lines[0], "$".join(fields) + "\n", *lines[2:]]))
    _rehash(copy)
    verdict = _verify(copy, made)
    ascii_rows = verdict.violations.filter(pl.col("rule") == "ascii")["detail"].to_list()
    assert not verdict.ok and ascii_rows and "line 2 differs" in ascii_rows[0] and "(sex)" in ascii_rows[0]


def test_a_deleted_manifest_fails_even_with_k_given(copy: Path, made: tuple[Path, Path, Path]) -> None:
    (copy / "manifest.json").unlink()
    verdict = _verify(copy, made, k=5)
    assert not verdict.ok and {"manifest", "certificate"} <= set(verdict.violations["rule"].to_list())
    result = CliRunner().invoke(cli, ["verify", str(copy), "--k", "5", "--key-file", str(made[2])])
    assert result.exit_code == 1 and "manifest.json missing" in result.output


def test_a_deleted_certificate_or_an_extra_file_fails(copy: Path, made: tuple[Path, Path, Path]) -> None:
    (copy / "certificate.json").unlink()
    (copy / "ascii" / "DRUG99Q4.txt").write_text("primaryid$caseid\n")
    details = _verify(copy, made).violations["detail"].to_list()
    assert "certificate.json missing: the release is not signed" in details
    assert "ascii/DRUG99Q4.txt: not listed in manifest.json" in details


def test_filler_values_are_listed_as_not_sensitive(made: tuple[Path, Path, Path]) -> None:
    thresholds = pl.read_csv(made[1] / "thresholds.csv")
    fillers = thresholds.filter(pl.col("action") == "not-sensitive")
    assert fillers.height >= 1 and set(fillers["reason"]) == {"filler term: names no condition"}
    assert (fillers["theta"] == 1.0).all()


def test_a_stated_policy_is_compared_and_published_columns_obey_it(
    copy: Path, made: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    policy = json.loads((copy / "manifest.json").read_text())["policy"]
    published = pl.read_parquet_schema(copy / "parquet" / "demo.parquet")
    ids = ("primaryid", "caseid")
    column = next(c for c, a in sorted(policy["columns"]["demo"].items())
                  if a in ("keep", "qid") and c in published and c not in ids)  # fmt: skip
    before = policy["columns"]["demo"][column]
    policy["columns"]["demo"][column] = "drop"
    stated = tmp_path / "policy.json"
    stated.write_text(json.dumps(policy))
    details = _verify(copy, made, policy=stated).violations["detail"].to_list()
    assert f"policy: demo.{column}: the release says {before}, the agency states drop" in details
    assert any(d.startswith(f"demo: published column(s) {column} the policy does not keep") for d in details)


def _raw_ids(ingested: Path) -> set[str]:
    ids: set[str] = set()
    for path in ingested.glob("*.parquet"):
        frame = pl.read_parquet(path)
        for name in ("primaryid", "caseid"):
            if name in frame.columns:
                ids |= {str(v) for v in frame[name].drop_nulls().unique()}
    return ids


def _tokens(path: Path) -> set[str]:
    """Every run of digits in a file's text, or in every cell of a Parquet file."""
    if path.suffix == ".parquet":
        frame = pl.read_parquet(path)
        text = "\n".join(frame[c].cast(pl.String).drop_nulls().str.join("\n").item() for c in frame.columns
                         if frame[c].dtype != pl.Null and frame.height)  # fmt: skip
    else:
        text = path.read_text(encoding="utf-8", errors="replace")
    return set(re.findall(r"\d+", text))


def test_no_raw_id_and_no_key_anywhere_in_the_release(made: tuple[Path, Path, Path]) -> None:
    ingested, release, key_file = made
    raw = _raw_ids(ingested)
    files = [p for p in release.rglob("*") if p.is_file()]
    assert {p.suffix for p in files} >= {".txt", ".parquet", ".json", ".csv"}
    leaks = {p.relative_to(release).as_posix(): sorted(_tokens(p) & raw)[:3] for p in files}
    assert {k: v for k, v in leaks.items() if v} == {}
    demo = pl.read_parquet(release / "parquet" / "demo.parquet")
    assert demo["caseid"].cast(pl.String).str.len_chars().unique().to_list() == [16]
    secret = key_file.read_text().strip()
    derived = load_key(key_file).pseudonym_key.hex()
    for path in files:
        body = path.read_bytes()
        assert secret.encode() not in body and derived.encode() not in body, path
        assert bytes.fromhex(secret) not in body and bytes.fromhex(derived) not in body, path


def test_a_ragged_ascii_file_is_a_violation_not_a_crash(copy: Path, made: tuple[Path, Path, Path]) -> None:
    path = next((copy / "ascii").glob("REAC*.txt"))
    path.write_text(path.read_text() + "1$2$3$4$5$6$7$8\n")
    verdict = _verify(copy, made)
    details = verdict.violations.filter(pl.col("rule").is_in(["ascii", "counts"]))["detail"].to_list()
    assert not verdict.ok and any(f"ascii/{path.name}: unreadable" in d for d in details), details


def test_each_ascii_file_is_read_once_and_a_changed_byte_still_fails(
    copy: Path, made: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # rules integrity and ascii share one read of each ascii file: its SHA-256 is taken from the
    # bytes rule ascii compares, not from a second read
    hashed: list[str] = []
    real = integrity._sha256

    def recorded(path: Path) -> str:
        hashed.append(path.parent.name)
        return real(path)

    monkeypatch.setattr(integrity, "_sha256", recorded)
    assert _verify(copy, made).ok
    assert "parquet" in hashed
    assert "ascii" not in hashed
    path = copy / "ascii" / "REAC25Q1.txt"
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1][:-1] + (b"X" if lines[1][-1:] != b"X" else b"Y")  # one byte of one term
    path.write_bytes(b"\n".join(lines))
    verdict = _verify(copy, made)
    found = verdict.violations.select("rule", "detail").rows()
    assert ("integrity", "ascii/REAC25Q1.txt: SHA-256 differs from manifest.json") in found
    assert [d for r, d in found if r == "ascii"] == [
        "ascii/REAC25Q1.txt: line 2 differs from parquet/reac.parquet (pt); 1 row(s) in all"
    ]
