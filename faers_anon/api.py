"""Path-level twins of the CLI commands (dashes become underscores).

Each function takes paths and a frozen config dataclass, does the work through the library modules
and returns a result object with a ``summary()`` the CLI prints.
"""

from __future__ import annotations

__all__: list[str] = []
