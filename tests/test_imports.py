"""Issue 13: the import graph of faers_anon has no cycle of any kind.

Every import counts: module level, inside a function, under ``if TYPE_CHECKING:``. An edge goes from
the importing module to the most specific module it names: ``from faers_anon.anonymize import config``
resolves to ``faers_anon.anonymize.config`` when that module exists, else to the package
``faers_anon.anonymize`` (its ``__init__``). Parent packages executed as a side effect of an import are
not edges (a package's ``__init__`` may re-export its modules without making a cycle).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "faers_anon"


def module_name(path: Path, root: Path = REPO) -> str:
    """The dotted name of a file: ``faers_anon/io/cases.py`` → ``faers_anon.io.cases``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(name: str, modules: set[str]) -> str | None:
    """The longest prefix of ``name`` that is a module of the package, or None (third party)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def _targets(node: ast.AST, here: str, is_package: bool, modules: set[str]) -> Iterator[str]:
    """The package modules one import statement names."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            target = _resolve(alias.name, modules)
            if target:
                yield target
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = here.split(".") if is_package else here.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            stem = ".".join([*base, node.module] if node.module else base)
        else:
            stem = node.module or ""
        for alias in node.names:
            target = _resolve(f"{stem}.{alias.name}", modules)
            if target:
                yield target


def import_graph(root: Path = REPO, package: str = PACKAGE) -> dict[str, set[str]]:
    """Module → the package modules it imports anywhere in its source (self-edges dropped)."""
    files = {module_name(p, root): p for p in sorted((root / package).rglob("*.py"))}
    modules = set(files)
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_package = path.name == "__init__.py"
        edges = {t for node in ast.walk(tree) for t in _targets(node, name, is_package, modules)}
        graph[name] = edges - {name}
    return graph


def find_cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One cycle as a closed path [a, b, ..., a], or None; iterative depth-first search."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    for start in sorted(graph):
        if start in state:
            continue
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state.get(child) == 1:
                path = [n for n, _ in stack]
                return [*path[path.index(child) :], child]
            elif child not in state:
                state[child] = 1
                stack.append((child, iter(sorted(graph.get(child, ())))))
    return None


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    """A function-level and a TYPE_CHECKING import each make an edge; `from pkg import mod` is the module."""
    pkg = tmp_path / "p"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("X = 1\n")
    (pkg / "sub" / "a.py").write_text("def f():\n    from p.sub import b\n")
    (pkg / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import Y\n"
    )
    (pkg / "sub" / "c.py").write_text("import numpy\nfrom p.sub import X\nfrom . import a\n")
    graph = import_graph(tmp_path, "p")
    assert graph["p.sub.a"] == {"p.sub.b"}
    assert graph["p.sub.b"] == {"p.sub.c"}
    assert graph["p.sub.c"] == {"p.sub", "p.sub.a"}
    assert find_cycle(graph) == ["p.sub.a", "p.sub.b", "p.sub.c", "p.sub.a"]


def test_faers_anon_has_no_import_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])


def definitions(root: Path = REPO, package: str = PACKAGE) -> dict[str, list[str]]:
    """Top-level name → the modules that define it (a ``def``, a ``class`` or an assignment).

    An assignment of another name (``QIDS = QID_COLUMNS``) is an alias, not a definition.
    """
    found: dict[str, list[str]] = {}
    for path in sorted((root / package).rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                names = [node.name]
            elif isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(
                node.value, ast.Name | ast.Attribute
            ):
                continue
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            else:
                continue
            for name in names:
                found.setdefault(name, []).append(module_name(path, root))
    return found


# Issue 13, "one definition per concept": the QIDs and their trees, the released columns and their
# grouping, the views of a partition, DR and the run's metrics, the JSON sanitizer. The verifier keeps
# its own copies on purpose (it imports nothing of the producer) and is left out.
ONE_DEFINITION = {
    "QIDS": "faers_anon.algorithms.types",
    "QidHierarchies": "faers_anon.algorithms.types",
    "PARTITION_SCHEMA": "faers_anon.anonymize.partition",
    "QID_COLUMNS": "faers_anon.anonymize.partition",
    "released_groups": "faers_anon.anonymize.partition",
    "unit_view": "faers_anon.anonymize.partition",
    "case_members": "faers_anon.anonymize.partition",
    "dangerous_groups": "faers_anon.anonymize.metrics",
    "dangerous_ratio": "faers_anon.anonymize.metrics",
    "measure": "faers_anon.anonymize.metrics",
    "json_data": "faers_anon.json_data",
}


def test_one_definition_per_concept() -> None:
    found = definitions()
    for name, home in ONE_DEFINITION.items():
        where = [m for m in found.get(name, []) if not m.startswith("faers_anon.verify")]
        assert where == [home], (name, where)
    for gone in ("QidTrees", "anonymize_with_method"):  # the methods' copy, the second orchestrator
        assert gone not in found, (gone, found[gone])
