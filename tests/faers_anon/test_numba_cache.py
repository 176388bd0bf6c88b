"""The kernel cache guard: stale numba caches are removed when any source of their package changes."""

from __future__ import annotations

from pathlib import Path

from faers_anon._numba_cache import KERNEL_PACKAGES, STAMP, refresh

PACKAGE = Path(__file__).resolve().parents[2] / "faers_anon"


def _package(tmp_path: Path) -> Path:
    package = tmp_path / "pkg"
    (package / "__pycache__").mkdir(parents=True)
    (package / "_kernel.py").write_text("def stage1():\n    return ratio_risk()\n")
    (package / "_group.py").write_text("def ratio_risk():\n    return 0\n")
    return package


def _cached(package: Path) -> list[str]:
    cache = package / "__pycache__"
    (cache / "_kernel.stage1-1.py311.nbi").write_bytes(b"index")
    (cache / "_kernel.stage1-1.py311.1.nbc").write_bytes(b"code")
    (cache / "_kernel.cpython-311.pyc").write_bytes(b"bytecode")
    return sorted(p.name for p in cache.iterdir())


def test_first_run_clears_unstamped_cache_and_stamps(tmp_path: Path) -> None:
    package = _package(tmp_path)
    _cached(package)
    assert refresh(package) is True
    left = sorted(p.name for p in (package / "__pycache__").iterdir())
    assert left == sorted([STAMP, "_kernel.cpython-311.pyc"])


def test_unchanged_sources_keep_the_cache(tmp_path: Path) -> None:
    package = _package(tmp_path)
    refresh(package)
    before = _cached(package)
    assert refresh(package) is False
    assert sorted(p.name for p in (package / "__pycache__").iterdir()) == before


def test_edit_of_a_callee_module_clears_the_callers_cache(tmp_path: Path) -> None:
    package = _package(tmp_path)
    refresh(package)
    _cached(package)
    (package / "_group.py").write_text("def ratio_risk():\n    return max(1, 0)\n")  # _kernel.py untouched
    assert refresh(package) is True
    names = {p.name for p in (package / "__pycache__").iterdir()}
    assert not any(name.endswith((".nbi", ".nbc")) for name in names)
    assert refresh(package) is False


def test_unwritable_cache_is_left_alone(tmp_path: Path) -> None:
    package = _package(tmp_path)
    (package / "__pycache__").rmdir()
    (package / "__pycache__").write_text("not a folder")
    assert refresh(package) is False


def test_every_package_with_cached_kernels_is_guarded() -> None:
    with_kernels = {
        path.parent.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if "cache=True" in path.read_text(encoding="utf-8") and path.name != "_numba_cache.py"
    }
    assert with_kernels == set(KERNEL_PACKAGES)
