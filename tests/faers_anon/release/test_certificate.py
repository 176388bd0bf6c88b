"""The release certificate and the --key-file options (issue 17): who can verify, what it covers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from faers_anon.cli import cli
from faers_anon.io.ingest import ingest_quarters
from faers_anon.keys import AgencyKey, load_key
from faers_anon.release.certificate import seal
from faers_anon.release.config import build_release_config, load_toml
from faers_anon.synthetic import make_quarter, write_quarter


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cert")
    raw = write_quarter(make_quarter(300, seed=5), root / "raw")
    return ingest_quarters([raw], root / "ingested").out


def _anonymize(ingested: Path, out: Path, key_file: Path) -> tuple[int, str]:
    args = ["anonymize", str(ingested), "-o", str(out), "--k", "3", "--theta", "0.9",
            "--on-infeasible", "raise-theta", "--key-file", str(key_file)]  # fmt: skip
    result = CliRunner().invoke(cli, args)
    return result.exit_code, result.output


def test_anonymize_creates_the_key_signs_and_only_that_key_verifies(ingested: Path, tmp_path: Path) -> None:
    key_file = tmp_path / "agency.key"
    code, output = _anonymize(ingested, tmp_path / "r", key_file)
    assert code == 0, output
    assert os.stat(key_file).st_mode & 0o777 == 0o600 and key_file.with_name("agency.key.pub").is_file()
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    key = load_key(key_file)
    assert manifest["certificate"] == {"algorithm": "ed25519", "file": "certificate.json",
                                       "key_id": key.key_id, "public_key": key.public_key.hex()}  # fmt: skip
    assert manifest["pseudonyms"]["scheme"] == "hmac-sha256" and manifest["pseudonyms"]["case_bits"] == 52
    assert str(key_file) not in (tmp_path / "r" / "manifest.json").read_text()  # not even its path
    assert "key_file" not in manifest["parameters"]
    ok = CliRunner().invoke(cli, ["verify", str(tmp_path / "r"), "--key-file", str(key_file)])
    assert ok.exit_code == 0 and "OK" in ok.output
    assert f"integrity checked: certificate under the trusted key {key.key_id}" in ok.output
    pub = CliRunner().invoke(cli, ["verify", str(tmp_path / "r"), "--public-key", str(key_file) + ".pub"])
    assert pub.exit_code == 0
    other = tmp_path / "other.key"
    load_key(other)
    bad = CliRunner().invoke(cli, ["verify", str(tmp_path / "r"), "--key-file", str(other)])
    assert bad.exit_code == 1 and "not by the trusted key" in bad.output
    assert bad.output.count("Error:") == 1 and "Traceback" not in bad.output


def test_one_key_gives_the_same_ids_twice_another_key_others(ingested: Path, tmp_path: Path) -> None:
    key_file = tmp_path / "agency.key"
    for name in ("a", "b"):
        assert _anonymize(ingested, tmp_path / name, key_file)[0] == 0
    assert _anonymize(ingested, tmp_path / "c", tmp_path / "other.key")[0] == 0
    ids = {n: pl.read_parquet(tmp_path / n / "parquet" / "demo.parquet").select("primaryid", "caseid")
           for n in "abc"}  # fmt: skip
    assert ids["a"].equals(ids["b"])
    assert not set(ids["a"]["caseid"]) & set(ids["c"]["caseid"])
    signed = {n: (tmp_path / n / "certificate.json").read_bytes() for n in "ac"}
    assert signed["a"] != signed["c"]


def test_seal_is_deterministic_and_covers_the_manifest(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"format": "faers-anon-release/1"}\n')
    key = AgencyKey.from_secret(b"\x01" * 32)
    first = seal(tmp_path, key)
    assert seal(tmp_path, key) == first  # Ed25519 is deterministic
    (tmp_path / "manifest.json").write_text('{"format": "faers-anon-release/2"}\n')
    assert seal(tmp_path, key)["signature"] != first["signature"]  # another manifest, another signature
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["certificate"]["algorithm"] == "ed25519" and first["key_id"] == key.key_id


def test_a_bad_key_file_is_one_error_line(ingested: Path, tmp_path: Path) -> None:
    key_file = tmp_path / "agency.key"
    key_file.write_text("00" * 32 + "\n")
    key_file.chmod(0o640)
    code, output = _anonymize(ingested, tmp_path / "r", key_file)
    assert code == 1 and output.startswith("Error: ") and output.count("\n") == 1
    assert "open to group or others (mode 0640)" in output and "00" * 32 not in output
    assert not (tmp_path / "r").exists()


def test_config_key_file_is_relative_to_the_toml_and_never_a_parameter(tmp_path: Path) -> None:
    (tmp_path / "release.toml").write_text('[release]\nk = 4\nkey-file = "keys/agency.key"\n')
    config = build_release_config(file_options=load_toml(tmp_path / "release.toml"))
    assert config.anonymize.key_file == (tmp_path / "keys" / "agency.key").resolve()
    assert "key_file" not in config.parameters() and "key-file" not in json.dumps(config.parameters())


def test_without_a_trusted_key_verify_fails_and_says_how_to_give_one(
    ingested: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _anonymize(ingested, tmp_path / "r", tmp_path / "agency.key")[0] == 0
    monkeypatch.delenv("FAERS_ANON_KEY_FILE")
    result = CliRunner().invoke(cli, ["verify", str(tmp_path / "r")])
    assert result.exit_code == 1
    assert "certificate: no trusted public key given: pass --public-key" in result.output
    assert "integrity checked: certificate under no trusted key" in result.output
