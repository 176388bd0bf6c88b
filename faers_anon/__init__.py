"""faers-anon: publish FAERS adverse-event data under MS(k,θ*)-bounding with signal-survival proof."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("faers-anon")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"

__all__ = ["__version__"]
