"""faers-anon: publish FAERS adverse-event data under MS(k,θ*)-bounding with signal-survival proof."""

from importlib.metadata import PackageNotFoundError, version

from faers_anon._numba_cache import refresh_kernels
from faers_anon._runtime import configure_allocator

configure_allocator()  # before polars is loaded (faers_anon._runtime)

try:
    __version__ = version("faers-anon")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"

refresh_kernels()  # before any kernel module is imported (faers_anon._numba_cache)

__all__ = ["__version__"]
