"""The verifier imports nothing of the anonymizer (issues 13 and 17): checked on the source with ``ast``.

Every import counts: module level, inside functions, under ``TYPE_CHECKING``. A verifier module may
import the standard library, third-party packages, the other verifier modules, ``faers_anon.errors``
(error types) and ``faers_anon.keys`` (the agency's own trusted public key); nothing else of
``faers_anon`` and none of the producer's libraries (``knowledge``, ``hierarchies``, ``signals``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import faers_anon

PACKAGE = Path(faers_anon.__file__).parent
VERIFIER = sorted((PACKAGE / "verify").glob("*.py"))  # every module of the verify package
ALLOWED = {"faers_anon.errors", "faers_anon.keys", "faers_anon.verify",
           *(f"faers_anon.verify.{path.stem}" for path in VERIFIER)}  # fmt: skip
PRODUCER_LIBRARIES = ("knowledge", "hierarchies", "signals")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against faers_anon
                base = "faers_anon" + (f".{base}" if base else "")
            names.add(base)
            if base == "faers_anon":  # `from faers_anon import x` imports the module faers_anon.x
                names.update(f"faers_anon.{alias.name}" for alias in node.names)
    return names


def _forbidden(name: str) -> bool:
    ours = name == "faers_anon" or name.startswith("faers_anon.")
    return (ours and name != "faers_anon" and name not in ALLOWED) or name.split(".")[0] in PRODUCER_LIBRARIES


def test_the_verifier_is_one_package() -> None:
    assert {path.stem for path in VERIFIER} >= {"verifier", "integrity", "models", "classes", "series"}


def test_verifier_imports_nothing_of_the_anonymizer() -> None:
    found = {
        f"verify/{path.name} imports {name}"
        for path in VERIFIER
        for name in _imports(path)
        if _forbidden(name)
    }
    assert found == set()


def test_the_check_sees_every_kind_of_import(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from faers_anon.methods.disassociation import check_km\n"
        "def f():\n    import faers_anon.release.manifest\n    from faers_anon import anonymize\n"
        "from knowledge import value_key_expr\nfrom faers_anon.errors import InputError\n"
    )
    names = _imports(source)
    assert sorted(n for n in names if _forbidden(n)) == [
        "faers_anon.anonymize", "faers_anon.methods.disassociation", "faers_anon.release.manifest",
        "knowledge",
    ]  # fmt: skip
