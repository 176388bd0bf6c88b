"""`faers-anon release`: end to end on the demo quarter, atomicity, one-line errors, reproducibility."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

import signals
from faers_anon.api import release_config
from faers_anon.cli import cli
from faers_anon.errors import ConfigError, InputError, VerificationError
from faers_anon.io.ingest import demo_source, ingest_quarters
from faers_anon.release.config import ReleaseConfig, build_release_config, load_toml
from faers_anon.release.manifest import fingerprint, read_manifest, sha256_file
from faers_anon.release.pipeline import release
from faers_anon.synthetic import make_quarter, write_quarter
from faers_anon.verify import verifier

TABLES = ("reports", "drug", "reac", "indi", "outc", "ther", "rpsr")
RELEASED = {"reports": "demo"}


@pytest.fixture(scope="module")
def demo_release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("demo") / "release"
    result = CliRunner().invoke(cli, ["release", "--demo", "-o", str(out), "--theta", "0.4", "--seed", "3"])
    return out, result.output


@pytest.fixture(scope="module")
def small_quarter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("q") / "quarter"
    write_quarter(make_quarter(400, seed=11, quarter="2024Q2"), folder)
    return folder


def _config(**flags: object) -> ReleaseConfig:
    return build_release_config(flag_options={"theta": 0.4, "on_infeasible": "raise-theta", **flags})


def test_demo_release_verifies_and_shows_progress(demo_release: tuple[Path, str]) -> None:
    out, output = demo_release
    for stage in ("ingest", "anonymize", "verify", "signals", "report"):
        assert f"[{stage}]" in output
    assert "verified: MS(k=5, θ*)-bounding holds" in output
    result = CliRunner().invoke(cli, ["verify", str(out)])
    assert result.exit_code == 0, result.output
    assert {p.name for p in out.iterdir()} >= {
        "ascii", "parquet", "rejects", "knowledge.csv", "thresholds.csv",
        "manifest.json", "report.json", "report.html",
    }  # fmt: skip
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no staging or work left


def test_demo_release_accounts_for_every_input_row(demo_release: tuple[Path, str]) -> None:
    out, _ = demo_release
    report = json.loads((out / "report.json").read_text())
    written = json.loads((out / "manifest.json").read_text())["counts"]
    for table in TABLES:
        counts = report["counts"]["tables"][table]
        name = RELEASED.get(table, table)
        released = pl.read_parquet(out / "parquet" / f"{name}.parquet").height
        assert counts["read"] == written[name]["rows_in"] + counts["quarantined"] + counts["deleted"], table
        assert written[name]["rows_out"] == released, table
        # OUTC holds the codes each case's released outcome makes certain (docs/formats.md, the OUTC set)
        left = written[name]["superseded_left_out"]  # a case's reports past its group's count (versions)
        assert (released == written[name]["rows_in"] - left) or name == "outc", table
    counts = report["counts"]
    assert (
        counts["reports_read"]
        == counts["reports_out"]
        + counts["reports_quarantined"]
        + counts["reports_deleted"]
        + counts["reports_superseded_left_out"]
    )


def test_demo_report_holds_the_key_figures(demo_release: tuple[Path, str]) -> None:
    out, _ = demo_release
    report = json.loads((out / "report.json").read_text())
    page = (out / "report.html").read_text()
    privacy, utility = report["privacy"], report["utility"]
    assert privacy["dr"] == 0.0 and privacy["k_achieved"] >= 5
    assert 0.0 < utility["nil"] < 1.0
    assert f"{utility['nil']:.4g}" in page
    assert "PASSED" in page
    assert page.count("data:image/png;base64,") >= 5  # sizes, age, weight, forest plots, survival
    drugs = {row["drug"] for row in report["signals"]["panel"]}
    assert {"AVANDIA", "TYSABRI", "ZELNORM", "WARFARIN", "REVATIO"} <= drugs
    assert report["signals"]["survival_overall"] is not None


def test_demo_signal_headline_names_its_failing_stratum(demo_release: tuple[Path, str]) -> None:
    """The demo keeps every overall signal but loses the age < 18 ones: the headline must say so."""
    out, output = demo_release
    signals = json.loads((out / "report.json").read_text())["signals"]
    worst = signals["worst_stratum"]
    assert signals["survival_overall"] == 1.0 and worst["n_survived"] < worst["n_raw"]
    page = (out / "report.html").read_text()
    assert "Worst stratum: <b>" in page
    assert f"{worst['n_survived']} of {worst['n_raw']} raw signals survive" in page
    assert f"worst stratum {worst['stratum']}: {worst['n_survived']} of {worst['n_raw']}" in output


def test_demo_manifest_hashes_every_file_and_the_sources(demo_release: tuple[Path, str]) -> None:
    out, _ = demo_release
    manifest = read_manifest(out)
    assert manifest is not None
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    files -= {"manifest.json", "certificate.json"}  # the certificate signs the manifest (docs/keys.md)
    assert set(manifest["outputs"]) == files
    assert manifest["outputs"]["report.html"] == sha256_file(out / "report.html")
    assert list(manifest["sources"]) == ["faers_ascii_2025q1.zip"]
    assert manifest["parameters"]["seed"] == 3
    assert set(manifest["timings"]) == {
        "ingest", "anonymize", "verify", "signals", "signals_raw", "risk", "risk_raw", "report", "total"
    }  # fmt: skip


def test_no_raw_id_in_any_file_of_a_whole_release(demo_release: tuple[Path, str], tmp_path: Path) -> None:
    """Every digit run of every released file (ascii, Parquet cells, rejects, manifest, certificate,
    report.json, report.html) against every raw primaryid and caseid of the demo quarter (issue 17)."""
    out, _ = demo_release
    ingested = ingest_quarters([demo_source()], tmp_path / "ingested").out
    raw: set[str] = set()
    for path in ingested.glob("*.parquet"):
        frame = pl.read_parquet(path)
        raw |= {str(v) for c in ("primaryid", "caseid") if c in frame.columns for v in frame[c].drop_nulls()}
    assert len(raw) > 6000
    leaks = {}
    for path in (p for p in out.rglob("*") if p.is_file()):
        if path.suffix == ".parquet":
            frame = pl.read_parquet(path)
            text = " ".join(" ".join(frame[c].cast(pl.String).drop_nulls()) for c in frame.columns)
        else:
            text = path.read_text(encoding="utf-8", errors="replace")
        found = set(re.findall(r"\d+", text)) & raw
        if found:
            leaks[path.relative_to(out).as_posix()] = sorted(found)[:3]
    assert {"report.json", "report.html", "manifest.json", "certificate.json"} <= {
        p.name for p in out.iterdir()
    }
    assert leaks == {}


def test_same_inputs_same_release(small_quarter: Path, tmp_path: Path) -> None:
    first = release([small_quarter], tmp_path / "a", config=_config(seed=5))
    second = release([small_quarter], tmp_path / "b", config=_config(seed=5))
    one, two = read_manifest(first.path), read_manifest(second.path)
    assert one is not None and two is not None
    assert fingerprint(one) == fingerprint(two)
    assert (first.path / "ascii" / "DEMO24Q2.txt").read_bytes() == (
        second.path / "ascii" / "DEMO24Q2.txt"
    ).read_bytes()


def test_interrupted_run_leaves_no_release(
    small_quarter: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(signals, "compare", interrupted)
    with pytest.raises(KeyboardInterrupt):
        release([small_quarter], tmp_path / "out", config=_config())
    assert list(tmp_path.iterdir()) == []


def test_failed_verification_publishes_nothing(
    small_quarter: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = verifier.verify_release

    def strict(path: Path, **options: object) -> object:
        return real(path, k=10_000, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(verifier, "verify_release", strict)
    with pytest.raises(VerificationError, match="nothing was published"):
        release([small_quarter], tmp_path / "out", config=_config())
    assert list(tmp_path.iterdir()) == []


def test_existing_release_needs_force(small_quarter: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("not a release")
    with pytest.raises(ConfigError, match="not a faers-anon release .*never replaced, even with --force"):
        release([small_quarter], out, config=_config(force=True))
    assert (out / "old.txt").read_text() == "not a release"
    (out / "old.txt").unlink()
    release([small_quarter], out, config=_config())  # an empty folder is taken
    with pytest.raises(ConfigError, match="--force"):
        release([small_quarter], out, config=_config())
    release([small_quarter], out, config=_config(force=True))
    assert (out / "manifest.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_unwritable_output_is_one_line(small_quarter: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = CliRunner().invoke(cli, ["release", str(small_quarter), "-o", str(blocker / "release")])
    assert result.exit_code == 1
    assert result.output.count("Error:") == 1 and "Traceback" not in result.output


def test_corrupt_zip_is_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "faers_ascii_2024q1.zip"
    broken.write_bytes(b"PK\x03\x04 this is not a zip")
    result = CliRunner().invoke(cli, ["release", str(broken), "-o", str(tmp_path / "release")])
    assert result.exit_code == 1
    assert result.output.count("Error:") == 1 and "Traceback" not in result.output
    assert not (tmp_path / "release").exists()


def test_toml_config_and_flags_precedence(tmp_path: Path) -> None:
    toml = tmp_path / "release.toml"
    toml.write_text('[release]\nk = 7\ntheta = 0.3\nseed = 9\nstratify = ["sex"]\nknowledge = "e.csv"\n')
    options = load_toml(toml)
    assert options["knowledge"] == (tmp_path / "e.csv").resolve()
    config = release_config(toml, {"k": 11})
    assert config.anonymize.k == 11  # the flag wins
    assert config.anonymize.theta == 0.3 and config.anonymize.seed == 9  # the file wins over defaults
    assert config.compare.signals.stratify == ("sex",)


def test_toml_mistakes_are_named(tmp_path: Path) -> None:
    toml = tmp_path / "release.toml"
    toml.write_text("[release]\nkk = 7\n")
    with pytest.raises(ConfigError, match="unknown option 'kk'"):
        load_toml(toml)
    toml.write_text("[release]\nk = 'five'\n")
    with pytest.raises(ConfigError, match="k: got 'five'"):
        load_toml(toml)
    toml.write_text("k = = 1\n")
    with pytest.raises(InputError, match="invalid TOML"):
        load_toml(toml)


def test_release_help_documents_every_option() -> None:
    result = CliRunner().invoke(cli, ["release", "--help"])
    assert result.exit_code == 0
    for option in (
        "--config",
        "--demo",
        "--k",
        "--theta",
        "--theta-rule",
        "--sensitive",
        "--knowledge",
        "--on-infeasible",
        "--seed",
        "--stratify",
        "--criterion",
        "--force",
        "--keep-work",
    ):
        assert option in result.output  # fmt: skip
