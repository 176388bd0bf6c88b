"""Finding FAERS files in the user's zips and folders, and making each a local UTF-8 file.

Source: FORMAT.md §1 (names and folders), §5 (deleted-case files), §7 (encoding). Decisions:

* A source is an FDA zip (``faers_ascii_2023q1.zip``, legacy ``aers_ascii_2004q1.zip``), a folder, or
  one FAERS text file. Names are matched case-blind at any depth: ``DEMO23Q1.txt``, ``demo12q4.txt``,
  ``DEMO04Q1.TXT``, ``DEMO18Q1_new.txt`` (DEMO, DRUG, REAC, INDI, OUTC, THER, RPSR), and the deletion
  lists ``DELETE22Q4.txt``, ``ADR19Q1DeletedCases.txt``, ``21Q1DeletedCases.txt``, ``AllDeletedCases.txt``.
  Other members (PDFs, XML, ``STATyyQq.TXT``) are ignored.
* The quarter comes from the file name: ``DEMO23Q1.txt`` → ``2023Q1`` (every FAERS year is 20yy).
  ``AllDeletedCases.txt`` takes the quarter of its zip's name, else none.
* A folder is searched for text files; only when it holds none are the zips inside it read, so a
  folder holding both the zips and their extracted files is read once.
* The encoding is decided once per file, never per line (FORMAT.md §7: FAERS promises printable
  ASCII since 2012Q4; loaders fall back to Latin-1; ``drug19q3.txt`` has undecodable bytes):

  1. valid UTF-8 (ASCII included) → ``utf-8``;
  2. not valid UTF-8 and holding no valid UTF-8 multi-byte sequence at all → a legacy single-byte
     file, decoded as a whole: ``cp1252`` when every byte is defined there (Windows exports; it
     agrees with Latin-1 on 0xA0–0xFF and prints 0x80–0x9F as ``€``, ``’`` …), else ``latin-1``.
     The report records the encoding and warns, so the decision is never silent;
  3. valid UTF-8 sequences *and* invalid bytes → ``utf-8`` with ``invalid_bytes``: the file is read
     as UTF-8 with each invalid byte replaced by U+FFFD, and every line holding one is quarantined
     (rule ``valid_encoding``, :mod:`faers_anon.io.rules`): a file is never decoded half as UTF-8
     and half as Latin-1. (A U+FFFD already in such a file counts too: it marks a lost character.)

  Zip members are extracted into a work folder; single-byte files are transcoded to UTF-8 there.
"""

from __future__ import annotations

import codecs
import mmap
import os
import re
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from faers_anon.errors import InputError
from faers_anon.io.schema import TABLES

__all__ = [
    "SourceFile",
    "LocalFile",
    "discover",
    "materialize",
    "quarter_of",
    "check_demo_present",
    "encoding_warnings",
]

_CHUNK = 1 << 24
_TABLE_NAME = re.compile(r"^(demo|drug|reac|indi|outc|ther|rpsr)(\d{2})q([1-4])(?:_new)?\.txt$", re.I)
_DELETE_NAMES = (
    re.compile(r"^delete(\d{2})q([1-4])\.txt$", re.I),
    re.compile(r"^(?:adr)?(\d{2})q([1-4])deletedcases\.txt$", re.I),
)
_ALL_DELETED = re.compile(r"^alldeletedcases\.txt$", re.I)
_ZIP_QUARTER = re.compile(r"(?:^|[^0-9])(20\d{2})q([1-4])(?:[^0-9]|$)", re.I)


@dataclass(frozen=True, kw_only=True, slots=True)
class SourceFile:
    """One FAERS file found in a source.

    Attributes:
        table: a name of :data:`~faers_anon.io.schema.TABLES`, or ``"deleted"`` for a DELETE list.
        quarter: ``"2023Q1"``; None only for ``AllDeletedCases.txt`` outside a named zip.
        name: the file's base name, as found (the ``source_file`` column).
        origin: the zip or folder (or file) the user named.
        member: the path inside the zip, or None for a file on disk.
    """

    table: str
    quarter: str | None
    name: str
    origin: Path
    member: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class LocalFile:
    """A source file available on disk as UTF-8 text.

    Attributes:
        source: what was found.
        path: the readable local file (the original, or an extracted/transcoded copy).
        encoding: ``"utf-8"``, ``"cp1252"`` or ``"latin-1"`` (the file's encoding as decided).
        invalid_bytes: the file is UTF-8 but holds invalid byte sequences; read it with
            ``encoding="utf8-lossy"`` and quarantine the lines holding U+FFFD.
    """

    source: SourceFile
    path: Path
    encoding: str
    invalid_bytes: bool = False


def quarter_of(name: str) -> tuple[str, str | None] | None:
    """Table and quarter of a FAERS file name, or None when the name is not a FAERS file.

    Args:
        name: a base file name such as ``DEMO23Q1.txt`` or ``DELETE22Q4.txt``.

    Returns:
        (table, quarter), e.g. ``("demo", "2023Q1")`` or ``("deleted", "2022Q4")``; the quarter of
        ``AllDeletedCases.txt`` is None.
    """
    match = _TABLE_NAME.match(name)
    if match:
        return match.group(1).lower(), f"20{match.group(2)}Q{match.group(3)}"
    for pattern in _DELETE_NAMES:
        match = pattern.match(name)
        if match:
            return "deleted", f"20{match.group(1)}Q{match.group(2)}"
    if _ALL_DELETED.match(name):
        return "deleted", None
    return None


def _found(name: str, origin: Path, member: str | None, default_quarter: str | None) -> SourceFile | None:
    kind = quarter_of(name)
    if kind is None:
        return None
    table, quarter = kind
    return SourceFile(
        table=table, quarter=quarter or default_quarter, name=name, origin=origin, member=member
    )


def _zip_members(path: Path) -> list[SourceFile]:
    match = _ZIP_QUARTER.search(path.name)
    default_quarter = f"{match.group(1)}Q{match.group(2)}" if match else None
    try:
        with zipfile.ZipFile(path) as archive:
            names = [info.filename for info in archive.infolist() if not info.is_dir()]
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(f"{path}: not a readable zip file ({exc}; expected an FDA FAERS zip)") from exc
    found = (_found(Path(member).name, path, member, default_quarter) for member in names)
    return [f for f in found if f is not None]


def _one_source(path: Path) -> list[SourceFile]:
    if not path.exists():
        raise InputError(f"{path}: no such file or folder (expected a FAERS zip, folder or text file)")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())
        found = [f for p in files if (f := _found(p.name, p, None, None)) is not None]
        if not found:
            found = [f for p in files if p.suffix.lower() == ".zip" for f in _zip_members(p)]
    elif zipfile.is_zipfile(path) or path.suffix.lower() == ".zip":
        found = _zip_members(path)
    else:
        single = _found(path.name, path, None, None)
        found = [single] if single is not None else []
    if not found:
        raise InputError(
            f"{path}: no FAERS files found (expected DEMOyyQq.txt, DRUGyyQq.txt, … or DELETEyyQq.txt)"
        )
    return found


def discover(sources: Sequence[Path]) -> list[SourceFile]:
    """All FAERS files in the given sources, ordered by quarter, table and then as given.

    Args:
        sources: zips, folders or single FAERS text files.

    Returns:
        The files found, each once however often it was named; DELETE lists have table ``"deleted"``.

    Raises:
        InputError: a source does not exist, is a corrupt zip, or holds no FAERS file.
    """
    found: list[tuple[int, SourceFile]] = []
    seen: set[tuple[Path, str | None]] = set()
    for i, source in enumerate(sources):
        for f in _one_source(Path(source)):
            key = (f.origin.resolve(), f.member)
            if key not in seen:  # the same file named twice (a folder and a file in it) is read once
                seen.add(key)
                found.append((i, f))
    order = {t: n for n, t in enumerate((*TABLES, "deleted"))}
    found.sort(key=lambda item: (item[1].quarter or "", order[item[1].table], item[0], item[1].name))
    return [f for _, f in found]


def _chunks(stream: IO[bytes]) -> Iterator[bytes]:
    while chunk := stream.read(_CHUNK):
        yield chunk


def _decodes(path: Path, encoding: str) -> bool:
    """True when the whole file is valid in ``encoding`` (read chunk by chunk)."""
    decoder = codecs.getincrementaldecoder(encoding)()
    try:
        with path.open("rb") as stream:
            for chunk in _chunks(stream):
                decoder.decode(chunk)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def _is_ascii(path: Path) -> bool:
    """True when no byte of the file is above 127: the largest byte, read from the file mapped in
    memory (no copy into a buffer; a quarter of the time of reading it chunk by chunk)."""
    with path.open("rb") as stream:
        if not os.fstat(stream.fileno()).st_size:
            return True
        with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return bool(np.frombuffer(mapped, np.uint8).max() < 128)


#: A character of a UTF-8 multi-byte sequence: not ASCII, not a surrogate-escaped invalid byte.
_MULTIBYTE = re.compile("[^\x00-\x7f\udc80-\udcff]")


def _has_utf8_sequences(path: Path) -> bool:
    """True when the file holds at least one valid UTF-8 multi-byte sequence (invalid bytes aside)."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
    with path.open("rb") as stream:
        for chunk in _chunks(stream):
            if _MULTIBYTE.search(decoder.decode(chunk)):
                return True
    return bool(_MULTIBYTE.search(decoder.decode(b"", final=True)))


def _transcode(path: Path, target: Path, encoding: str) -> None:
    with path.open("rb") as src, target.open("wb") as dst:
        for chunk in _chunks(src):
            dst.write(chunk.decode(encoding).encode("utf-8"))


def materialize(file: SourceFile, workdir: Path, /) -> LocalFile:
    """Make one found file readable from disk as UTF-8.

    Args:
        file: a file from :func:`discover`.
        workdir: a folder for extracted and transcoded copies (the caller removes it).

    Returns:
        The local file and its encoding, decided for the whole file (module docstring).

    Raises:
        InputError: the zip member cannot be extracted (corrupt data, CRC error).
    """
    path = file.origin
    if file.member is not None:
        target = workdir / f"{len(list(workdir.iterdir()))}_{file.name}"
        try:
            with zipfile.ZipFile(file.origin) as archive, archive.open(file.member) as src:
                with target.open("wb") as dst:
                    for chunk in _chunks(src):
                        dst.write(chunk)
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as exc:
            raise InputError(
                f"{file.origin.name}:{file.member}: cannot extract ({exc}; expected a sound zip member)"
            ) from exc
        path = target
    if _is_ascii(path) or _decodes(path, "utf-8"):
        return LocalFile(source=file, path=path, encoding="utf-8")
    if _has_utf8_sequences(path):
        return LocalFile(source=file, path=path, encoding="utf-8", invalid_bytes=True)
    encoding = "cp1252" if _decodes(path, "cp1252") else "latin-1"  # latin-1: a byte cp1252 lacks
    utf8 = workdir / f"{len(list(workdir.iterdir()))}_utf8_{file.name}"
    _transcode(path, utf8, encoding)
    return LocalFile(source=file, path=utf8, encoding=encoding)


def check_demo_present(found: list[SourceFile], /) -> None:
    """Refuse sources where a quarter has data files but no DEMO, or no quarter has DEMO.

    Raises:
        InputError: naming the quarter and its files.
    """
    with_data = {f.quarter for f in found if f.table in TABLES}
    with_demo = {f.quarter for f in found if f.table == "demo"}
    for quarter in sorted(q for q in with_data - with_demo if q is not None):
        names = sorted({f.name for f in found if f.quarter == quarter})
        raise InputError(
            f"{quarter}: DEMO file missing "
            f"(expected DEMO{quarter[2:4]}Q{quarter[-1]}.txt beside {', '.join(names)})"
        )
    if not with_demo:  # only DELETE lists: no report to ingest
        names = sorted({f.name for f in found})
        raise InputError(f"no DEMO file in the sources (expected DEMOyyQq.txt; found {', '.join(names)})")


def encoding_warnings(files: list[LocalFile], /) -> list[str]:
    """One line per file not read as plain UTF-8 (the per-file encoding decision of
    this module's docstring)."""
    warnings = []
    for f in files:
        if f.invalid_bytes:
            warnings.append(
                f"{f.source.name}: invalid UTF-8 byte sequences; the lines holding them are quarantined "
                "(valid_encoding)"
            )
        elif f.encoding != "utf-8":
            warnings.append(f"{f.source.name}: not UTF-8; decoded as {f.encoding} (the whole file)")
    return warnings
