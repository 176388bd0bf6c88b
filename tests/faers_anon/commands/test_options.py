"""The signal options of `signals`, `compare` and `release` come from the one option table (issue 13)."""

from __future__ import annotations

import click
import pytest

from faers_anon.cli import cli
from faers_anon.commands.options import SIGNAL_OPTIONS
from signals import CRITERIA


def _param(command: str, name: str) -> click.Option:
    (found,) = [p for p in cli.commands[command].params if p.name == name]
    assert isinstance(found, click.Option)
    return found


@pytest.mark.parametrize("name", SIGNAL_OPTIONS)
def test_signals_compare_and_release_share_each_signal_option(name: str) -> None:
    release = _param("release", name)
    for command in ("signals", "compare"):
        option = _param(command, name)
        assert (option.opts, option.help, option.multiple) == (release.opts, release.help, release.multiple)
        # unset: the command's own config supplies the default (signals and compare differ)
        assert option.multiple or option.default is None, (command, name)


@pytest.mark.parametrize("name", ["criterion", "reference", "outcome_groups"])
def test_compare_and_release_share_the_comparison_options(name: str) -> None:
    compare, release = _param("compare", name), _param("release", name)
    assert (compare.opts, compare.help, compare.default) == (release.opts, release.help, release.default)


def test_every_criterion_is_offered_to_both() -> None:
    """The release refused `--criterion eb` that compare accepted (the two lists had drifted)."""
    for command in ("compare", "release"):
        kind = _param(command, "criterion").type
        assert isinstance(kind, click.Choice) and list(kind.choices) == list(CRITERIA)


def test_evaluate_takes_the_work_folder_option_of_release() -> None:
    work, release = _param("evaluate", "work"), _param("release", "work")
    assert (work.opts, work.help) == (release.opts, release.help)
