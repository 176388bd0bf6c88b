"""Issue 13: the demo release is byte-identical to a stored digest (behaviour unchanged by refactors).

``faers-anon release --demo`` with a fixed agency key (secret below, test-only) and the default
options. Every file of the release is compared by SHA-256 with ``demo_release.digest.json`` except:

* ``manifest.json``: compared without ``created`` (the run's UTC time), ``timings`` (seconds per
  stage) and the hash of ``inputs.ingest_report.json`` (that private file names the demo files by
  their path, which is wherever the checkout is); every other field, the hashes of all outputs and
  of the other inputs included, is compared;
* ``certificate.json``: its signature covers manifest.json's bytes, which hold ``created``; the
  verifier run by ``release`` checks it, and its ``key_id`` and ``public_key`` are compared.

The digest also covers the tool's version (manifest, report), the Parquet writers' ``created_by``
(the polars and pyarrow versions) and matplotlib's drawing of the report's plots, so an upgrade of any
of them changes it (with pyarrow 26.0.0 and matplotlib 3.10.7, the lowest versions pyproject.toml
allows, manifest.json and report.html differ). The test install pins them
(``scripts/test-constraints.txt``), so CI does not pick up a release made since. It changes only in a
commit that says why: regenerate with ``FAERS_ANON_UPDATE_GOLDEN=1`` and review which files changed.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from click.testing import CliRunner

from faers_anon.cli import cli

DIGEST = Path(__file__).with_name("demo_release.digest.json")
SECRET = "5eed" * 16  # a test-only agency secret: the pseudonyms and the key id follow from it
VARYING = ("created", "timings")


def _manifest_bytes(path: Path) -> bytes:
    manifest = json.loads(path.read_text(encoding="utf-8"))
    for name in VARYING:
        manifest.pop(name)
    manifest["inputs"].pop("ingest_report.json")  # holds the checkout's path (module docstring)
    return json.dumps(manifest, sort_keys=True).encode("utf-8")


def release_digest(release: Path) -> dict[str, str]:
    """Relative path → SHA-256 of every file (manifest without VARYING; certificate: key id and key)."""
    out = {}
    for path in sorted(p for p in release.rglob("*") if p.is_file()):
        name = path.relative_to(release).as_posix()
        if name == "manifest.json":
            data = _manifest_bytes(path)
        elif name == "certificate.json":
            cert = json.loads(path.read_text(encoding="utf-8"))
            data = f"{cert['key_id']} {cert['public_key']}".encode()
        else:
            data = path.read_bytes()
        out[name] = hashlib.sha256(data).hexdigest()
    return out


def test_the_demo_release_is_byte_identical_to_the_stored_digest(tmp_path: Path) -> None:
    key = tmp_path / "agency.key"
    key.write_text(SECRET + "\n", encoding="ascii")
    key.chmod(0o600)
    out = tmp_path / "release"
    result = CliRunner().invoke(cli, ["release", "--demo", "-o", str(out), "--key-file", str(key)])
    assert result.exit_code == 0, result.output
    digest = release_digest(out)
    if os.environ.get("FAERS_ANON_UPDATE_GOLDEN"):
        DIGEST.write_text(json.dumps(digest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    stored = json.loads(DIGEST.read_text(encoding="utf-8"))
    changed = sorted(n for n in stored.keys() | digest.keys() if stored.get(n) != digest.get(n))
    assert changed == [], f"the demo release changed in {changed}"
