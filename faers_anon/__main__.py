"""The ``faers-anon`` command's entry point (also ``python -m faers_anon``).

It configures the process (:func:`faers_anon.configure`: polars' allocator must be set before polars is
imported) and only then imports the CLI, whose modules import polars.
"""

from __future__ import annotations

from faers_anon._runtime import configure

__all__ = ["main"]


def main() -> None:
    """Console-script entry point: configure, then run :func:`faers_anon.cli.main`."""
    configure()
    from faers_anon.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
