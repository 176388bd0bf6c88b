"""Options of ``faers-anon release``: flags, a TOML file, and which wins.

A release is described by one :class:`ReleaseConfig`: the anonymization options
(:class:`~faers_anon.anonymize.pipeline.AnonymizeConfig`), the ingest options, the signal-comparison options
and the publishing options. ``--config release.toml`` gives the same options as a file; a flag given
on the command line wins over the file, and the file wins over the defaults.

Every option is declared once, in :data:`faers_anon.release.options.OPTIONS`: its flag, its TOML key
and its kind (checked here) come from there, its default from the config dataclasses (:func:`default_of`).
The TOML file uses the options' names (dashes or underscores), either at the top level or under a
``[release]`` table; lists for multi-valued options::

    [release]
    k = 5
    theta = 0.4
    theta-rule = "uniform"
    sensitive = ["indications", "reactions", "diseases"]
    on-infeasible = "raise-theta"
    seed = 7
    stratify = ["age", "sex"]
    conditions = ["age>=18", "age>=60", "age<18", "sex=F"]
    key-file = "/secure/faers-anon/agency.key"   # the agency key (docs/keys.md); never in the release

Unknown keys are an error naming the file and the key, so a typo never silently falls back to a
default.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.errors import ConfigError, InputError
from faers_anon.io.ingest import IngestConfig
from faers_anon.release.options import OPTIONS, Option
from signals import CompareConfig, SignalConfig

__all__ = ["ReleaseConfig", "RELEASE_OPTIONS", "load_toml", "build_release_config", "default_of"]

RELEASE_OPTIONS: Mapping[str, tuple[str, str, str]] = MappingProxyType(
    {o.name: (o.section, o.field, o.kind) for o in OPTIONS.values()}
)
"""Option name → (section, field, kind), derived from the one option table
(:data:`faers_anon.release.options.OPTIONS`). Sections: anonymize, ingest, signals, compare, release."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ReleaseConfig:
    """Everything one release run needs (validated by its parts).

    Attributes:
        anonymize: model, k, θ*, sensitive attributes, knowledge, seed (goes into manifest.json).
        ingest: demo quarter and drug-name lookup.
        compare: signal options for the raw-vs-release comparison and the reference panel.
        force: replace an existing release folder.
        work: the parent of the private (0700) work folder holding the intermediate (raw,
            ingested) tables; default the system temp folder. Removed at the end (on an error or
            an interrupt too); never inside the release (:mod:`faers_anon.io.workspace`).
        keep_work: keep ``work`` after the run (for audits; it is raw data).
        ledger: the agency's private release ledger folder of a series (:mod:`faers_anon.series`):
            checked, followed (returning cases in frozen groups or withheld) and updated with the
            release, both or neither; never inside the release.
        republish: with a ledger, publish a returning case with group-mates republished from earlier
            releases (more follow-ups published); default off: only with returning cases of its own
            unit, so that an attacker who knows when the target's reports came in cannot tell it from
            its companions (docs/series.md §4). A series keeps one setting.
    """

    anonymize: AnonymizeConfig = field(default_factory=AnonymizeConfig)
    ingest: IngestConfig = field(default_factory=IngestConfig)
    compare: CompareConfig = field(default_factory=CompareConfig)
    force: bool = False
    work: Path | None = None
    keep_work: bool = False
    ledger: Path | None = None
    republish: bool = False

    def parameters(self) -> dict[str, object]:
        """JSON-ready parameters of the whole run (manifest.json, report.json)."""
        signals = self.compare.signals
        series = {"republish": self.republish} if self.ledger is not None else {}  # verify --series reads it
        return {
            **self.anonymize.parameters(),
            **series,
            "demo": self.ingest.demo,
            "drug_names": str(self.ingest.drug_names) if self.ingest.drug_names else None,
            "signals": {
                "role": signals.role,
                "stratify": list(signals.stratify),
                "conditions": list(signals.conditions),
                "min_a": signals.min_a,
                "criterion": self.compare.criterion,
                "reference": str(self.compare.reference) if self.compare.reference else None,
            },
        }


def _coerce(name: str, kind: str, value: Any, *, where: str) -> Any:
    """Check one option's type (TOML values are typed already; flags arrive typed from click)."""
    ok = {
        "int": isinstance(value, int) and not isinstance(value, bool),
        "float": isinstance(value, int | float) and not isinstance(value, bool),
        "str": isinstance(value, str),
        "bool": isinstance(value, bool),
        "path": isinstance(value, str | Path),
        "list": isinstance(value, list | tuple) and all(isinstance(v, str) for v in value),
    }[kind]
    if not ok:
        expected = {"list": "a list of strings", "path": "a path"}.get(kind, f"a {kind}")
        raise ConfigError(f"{where}: {name}: got {value!r} (expected {expected})")
    if kind == "path":
        return Path(value)
    if kind == "list":
        return tuple(value)
    if kind == "float":
        return float(value)
    return value


def load_toml(path: Path) -> dict[str, Any]:
    """Read a release TOML file into option name → value (names normalized to underscores).

    Raises:
        InputError: the file is missing or not valid TOML (with the parser's line and column).
        ConfigError: an unknown key or a value of the wrong type.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError("config file not found", path=path) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read config file ({exc})", path=path) from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML ({exc})", path=path) from exc
    table = data.get("release", data)
    if not isinstance(table, dict):
        raise ConfigError(f"{path.name}: [release] must be a table")
    options: dict[str, Any] = {}
    for key, value in table.items():
        name = key.replace("-", "_")
        if name not in RELEASE_OPTIONS:
            raise ConfigError(
                f"{path.name}: unknown option {key!r} (expected one of "
                f"{', '.join(sorted(k.replace('_', '-') for k in RELEASE_OPTIONS))})"
            )
        options[name] = _coerce(name, RELEASE_OPTIONS[name][2], value, where=path.name)
    # Relative paths in the file are relative to the file, as a user reading it expects.
    for name, value in options.items():
        if RELEASE_OPTIONS[name][2] == "path" and not value.is_absolute():
            options[name] = (path.parent / value).resolve()
    return options


def build_release_config(
    *, file_options: Mapping[str, Any] | None = None, flag_options: Mapping[str, Any] | None = None
) -> ReleaseConfig:
    """Merge defaults ← file ← flags into one validated :class:`ReleaseConfig`.

    Args:
        file_options: options read by :func:`load_toml`.
        flag_options: options the user gave on the command line (only those explicitly given).

    Raises:
        ConfigError: an unknown option or an invalid value (raised by the section's own config).
    """
    merged: dict[str, Any] = {}
    for source, where in ((file_options or {}, "config file"), (flag_options or {}, "command line")):
        for name, value in source.items():
            if name not in RELEASE_OPTIONS:
                raise ConfigError(f"{where}: unknown option {name!r}")
            merged[name] = _coerce(name, RELEASE_OPTIONS[name][2], value, where=where)
    sections: dict[str, dict[str, Any]] = {s: {} for s in ("anonymize", "ingest", "signals", "compare")}
    top: dict[str, Any] = {}
    for name, value in merged.items():
        section, field_name, _ = RELEASE_OPTIONS[name]
        (top if section == "release" else sections[section])[field_name] = value
    default_signals = CompareConfig().signals
    signals = SignalConfig(
        role=sections["signals"].get("role", default_signals.role),
        stratify=sections["signals"].get("stratify", default_signals.stratify),
        conditions=sections["signals"].get("conditions", default_signals.conditions),
        min_a=sections["signals"].get("min_a", default_signals.min_a),
        age_bands=default_signals.age_bands,
        measures=default_signals.measures,  # the whole battery: EBGM, Fisher, Mantel-Haenszel
    )
    return ReleaseConfig(
        anonymize=AnonymizeConfig(**sections["anonymize"]),
        ingest=IngestConfig(**sections["ingest"]),
        compare=CompareConfig(signals=signals, **sections["compare"]),
        **top,
    )


def default_of(option: Option) -> Any:
    """The option's default, read from its config dataclass (the one place defaults live)."""
    compare = CompareConfig()
    configs: dict[str, Any] = {
        "anonymize": AnonymizeConfig(),
        "ingest": IngestConfig(),
        "signals": compare.signals,
        "compare": compare,
        "release": ReleaseConfig(),
    }
    return getattr(configs[option.section], option.field)
