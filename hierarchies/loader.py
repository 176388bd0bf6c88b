"""Load a user hierarchy from CSV: columns ``child,parent[,min,max]`` (SPEC §2).

File format:

* UTF-8 (a byte-order mark is ignored), comma-separated, standard CSV quoting (names such as
  ``"Infant, Newborn"`` need quotes). Blank lines and lines starting with ``#`` are skipped.
* The first other line is the header: ``child,parent`` or ``child,parent,min,max`` (case and surrounding
  spaces ignored); any other column is an error, so a misspelt ``mx`` is not silently dropped.
* One row per node. An empty parent makes the node the root; without such a row, the one name that
  appears only as a parent is the root. ``missing`` is added under the root unless listed (SPEC §5).
* ``min``/``max`` (numeric trees): the node covers [min, max); ``max`` may be ``inf`` for an open top
  band. Leaves need both; internal nodes may leave them empty and take their children's span.

Every error names the file, the line (1-based, header = line 1 when first) and the field:
``ages.csv:7: parent: unknown node 'Adlt' (expected a name listed as a child)``.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from hierarchies.build import NodeRow, from_rows
from hierarchies.errors import HierarchyError
from hierarchies.tree import Hierarchy

__all__ = ["load_csv"]

_REQUIRED = ("child", "parent")
_BOUNDS = ("min", "max")


def _number(text: str, where: str, field: str) -> float:
    """Parse one bound: empty is NaN (not given); ``inf`` is allowed; NaN and other text are errors."""
    text = text.strip()
    if not text:
        return math.nan
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isnan(value):
        raise HierarchyError(
            f"{where}: {field}: cannot read {text!r} as a number (expected a decimal number, inf, or empty)"
        )
    return value


def load_csv(path: str | Path) -> Hierarchy:
    """Read and validate a hierarchy CSV (format in the module docstring).

    Args:
        path: The CSV file.

    Returns:
        The validated tree; numeric when the file has ``min``/``max`` values, categorical otherwise.

    Raises:
        HierarchyError: unreadable or empty file; bad header; wrong number of fields; empty child;
            unparsable number; min >= max; duplicate child; unknown parent; no root or several roots; cycle;
            a misplaced ``missing``; for numeric trees a leaf without bounds, a child range outside its
            parent's, and leaves that overlap or leave gaps. Each message names the file, line and field.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise HierarchyError(f"{p}: cannot read the file: {reason} (expected a readable UTF-8 CSV)") from None
    reader = csv.reader(text.splitlines(keepends=True))
    header: list[str] | None = None
    rows: list[NodeRow] = []
    for cells in reader:
        line = reader.line_num
        where = f"{p.name}:{line}"
        if not cells or not any(c.strip() for c in cells) or cells[0].lstrip().startswith("#"):
            continue
        if header is None:
            header = [c.strip().lower() for c in cells]
            if tuple(header) not in (_REQUIRED, _REQUIRED + _BOUNDS):
                raise HierarchyError(
                    f"{where}: header: columns {','.join(header)} "
                    "(expected child,parent or child,parent,min,max)"
                )
            continue
        if len(cells) != len(header):
            raise HierarchyError(
                f"{where}: row: {len(cells)} fields (expected {len(header)}: {','.join(header)})"
            )
        child, parent = cells[0].strip(), cells[1].strip()
        if not child:
            raise HierarchyError(f"{where}: child: empty name (expected a node name)")
        lo = hi = math.nan
        if len(header) == 4:
            lo = _number(cells[2], where, "min")
            hi = _number(cells[3], where, "max")
            if not math.isnan(lo) and not math.isnan(hi) and not lo < hi:
                raise HierarchyError(f"{where}: min: min {lo:g} >= max {hi:g} (expected min < max)")
        rows.append(NodeRow(child, parent or None, lo, hi, where=where))
    if header is None:
        raise HierarchyError(f"{p}: empty file (expected a header child,parent[,min,max] and rows)")
    if not rows:
        raise HierarchyError(f"{p.name}: no rows after the header (expected one row per node)")
    return from_rows(rows, source=p.name)
