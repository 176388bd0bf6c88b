"""Writing the ingested folder atomically: built in a private work folder, renamed into place when complete.

Decisions:
    * Before anything is written, ``out`` is checked against every input (:mod:`faers_anon.io.targets`):
      it may not be, contain or lie inside a source (or the folder of a source zip), and an existing
      ``out`` is replaced only when it is empty or a previous ingest (it holds ``ingest_report.json``),
      so a typo in ``-o`` never deletes unrelated files.
    * ``out`` is resolved first (``..`` and symlinks), so ``-o out/../out`` names the same folder
      before and after the earlier ingest is moved away.
    * The tables are written into ``<work>/ingested`` inside a private 0700 work folder under the
      system temp folder or ``work_dir`` (:mod:`faers_anon.io.workspace`); only the complete folder is
      moved beside ``out`` and renamed. A failed or interrupted run leaves the previous output
      untouched and removes its work folder; a killed run's folder is removed by the next run.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

from faers_anon.errors import InputError
from faers_anon.io.targets import check_outputs, check_replaceable, check_work_dir, resolved
from faers_anon.io.workspace import make_work_folder, publish_folder, remove_work_folder

__all__ = ["REPORT_NAME", "open_staging", "publish", "discard"]

#: Name of the report that marks a folder as an ingest output.
REPORT_NAME = "ingest_report.json"
_FOLDER = "ingested"


def open_staging(out: Path, /, *, inputs: Iterable[Path | None] = (), work_dir: Path | None = None) -> Path:
    """Check ``out`` and create the staging folder (with ``rejects/`` and a ``_work/`` scratch folder).

    Args:
        out: the ingested folder to write.
        inputs: every path the ingest reads (sources, the drug-name lookup).
        work_dir: the parent of the private work folder (default: the system temp folder).

    Returns:
        ``<work>/ingested``; hand it to :func:`publish` or :func:`discard`.

    Raises:
        ConfigError: ``out`` overlaps an input, or exists and is neither empty nor a previous ingest.
        InputError: the work folder cannot be created.
    """
    inputs = list(inputs)
    check_outputs([out], inputs)
    check_work_dir(work_dir, outputs=[out], inputs=inputs)
    out = resolved(out)
    check_replaceable(out, force=True, marker=REPORT_NAME)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{out.parent}: cannot create the output's folder ({exc.strerror or exc})") from exc
    staging = make_work_folder("ingest", work_dir) / _FOLDER
    (staging / "rejects").mkdir(parents=True)
    (staging / "_work").mkdir()
    return staging


def publish(staging: Path, out: Path, /) -> None:
    """Remove the scratch folder, move the complete staging folder to ``out``, remove the work folder."""
    shutil.rmtree(staging / "_work", ignore_errors=True)
    out = resolved(out)
    check_replaceable(out, force=True, marker=REPORT_NAME)  # again: another run may have written it
    try:
        publish_folder(staging, out)
    except OSError as exc:
        raise InputError(f"{out}: cannot write the ingested folder ({exc.strerror or exc})") from exc
    discard(staging)


def discard(staging: Path, /) -> None:
    """Remove the work folder holding ``staging`` (after a failure, or after :func:`publish`)."""
    remove_work_folder(staging.parent)
