"""The one guard every writing command runs before it writes: outputs never touch inputs (issue 12).

Rules, checked before anything is written:

* **Overlap.** An output (a folder a command replaces or writes into, or a file it overwrites) must
  not *be* an input, *contain* one (the folder holding an input zip counts: replacing it deletes the
  zip) or *lie inside* one. Paths are compared after ``..`` and symlinks are resolved
  (:meth:`Path.resolve`), as case-folded strings where the platform folds case
  (:func:`os.path.normcase`), and by device and inode (:func:`os.path.samefile`) for every existing
  ancestor, which also catches a case-insensitive filesystem (``Raw`` and ``raw`` are one folder on
  macOS) and hard-linked folders.
* **Replacement.** An existing output folder is replaced only when it is empty or is the command's
  own earlier output, recognised by its marker file: a release's ``manifest.json`` written by
  faers-anon (with ``--force``), an ingest's ``ingest_report.json``. Anything else is refused, even
  with ``--force``: the tool deletes only what it made.

Errors name both paths in full and say that nothing was written (exit 1 from the CLI).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from faers_anon.errors import OutputError

__all__ = ["resolved", "check_outputs", "check_work_dir", "check_replaceable", "is_release", "RELEASE_MARKER"]

#: The file that marks a folder as a faers-anon release (see :mod:`faers_anon.release.manifest`).
RELEASE_MARKER = "manifest.json"


def resolved(path: str | os.PathLike[str]) -> Path:
    """The absolute path with ``..`` and symlinks resolved (missing trailing parts kept as given)."""
    return Path(os.path.abspath(path)).resolve()


def _same(a: Path, b: Path) -> bool:
    if os.path.normcase(a) == os.path.normcase(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return False


def _within(inner: Path, outer: Path) -> bool:
    """``inner`` lies strictly inside ``outer`` (some proper ancestor of ``inner`` is ``outer``)."""
    return any(_same(parent, outer) for parent in inner.parents)


def _relation(out: Path, source: Path) -> str | None:
    if _same(out, source):
        return "is"
    if _within(source, out):
        return "contains"
    if _within(out, source):
        return "lies inside"
    return None


def check_outputs(outputs: Iterable[Path], inputs: Iterable[Path | None], /) -> None:
    """Refuse outputs that are, contain or lie inside an input.

    Args:
        outputs: the paths a command writes or replaces.
        inputs: every path it reads (None entries are skipped: unset options).

    Raises:
        OutputError: naming the output, the input and how they overlap.
    """
    sources = [(Path(p), resolved(p)) for p in inputs if p is not None]
    for given in outputs:
        out = resolved(given)
        for source, real in sources:
            how = _relation(out, real)
            if how is not None:
                raise OutputError(
                    f"output {_shown(given, out)} {how} the input {_shown(source, real)}: writing it "
                    "could destroy the input; choose an output outside every input (nothing was written)"
                )


def _shown(given: Path, real: Path) -> str:
    """``given``, followed by the real path when ``..`` or a symlink made them differ."""
    return str(given) if Path(os.path.abspath(given)) == real else f"{given} (= {real})"


def check_release_target(out: Path, /, *, force: bool, inputs: Iterable[Path | None]) -> None:
    """The guard of a command that writes a release: ``out`` and its restricted folder.

    Args:
        out: the release folder.
        force: the user asked to replace an earlier release.
        inputs: every path the command reads.

    Raises:
        OutputError: ``out`` or ``<out>-restricted`` overlaps an input; ``out`` exists and is not an
            earlier release, or is one without ``force``; ``<out>-restricted`` exists and is not the
            restricted folder ``out``'s manifest names.
    """
    restricted = out.parent / f"{out.name}-restricted"  # faers_anon.release.writer.restricted_path
    check_outputs([out, restricted], inputs)
    out, restricted = resolved(out), resolved(restricted)
    check_replaceable(out, force=force)
    if restricted.exists() and _restricted_of(out) != restricted.name:
        raise OutputError(
            f"{restricted}: exists and is not the restricted folder of {out}; it is never replaced: "
            "move it away (nothing was written)"
        )


def _restricted_of(out: Path) -> str | None:
    """The restricted folder an earlier release's manifest names, if any."""
    try:
        manifest = json.loads((out / RELEASE_MARKER).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    restricted = manifest.get("restricted") if isinstance(manifest, dict) else None
    folder = restricted.get("folder") if isinstance(restricted, dict) else None
    return folder if isinstance(folder, str) else None


def key_inputs(key_file: Path | None, /) -> list[Path]:
    """The agency key file a run uses (``key_file``, else ``$FAERS_ANON_KEY_FILE``) and its ``.pub``.

    Inputs of the guard: a key inside the output would be deleted with an earlier release, or
    created inside (and published with) the new one.
    """
    from faers_anon.keys import KEY_ENV  # here: faers_anon.keys loads cryptography, which ingest never needs

    key = key_file or os.environ.get(KEY_ENV)
    return [] if not key else [Path(key), Path(key).with_name(Path(key).name + ".pub")]


def check_work_dir(work: Path | None, /, *, outputs: Iterable[Path], inputs: Iterable[Path | None]) -> None:
    """Refuse a work folder parent (None: the system temp folder) inside an output or an input folder.

    A work folder may hold outputs and inputs (it only gets a new private subfolder), but inside an
    output it would be deleted when that output is replaced, and inside a source folder it would be
    read (and hashed) as part of the source.

    Raises:
        OutputError: naming the work folder and the path it is or lies in.
    """
    given = work if work is not None else Path(tempfile.gettempdir())
    real = resolved(given)
    for path in [*outputs, *(p for p in inputs if p is not None and Path(p).is_dir())]:
        if _relation(real, resolved(path)) in ("is", "lies inside"):
            option = "--work-dir" if work is not None else "the system temp folder (set --work-dir)"
            raise OutputError(
                f"work folder {given} ({option}) is or lies inside {path}: choose a work folder "
                "outside the output and every input (nothing was written)"
            )


def is_release(folder: Path, /) -> bool:
    """``folder`` holds a ``manifest.json`` written by faers-anon (a JSON object naming the tool)."""
    try:
        data = json.loads((folder / RELEASE_MARKER).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    tool = data.get("tool") if isinstance(data, dict) else None
    return isinstance(tool, dict) and tool.get("name") == "faers-anon" and "outputs" in data


def check_replaceable(out: Path, /, *, force: bool, marker: str = RELEASE_MARKER) -> None:
    """Refuse an existing ``out`` unless it is empty or (with ``force``) the tool's own earlier output.

    Args:
        out: the folder about to be replaced.
        force: the user asked to replace an earlier output.
        marker: the file that proves ``out`` is an earlier output (``manifest.json`` for a release,
            ``ingest_report.json`` for an ingest); a release's manifest must also name faers-anon.

    Raises:
        OutputError: ``out`` is a file, or a non-empty folder without the marker, or an earlier
            output and ``force`` is not set.
    """
    if not out.exists():
        return
    if not out.is_dir():
        raise OutputError(f"{out}: exists and is not a folder (expected a new folder; nothing was written)")
    if not any(out.iterdir()):
        return
    release = marker == RELEASE_MARKER
    if not (is_release(out) if release else (out / marker).is_file()):
        what, never = ("a faers-anon release", "never replaced, even with --force") if release else (
            "an ingest folder", "never replaced")  # fmt: skip
        raise OutputError(
            f"{out}: exists and is not {what} (no {marker}); it is {never}: "
            "choose a new or empty folder (nothing was written)"
        )
    if not force:
        raise OutputError(f"{out}: an earlier release exists (use --force to replace it)")
