"""Keep numba's on-disk kernel cache consistent with the sources it was compiled from.

numba's ``cache=True`` keys a compiled function on the timestamp and size of *its own* source file. A
kernel that calls or inlines functions of another module (``_kernel.stage1`` inlines
``_group.ratio_risk``) keeps its cached machine code when only that other module changes: after an
edit or an upgrade that touches ``_group.py`` alone, the engine would silently run the old formula.
This happened to us once while changing η_s.

Decision: on import of ``faers_anon``, :func:`refresh_kernels` calls :func:`refresh` for each package
holding kernels (:data:`KERNEL_PACKAGES`). It hashes the package's
``.py`` files and compares the digest with the stamp left in its ``__pycache__``; when they differ, it
deletes the package's cached kernels (``*.nbi``, ``*.nbc``) and writes the new stamp, so every kernel
compiles afresh once. The check costs one read of a few dozen small files per process. Packages
whose ``__pycache__`` cannot be written (a read-only install) are left as they are: numba then keeps
its cache in a per-user folder, and ``NUMBA_CACHE_DIR`` moves it anywhere; clear those by hand after an
upgrade (``rm -rf`` the folder) — numba recompiles on demand.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Final

__all__ = ["KERNEL_PACKAGES", "STAMP", "refresh", "refresh_kernels"]

#: File in a package's ``__pycache__`` holding the digest of the sources its kernels were built from.
STAMP: Final = "faers-anon-kernels.sha256"
#: Packages of faers_anon whose modules hold ``@njit(cache=True)`` kernels (a test keeps this complete).
KERNEL_PACKAGES: Final = ("algorithms", "methods")


def _digest(package: Path) -> str:
    sha = hashlib.sha256()
    for path in sorted(package.glob("*.py")):
        sha.update(path.name.encode())
        sha.update(b"\0")
        sha.update(path.read_bytes())
        sha.update(b"\0")
    return sha.hexdigest()


def refresh(package: Path, /) -> bool:
    """Delete the package's cached kernels when its sources changed since they were built.

    Args:
        package: the package folder (``Path(__file__).parent`` of its ``__init__``).

    Returns:
        True when stale cache files were removed (or there was no stamp yet), False when the cache
        was current or could not be touched.
    """
    cache = package / "__pycache__"
    stamp = cache / STAMP
    digest = _digest(package)
    try:
        if stamp.is_file() and stamp.read_text(encoding="ascii").strip() == digest:
            return False
        cache.mkdir(exist_ok=True)
        for pattern in ("*.nbi", "*.nbc"):
            for stale in cache.glob(pattern):
                stale.unlink(missing_ok=True)
        stamp.write_text(digest + "\n", encoding="ascii")
    except OSError:
        return False
    return True


def refresh_kernels() -> None:
    """:func:`refresh` every package of :data:`KERNEL_PACKAGES`."""
    root = Path(__file__).parent
    for name in KERNEL_PACKAGES:
        refresh(root / name)
