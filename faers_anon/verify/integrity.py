"""The verifier's integrity rules: the release is the one the agency signed, whole and self-consistent.

Like :mod:`faers_anon.verify.verifier`, this module reads only the release's files and shares no code with the
writer (:mod:`faers_anon.release.writer`, :mod:`faers_anon.release.certificate`). Rules, each a violation
of the verdict (never an exception), all skipped with ``check_hashes=False``:

* ``manifest``: ``manifest.json`` exists and is a JSON object.
* ``certificate``: ``certificate.json`` exists, names the algorithm ``ed25519`` as the manifest's
  ``certificate`` entry does (same key id and public key), its ``manifest_sha256`` is the SHA-256 of
  the manifest's bytes, and its ``signature`` is a valid Ed25519 signature (RFC 8032) of those bytes
  under the *trusted* public key: the one the verifier is given (``--public-key``, or derived from
  ``--key-file``), never the one the release names, since a forger can sign with a key of their own.
  Without a trusted key the rule fails and says how to give one.
* ``integrity``: every file the manifest lists in ``outputs`` exists with that SHA-256, and every file
  of the release is listed (except ``manifest.json`` and ``certificate.json``).
* ``counts``: rows of each ``parquet/<table>.parquet`` = ``counts.<table>.rows_out``; rows of each
  ``ascii/<TABLE><yyQq>.txt`` = ``counts.<table>.quarters.<quarter>.rows_out`` (the ascii quarters are
  the manifest's); distinct DEMO caseids = ``counts.cases``.
* ``ascii``: the ascii copy and the Parquet copy hold the same rows in the same order: the header is
  the Parquet columns less ``quarter`` and ``is_latest``, and each ascii field parsed to the Parquet
  column's type (``YYYYMMDD`` dates, decimal numbers, ``Y``/``N``) equals the Parquet value, text
  compared after ``$``, CR and LF become spaces (the layout has no quoting); empty = null.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from faers_anon.errors import InputError

__all__ = ["integrity_violations", "read_manifest_json"]

_UNLISTED_OK = frozenset({"manifest.json", "certificate.json"})
_PARQUET_ONLY = ("quarter", "is_latest")
_CHUNK = 1 << 23  # bytes counted at a time (:func:`_count`)
_ASCII_NAME = re.compile(r"^([A-Za-z]+)(\d\d)[qQ]([1-4])\.txt$")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _certificate(release: Path, data: bytes, manifest: Mapping[str, Any], trusted: bytes | None) -> list[str]:
    path = release / "certificate.json"
    if not path.is_file():
        return ["certificate.json missing: the release is not signed"]
    try:
        cert = json.loads(path.read_text(encoding="utf-8"))
        signature = bytes.fromhex(str(cert["signature"]))
        signer = bytes.fromhex(str(cert["public_key"]))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return ["certificate.json is malformed (expected JSON with signature and public_key in hex)"]
    stated = manifest.get("certificate")
    found = []
    if not isinstance(stated, Mapping) or stated.get("algorithm") != "ed25519":
        found.append("manifest.json does not name the ed25519 certificate scheme")
    elif (stated.get("public_key"), stated.get("key_id")) != (cert.get("public_key"), cert.get("key_id")):
        found.append("manifest.json and certificate.json name different signing keys")
    if cert.get("algorithm") != "ed25519":
        found.append(f"certificate algorithm {cert.get('algorithm')!r} (expected ed25519)")
    if cert.get("manifest_sha256") != hashlib.sha256(data).hexdigest():
        found.append("certificate.json was made for another manifest.json (SHA-256 differs)")
    if trusted is None:
        return [*found, "no trusted public key given: pass --public-key (the agency's published key) "
                        "or --key-file; the key a release names proves nothing"]  # fmt: skip
    if signer != trusted:
        found.append(
            f"signed by key {hashlib.sha256(signer).hexdigest()[:16]}, not by the trusted key "
            f"{hashlib.sha256(trusted).hexdigest()[:16]}"
        )
    try:
        Ed25519PublicKey.from_public_bytes(trusted).verify(signature, data)
    except (InvalidSignature, ValueError):
        found.append("the signature of manifest.json does not verify under the trusted key")
    return found


def _files(release: Path, manifest: Mapping[str, Any], known: Mapping[str, str]) -> list[str]:
    """Rule ``integrity``; ``known``: the SHA-256 of files already read whole (path relative to the
    release → hex digest), not read again."""
    outputs = manifest.get("outputs") or {}
    found = []
    for rel, digest in sorted(outputs.items()):
        path = release / rel
        if not path.is_file():
            found.append(f"{rel}: listed in manifest.json but missing")
        elif (known[rel] if rel in known else _sha256(path)) != digest:
            found.append(f"{rel}: SHA-256 differs from manifest.json")
    present = sorted(p.relative_to(release).as_posix() for p in release.rglob("*") if p.is_file())
    found.extend(f"{rel}: not listed in manifest.json" for rel in present
                 if rel not in outputs and rel not in _UNLISTED_OK)  # fmt: skip
    return found


def _ascii_files(release: Path) -> dict[str, dict[str, Path]]:
    """table → quarter (``2024Q1``) → ascii file."""
    found: dict[str, dict[str, Path]] = {}
    folder = release / "ascii"
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        match = _ASCII_NAME.match(path.name)
        if match:
            table, yy, q = match.groups()
            found.setdefault(table.lower(), {})[f"20{yy}Q{q}"] = path
    return found


def _typed(text: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """An ascii field parsed to ``dtype`` (module docstring); unparseable → null."""
    if dtype == pl.Date or isinstance(dtype, pl.Datetime):
        return text.str.strptime(pl.Date, "%Y%m%d", strict=False)
    if dtype == pl.Boolean:
        return text.replace_strict({"Y": True, "N": False}, default=None, return_dtype=pl.Boolean)
    if dtype == pl.String:
        return text
    return text.cast(dtype, strict=False)


def _shown(value: pl.Expr, dtype: pl.DataType, *, separators: bool = True) -> pl.Expr:
    """A Parquet value as the ascii copy must hold it.

    ``separators=False`` states that the column holds no ``$``, CR or LF (:func:`_separators`):
    the replacement would change nothing and is skipped.
    """
    if isinstance(dtype, pl.Datetime):
        return value.dt.date()
    if dtype == pl.String:
        text = value.str.replace_all(r"[$\r\n]", " ") if separators else value
        return pl.when(text != "").then(text)
    return value


def _separators(frame: pl.DataFrame) -> set[str]:
    """The text columns of ``frame`` holding a ``$``, CR or LF somewhere (one literal scan each)."""
    text = [c for c, dtype in frame.schema.items() if dtype == pl.String]
    if not text:
        return set()
    found = frame.select(pl.col(c).str.contains_any(["$", "\r", "\n"]).any() for c in text).row(0)
    return {c for c, hit in zip(text, found, strict=True) if hit}


def _is_rendering(side: pl.DataFrame, data: bytes) -> bool:
    """Whether ``data`` is ``side`` as ascii text whose every field parses back (:func:`_typed`) to
    :func:`_shown` of its value; False also when that is not certain (then the file is parsed).

    The file being these bytes proves the rule ``ascii`` for it without parsing it: text as it is
    (empty as empty), integers in decimal, finite floats in their shortest round-trip form (whole
    ones below 2^53 without ``.0``), dates ``YYYYMMDD``, ``Y``/``N``. No value holds ``$``, CR or
    LF: with n rows and m columns, the rendered bytes hold (n + 1)(m - 1) ``$`` and n + 1 LF of the
    layout plus those of the values, so equal bytes with exactly that many and no CR have none
    (and replacing them by spaces, as :func:`_shown` does, changes nothing).
    """
    columns = side.columns
    if len(columns) < 2 or any(("$" in c or "\n" in c or "\r" in c) for c in columns):
        return False  # a one-column file may hold empty lines, which a reader skips
    lines = side.height + 1
    if b"\r" in data or _count(data, b"\n") != lines or _count(data, b"$") != lines * (len(columns) - 1):
        return False
    shown = []
    for name, dtype in side.schema.items():
        value = pl.col(name)
        if dtype == pl.String or dtype.is_integer() or dtype == pl.Date:  # as write_csv writes them
            shown.append(value)
        elif dtype.is_float():
            if not side.select(value.is_finite().all()).item():
                return False
            whole = (value == value.round()) & (value.abs() < 2.0**53)
            as_int = value.cast(pl.Int64, strict=False).cast(pl.String)
            shown.append(pl.when(whole).then(as_int).otherwise(value.cast(pl.String)))
        elif isinstance(dtype, pl.Datetime):
            shown.append(value.dt.date())
        elif dtype == pl.Boolean:
            shown.append(pl.when(value).then(pl.lit("Y")).when(~value).then(pl.lit("N")))
        else:
            return False
    text = side.select(e.alias(c) for e, c in zip(shown, columns, strict=True))
    rendered = io.BytesIO()  # bytes as written: no decoding to str and encoding back
    text.write_csv(
        rendered,
        separator="$",
        quote_style="never",
        null_value="",
        line_terminator="\n",
        date_format="%Y%m%d",
    )
    return rendered.getvalue() == data


def _count(data: bytes, byte: bytes) -> int:
    """How many times ``byte`` occurs in ``data`` (numpy, a few MB at a time: no large temporary)."""
    values, code = np.frombuffer(data, dtype=np.uint8), ord(byte)
    return sum(int(np.count_nonzero(values[i : i + _CHUNK] == code)) for i in range(0, len(values), _CHUNK))


def _agreement(
    table: str, parquet: pl.DataFrame, files: Mapping[str, Path], digests: dict[str, str] | None = None
) -> list[str]:
    """Rule ``ascii`` for one table; each file is read once, its SHA-256 kept in ``digests`` (by its
    path relative to the release) for rule ``integrity``."""
    columns = [c for c in parquet.columns if c not in _PARQUET_ONLY]
    found = []
    for quarter, path in sorted(files.items()):
        data = path.read_bytes()
        if digests is not None:
            digests[f"ascii/{path.name}"] = hashlib.sha256(data).hexdigest()
        ours = (pl.col("quarter").cast(pl.String) == quarter).fill_null(False)
        side = parquet if parquet.select(ours.all()).item() else parquet.filter(ours)  # one quarter: no copy
        if _is_rendering(side.select(columns), data):  # the bytes the rule accepts: nothing to parse
            continue
        try:
            text = pl.read_csv(io.BytesIO(data), separator="$", quote_char=None, infer_schema=False)
        except pl.exceptions.PolarsError as exc:
            found.append(f"ascii/{path.name}: unreadable as $-delimited text ({str(exc).splitlines()[0]})")
            continue
        if text.columns != columns:
            found.append(f"ascii/{path.name}: columns {text.columns} differ from parquet/{table}.parquet")
            continue
        if side.height != text.height:
            found.append(
                f"ascii/{path.name}: {text.height} rows, parquet/{table}.parquet {side.height} in {quarter}"
            )
            continue
        a = text.select(_typed(pl.col(c), parquet.schema[c]).alias(c) for c in columns)
        special = _separators(side.select(columns))
        b = side.select(
            _shown(pl.col(c), parquet.schema[c], separators=c in special).alias(c) for c in columns
        )
        a = a.with_columns(
            pl.when(pl.col(c) != "").then(pl.col(c)).alias(c) for c in columns if a.schema[c] == pl.String
        )
        differs = (
            pl.DataFrame({c: a[c].ne_missing(b[c].cast(a.schema[c])) for c in columns})
            .select(pl.any_horizontal(pl.all()).alias("d"), pl.int_range(pl.len()).alias("row"))
            .filter("d")
        )
        if differs.height:
            row = int(differs["row"][0])
            cols = [c for c in columns if a[c][row] != b[c][row]]
            found.append(f"ascii/{path.name}: line {row + 2} differs from parquet/{table}.parquet "
                         f"({', '.join(cols)}); {differs.height} row(s) in all")  # fmt: skip
    return found


def _rows(path: Path) -> int | str:
    """Data rows of an ascii file (the header excluded), or "unreadable"."""
    try:
        scan = pl.scan_csv(path, separator="$", quote_char=None, infer_schema=False)
        return int(scan.select(pl.len()).collect().item())
    except pl.exceptions.PolarsError:
        return "unreadable"


def _counts(
    release: Path, manifest: Mapping[str, Any], n_cases: int, digests: dict[str, str]
) -> tuple[list[str], list[str]]:
    """Rules ``counts`` and ``ascii``; the SHA-256 of each ascii file read go into ``digests``."""
    counts = manifest.get("counts") or {}
    found: list[str] = []
    agreement: list[str] = []
    if not isinstance(counts, Mapping):
        return ["manifest.json: counts is not a JSON object"], agreement
    ascii_files = _ascii_files(release)
    for table, entry in sorted(counts.items()):
        if not isinstance(entry, Mapping) or "rows_out" not in entry:
            continue
        path = release / "parquet" / f"{table}.parquet"
        try:
            parquet = pl.read_parquet(path) if path.is_file() else None
        except (OSError, pl.exceptions.PolarsError):
            found.append(f"parquet/{table}.parquet: unreadable")
            continue
        rows = parquet.height if parquet is not None else 0
        if rows != entry["rows_out"]:
            found.append(f"parquet/{table}.parquet: {rows} rows, manifest.json says {entry['rows_out']}")
        quarters = entry.get("quarters") or {}
        if not isinstance(quarters, Mapping) or not all(isinstance(q, Mapping) for q in quarters.values()):
            found.append(f"manifest.json: counts.{table}.quarters is not an object of objects")
            continue
        files = ascii_files.get(table, {})
        for quarter in sorted(set(quarters) | set(files)):
            want = (quarters.get(quarter) or {}).get("rows_out")
            got = _rows(files[quarter]) if quarter in files else 0
            if got != want:
                found.append(f"{table} {quarter}: {got} ascii rows, manifest.json says {want}")
        if parquet is not None and files:
            agreement.extend(_agreement(table, parquet, files, digests))
    if counts.get("cases") != n_cases:
        found.append(f"{n_cases} distinct cases in DEMO, manifest.json says {counts.get('cases')}")
    return found, agreement


def read_manifest_json(release: Path) -> dict[str, Any]:
    """The release's manifest.json as a dict ({} when missing: the integrity rules then fail)."""
    path = release / "manifest.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not valid JSON ({exc})", path=path) from exc
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", path=path)
    return data


def integrity_violations(release: Path, *, trusted: bytes | None, n_cases: int) -> pl.DataFrame:
    """Rules ``manifest``, ``certificate``, ``integrity``, ``counts``, ``ascii`` as (group, rule, detail).

    Args:
        release: the release folder.
        trusted: the trusted raw Ed25519 public key (None: the certificate rule fails).
        n_cases: distinct caseids of the released DEMO, as the verifier read them.
    """
    path = release / "manifest.json"
    rows: list[tuple[str, str]] = []
    if not path.is_file():
        rows = [("manifest", "manifest.json missing"), ("certificate", "nothing to check: no manifest.json")]
    else:
        data = path.read_bytes()
        manifest = json.loads(data)
        rows.extend(("certificate", d) for d in _certificate(release, data, manifest, trusted))
        digests: dict[str, str] = {}  # every ascii file is read once, for rules ascii and integrity
        counts, agreement = _counts(release, manifest, n_cases, digests)
        rows.extend(("integrity", d) for d in _files(release, manifest, digests))
        rows.extend(("counts", d) for d in counts)
        rows.extend(("ascii", d) for d in agreement)
    return pl.DataFrame(
        {"group": [None] * len(rows), "rule": [r for r, _ in rows], "detail": [d for _, d in rows]},
        schema={"group": pl.Int64, "rule": pl.String, "detail": pl.String},
    )
