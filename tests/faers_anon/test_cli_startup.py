"""Start-up of the ``faers-anon`` command (issue 18 item 6): a command's modules are imported only when
that command runs or shows its help; what the user sees is what the eager group showed."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from faers_anon.cli import COMMANDS, FaersAnonGroup, LazyCommands, cli, user_errors
from faers_anon.errors import FaersAnonError

HEAVY = ("polars", "numba", "scipy", "matplotlib", "signals", "faers_anon.release.options")


def _imported(*argv: str) -> tuple[int, set[str]]:
    """Run the console script's entry point in a fresh interpreter: its exit code and the heavy
    modules (:data:`HEAVY`, or any of their submodules) it imported."""
    code = (
        "import json, sys\n"
        f"sys.argv = ['faers-anon', *{list(argv)!r}]\n"
        "from faers_anon.__main__ import main\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    code = exit.code\n"
        f"heavy = sorted({{m.split('.')[0] if m.split('.')[0] != 'faers_anon' else m for m in sys.modules"
        f" if m.startswith({HEAVY!r})}})\n"
        "print(json.dumps([code, heavy]), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    exit_code, heavy = json.loads(done.stderr.splitlines()[-1])
    return exit_code, set(heavy)


@pytest.mark.parametrize("argv", [("--version",), ("--help",), ("verify", "--help"), ("risk", "--help")])
def test_version_and_help_import_no_heavy_module(argv: tuple[str, ...]) -> None:
    exit_code, heavy = _imported(*argv)
    assert exit_code == 0
    assert heavy == set()  # before: polars, numba, scipy, matplotlib, signals and the option table


def test_a_command_imports_what_it_needs_when_it_runs() -> None:
    exit_code, heavy = _imported("release", "--help")
    assert exit_code == 0
    assert {"faers_anon.release.options", "polars", "signals"} <= heavy


def _eager_group() -> click.Group:
    """The group as it was: every command imported and added up front."""
    group = FaersAnonGroup(name="cli", help=cli.help, params=cli.params)
    group.commands = {name: LazyCommands(COMMANDS)[name] for name in COMMANDS}
    return group


@pytest.mark.parametrize("width", [50, 80, 200])
def test_the_group_help_is_the_one_click_prints_from_the_commands(width: int) -> None:
    lazy = CliRunner().invoke(cli, ["--help"], terminal_width=width, prog_name="faers-anon")
    eager = CliRunner().invoke(_eager_group(), ["--help"], terminal_width=width, prog_name="faers-anon")
    assert lazy.exit_code == eager.exit_code == 0
    assert lazy.output == eager.output
    listing = lazy.output.split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listing] == sorted(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_summary_is_the_first_paragraph_of_the_commands_help(name: str) -> None:
    command = LazyCommands(COMMANDS)[name]
    assert command.name == name
    assert command.short_help is None  # the listing is made from the help
    assert " ".join((command.help or "").partition("\n\n")[0].split()) == COMMANDS[name].summary


def test_lazy_commands_import_only_on_lookup() -> None:
    where = {"known": COMMANDS["verify"]._replace(module="no_such_module_for_this_test")}
    commands = LazyCommands(where)
    assert list(commands) == ["known"] and "known" in commands and len(commands) == 1
    assert "other" not in commands and commands.get("other") is None
    with pytest.raises(ModuleNotFoundError):
        commands["known"]  # a broken command module is an error, not "no such command"
    commands["added"] = click.Command("added")
    assert list(commands) == ["known", "added"] and commands["added"].name == "added"


def test_user_errors_are_the_bases_of_the_libraries_imported() -> None:
    import signals.errors

    found = user_errors()
    assert found[0] is FaersAnonError and signals.errors.SignalsError in found
    assert all(issubclass(kind, Exception) for kind in found)


def test_the_release_pipeline_leaves_the_later_stages_modules_for_beside_the_engine() -> None:
    from faers_anon.release.pipeline import LATER_MODULES

    code = (
        "import json, sys\n"
        "import faers_anon.release.pipeline\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m in {[*LATER_MODULES, 'matplotlib']!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == []  # before: all of them, before ingest began
    assert "matplotlib" not in LATER_MODULES and "faers_anon.release.report" in LATER_MODULES


def test_the_command_freezes_the_heap_before_it_exits() -> None:
    # A fresh interpreter: after the command, the objects alive are frozen (gc.freeze), so the
    # interpreter's exit does not walk them again (0.25-0.35 CPU-s of an ingest's exit).
    code = (
        "import gc, sys\n"
        "sys.argv = ['faers-anon', '--version']\n"
        "from faers_anon.__main__ import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(gc.get_freeze_count(), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(done.stderr.split()[-1]) > 1000
