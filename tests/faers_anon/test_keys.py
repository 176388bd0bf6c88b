"""The agency key file (issue 17): created 0600 on first use, clear errors, never echoed."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from faers_anon.errors import ConfigError
from faers_anon.keys import KEY_ENV, AgencyKey, load_key, read_public_key

SECRET = "0f" * 32


def _key_file(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def test_first_use_creates_a_0600_key_a_pub_file_and_one_notice(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "agency.key"
    with caplog.at_level(logging.WARNING):
        key = load_key(path)
    assert os.stat(path).st_mode & 0o777 == 0o600
    secret = path.read_text().strip()
    assert len(secret) == 64 and int(secret, 16) >= 0
    assert [r.getMessage().splitlines() for r in caplog.records] == [[caplog.records[0].getMessage()]]
    assert "created agency key" in caplog.text and secret not in caplog.text
    assert read_public_key(path.with_name("agency.key.pub")) == key.public_key
    again = load_key(path)  # the second use reads the same key and says nothing
    assert again.public_key == key.public_key and again.pseudonym_key == key.pseudonym_key
    assert len(caplog.records) == 1


def test_derived_keys_are_independent_and_fixed_by_the_secret() -> None:
    key = AgencyKey.from_secret(bytes.fromhex(SECRET))
    assert key.pseudonym_key != bytes.fromhex(SECRET) and len(key.pseudonym_key) == 32
    assert key.public_key != key.pseudonym_key and len(key.key_id) == 16
    assert AgencyKey.from_secret(bytes.fromhex(SECRET)) == key  # deterministic derivation
    assert SECRET not in repr(key) and key.pseudonym_key.hex() not in repr(key)


@pytest.mark.parametrize(
    ("text", "mode", "message"),
    [
        (SECRET + "\n", 0o644, "key file is open to group or others (mode 0644); run chmod 600"),
        (SECRET + "\n", 0o604, "open to group or others (mode 0604)"),
        ("not a key\n", 0o600, "malformed key file (expected one line of 64 hexadecimal digits)"),
        (SECRET[:-2] + "\n", 0o600, "malformed key file"),
        (SECRET + "\n" + SECRET + "\n", 0o600, "malformed key file"),
    ],
)
def test_a_bad_key_file_is_one_clear_error_without_the_secret(
    tmp_path: Path, text: str, mode: int, message: str
) -> None:
    path = _key_file(tmp_path / "k", text, mode)
    with pytest.raises(ConfigError) as err:
        load_key(path)
    assert message in str(err.value) and str(path) in str(err.value)
    assert SECRET not in str(err.value) and "\n" not in str(err.value)


def test_unreadable_folder_missing_and_absent_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="key file is a folder"):
        load_key(tmp_path)
    with pytest.raises(ConfigError, match="folder .* does not exist"):
        load_key(tmp_path / "nowhere" / "agency.key")
    with pytest.raises(ConfigError, match="key file not found"):
        load_key(tmp_path / "absent.key", create=False)
    assert not (tmp_path / "absent.key").exists()
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ConfigError, match="no agency key: pass --key-file PATH"):
        load_key(None)
    if os.geteuid() != 0:  # root reads any file
        path = _key_file(tmp_path / "locked", SECRET + "\n", 0o000)
        with pytest.raises(ConfigError, match="key file unreadable"):
            load_key(path)
