"""Reading a column-policy file: the bundled default (``faers_anon/data/column_policy.toml``) or a user's.

Two formats, one meaning (docs/formats.md, "Column policy"):

* TOML: ``[<table>]`` tables whose keys are column names and whose values are ``{ role = …,
  hierarchy = …, why = … }`` (or just the role as a string), plus ``[hierarchies.<name>]`` tables
  mapping a value to its parent (a parent goes to ``*``), and optionally ``rejects = "drop"``.
* CSV: a header ``table,column,role`` with optional ``hierarchy`` and ``why`` columns; one row per
  column. Named trees are TOML-only; a CSV may name the built-in hierarchies and the bundled trees.

A user's file overrides the entries it lists and leaves the others at the bundled default.
"""

from __future__ import annotations

import csv
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faers_anon._paths import bundled
from faers_anon.errors import InputError

__all__ = [
    "ROLES",
    "BUILTIN_HIERARCHIES",
    "OUTCOME_HIERARCHIES",
    "DEFAULT_POLICY_FILE",
    "Entry",
    "PolicyFile",
    "read_policy_file",
]

ROLES: tuple[str, ...] = ("id", "qid", "sensitive", "keep", "drop", "restricted")
"""Roles of a column (the bundled file's header explains each)."""

OUTCOME_HIERARCHIES: tuple[str, ...] = ("outcome", "seriousness", "death")
"""Hierarchies of the derived DEMO column ``outcome`` only
(:mod:`faers_anon.io.qid_fields`, docs/outcomes.md)."""

BUILTIN_HIERARCHIES: tuple[str, ...] = ("engine", "date", "value", *OUTCOME_HIERARCHIES)
"""Hierarchies every policy may name; ``[hierarchies.<name>]`` trees add to them."""

DEFAULT_POLICY_FILE = bundled("column_policy.toml")


@dataclass(frozen=True, slots=True)
class Entry:
    """One column's declared role, its hierarchy (role ``qid`` only) and the reason."""

    role: str
    hierarchy: str | None = None
    why: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class PolicyFile:
    """The content of one policy file: entries per table and column, named trees, rejects action."""

    entries: dict[str, dict[str, Entry]]
    trees: dict[str, dict[str, str]]
    rejects: str | None = None


def _entry(value: Any, *, path: Path, where: str, line: int | None = None) -> Entry:
    if isinstance(value, str):
        value = {"role": value}
    if not isinstance(value, Mapping):
        raise InputError(
            f"{where}: expected a role or a table with role, hierarchy, why", path=path, line=line
        )
    unknown = sorted(set(value) - {"role", "hierarchy", "why"})
    if unknown:
        raise InputError(
            f"{where}: unknown key(s) {unknown} (expected role, hierarchy, why)", path=path, line=line
        )
    role = str(value.get("role") or "").strip()
    if role not in ROLES:
        raise InputError(f"{where}: role {role!r} (expected one of {', '.join(ROLES)})", path=path, line=line)
    hierarchy = str(value.get("hierarchy") or "").strip() or None
    if role == "qid" and hierarchy is None:
        raise InputError(f"{where}: a qid needs a hierarchy (e.g. date, value)", path=path, line=line)
    if role != "qid" and hierarchy is not None:
        raise InputError(f"{where}: only a qid has a hierarchy (role {role})", path=path, line=line)
    return Entry(role=role, hierarchy=hierarchy, why=str(value.get("why") or ""))


def _read_toml(path: Path) -> PolicyFile:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"unreadable column policy ({exc})", path=path) from exc
    trees: dict[str, dict[str, str]] = {}
    for name, tree in (data.pop("hierarchies", None) or {}).items():
        if not isinstance(tree, Mapping) or not all(isinstance(v, str) for v in tree.values()):
            raise InputError(f"hierarchies.{name}: expected value = \"parent\" pairs", path=path)
        trees[str(name)] = {str(k): v for k, v in tree.items()}
    rejects = data.pop("rejects", None)
    entries: dict[str, dict[str, Entry]] = {}
    for table, columns in data.items():
        if not isinstance(columns, Mapping):
            raise InputError(f"{table}: expected a table of columns", path=path)
        entries[str(table)] = {
            str(c): _entry(v, path=path, where=f"{table}.{c}") for c, v in columns.items()
        }
    return PolicyFile(entries=entries, trees=trees, rejects=None if rejects is None else str(rejects))


def _read_csv(path: Path) -> PolicyFile:
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(line for line in handle if not line.startswith("#")))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"unreadable column policy ({exc})", path=path) from exc
    if not rows:
        raise InputError("empty column policy (expected a header table,column,role)", path=path)
    header = [h.strip().lower() for h in rows[0]]
    for name in ("table", "column", "role"):
        if name not in header:
            raise InputError("missing column", path=path, field=name)
    entries: dict[str, dict[str, Entry]] = {}
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        cells = dict(zip(header, (cell.strip() for cell in row), strict=False))
        table, column = cells.get("table", ""), cells.get("column", "")
        if not table or not column:
            raise InputError("table and column are required", path=path, line=number)
        given = {k: cells[k] for k in ("role", "hierarchy", "why") if cells.get(k)}
        entries.setdefault(table.lower(), {})[column.lower()] = _entry(
            given, path=path, where=f"{table}.{column}", line=number
        )
    return PolicyFile(entries=entries, trees={})


def read_policy_file(path: Path) -> PolicyFile:
    """A TOML (``.toml``) or CSV (any other suffix) policy file.

    Raises:
        InputError: unreadable file, unknown role or key, a qid without hierarchy (naming file, line
            for CSV, and the ``table.column``).
    """
    if not path.is_file():
        raise InputError("missing column policy file", path=path)
    return _read_toml(path) if path.suffix.lower() == ".toml" else _read_csv(path)
