"""SPEC §2: the three libraries import neither faers_anon nor each other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LIBRARIES = ("hierarchies", "knowledge", "signals")
ALLOWED_THIRD_PARTY = {
    "hierarchies": {"numpy"},
    "knowledge": {"polars", "numpy"},
    "signals": {"polars", "numpy", "scipy", "statsmodels"},
}
PROJECT = {"faers_anon", *LIBRARIES}


def _imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("library", LIBRARIES)
def test_library_imports_point_one_way(library: str) -> None:
    files = sorted((REPO / library).rglob("*.py"))
    assert files, f"{library} has no modules"
    for path in files:
        roots = _imported_roots(path)
        foreign = (roots & PROJECT) - {library}
        assert not foreign, f"{path.relative_to(REPO)} imports {sorted(foreign)}"
        import sys

        third = {r for r in roots - PROJECT if r not in sys.stdlib_module_names}
        assert third <= ALLOWED_THIRD_PARTY[library], (
            f"{path.relative_to(REPO)} imports {sorted(third - ALLOWED_THIRD_PARTY[library])}"
        )
