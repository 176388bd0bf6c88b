"""No command deletes or overwrites an input; ``--force`` replaces only an earlier release (issue 12, 1).

Every refusal is checked through the CLI: exit 1, one ``Error:`` line naming the output and the input,
and the whole temporary tree byte for byte as it was (nothing was written).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from faers_anon.cli import cli
from faers_anon.errors import OutputError
from faers_anon.io import targets as _targets
from faers_anon.io.ingest import demo_source


def _tree(root: Path) -> dict[str, str]:
    """Every path under ``root`` (hidden ones too) with the SHA-256 of its bytes ("dir" for folders)."""
    return {
        str(p.relative_to(root)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
    }


def refusal(root: Path, args: list[str], env: dict[str, str] | None = None) -> str:
    """Run ``args``: it must exit 1 with one Error line, no traceback, and ``root`` unchanged; the line."""
    before = _tree(root)
    result = CliRunner().invoke(cli, args, env=env)
    lines = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert result.exit_code == 1, result.output
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert _tree(root) == before
    return lines[0]


def names_all(line: str, *named: str) -> bool:
    """Whether the Error line names every piece of ``named`` (the file, the option, the reason)."""
    return all(name in line for name in named)


@pytest.fixture()
def par(tmp_path: Path) -> Path:
    """``par/raw/faers_ascii_2025q1.zip`` (the demo quarter) and a drug-name file ``par/names.tsv``."""
    raw = tmp_path / "par" / "raw"
    raw.mkdir(parents=True)
    shutil.copyfile(demo_source(), raw / demo_source().name)
    (tmp_path / "par" / "names.tsv").write_text("name\tsubstance\nADVIL\tIBUPROFEN\n")
    return tmp_path / "par"


def test_release_into_its_source_is_refused(par: Path) -> None:
    raw, zip_ = par / "raw", str(par / "raw" / demo_source().name)
    cases = [
        ([str(raw), "-o", str(raw)], "is the input"),
        ([str(raw), "-o", str(par)], "contains the input"),
        ([zip_, "-o", str(raw)], "contains the input"),  # the zip's folder
        ([str(raw), "-o", str(raw / "release")], "lies inside the input"),
        ([str(raw), "-o", f"{raw}/../raw"], "is the input"),
    ]
    for args, how in cases:
        line = refusal(par.parent, ["release", *args, "--force"])
        assert names_all(line, args[-1], args[0], how), line
        assert "nothing was written" in line
    out = par.parent / "out"
    out.mkdir()
    shutil.copyfile(par / "names.tsv", out / "names.tsv")  # an option's file inside OUT
    args = ["release", str(raw), "-o", str(out), "--force", "--drug-names", str(out / "names.tsv")]
    assert names_all(refusal(par.parent, args), "contains the input")
    (out / "release.toml").write_text("[release]\nk = 5\n")
    args = ["release", str(raw), "-o", str(out), "--force", "--config", str(out / "release.toml")]
    assert names_all(refusal(par.parent, args), "contains the input", "release.toml")


def test_the_agency_key_is_an_input(par: Path) -> None:
    out = par.parent / "out"
    key = out / "agency.key"  # not created yet: it would be created inside (and published with) OUT
    args = ["release", str(par / "raw"), "-o", str(out), "--key-file", str(key)]
    assert names_all(refusal(par.parent, args), str(key))
    (par.parent / "ing").mkdir()
    env = {"FAERS_ANON_KEY_FILE": str(par / "keys" / "agency.key")}
    args = ["anonymize", str(par.parent / "ing"), "-o", str(par / "keys"), "--force"]
    assert names_all(refusal(par.parent, args, env=env), "contains the input", "agency.key")


def test_symlinked_output_is_resolved(par: Path) -> None:
    link = par.parent / "link"
    link.symlink_to(par, target_is_directory=True)
    into_link = ["release", str(par / "raw"), "-o", str(link), "--force"]
    assert names_all(refusal(par.parent, into_link), str(link), "contains")
    through_link = ["release", str(link / "raw"), "-o", str(par / "raw"), "--force"]
    assert names_all(refusal(par.parent, through_link), "is the input")


def test_case_folding_platforms_compare_folded_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "raw").mkdir()
    _targets.check_outputs([tmp_path / "RAW"], [tmp_path / "raw"])  # POSIX: two folders
    monkeypatch.setattr(_targets.os.path, "normcase", lambda p: os.fspath(p).lower())  # as on Windows
    with pytest.raises(OutputError, match="is the input"):
        _targets.check_outputs([tmp_path / "RAW"], [tmp_path / "raw"])


def test_force_replaces_only_an_earlier_release(par: Path) -> None:
    notes = par.parent / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("not a release")
    line = refusal(par.parent, ["release", str(par / "raw"), "-o", str(notes), "--force"])
    assert names_all(line, str(notes), "not a faers-anon release", "even with --force"), line
    (notes / "manifest.json").write_text(json.dumps({"tool": {"name": "other"}, "outputs": {}}))
    for command in (["release", str(par / "raw")], ["anonymize", str(par)]):
        assert names_all(
            refusal(par.parent, [*command, "-o", str(notes), "--force"]), "not a faers-anon release"
        )


def test_work_dir_inside_the_output_or_a_source_is_refused(
    par: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, work = par.parent / "out", par.parent / "out" / "w"
    args = ["release", str(par / "raw"), "-o", str(out), "--work-dir", str(work)]
    assert names_all(refusal(par.parent, args), f"work folder {work} (--work-dir) is or lies inside {out}")
    monkeypatch.setattr(tempfile, "tempdir", str(par / "raw"))  # $TMPDIR inside the source folder
    args = ["release", str(par), "-o", str(out)]
    assert names_all(refusal(par.parent, args), f"work folder {par / 'raw'} (the system temp")


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ingest") / "ing"
    result = CliRunner().invoke(cli, ["ingest", "--demo", "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_ingest_over_an_earlier_ingest_through_dotdot(ingested: Path) -> None:
    before = (ingested / "ingest_report.json").stat().st_mtime_ns
    result = CliRunner().invoke(cli, ["ingest", "--demo", "-o", f"{ingested}/../{ingested.name}"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and result.exception is None
    assert (ingested / "ingest_report.json").stat().st_mtime_ns > before  # replaced, not deleted
    assert sorted(p.name for p in ingested.parent.iterdir()) == ["ing"]  # no .ing.partial, no staging


def test_ingest_into_a_previous_ingest_holding_its_source_is_refused(par: Path) -> None:
    (par / "ingest_report.json").write_text("{}")  # par looks like an earlier ingest and holds raw/
    assert names_all(
        refusal(par.parent, ["ingest", str(par / "raw"), "-o", str(par)]), str(par), "contains the input"
    )
    assert names_all(
        refusal(par.parent, ["ingest", str(par / "raw"), "-o", str(par / "raw")]), "is the input"
    )


def test_other_writing_commands_refuse_their_inputs(ingested: Path, tmp_path: Path) -> None:
    root = ingested.parent
    reports = str(ingested / "reports.parquet")
    assert names_all(
        refusal(root, ["anonymize", str(ingested), "-o", str(ingested), "--force"]), "is the input"
    )
    assert names_all(
        refusal(root, ["anonymize", str(ingested), "-o", str(ingested / "rel"), "--force"]), "lies inside"
    )
    assert names_all(
        refusal(root, ["signals", str(ingested), "-o", reports]), reports, "lies inside the input"
    )
    assert names_all(
        refusal(root, ["compare", str(ingested), str(ingested), "-o", str(root)]), "contains the input"
    )
    assert names_all(refusal(root, ["evaluate", str(ingested), "-o", str(root)]), "contains the input")
    assert names_all(
        refusal(root, ["risk", str(ingested), "-o", str(ingested / "risk.json")]), "lies inside the input"
    )
    assert os.listdir(root) == ["ing"]
