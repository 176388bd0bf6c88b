"""The numba kernels' decorator (:func:`njit`): when they run compiled, when interpreted, and a cache
kept consistent with the sources it was compiled from.

When to compile (decision, measured on the README's first command, ``release --demo`` — 2,998
cases — with an empty numba cache; the machine was shared, so CPU seconds are given, wall in brackets
with the load average). Compiling the clustering kernels cost 34–40 CPU-s (50 s wall at load 1.8,
83 s at load 3.6 in a fresh venv) and running them 0.4 s; the rest of the release ~3 s. Three ways to
cut it were measured:

* fewer specializations: numba compiles a callee once per *literal* argument type seen from a jitted
  caller (``search_groups(..., True)`` and ``(..., False)``; ``store_state``/``_commit`` with
  ``Literal[int](0)`` while stage 1's counters were still being typed). :class:`Kernel` types calls
  with the arguments' non-literal types, so each kernel compiles once: 28–31 CPU-s, same machine code.
* lower LLVM optimization (``NUMBA_OPT`` 0, 1, 2): 27–32 CPU-s, within noise — the time is numba's
  typing and lowering in Python, not LLVM's optimizer.
* compiling in a background thread while ingest runs: not pursued — ingest takes 0.3–0.5 s on the
  demo, and numba's typing holds the GIL, so at most that half-second would be hidden.
* no JIT: the same kernels as plain Python/numpy (``py_func``) take 1.0 s on the demo (wall at load
  10) and write the same release byte for byte (manifest timings and date aside). Their extra cost over
  warm compiled kernels grows with the cases: +1.4 CPU-s at 10k, +5 at 30k, +23 at 100k (synthetic
  quarters, k = 5, θ = 0.4), so compiling (~30 CPU-s once, then cached) pays from ~50k cases, and a
  real quarter (~400k) must be compiled.

So a kernel runs compiled when it is already compiled (in this process or in numba's cache), when the
caller declared a size of at least :data:`JIT_MIN_CASES` (:func:`sized`; the greedy engine declares
its number of cases), or when no size was declared (the comparison methods); otherwise it runs
interpreted. ``FAERS_ANON_JIT=compiled|interpreted`` (or :func:`mode`) forces either way, for tests
and benchmarks. The README's first command, in a fresh venv with an empty cache, now runs in 8.1 s
wall, 4.1 CPU-s (load 6.4 on 2 shared cores; anonymize 1.8 s), nothing compiled; before: 83 s wall,
38 CPU-s (load 3.6). A compile prints ``compiling the clustering kernels once (~30 s; …)…`` on the
first compile of a process and ``compiled <kernel> in N s`` after each compiling call, through the
reporter given to ``faers_anon.configure(progress=...)`` (the CLI passes its progress printer).

Where the cache lives: numba's ``cache=True`` writes next to the module, in the package's
``__pycache__`` (an editable install: the source tree), when that folder is writable; otherwise
(a read-only site-packages) in a per-user folder (``~/.cache/numba``); ``NUMBA_CACHE_DIR`` moves it
anywhere. Nothing is compiled at install: pip has no post-install step for wheels.

Stale caches: numba keys a compiled function on *its own* source file only. A kernel that calls or
inlines functions of another module (``_kernel.stage1`` inlines ``_group.ratio_risk``) keeps its
cached machine code when only that other module changes: after an edit or an upgrade that touches
``_group.py`` alone, the engine would silently run the old formula (this happened once while
changing η_s). :func:`refresh` hashes the package's ``.py`` files and compares the digest with a
stamp in the cache folder; when they differ it deletes the cached kernels (``*.nbi``, ``*.nbc``) and
writes the new stamp. It runs from ``faers_anon.configure()`` (the CLI calls it) for the in-tree
caches of :data:`KERNEL_PACKAGES`, and in any case before a package's first compiled call, on the
folder numba actually uses. Importing faers_anon does neither: no side effects on import.

Threads (decision): every kernel is compiled ``nogil`` (:data:`KERNEL_OPTIONS`), so while the engine
runs in one thread the release pipeline's other threads run their Python and polars work on the other
core (:mod:`faers_anon.release.stages`); with the GIL held, a thread waiting for it stalled for the
whole of a kernel call (seconds at 400k cases). It is safe because a kernel touches no Python object
(nopython mode) and no thread shares a kernel's arrays; the kernels give the same results either way.
numba keys a cached kernel on its signature and bytecode but not on these options, and the GIL release
is compiled into the cached wrapper, so the options are part of the stamp's digest: a change of options
discards every cached kernel as a change of source does.
"""

from __future__ import annotations

import contextvars
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache, wraps
from pathlib import Path
from typing import Any, Final, ParamSpec, TypeVar

__all__ = [
    "JIT_ENV",
    "JIT_MIN_CASES",
    "KERNEL_OPTIONS",
    "KERNEL_PACKAGES",
    "STAMP",
    "chosen_mode",
    "mode",
    "njit",
    "refresh",
    "refresh_kernels",
    "set_progress",
    "sized",
    "sized_by",
]

#: File in a cache folder holding the digest of the sources its kernels were built from.
STAMP: Final = "faers-anon-kernels.sha256"
#: Packages of faers_anon whose modules hold ``@njit(cache=True)`` kernels (a test keeps this complete).
KERNEL_PACKAGES: Final = ("algorithms", "methods", "risk", "series")
#: From this many cases (declared with :func:`sized`) kernels are compiled rather than interpreted.
JIT_MIN_CASES: Final = 50_000
#: numba options of every kernel (``inline`` is each kernel's own); part of the cache stamp's digest.
KERNEL_OPTIONS: Final = (("nopython", True), ("boundscheck", None), ("nogil", True))
#: Environment variable forcing ``compiled`` or ``interpreted`` kernels (default ``auto``).
JIT_ENV: Final = "FAERS_ANON_JIT"
#: What a first compile of the clustering kernels costs, as announced: ~105 CPU-s measured with the
#: 14 QIDs of the default column policy (demo release, empty cache, load 1: 115 s wall, 9.3 s cached).
COMPILE_SECONDS: Final = 100

_MODES: Final = ("auto", "compiled", "interpreted")
_mode: contextvars.ContextVar[str | None] = contextvars.ContextVar("faers_anon_jit_mode", default=None)
_size: contextvars.ContextVar[int | None] = contextvars.ContextVar("faers_anon_jit_size", default=None)
_interpreting: contextvars.ContextVar[bool] = contextvars.ContextVar("faers_anon_interp", default=False)
_P = ParamSpec("_P")
_R = TypeVar("_R")
_progress: list[Callable[[str], Any]] = []
_refreshed: set[str] = set()
_announced: set[str] = set()
_not_cached: set[tuple[int, tuple[Any, ...]]] = set()


def _digest(package: Path) -> str:
    """SHA-256 over the package's ``.py`` files (names and bytes) and :data:`KERNEL_OPTIONS`."""
    sha = hashlib.sha256(repr(KERNEL_OPTIONS).encode())
    for path in sorted(package.glob("*.py")):
        sha.update(path.name.encode())
        sha.update(b"\0")
        sha.update(path.read_bytes())
        sha.update(b"\0")
    return sha.hexdigest()


def refresh(package: Path, /, cache_dir: Path | None = None) -> bool:
    """Delete the package's cached kernels when its sources changed since they were built.

    Args:
        package: the package folder (``Path(__file__).parent`` of its ``__init__``).
        cache_dir: the folder numba caches the package's kernels in (default its ``__pycache__``).

    Returns:
        True when stale cache files were removed (or there was no stamp yet), False when the cache
        was current or could not be touched.
    """
    folder = package / "__pycache__" if cache_dir is None else cache_dir
    stamp = folder / STAMP
    digest = _digest(package)
    try:
        if stamp.is_file() and stamp.read_text(encoding="ascii").strip() == digest:
            return False
        folder.mkdir(parents=True, exist_ok=True)
        for pattern in ("*.nbi", "*.nbc"):
            for stale in folder.glob(pattern):
                stale.unlink(missing_ok=True)
        stamp.write_text(digest + "\n", encoding="ascii")
    except OSError:
        return False
    return True


def refresh_kernels() -> None:
    """:func:`refresh` the in-tree cache of every package of :data:`KERNEL_PACKAGES`."""
    root = Path(__file__).parent
    for name in KERNEL_PACKAGES:
        refresh(root / name)


def set_progress(report: Callable[[str], Any] | None) -> None:
    """Where the compile messages go (None: nowhere, the default); the next compile is announced."""
    _progress[:] = [] if report is None else [report]
    _announced.clear()


@contextmanager
def mode(name: str) -> Iterator[None]:
    """Run the kernels called inside ``compiled``, ``interpreted`` or by the ``auto`` rule."""
    if name not in _MODES:
        raise ValueError(f"kernel mode must be one of {', '.join(_MODES)}; got {name!r}")
    token = _mode.set(name)
    try:
        yield
    finally:
        _mode.reset(token)


@contextmanager
def sized(cases: int) -> Iterator[None]:
    """Declare the number of cases the kernels called inside work on (the ``auto`` rule)."""
    token = _size.set(cases)
    try:
        yield
    finally:
        _size.reset(token)


def sized_by(count: Callable[..., int]) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Decorator: run ``func`` :func:`sized` by ``count(*args, **kwargs)`` cases."""

    def wrap(func: Callable[_P, _R]) -> Callable[_P, _R]:
        @wraps(func)
        def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            with sized(count(*args, **kwargs)):
                return func(*args, **kwargs)

        return run

    return wrap


def njit(*, cache: bool = True, inline: str = "never") -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit`` for faers_anon's kernels: a :class:`Kernel` (one compile per non-literal
    signature, compiled or interpreted by the rule of the module docstring)."""

    def wrap(func: Callable[..., Any]) -> Any:
        from numba.core import config

        if config.DISABLE_JIT:  # type: ignore[attr-defined]
            return func
        kernel = _kernel_class()(
            py_func=func, locals={}, targetoptions={**dict(KERNEL_OPTIONS), "inline": inline}
        )
        if cache:
            kernel.enable_caching()
        return kernel

    return wrap


def chosen_mode() -> str:
    """The kernel mode in force here: :func:`mode`'s, else ``FAERS_ANON_JIT``'s, else ``auto``."""
    return _mode.get() or os.environ.get(JIT_ENV, "auto")


def _compiled(kernel: Any, args: tuple[Any, ...]) -> bool:
    """Whether this call runs compiled (module docstring); loads a cached compile when there is one."""
    chosen = chosen_mode()
    if chosen == "interpreted":
        return False
    size = _size.get()
    if chosen == "compiled" or size is None or size >= JIT_MIN_CASES:
        return True
    sig = tuple(kernel.typeof_pyval(a) for a in args)
    if sig in kernel.overloads:
        return True
    if (id(kernel), sig) in _not_cached or kernel._cache is None:
        return False
    from numba.core.compiler_lock import global_compiler_lock

    _refresh_for(kernel)
    with global_compiler_lock:
        found = kernel._cache.load_overload(sig, kernel.targetctx) is not None
    if not found:
        _not_cached.add((id(kernel), sig))
        return False
    kernel.compile(sig)  # found in the cache: loads it
    return True


def _refresh_for(kernel: Any) -> None:
    """:func:`refresh` the cache folder numba uses for this kernel's package, once per process."""
    folder = getattr(kernel._cache, "_cache_path", None)
    if folder is None or folder in _refreshed:
        return
    _refreshed.add(folder)
    refresh(Path(kernel.py_func.__code__.co_filename).parent, Path(folder))


def _say(message: str) -> None:
    if _progress:
        _progress[0](message)


@cache
def _kernel_class() -> type:
    """The :class:`Kernel` dispatcher class, built on first use so that importing this module does
    not import numba."""
    from numba.core import event, types
    from numba.core.registry import CPUDispatcher

    class Announce(event.Listener):  # type: ignore[misc]
        """Says when the first compile of a package's kernels starts, and how long each call's took."""

        def __init__(self, what: str) -> None:
            self.what, self.depth, self.start, self.name = what, 0, 0.0, ""

        def on_start(self, ev: Any) -> None:
            self.depth += 1
            if self.depth == 1:
                self.start, self.name = time.perf_counter(), ev.data["dispatcher"].py_func.__name__
                if self.what not in _announced:
                    _announced.add(self.what)
                    _say(f"  compiling {self.what} once (~{COMPILE_SECONDS} s; cached for later runs)…")

        def on_end(self, ev: Any) -> None:
            self.depth -= 1
            if self.depth == 0:
                _say(f"  compiled {self.name} in {time.perf_counter() - self.start:.1f} s")

    class Kernel(CPUDispatcher):  # type: ignore[misc]
        """A CPU dispatcher typed on non-literal arguments, interpreted or compiled per call."""

        def get_call_template(self, args: Any, kws: Any) -> Any:
            plain = {k: types.unliteral(v) for k, v in kws.items()}
            return super().get_call_template(tuple(types.unliteral(a) for a in args), plain)

        def __call__(self, *args: Any, **kws: Any) -> Any:
            if _interpreting.get() or not (kws or _compiled(self, args)):
                return _interpret(self.py_func, args, kws)
            _refresh_for(self)
            module = self.py_func.__module__
            what = "the clustering kernels" if ".algorithms." in module else f"the kernels of {module}"
            with event.install_listener("numba:compile", Announce(what)):
                return super().__call__(*args, **kws)

    return Kernel


def _interpret(func: Callable[..., Any], args: tuple[Any, ...], kws: dict[str, Any]) -> Any:
    token = _interpreting.set(True)
    try:
        return func(*args, **kws)
    finally:
        _interpreting.reset(token)
