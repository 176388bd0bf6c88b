"""Issue 13: methods declare their capabilities (as models declare Requirements); no caller names one.

Outside ``faers_anon/methods/`` no code (docstrings and comments do not count) holds a method's
registry name as a string, and no module imports a method's own module (the one defining its run
function): a caller reaches a method through :data:`faers_anon.methods.METHODS` and its
:class:`~faers_anon.methods.Capabilities`. ``faers_anon/verify/`` is exempt on purpose: the verifier is
independent of the producer, reads the method's name from manifest.json and keeps its own rules per
method.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.method_run import method_config
from faers_anon.methods import METHODS, Capabilities
from faers_anon.models import make_model

PACKAGE = Path(__file__).resolve().parents[3] / "faers_anon"
EXEMPT = ("methods", "verify")
METHOD_MODULES = {m.run.__module__ for m in METHODS.values()}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes (module, class, function)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def method_mentions(path: Path) -> list[str]:
    """Where the code of one file names a method: a string constant or an import of its module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in docs and node.value in METHODS:
            found.append(f"{path.name}:{node.lineno}: {node.value!r}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            found += [f"{path.name}:{node.lineno}: imports {n}" for n in sorted(names & METHOD_MODULES)]
        elif isinstance(node, ast.Import):
            found += [
                f"{path.name}:{node.lineno}: imports {a.name}" for a in node.names if a.name in METHOD_MODULES
            ]
    return found


def test_the_scan_sees_a_name_and_an_import_but_not_a_docstring(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(
        '"""Releases with ``disassociation``."""\n'
        "from faers_anon.methods import disassociation\n"
        "def f(name):\n"
        '    """kl-anonymity."""\n'
        '    return name == "kl-anonymity"  # disassociation\n'
    )
    assert method_mentions(path) == [
        "m.py:2: imports faers_anon.methods.disassociation",
        "m.py:5: 'kl-anonymity'",
    ]


def test_no_module_outside_methods_names_a_method() -> None:
    files = [p for p in sorted(PACKAGE.rglob("*.py")) if p.relative_to(PACKAGE).parts[0] not in EXEMPT]
    assert len(files) > 50
    found = [hit for path in files for hit in method_mentions(path)]
    assert found == []


def test_capabilities_pass_on_exactly_the_declared_options() -> None:
    """Hand-worked: the run's k 7, seed 3, sensitive (reactions, diseases)."""
    run: dict[str, Any] = {"k": 7, "seed": 3, "sensitive": ("reactions", "diseases")}
    assert Capabilities().options(**run) == {}
    assert Capabilities(group_size=True, seeded=True).options(**run) == {"k": 7, "seed": 3}
    assert Capabilities(sensitive_lists=True).options(**run) == {"sensitive": ("reactions",)}
    only_diseases = {**run, "sensitive": ("diseases",)}
    assert Capabilities(sensitive_lists=True).options(**only_diseases) == {
        "sensitive": ("indications", "reactions")
    }


@pytest.mark.parametrize("name", sorted(METHODS))
def test_a_method_gets_the_runs_k_only_when_k_is_its_group_size(name: str) -> None:
    method = METHODS[name]
    config: Any = method_config(name, AnonymizeConfig(method=name, k=9, seed=4))
    default: Any = method.config_type()
    assert isinstance(config, method.config_type)
    if method.capabilities.group_size:
        assert config.k == 9
    elif hasattr(default, "k"):
        assert config.k == default.k
    if method.capabilities.seeded:
        assert config.seed == 4


def test_only_a_method_with_an_item_form_replaces_the_item_tables() -> None:
    forms = {name for name, m in METHODS.items() if m.capabilities.item_form is not None}
    assert forms == {"disassociation"}
    form = METHODS["disassociation"].capabilities.item_form
    assert form is not None and form.signals_role == "any" and "reconstruction" in form.signals_note


def test_a_model_with_one_bound_says_so_in_its_requirements() -> None:
    uniform = {
        name
        for name in ("k-anonymity", "alpha-k-anonymity", "ms-k-theta", "l-diversity", "xy-anonymity")
        if make_model(name, k=5, thetas={"A": 0.5}).requirements().uniform_bound
    }
    assert uniform == {"alpha-k-anonymity"}
