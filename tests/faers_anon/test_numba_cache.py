"""The kernels' decorator (faers_anon._numba_cache): one compile per signature, interpreted when small,
compiled when large or already cached, a visible compile, and stale caches removed when any source of
their package changes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from faers_anon import _numba_cache
from faers_anon._numba_cache import (
    COMPILE_SECONDS,
    JIT_MIN_CASES,
    KERNEL_OPTIONS,
    KERNEL_PACKAGES,
    STAMP,
    mode,
    njit,
    refresh,
    set_progress,
    sized,
)

PACKAGE = Path(__file__).resolve().parents[2] / "faers_anon"


@njit(cache=False)
def _pick(a: np.ndarray, first: bool) -> int:
    return int(a[0]) if first else int(a[-1])


@njit(cache=False)
def _both(a: np.ndarray) -> int:
    return _pick(a, True) * 10 + _pick(a, False)  # two literal flags: numba alone compiles _pick twice


@njit(cache=False)
def _double(a: np.ndarray) -> np.ndarray:
    return 2 * a


def test_a_callee_is_compiled_once_whatever_literal_it_is_given() -> None:
    with mode("compiled"):
        assert _both(np.array([3, 4, 5])) == 35
    assert len(_pick.overloads) == 1


def test_small_work_runs_interpreted_and_large_work_compiles() -> None:
    a = np.arange(4)
    with sized(JIT_MIN_CASES - 1):
        assert _double(a).tolist() == [0, 2, 4, 6]
    assert not _double.overloads  # nothing compiled, nothing cached (cache=False)
    with sized(JIT_MIN_CASES):
        assert _double(a).tolist() == [0, 2, 4, 6]
    assert len(_double.overloads) == 1
    with sized(10):  # compiled now: used even for small work
        assert _double(a).tolist() == [0, 2, 4, 6]


def test_a_first_compile_says_so_and_how_long_each_took() -> None:
    @njit(cache=False)
    def triple(a: np.ndarray) -> np.ndarray:
        return 3 * a

    @njit(cache=False)
    def quadruple(a: np.ndarray) -> np.ndarray:
        return 4 * a

    said: list[str] = []
    set_progress(said.append)
    try:
        with mode("compiled"):
            triple(np.arange(3))
            triple(np.arange(3))  # compiled already: silent
            quadruple(np.arange(3))  # announced already: only its duration
    finally:
        set_progress(None)
    assert len(said) == 3, said
    assert said[0].startswith("  compiling the kernels of ") and f"once (~{COMPILE_SECONDS} s" in said[0]
    assert said[1].startswith("  compiled triple in ") and said[1].endswith(" s")
    assert said[2].startswith("  compiled quadruple in ")
    with pytest.raises(ValueError, match="kernel mode"):
        with mode("fast"):
            pass


def test_compiled_and_interpreted_engines_give_the_same_partition() -> None:
    from faers_anon.algorithms import QidHierarchies, greedy_cluster
    from faers_anon.models import MSKTheta

    rng = np.random.default_rng(3)
    n = 300
    import polars as pl

    age = rng.integers(0, 90, n).astype(float)
    wt = np.where(rng.random(n) < 0.3, np.nan, rng.normal(70, 15, n).round())
    cases = pl.DataFrame(
        {"caseid": np.arange(n), "age_min": age, "age_max": age, "sex": rng.choice(["F", "M"], n).tolist()}
    ).with_columns(wt_min=pl.Series(wt).fill_nan(None), wt_max=pl.Series(wt).fill_nan(None))
    vocab = [f"V{i}" for i in range(6)]
    probs = pl.DataFrame({"caseid": np.arange(n), "value": rng.choice(vocab, n), "p": np.ones(n)})
    model = MSKTheta(k=4, thetas={v: 0.4 for v in vocab})
    runs = []
    for name in ("interpreted", "compiled"):
        with mode(name):
            part = greedy_cluster(
                cases,
                probabilities=probs,
                model=model,
                hierarchies=QidHierarchies.default(),
                rng=np.random.default_rng(0),
            )
        runs.append(part)
    assert runs[0].frame.equals(runs[1].frame)
    assert runs[0].groups == runs[1].groups > n // 8


_MODULE = """
from faers_anon._numba_cache import njit, sized
import numpy as np

@njit(cache=True)
def total(a):
    return a.sum()
"""

_RUN = """
import sys; sys.path.insert(0, {folder!r})
import numpy as np
from numba.core import event
from faers_anon._numba_cache import mode, sized
import kmod
compiles = []
with event.install_recorder("numba:compile") as rec:
    with {context}:
        value = kmod.total(np.arange(5))
print(value, len(rec.buffer) > 0, len(kmod.total.overloads))
"""


def _child(folder: Path, context: str, cache: Path) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "FAERS_ANON_JIT"} | {"NUMBA_CACHE_DIR": str(cache)}
    code = _RUN.format(folder=str(folder), context=context)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_a_cached_compile_is_used_for_small_work_and_a_sibling_edit_discards_it(tmp_path: Path) -> None:
    folder, cache = tmp_path / "src", tmp_path / "cache"
    folder.mkdir()
    (folder / "kmod.py").write_text(_MODULE)
    assert _child(folder, "sized(10)", cache) == ["10", "False", "0"]  # interpreted, nothing cached
    assert _child(folder, "mode('compiled')", cache) == ["10", "True", "1"]  # compiled and cached
    assert _child(folder, "sized(10)", cache) == ["10", "False", "1"]  # loaded from the cache
    (folder / "helper.py").write_text("X = 1\n")  # a sibling module changed: the cache is stale
    assert _child(folder, "sized(10)", cache) == ["10", "False", "0"]


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


def test_other_kernel_options_discard_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """numba's cache index ignores the options (nogil is compiled into the cached wrapper)."""
    package = _package(tmp_path)
    refresh(package)
    _cached(package)
    assert dict(KERNEL_OPTIONS)["nogil"] is True
    monkeypatch.setattr(_numba_cache, "KERNEL_OPTIONS", (*KERNEL_OPTIONS[:-1], ("nogil", False)))
    assert refresh(package) is True
    assert not [p for p in (package / "__pycache__").iterdir() if p.suffix in (".nbi", ".nbc")]


@njit(cache=False)
def _spin(n: int) -> float:
    total = 0.0
    for i in range(n):
        total += (i % 7) * 0.5
    return total


def test_a_running_kernel_lets_the_other_threads_run() -> None:
    """While a kernel computes in one thread, the main thread keeps running Python (nogil): the longest
    pause between two of its steps is far shorter than the kernel's call (with the GIL held, as long)."""
    n = 10_000_000
    with mode("compiled"):
        _spin(10)  # compiled before it is timed
        while True:
            start = time.perf_counter()
            _spin(n)
            if time.perf_counter() - start > 0.5 or n > 10**10:
                break
            n *= 4
        worker = threading.Thread(target=_spin, args=(n,))
        start = last = time.perf_counter()
        pause = 0.0
        worker.start()
        while worker.is_alive():
            now = time.perf_counter()
            pause, last = max(pause, now - last), now
        took = time.perf_counter() - start
    assert took > 0.4 and pause < took / 3, (pause, took)


def test_a_cache_folder_elsewhere_is_refreshed_too(tmp_path: Path) -> None:
    package, elsewhere = _package(tmp_path), tmp_path / "user-cache" / "pkg"
    elsewhere.mkdir(parents=True)
    (elsewhere / "_kernel.stage1-1.py311.nbi").write_bytes(b"index")
    assert refresh(package, elsewhere) is True
    assert sorted(p.name for p in elsewhere.iterdir()) == [STAMP]


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


def test_every_kernel_uses_the_faers_anon_decorator() -> None:
    texts = {path.name: path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py")}
    plain = [
        name for name, text in texts.items() if "from numba import njit" in text or "@numba.njit" in text
    ]
    assert plain == []
