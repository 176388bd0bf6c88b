"""manifest.json helpers: parameters as JSON, hashing, fingerprint without the timestamp."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import pytest

from faers_anon.errors import ConfigError, InputError
from faers_anon.release.manifest import (
    build_manifest,
    dump_manifest,
    dump_parameters,
    fingerprint,
    hash_tree,
    read_manifest,
    rehash_manifest,
    sources_hashes,
)


def test_parameters_become_canonical_json() -> None:
    text = dump_parameters({"seed": 3, "out": Path("a/b"), "qids": ("age", "sex"), "tags": {"b", "a"}})
    assert json.loads(text) == {"out": "a/b", "qids": ["age", "sex"], "seed": 3, "tags": ["a", "b"]}
    with pytest.raises(ConfigError, match="is not JSON data"):
        dump_parameters({"x": object()})
    with pytest.raises(ConfigError, match="not JSON data"):
        dump_parameters({"theta": float("nan")})


def test_hash_tree_is_relative_sorted_and_excludes(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_bytes(b"b")
    (tmp_path / "a.txt").write_bytes(b"a")
    (tmp_path / "manifest.json").write_bytes(b"{}")
    hashes = hash_tree(tmp_path, exclude=frozenset({"manifest.json"}))
    assert list(hashes) == ["a.txt", "sub/b.txt"]
    assert hashes["sub/b.txt"] == hashlib.sha256(b"b").hexdigest()


def test_only_created_differs_between_runs(tmp_path: Path) -> None:
    common: dict[str, object] = dict(
        parameters={"k": 5}, inputs={}, outputs={"x": "0"}, counts={}, columns={}, policy={}, restricted=None
    )
    one = build_manifest(**common, created=dt.datetime(2024, 1, 1, tzinfo=dt.UTC))  # type: ignore[arg-type]
    two = build_manifest(**common)  # type: ignore[arg-type]
    assert one != two and fingerprint(one) == fingerprint(two)
    assert one["created"] == "2024-01-01T00:00:00+00:00"
    data = dump_manifest(one)
    assert data.endswith(b"}\n") and list(json.loads(data)) == sorted(one)
    (tmp_path / "manifest.json").write_bytes(data)
    assert read_manifest(tmp_path) == one
    assert read_manifest(tmp_path / "nowhere") is None
    (tmp_path / "manifest.json").write_text("[1, 2")
    with pytest.raises(InputError, match="^manifest.json: not valid JSON"):
        read_manifest(tmp_path)


def test_rehash_keeps_the_writers_hashes_and_hashes_what_was_added(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for rel, data in {
        "a.txt": b"a",
        "sub/b.txt": b"b",
        "certificate.json": b"{}",
        "late.txt": b"late",
    }.items():
        (tmp_path / rel).write_bytes(data)
    written = {"a.txt": "writer's hash of a", "sub/b.txt": hashlib.sha256(b"b").hexdigest()}
    common: dict[str, object] = dict(
        parameters={}, inputs={}, counts={}, columns={}, policy={}, restricted=None
    )
    (tmp_path / "manifest.json").write_bytes(dump_manifest(build_manifest(**common, outputs=written)))  # type: ignore[arg-type]
    (tmp_path / "report.json").write_bytes(b"{}\n")
    rehash_manifest(
        tmp_path, sources={"q.zip": "s"}, timings={"total": 1.23456}, added={"report.json": b"{}\n"}
    )
    manifest = read_manifest(tmp_path)
    assert (
        manifest is not None
        and manifest["sources"] == {"q.zip": "s"}
        and manifest["timings"] == {"total": 1.235}
    )
    assert manifest["outputs"] == {
        "a.txt": "writer's hash of a",  # not read again: the verify stage checked it against the file
        "late.txt": hashlib.sha256(b"late").hexdigest(),  # not the writer's: read from the disk
        "report.json": hashlib.sha256(b"{}\n").hexdigest(),  # from its bytes
        "sub/b.txt": hashlib.sha256(b"b").hexdigest(),
    }


def test_sources_hashes_name_a_folders_files_under_it(tmp_path: Path) -> None:
    (tmp_path / "ASCII").mkdir()
    (tmp_path / "ASCII" / "DEMO.txt").write_bytes(b"d")
    (tmp_path / "q.zip").write_bytes(b"z")
    found = sources_hashes([tmp_path / "q.zip", tmp_path, tmp_path / "missing.zip"])
    name = tmp_path.name
    assert list(found) == sorted([f"{name}/ASCII/DEMO.txt", f"{name}/q.zip", "q.zip"])
    assert found["q.zip"] == found[f"{name}/q.zip"] == hashlib.sha256(b"z").hexdigest()
