"""``manifest.json`` of a release: what made it, from which files, and what it holds (SPEC §10).

Layout (keys sorted, two-space indent, UTF-8, trailing newline):

* ``format``: ``"faers-anon-release/1"``.
* ``tool``: ``{"name": "faers-anon", "version": faers_anon.__version__}``.
* ``parameters``: the run's parameters exactly as the caller gave them (the seed lives here). The
  verifier reads ``k``, ``sensitive`` (which case attributes are sensitive: ``indications``/``indi_pt``
  and/or ``reactions``/``pt``) and ``qids`` (extra QID columns) from it.
* ``created``: ISO-8601 UTC timestamp, and ``timings`` (seconds per stage, written by the release
  pipeline): the only fields that differ between two runs on the same inputs; reproducibility checks
  compare :func:`fingerprint`, which leaves them out.
* ``inputs``: relative path → SHA-256 of every file of the ingested folder.
* ``outputs``: relative path → SHA-256 of every file of the release except ``manifest.json`` and
  ``certificate.json`` (which signs the manifest: :mod:`faers_anon.release.certificate`).
* ``restricted``: ``null``, or the restricted folder's name and its files' SHA-256.
* ``counts``: per table ``rows_in``, ``rows_out`` and per quarter the same; ``rejects``: rows per file.
* ``columns``: per table the published, dropped and restricted columns; ``policy``: the column policy.
* ``pseudonyms``: the id scheme and its counts (:mod:`faers_anon.release.pseudonyms`; no id, no key);
  ``certificate``: the signature scheme, key id and public key (written by ``certificate.seal``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from faers_anon import __version__
from faers_anon.errors import ConfigError, InputError, VerificationError
from faers_anon.json_data import json_data

__all__ = [
    "FORMAT",
    "MANIFEST_NAME",
    "CERTIFICATE_NAME",
    "CREATED_FIELD",
    "TIMINGS_FIELD",
    "sha256_file",
    "hash_tree",
    "tree_files",
    "sources_hashes",
    "rehash_manifest",
    "build_manifest",
    "dump_parameters",
    "dump_manifest",
    "read_manifest",
    "fingerprint",
]

FORMAT = "faers-anon-release/1"
MANIFEST_NAME = "manifest.json"
CERTIFICATE_NAME = "certificate.json"
"""Signs the manifest; never hashed into it (:func:`hash_tree` skips it at the root)."""
CREATED_FIELD = "created"
TIMINGS_FIELD = "timings"
"""Seconds per stage of the run that wrote the release: like ``created``, differs between runs."""
_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def hash_tree(root: Path, *, exclude: frozenset[str] = frozenset()) -> dict[str, str]:
    """SHA-256 of every regular file under ``root``, keyed by POSIX path relative to ``root``, sorted.

    Args:
        root: the folder to walk (recursively).
        exclude: relative paths to leave out (e.g. ``manifest.json`` itself); ``certificate.json`` at
            the root is always left out.
    """
    return {rel: sha256_file(path) for rel, path in tree_files(root, exclude=exclude).items()}


def tree_files(root: Path, *, exclude: frozenset[str] = frozenset()) -> dict[str, Path]:
    """The files :func:`hash_tree` hashes: relative POSIX path → path, sorted by path."""
    files: dict[str, Path] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel not in exclude and rel != CERTIFICATE_NAME:
            files[rel] = path
    return files


def sources_hashes(sources: Sequence[Path]) -> dict[str, str]:
    """SHA-256 of every source file (zips, or the files inside source folders), sorted by name:
    a folder's files as ``<folder name>/<relative path>``, a file by its name."""
    hashes: dict[str, str] = {}
    for path in map(Path, sources):
        if path.is_dir():
            for name, digest in hash_tree(path).items():
                hashes[f"{path.name}/{name}"] = digest
        elif path.is_file():
            hashes[path.name] = sha256_file(path)
    return dict(sorted(hashes.items()))


def rehash_manifest(
    staging: Path, *, sources: Mapping[str, str], timings: Mapping[str, float], added: Mapping[str, bytes]
) -> None:
    """Rewrite a built release's manifest with its files' hashes, the sources' and the timings (the
    release pipeline adds files after the writer ran).

    The files the writer hashed keep its hashes: the release pipeline's verify stage read every one and
    found it equal (:mod:`faers_anon.verify.integrity`), and nothing writes them since; the files
    ``added`` (relative path → bytes) are hashed from their bytes, any other from the disk, as
    :func:`hash_tree` would.
    """
    manifest = read_manifest(staging)
    if manifest is None:
        raise VerificationError(f"{staging}: manifest.json missing after writing the release")
    written: dict[str, str] = manifest["outputs"]
    manifest["outputs"] = {
        rel: hashlib.sha256(added[rel]).hexdigest() if rel in added else written.get(rel) or sha256_file(path)
        for rel, path in tree_files(staging, exclude=frozenset({MANIFEST_NAME})).items()
    }
    manifest["sources"] = dict(sources)
    manifest[TIMINGS_FIELD] = {stage: round(s, 3) for stage, s in timings.items()}
    (staging / MANIFEST_NAME).write_bytes(dump_manifest(manifest))


def build_manifest(
    *,
    parameters: Mapping[str, object],
    inputs: Mapping[str, str],
    outputs: Mapping[str, str],
    counts: Mapping[str, object],
    columns: Mapping[str, object],
    policy: Mapping[str, object],
    restricted: Mapping[str, object] | None,
    created: dt.datetime | None = None,
    pseudonyms: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """Assemble the manifest dictionary (see the module docstring for the fields).

    Args:
        parameters: the run's parameters as given; must be JSON data (Paths, tuples and sets are
            converted; anything else is a ConfigError).
        inputs: relative path → SHA-256 of the ingested files.
        outputs: relative path → SHA-256 of the release files.
        counts: rows in/out per table and quarter, rejects per file.
        columns: published/dropped/restricted columns per table.
        policy: the column policy's ``describe()``.
        restricted: the restricted folder's description, or None.
        created: the timestamp (default: now, UTC, whole seconds).
        pseudonyms: the id scheme and its counts (:meth:`faers_anon.release.pseudonyms.IdMap.describe`).
    """
    when = created or dt.datetime.now(dt.UTC).replace(microsecond=0)
    params = json.loads(dump_parameters(parameters))
    return {
        "format": FORMAT,
        "tool": {"name": "faers-anon", "version": __version__},
        "parameters": params,
        CREATED_FIELD: when.isoformat(),
        "inputs": dict(inputs),
        "outputs": dict(outputs),
        "restricted": dict(restricted) if restricted is not None else None,
        "counts": dict(counts),
        "columns": dict(columns),
        "policy": dict(policy),
        "pseudonyms": dict(pseudonyms) if pseudonyms is not None else None,
    }


def dump_parameters(parameters: Mapping[str, object]) -> str:
    """The parameters as canonical JSON text (raises ConfigError for non-JSON values or NaN)."""
    try:
        data = json_data(dict(parameters), strict=True)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"manifest: parameter value {exc} is not JSON data") from exc
    return json.dumps(data, sort_keys=True, allow_nan=False)


def dump_manifest(manifest: Mapping[str, Any]) -> bytes:
    """The manifest's bytes: sorted keys, two-space indent, UTF-8, trailing newline."""
    return (json.dumps(manifest, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def read_manifest(release: Path) -> dict[str, Any] | None:
    """The release's manifest, or None when the release has no ``manifest.json``.

    Raises:
        InputError: the file exists but is not a JSON object.
    """
    path = release / MANIFEST_NAME
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not valid JSON ({exc})", path=path) from exc
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", path=path)
    return data


def fingerprint(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest without ``created`` and ``timings``: equal for two runs on the same inputs and options."""
    return {key: value for key, value in manifest.items() if key not in (CREATED_FIELD, TIMINGS_FIELD)}
