"""Seconds per step of ``faers-anon risk``: wall time and CPU time (every thread of the process).

The machine running a release is often shared, so wall time alone says little: CPU seconds (from
:func:`time.process_time`, which counts polars' worker threads too) are what a step costs.
"""

from __future__ import annotations

import time

__all__ = ["Clock"]


class Clock:
    """Laps: each :meth:`lap` records the wall and CPU seconds since the previous one under a label."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self._start = self._wall = time.perf_counter()
        self._cpu0 = self._cpu = time.process_time()

    def lap(self, label: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.wall[label] = self.wall.get(label, 0.0) + wall - self._wall
        self.cpu[label] = self.cpu.get(label, 0.0) + cpu - self._cpu
        self._wall, self._cpu = wall, cpu

    def total(self) -> None:
        """Record ``total``: wall and CPU seconds since the clock started."""
        self.wall["total"] = time.perf_counter() - self._start
        self.cpu["total"] = time.process_time() - self._cpu0
