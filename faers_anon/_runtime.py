"""Process-wide settings, made by :func:`configure` before polars is loaded — never on import.

Decision (when): importing faers_anon changes nothing in the process (no environment variable, no
file). The ``faers-anon`` command (entry point :mod:`faers_anon.__main__`) calls :func:`configure`
before it imports the CLI and with it polars; ``faers_anon.cli.main`` calls it too. Library users call
``faers_anon.configure()`` first thing, before importing polars, to get the same settings: the
allocator below, the kernel-cache check of :mod:`faers_anon._numba_cache` and, with ``progress``, the
"compiling the clustering kernels once" messages.

Decision (allocator): polars allocates through its own jemalloc (symbols prefixed ``_rjem_``), and its
``__init__`` configures it to hand freed pages back to the kernel within a second
(``dirty_decay_ms:500,muzzy_decay_ms:1000``, one ``madvise`` per run of pages), appending whatever
``_RJEM_MALLOC_CONF`` already holds, so that options set before polars is imported win. Our stages
allocate and free gigabytes of short-lived columns from two threads, so every purge is a TLB shoot-down
on both cores and the pages come back as fresh page faults. On the 400k-case ingest
(``scripts/bench_ingest.py``, same machine, interleaved runs): 10,651 ``madvise`` calls with polars'
setting against 198 without purging; ingest 7.15–7.18 s → 6.28–6.52 s wall under load, CPU −8%, peak RSS
1.65 → 2.0 GB. Never purging, though, lets a whole release grow: ``scripts/bench_release.py`` at 400k
peaked at 4.35 GB (24.0 s) against 2.89 GB (24.9 s) with polars' setting. We use a 10 s decay
(:data:`ALLOCATOR_CONF`, jemalloc's own default for dirty pages): within a stage freed pages are reused
rather than purged (ingest as fast as never purging: 4.18–4.36 s against 4.25–4.32 s on a quiet
machine), and between stages they go back (release 22.3 s, peak 3.38 GB). A ``_RJEM_MALLOC_CONF`` the
user set is left alone (and, appended after polars' own options, wins as before). The setting takes
effect only when :func:`configure` runs before polars is imported (the ``faers-anon`` command always
does); after, it does nothing.

Decision (the series step's child process, :mod:`faers_anon.series.apart`): the step runs alone in a
child whose peak is what matters, not its speed within a stage, so its allocator hands freed pages
back within a second and skips the lazy ``MADV_FREE`` state (:data:`STEP_ALLOCATOR_CONF`; muzzy pages
still count in RSS until the kernel needs them) — unless the user chose a setting, which the child
inherits (:func:`child_environment`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, Final

from faers_anon._numba_cache import refresh_kernels, set_progress

__all__ = ["ALLOCATOR_CONF", "ALLOCATOR_ENV", "STEP_ALLOCATOR_CONF", "child_environment", "configure",
           "configure_allocator"]  # fmt: skip

#: The environment variable polars' jemalloc reads its options from.
ALLOCATOR_ENV: Final = "_RJEM_MALLOC_CONF"
#: Purge pages unused for 10 s, dirty or muzzy (module docstring).
ALLOCATOR_CONF: Final = "dirty_decay_ms:10000,muzzy_decay_ms:10000"
#: The series step's child process: freed pages back within 1 s, no muzzy stage (module docstring).
STEP_ALLOCATOR_CONF: Final = "dirty_decay_ms:1000,muzzy_decay_ms:0"
#: What polars itself sets when nobody chose (its ``__init__``).
_POLARS_CONF: Final = "dirty_decay_ms:500,muzzy_decay_ms:1000"


def configure_allocator() -> bool:
    """Set :data:`ALLOCATOR_CONF` for polars' allocator unless polars is loaded or the user chose.

    Returns:
        True when the setting was made.
    """
    if "polars" in sys.modules or ALLOCATOR_ENV in os.environ:
        return False
    os.environ[ALLOCATOR_ENV] = ALLOCATOR_CONF
    return True


def child_environment() -> dict[str, str]:
    """This process's environment for the series step's child: :data:`STEP_ALLOCATOR_CONF` where
    :func:`configure` chose the allocator's setting (or none was made), the user's setting as it is."""
    env = dict(os.environ)
    chosen = env.get(ALLOCATOR_ENV)  # polars prepends its own options when it is imported
    if chosen is None or chosen.endswith(ALLOCATOR_CONF) or chosen == _POLARS_CONF:
        env[ALLOCATOR_ENV] = STEP_ALLOCATOR_CONF
    return env


def configure(progress: Callable[[str], Any] | None = None) -> None:
    """Make the process-wide settings (module docstring); call before importing polars. Idempotent.

    Args:
        progress: where the kernels' compile messages go (e.g. ``print``); None keeps the current
            choice (none by default).
    """
    configure_allocator()
    refresh_kernels()
    if progress is not None:
        set_progress(progress)
