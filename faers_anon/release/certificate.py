"""The release certificate: an Ed25519 signature over ``manifest.json`` (SPEC §10, §11).

The manifest lists the SHA-256 of every released file, every parameter and the row and case counts;
signing its exact bytes therefore covers all of them. :func:`seal` writes

* ``manifest.json`` → ``certificate``: ``{"algorithm": "ed25519", "file": "certificate.json",
  "key_id": …, "public_key": …}`` (which scheme, stated inside what is signed);
* ``certificate.json``: ``format`` (``faers-anon-certificate/1``), ``algorithm``, ``key_id``,
  ``public_key`` (hex), ``manifest_sha256``, ``signature`` (hex, 64 bytes, RFC 8032 Ed25519 over the
  manifest's bytes).

Decision: Ed25519, not an HMAC under the agency key. An HMAC can be checked only by someone holding
the key, and whoever can check it can also forge it; the public could not verify a release at all.
With Ed25519 the agency publishes its public key separately (``<key>.pub``, docs/keys.md) and anyone
runs ``faers-anon verify RELEASE --public-key agency.pub``; forging needs the secret. The public key
inside the release only says which key signed: the verifier trusts the key it is given, never the
one the release names (a forger can sign with a key of their own). Signatures are deterministic, so
the same manifest gives the same certificate.

``certificate.json`` is never listed in the manifest's ``outputs`` (it signs them); after any change
to the manifest, :func:`seal` must run again (the release pipeline does it last).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from faers_anon.errors import InputError
from faers_anon.keys import AgencyKey
from faers_anon.release.manifest import CERTIFICATE_NAME, MANIFEST_NAME, dump_manifest, read_manifest

__all__ = ["ALGORITHM", "CERTIFICATE_FORMAT", "seal"]

ALGORITHM = "ed25519"
CERTIFICATE_FORMAT = "faers-anon-certificate/1"


def seal(release: Path, key: AgencyKey) -> dict[str, str]:
    """Record the scheme in ``release/manifest.json`` and sign it into ``release/certificate.json``.

    Returns:
        The certificate as written.

    Raises:
        InputError: the release has no manifest.json.
    """
    manifest = read_manifest(release)
    if manifest is None:
        raise InputError("no manifest.json to certify", path=release)
    manifest["certificate"] = {
        "algorithm": ALGORITHM,
        "file": CERTIFICATE_NAME,
        "key_id": key.key_id,
        "public_key": key.public_key.hex(),
    }
    data = dump_manifest(manifest)
    (release / MANIFEST_NAME).write_bytes(data)
    certificate = {
        "format": CERTIFICATE_FORMAT,
        "algorithm": ALGORITHM,
        "key_id": key.key_id,
        "public_key": key.public_key.hex(),
        "manifest_sha256": hashlib.sha256(data).hexdigest(),
        "signature": key.sign(data).hex(),
    }
    text = json.dumps(certificate, indent=2, sort_keys=True) + "\n"
    (release / CERTIFICATE_NAME).write_text(text, encoding="utf-8")
    return certificate
