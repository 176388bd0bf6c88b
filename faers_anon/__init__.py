"""faers-anon: publish FAERS adverse-event data under MS(k,θ*)-bounding with signal-survival proof.

Importing the package has no side effects; :func:`configure` makes the process-wide settings (polars'
allocator, the numba kernel-cache check, compile messages) and should run before polars is imported
(faers_anon._runtime). The ``faers-anon`` command calls it for you.
"""

from importlib.metadata import PackageNotFoundError, version

from faers_anon._runtime import configure

try:
    __version__ = version("faers-anon")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"

__all__ = ["__version__", "configure"]
