"""--help sends users to docs/formats.md for every file format (never to a Python module); the doc has
a section per format; the README's table of release defaults is the code's."""

from __future__ import annotations

import re
from pathlib import Path

import click
from click.testing import CliRunner

from faers_anon.cli import cli
from faers_anon.release.config import RELEASE_OPTIONS, build_release_config

ROOT = Path(__file__).resolve().parents[2]
FORMAT_WORDS = ("CSV", "TSV", "TOML", "JSON", "θ-file", "class file", "Value-class")


def _file_options() -> list[tuple[str, str, str]]:
    """(command, option, help) of every option that takes a file whose help names a format."""
    found = []
    for name, command in cli.commands.items():
        for param in command.params:
            text = getattr(param, "help", None) or ""
            if isinstance(param.type, click.Path) and any(word in text for word in FORMAT_WORDS):
                found.append((name, param.opts[-1], text))
    return found


def test_every_help_naming_a_file_format_points_to_docs_formats() -> None:
    options = _file_options()
    names = {option for _, option, _ in options}
    assert {"--config", "--theta-file", "--knowledge", "--classes", "--reference"} <= names
    assert [(c, o) for c, o, text in options if "docs/formats.md" not in text] == []


def test_no_help_names_a_python_module() -> None:
    runner = CliRunner()
    for name in cli.commands:
        output = runner.invoke(cli, [name, "--help"], terminal_width=200).output
        assert "faers_anon." not in output and "Usage:" in output, name


def test_the_formats_doc_has_a_section_per_format() -> None:
    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    for needed in ("release.toml", "θ-file", "Knowledge table E", "The release folder", "ingest_report.json"):
        assert any(needed in heading for heading in headings), needed
    for key in RELEASE_OPTIONS:  # every TOML key is documented
        assert f"`{key.replace('_', '-')}`" in text, key
    for name in ("thresholds.csv", "knowledge.csv", "manifest.json", "report.json", "rejects/"):
        assert name in text


def _readme_defaults() -> dict[str, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("Defaults of `release`", 1)[1].split("\n\n", 2)[1]
    rows = [line.split("|")[1:3] for line in block.splitlines() if line.startswith("| `--")]
    return {option.strip().strip("`"): default.strip() for option, default in rows}


def test_the_readme_states_release_defaults_as_the_code_has_them() -> None:
    config = build_release_config(file_options=None, flag_options={})
    anonymize, signals = config.anonymize, config.compare.signals
    expected: dict[str, str | int | float] = {
        "--model": anonymize.model,
        "--k": anonymize.k,
        "--theta": anonymize.theta,
        "--theta-slope": anonymize.frequency_slope,
        "--sensitive": ",".join(anonymize.sensitive),
        "--on-infeasible": anonymize.on_infeasible,
        "--seed": anonymize.seed,
        "--role": signals.role,
        "--stratify": ",".join(signals.stratify),
        "--condition": ", ".join(f"`{c}`" for c in signals.conditions),
        "--min-a": signals.min_a,
        "--criterion": config.compare.criterion,
    }
    stated = _readme_defaults()
    for option, value in expected.items():
        cell = stated[option]
        if isinstance(value, int | float):
            assert float(cell.split()[0].strip("`")) == value, option
        else:
            assert cell.startswith(value if str(value).startswith("`") else f"`{value}`"), (option, cell)
    assert anonymize.theta_rule == "uniform" and stated["--theta-rule"].startswith("`level` with")
