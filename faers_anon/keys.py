"""The agency key: one secret in a file, two keys derived from it (pseudonyms and the certificate).

File format: one line of 64 hexadecimal digits (32 random bytes from :func:`secrets.token_bytes`) and a
newline, mode 0600. The file is read, never written, except on first use: a path that does not exist
is created (``O_CREAT | O_EXCL``, mode 0600) with a new secret, together with ``<key>.pub`` (the
public key, mode 0644, to publish for verifiers), and one WARNING line says so. A key file that is a
folder, unreadable, malformed, or readable or writable by the group or others is a :class:`ConfigError`
naming the path and what is wrong; no message, log line or release ever holds the secret or a
derived secret key.

Derivation (HKDF-SHA256, RFC 5869, no salt; the ``info`` labels keep the two keys independent, so
learning one derived key tells nothing of the other or of the secret):

* ``faers-anon/v1/pseudonyms`` → the HMAC-SHA256 key of pseudonymous ids (:mod:`.release.pseudonyms`);
* ``faers-anon/v1/certificate`` → the 32-byte seed of the Ed25519 signing key of the certificate
  (:mod:`faers_anon.release.certificate`). Its public key is published (``<key>.pub``, ``certificate.json``).

Decision: one secret, not two files. Both keys are used by the same run on the same machine, so
separating them protects nothing against the realistic loss (the agency's machine or backup), while
two files double what must be kept, backed up and rotated together. The key id (first 16 hex digits
of SHA-256 of the public key) names the secret in a release without revealing it. docs/keys.md says
how to keep and rotate the key.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from faers_anon.errors import ConfigError

__all__ = [
    "AgencyKey",
    "KEY_ENV",
    "default_public_key",
    "load_key",
    "public_key_id",
    "read_public_key",
    "resolve_key_file",
]

log = logging.getLogger(__name__)

KEY_ENV = "FAERS_ANON_KEY_FILE"
"""Environment variable naming the key file when neither ``--key-file`` nor config ``key-file`` does."""
_PSEUDONYMS = b"faers-anon/v1/pseudonyms"
_CERTIFICATE = b"faers-anon/v1/certificate"
_HEX = re.compile(r"[0-9a-f]{64}")


def _derive(secret: bytes, label: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=label).derive(secret)


def public_key_id(public_key: bytes) -> str:
    """The key id: first 16 hex digits of SHA-256 of the raw 32-byte Ed25519 public key."""
    return hashlib.sha256(public_key).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class AgencyKey:
    """The derived keys of one agency secret (the secret itself is not kept).

    Attributes:
        pseudonym_key: HMAC-SHA256 key of the pseudonymous ids (never written anywhere).
        public_key: raw 32-byte Ed25519 public key of the certificate (public).
        key_id: :func:`public_key_id` of ``public_key``.
    """

    pseudonym_key: bytes = field(repr=False)
    public_key: bytes
    key_id: str
    _signing_seed: bytes = field(repr=False)

    @classmethod
    def from_secret(cls, secret: bytes) -> AgencyKey:
        """Derive both keys from the 32-byte secret (module docstring)."""
        if len(secret) != 32:
            raise ConfigError(f"agency key: expected 32 bytes, got {len(secret)}")
        seed = _derive(secret, _CERTIFICATE)
        public = Ed25519PrivateKey.from_private_bytes(seed).public_key()
        raw = public.public_bytes(Encoding.Raw, PublicFormat.Raw)
        return cls(_derive(secret, _PSEUDONYMS), raw, public_key_id(raw), seed)

    def sign(self, message: bytes) -> bytes:
        """Ed25519 signature of ``message`` (64 bytes, deterministic)."""
        return Ed25519PrivateKey.from_private_bytes(self._signing_seed).sign(message)


def resolve_key_file(path: Path | None) -> Path:
    """The key file to use: ``path``, else ``$FAERS_ANON_KEY_FILE``.

    Raises:
        ConfigError: neither is given (a release never falls back to a key it made up).
    """
    if path is not None:
        return Path(path)
    env = os.environ.get(KEY_ENV)
    if env:
        return Path(env)
    raise ConfigError(
        "no agency key: pass --key-file PATH (config key-file, or FAERS_ANON_KEY_FILE); "
        "a missing file is created on first use"
    )


def load_key(path: Path | None, *, create: bool = True) -> AgencyKey:
    """Read the agency key file (creating it on first use unless ``create`` is False) and derive its keys.

    Raises:
        ConfigError: no key file given, or it is missing (``create=False``), a folder, unreadable,
            malformed, or open to others.
    """
    path = resolve_key_file(path)
    if not path.exists() and not path.is_symlink():
        if not create:
            raise ConfigError(f"{path}: key file not found")
        _create(path)
    if path.is_dir():
        raise ConfigError(f"{path}: key file is a folder")
    try:
        mode = path.stat().st_mode
        text = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: key file unreadable ({exc.strerror or type(exc).__name__})") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(
            f"{path}: key file is open to group or others (mode {stat.S_IMODE(mode):04o}); "
            f"run chmod 600 {path}"
        )
    lines = text.decode("ascii", errors="replace").split()
    if len(lines) != 1 or not _HEX.fullmatch(lines[0].lower()):
        raise ConfigError(f"{path}: malformed key file (expected one line of 64 hexadecimal digits)")
    return AgencyKey.from_secret(bytes.fromhex(lines[0]))


def _create(path: Path) -> None:
    """Write a new secret to ``path`` (0600) and its public key to ``<path>.pub`` (0644)."""
    if not path.parent.is_dir():
        raise ConfigError(f"{path}: cannot create the key file: folder {path.parent} does not exist")
    secret = secrets.token_bytes(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secret.hex() + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        key = AgencyKey.from_secret(secret)
        pub = path.with_name(path.name + ".pub")
        pub.write_text(f"{key.public_key.hex()} faers-anon ed25519 key {key.key_id}\n", encoding="ascii")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot create the key file ({exc.strerror or exc})") from None
    log.warning(
        "created agency key %s (mode 0600; keep it secret and back it up, see docs/keys.md); "
        "publish %s for verifiers",
        path,
        pub,
    )


def default_public_key() -> bytes | None:
    """The public key of ``$FAERS_ANON_KEY_FILE`` when that file exists (the agency's own machine), else None.

    Raises:
        ConfigError: the file exists but is unreadable, malformed or open to others.
    """
    env = os.environ.get(KEY_ENV)
    if not env or not Path(env).exists():
        return None
    return load_key(Path(env), create=False).public_key


def read_public_key(path: Path) -> bytes:
    """The raw Ed25519 public key of a ``.pub`` file (first field: 64 hex digits), for verifiers.

    Raises:
        ConfigError: the file is missing, unreadable or does not start with 64 hexadecimal digits.
    """
    try:
        fields = Path(path).read_text(encoding="ascii", errors="replace").split()
    except OSError as exc:
        raise ConfigError(f"{path}: public key unreadable ({exc.strerror or type(exc).__name__})") from None
    if not fields or not _HEX.fullmatch(fields[0].lower()):
        raise ConfigError(f"{path}: malformed public key (expected 64 hexadecimal digits)")
    return bytes.fromhex(fields[0])
