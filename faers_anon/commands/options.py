"""Click options generated from the option table, and the shared option callbacks.

:func:`table_options` makes the click options of the named entries of
:data:`faers_anon.release.options.OPTIONS`: flag, type, help and shown default all come from the
table and the config dataclasses (:func:`faers_anon.release.config.default_of`), so a flag cannot
drift from its TOML key or its config field. ``signals`` and ``compare`` take the table's signal
options (``stratify``, ``conditions``, ``min_a``, ``role``; ``compare`` also ``criterion``,
``reference``, ``outcome_groups``) from the same table, unset by default so that each command's own
config supplies its default (``signals`` and ``compare`` differ: ``min_a`` 1 and 3);
:func:`signal_options` adds the few options of :class:`signals.SignalConfig` a release does not take
(``--age-bands``, ``--measures``, ``--ebgm-prior``).

The option table and the config dataclasses are imported when a command's options are made, not on
import: ``verify`` and ``risk`` use :func:`comma_list` alone and need neither (:mod:`faers_anon.cli`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from faers_anon.release.options import Option
    from signals import GammaMixture

__all__ = ["SIGNAL_OPTIONS", "comma_list", "signal_options", "table_options"]

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def comma_list(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...] | None:
    """``a, B`` → ``("a", "b")`` (lower-cased); None stays None."""
    return None if value is None else tuple(v.strip().lower() for v in value.split(",") if v.strip())


def _numbers(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[float, ...] | None:
    if value is None:
        return None
    try:
        return tuple(float(v) for v in value.split(","))
    except ValueError:
        raise click.BadParameter(f"expected comma-separated numbers, e.g. 18,45,65; got {value!r}") from None


def _prior(ctx: click.Context, param: click.Parameter, value: str | None) -> GammaMixture | None:
    if value is None:
        return None
    from signals import GammaMixture

    return GammaMixture.parse(value)  # a SignalsError: the group prints it as one Error line


def _type(option: Option) -> Any:
    if option.choices:
        return click.Choice(list(option.choices))
    if option.kind == "path":
        if option.folder:
            return click.Path(file_okay=False, path_type=Path)
        return click.Path(exists=option.exists, dir_okay=False, path_type=Path)
    return {"int": int, "float": float, "str": str}.get(option.kind)


def _click_option(option: Option, *, unset: bool = False) -> Decorator:
    """One click option for one table entry (module docstring); ``unset``: no default (None)."""
    from faers_anon.release.config import default_of

    flags, dest = list(option.flag_names), option.field
    default = default_of(option)
    if unset and not option.repeat:  # the command's own config supplies the default
        callback = comma_list if option.kind == "list" else None
        kind = None if option.kind == "list" else _type(option)
        return click.option(*flags, dest, type=kind, default=None, callback=callback, help=option.help)
    if option.name == "theta_rule":  # chosen from --theta-file when not given (the help says so)
        return click.option(*flags, dest, type=_type(option), default=None, help=option.help)
    if option.kind == "bool":
        if default:
            flags = [f"{flags[0]}/--no-{flags[0][2:]}"]
        return click.option(*flags, dest, is_flag=True, default=bool(default), help=option.help,
                            show_default=bool(default))  # fmt: skip
    if option.kind == "list":
        if option.repeat:
            return click.option(*flags, dest, multiple=True, help=option.help)
        shown = ",".join(default) if default else None
        return click.option(*flags, dest, default=shown, show_default=shown is not None, callback=comma_list,
                            help=option.help)  # fmt: skip
    shown = default if option.kind != "path" else None
    return click.option(*flags, dest, type=_type(option), default=shown, show_default=shown is not None,
                        help=option.help)  # fmt: skip


def table_options(names: Iterable[str], *, unset: bool = False) -> Decorator:
    """A decorator adding the click options of the named table entries, in the order given.

    ``unset``: the options default to None (shown without a default): the command fills in its own.
    """
    from faers_anon.release.options import OPTIONS

    options = [_click_option(OPTIONS[name], unset=unset) for name in names]

    def apply(command: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            command = option(command)
        return command

    return apply


SIGNAL_OPTIONS = ("stratify", "conditions", "min_a", "role")
"""The table's options of :class:`signals.SignalConfig` (``signals``, ``compare`` and ``release``)."""


def signal_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by ``signals`` and ``compare``: the table's (unset) and three of their own."""
    options = [
        table_options(SIGNAL_OPTIONS, unset=True),
        click.option("--age-bands", callback=_numbers, help="Inner age-band edges in years [18,45,65]."),
        click.option(
            "--measures",
            type=click.Choice(["basic", "all"]),
            default=None,
            help="basic: PRR, ROR, IC, chi2; all: also EBGM/EB05/EB95, Fisher p + BH q, and with "
            "--stratify the Mantel-Haenszel ROR and Breslow-Day [signals basic; compare all].",
        ),
        click.option(
            "--ebgm-prior",
            callback=_prior,
            help="Fix the MGPS prior alpha1,beta1,alpha2,beta2,p instead of fitting it (--measures all).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command
