"""Errors of faers_anon: user mistakes and data faults, each a one-line message.

Messages read *where: what is wrong (expected what)*, e.g.
``DEMO24Q1.txt:1042: age_cod: unknown unit 'YRS' (expected DEC, YR, MON, WK, DY or HR)``.
Only the CLI catches these broadly; bugs are not listed here and keep their traceback.
"""

from __future__ import annotations

import signal
from pathlib import Path

__all__ = [
    "FaersAnonError",
    "InputError",
    "ConfigError",
    "InfeasibleThetaError",
    "VerificationError",
    "OutputError",
    "Interrupted",
]


class FaersAnonError(Exception):
    """Base of every error a user can cause or fix."""


class InputError(FaersAnonError, ValueError):
    """A fault in the user's input files: missing file, missing column, unreadable data.

    Args:
        message: what is wrong and what was expected.
        path: the offending file, if known.
        line: 1-based line number in that file, if known.
        field: the column, if known.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.line = line
        self.field = field
        where = ""
        if self.path is not None:
            where = self.path.name
            if line is not None:
                where += f":{line}"
            where += ": "
        if field is not None:
            where += f"{field}: "
        super().__init__(where + message)


class ConfigError(FaersAnonError, ValueError):
    """A parameter out of its allowed range or an inconsistent combination of options."""


class OutputError(InputError, ConfigError):
    """An output path that would overwrite an input, or replace a folder faers-anon did not write.

    Both an :class:`InputError` (it concerns the user's files) and a :class:`ConfigError` (the ``-o``
    option is wrong); see :mod:`faers_anon.io.targets`.
    """


class InfeasibleThetaError(FaersAnonError):
    """Some θ_s is below the value's share P(s) of cases: no generalization can meet it.

    Args:
        shares: value → (theta, share) for every infeasible value.
    """

    def __init__(self, shares: dict[str, tuple[float, float]]) -> None:
        self.shares = dict(shares)
        shown = sorted(self.shares.items(), key=lambda kv: -kv[1][1])
        listed = ", ".join(f"{v!r} (theta {t:g} < share {p:.3f})" for v, (t, p) in shown[:10])
        more = f" and {len(shown) - 10} more" if len(shown) > 10 else ""
        super().__init__(
            f"infeasible thresholds: {listed}{more}; "
            "use --on-infeasible raise-theta or --on-infeasible suppress, or raise theta"
        )


class VerificationError(FaersAnonError):
    """The written release does not satisfy its privacy model."""


class Interrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP arrived during a run (raised by :mod:`faers_anon.io.workspace`).

    A ``BaseException`` like ``KeyboardInterrupt``, so no ``except Exception`` swallows it and every
    ``finally`` on the way up removes its temporary folders.

    Args:
        signum: the signal's number.
    """

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
