"""Writing the ingested folder atomically: a sibling staging folder, renamed into place when complete.

Decision: an existing output folder is replaced only when it is empty or a previous ingest (it holds
``ingest_report.json``), so a typo in ``-o`` never deletes unrelated files. A failed run leaves the
previous output untouched and removes its staging folder.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from faers_anon.errors import InputError

__all__ = ["REPORT_NAME", "open_staging", "publish", "discard"]

#: Name of the report that marks a folder as an ingest output.
REPORT_NAME = "ingest_report.json"


def open_staging(out: Path, /) -> Path:
    """Create the staging folder beside ``out`` (with ``rejects/`` and a ``_work/`` scratch folder).

    Raises:
        InputError: ``out`` exists and is a file, or a non-empty folder that is not an ingest output.
    """
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / REPORT_NAME).is_file())):
        raise InputError(
            f"{out}: exists and is not an ingest folder "
            "(expected a new or empty folder, or a previous ingest)"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.partial"
    if staging.exists():
        shutil.rmtree(staging)
    (staging / "rejects").mkdir(parents=True)
    (staging / "_work").mkdir()
    return staging


def publish(staging: Path, out: Path, /) -> None:
    """Remove the scratch folder and move the complete staging folder to ``out``."""
    shutil.rmtree(staging / "_work", ignore_errors=True)
    if out.exists():
        shutil.rmtree(out)
    staging.rename(out)


def discard(staging: Path, /) -> None:
    """Remove a staging folder after a failure."""
    shutil.rmtree(staging, ignore_errors=True)
