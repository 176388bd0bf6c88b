"""Issue 13: every option is declared once (faers_anon/release/options.py) and its flag, TOML key and
config field come from that one entry, so they cannot drift (``qids``, ``candidates``, ``scan_limit``,
``protect_outcomes`` and ``outcome_groups`` had a TOML key and no flag; ``--measures`` had a flag and
no TOML key)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.cli import cli
from faers_anon.io.ingest import IngestConfig
from faers_anon.release.config import (
    RELEASE_OPTIONS,
    ReleaseConfig,
    build_release_config,
    default_of,
    load_toml,
)
from faers_anon.release.options import OPTIONS

NOT_OPTIONS = {
    ("anonymize", "frozen"): "internal: set by the series step, never by a user",
    ("anonymize", "earlier_knowledge"): "internal: set by the series step, never by a user",
    ("anonymize", "republish"): "internal: the release's republish setting, stated in the manifest",
    ("anonymize", "force"): "release: ReleaseConfig.force; anonymize: its own --force",
    ("ingest", "work_dir"): "release: ReleaseConfig.work; ingest: its own --work-dir",
}
SECTIONS = {
    "anonymize": AnonymizeConfig,
    "ingest": IngestConfig,
    "release": ReleaseConfig,
}


def _entries(section: str, field: str) -> list[str]:
    return [o.name for o in OPTIONS.values() if (o.section, o.field) == (section, field)]


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_every_config_field_is_exactly_one_option(section: str) -> None:
    own = {"anonymize", "ingest", "compare"} if section == "release" else set()
    for f in dataclasses.fields(SECTIONS[section]):
        if (section, f.name) in NOT_OPTIONS or f.name in own:
            continue
        assert len(_entries(section, f.name)) == 1, (section, f.name)


def _params(command: str) -> dict[str, click.Parameter]:
    return {p.name: p for p in cli.commands[command].params if p.name is not None}


def test_every_option_has_exactly_one_flag_and_one_toml_key() -> None:
    release = _params("release")
    anonymize = _params("anonymize")
    assert set(RELEASE_OPTIONS) == set(OPTIONS)  # the TOML keys
    for name, option in OPTIONS.items():
        param = release[name]  # one click parameter per option, named like the config field
        assert [o for o in param.opts if o.startswith("--")][: len(option.flag_names)] == list(
            option.flag_names
        )
        assert param.help == option.help
        if option.section == "anonymize":
            assert anonymize[name].opts == param.opts and anonymize[name].help == option.help
    flags = [o for p in release.values() for o in p.opts]
    assert len(flags) == len(set(flags))


def test_shown_defaults_are_the_config_dataclasses() -> None:
    release = _params("release")
    assert release["k"].default == default_of(OPTIONS["k"]) == AnonymizeConfig().k
    assert release["sensitive"].default == ",".join(AnonymizeConfig().sensitive)
    assert release["candidates"].default == AnonymizeConfig().candidates
    assert release["protect_outcomes"].default is True


def test_a_toml_key_and_its_flag_give_the_same_config(tmp_path: Path) -> None:
    toml = tmp_path / "release.toml"
    toml.write_text(
        'qids = ["age", "sex"]\ncandidates = 8\nscan-limit = 16\nprotect-outcomes = false\n', encoding="utf-8"
    )
    from_file = build_release_config(file_options=load_toml(toml))
    from_flags = build_release_config(
        flag_options={"qids": ("age", "sex"), "candidates": 8, "scan_limit": 16, "protect_outcomes": False}
    )
    assert from_file == from_flags
    assert (from_file.anonymize.qids, from_file.anonymize.scan_limit) == (("age", "sex"), 16)


def test_options_without_a_place_in_a_release_are_not_release_flags() -> None:
    """--measures and --ebgm-prior were release flags that always failed ("unknown option")."""
    result = CliRunner().invoke(cli, ["release", "--demo", "-o", "x", "--measures", "all"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: No such option '--measures'")
