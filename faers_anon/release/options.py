"""The option table: every option of ``anonymize`` and ``release`` declared once (issue 13).

One :class:`Option` per option says where it goes (the config section and field), its kind, its
flags and its help. From this table alone come the command-line flags (:mod:`faers_anon.commands`),
the TOML keys and their type checks (:mod:`faers_anon.release.config`), and the defaults shown in
``--help`` (read from the config dataclasses, which validate:
:func:`faers_anon.release.config.default_of`). The TOML key is the option's name
(dashes or underscores); the flag is ``--<name with dashes>`` unless ``flags`` says otherwise.

Kinds: ``int``, ``float``, ``str`` (``choices`` when closed), ``bool`` (a flag; ``--x/--no-x`` when
the default is true), ``path`` (a file; ``folder`` for a folder; ``exists`` when it must exist),
``list`` (comma-separated on the command line, a TOML list; ``repeat`` makes the flag repeatable).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from faers_anon.anonymize.config import RELEASE_METHODS
from faers_anon.anonymize.items import ITEM_STRATEGIES
from faers_anon.anonymize.thresholds import ON_INFEASIBLE, OUTCOME_RULES, THETA_RULES
from faers_anon.models import MODELS
from signals import CRITERIA

__all__ = ["OPTIONS", "Option", "SECTIONS"]

Kind = Literal["int", "float", "str", "bool", "path", "list"]
SECTIONS = ("anonymize", "ingest", "signals", "compare", "release")
"""Where an option goes: :class:`AnonymizeConfig`, :class:`IngestConfig`, :class:`signals.SignalConfig`,
:class:`signals.CompareConfig`, or :class:`faers_anon.release.config.ReleaseConfig` itself."""


@dataclass(frozen=True, slots=True)
class Option:
    """One option: its TOML key ``name``, its config ``section`` and field, its flag and help."""

    name: str
    section: str
    kind: Kind
    help: str
    flags: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    exists: bool = False
    folder: bool = False
    repeat: bool = False

    @property
    def field(self) -> str:
        """The config field: the option's name."""
        return self.name

    @property
    def flag_names(self) -> tuple[str, ...]:
        """The command-line flags (the first is the one ``--help`` lists first)."""
        return self.flags or (f"--{self.name.replace('_', '-')}",)


def _anonymize(name: str, kind: Kind, help: str, **extra: Any) -> Option:
    return Option(name, "anonymize", kind, help, **extra)


_TABLE = (
    _anonymize("model", "str", f"Privacy model ({', '.join(MODELS)})."),
    _anonymize(
        "method",
        "str",
        f"Release with a comparison method instead of a model ({', '.join(RELEASE_METHODS)}).",
    ),  # fmt: skip
    _anonymize("k", "int", "Group size (cases/rows/l by model)."),
    _anonymize("theta", "float", "θ: uniform; frequency base; level default."),
    _anonymize(
        "theta_rule",
        "str",
        "θ* setting [default: level with --theta-file, else uniform].",
        choices=THETA_RULES,
    ),  # fmt: skip
    _anonymize("theta_file", "path", "Level-wise CSV: value,class,theta (docs/formats.md).", exists=True),
    _anonymize(
        "frequency_slope", "float", "Frequency rule: θ_s = min(1, θ + slope·P(s)).", flags=("--theta-slope",)
    ),  # fmt: skip
    _anonymize("sensitive", "list", "Sensitive attributes, comma-separated."),
    _anonymize(
        "knowledge",
        "path",
        "Drug→disease table E, CSV or TSV (docs/formats.md) [default: mined from INDI and DRUG].",
        exists=True,
    ),  # fmt: skip
    _anonymize(
        "on_infeasible",
        "str",
        "What to do with values whose θ_s is below their share P(s).",
        choices=ON_INFEASIBLE,
    ),  # fmt: skip
    _anonymize("seed", "int", "Seed of the run's random generator."),
    _anonymize("qids", "list", "QIDs the engine generalizes, comma-separated (age, sex, weight)."),
    _anonymize("candidates", "int", "M: exact ΔIL' evaluations per search of the greedy engine (>= 1)."),
    _anonymize("scan_limit", "int", "Evaluations per search of the greedy engine at most (>= --candidates)."),
    _anonymize(
        "key_file",
        "path",
        "Agency key for the pseudonymous ids and the certificate (created 0600 on "
        "first use; docs/keys.md) [default: $FAERS_ANON_KEY_FILE].",
    ),  # fmt: skip
    _anonymize(
        "column_policy",
        "path",
        "Column-policy file (TOML or CSV) overriding the bundled default (docs/formats.md).",
        exists=True,
    ),  # fmt: skip
    _anonymize(
        "classes",
        "path",
        "Value-class file (docs/formats.md): classes bounded by θ [default: bundled "
        "cancers, HIV, mental health, pregnancy, substance use].",
        exists=True,
    ),  # fmt: skip
    _anonymize(
        "protect_outcomes",
        "bool",
        "Bound the OUTC codes by θ like sensitive values (--no-protect-outcomes publishes them unbounded).",
    ),  # fmt: skip
    _anonymize(
        "outcome_theta",
        "str",
        "θ of the OUTC codes: same as the other values, or frequency: θ_o = min(1, θ + P(o)), "
        "the gain over the base rate P(o) at most θ (docs/outcomes.md).",
        choices=OUTCOME_RULES,
    ),  # fmt: skip
    _anonymize(
        "outcome_strata",
        "bool",
        "Run the engine on serious and non-serious cases apart, so that no group's outcome is released "
        "as * (with --outcome-theta frequency; models whose groups are cases, else ignored; "
        "docs/outcomes.md).",
    ),  # fmt: skip
    _anonymize(
        "items_m",
        "int",
        "k^m-anonymity of the drug and reaction sets in each group: an attacker "
        "knowing the QIDs and M items finds >= k cases (0 off, 1, 2; docs/items.md).",
    ),  # fmt: skip
    _anonymize("items_strategy", "str", "How --items-m is met (docs/items.md).", choices=ITEM_STRATEGIES),
    Option("demo", "ingest", "bool", "Release the bundled demo quarter (with or without SOURCES)."),
    Option(
        "drug_names",
        "ingest",
        "path",
        "Brand -> ingredient lookup for drug_key (docs/formats.md; e.g. FDA's unii_names_bn_of.tsv).",
        exists=True,
    ),  # fmt: skip
    Option("stratify", "signals", "list", "age, sex or age,sex (crossed strata)."),
    Option(
        "conditions",
        "signals",
        "list",
        'A stratum of its own, e.g. "age>=18", "sex=F", "sex=F&age>=60" (repeatable).',
        flags=("--condition",),
        repeat=True,
    ),  # fmt: skip
    Option("min_a", "signals", "float", "Keep drug-event rows with a >= this."),
    Option("role", "signals", "str", "Drug roles.", choices=("ps", "suspect", "any")),
    Option(
        "criterion",
        "compare",
        "str",
        "Signal criterion of the survival figures: evans (PRR>=2, chi2>=4, a>=3), ror (ROR025>1, a>=3), "
        "ic (IC025>0), eb (EB05>=2).",
        choices=tuple(CRITERIA),
    ),  # fmt: skip
    Option(
        "reference",
        "compare",
        "path",
        "Extra reference pairs CSV besides the bundled MedWatch panel (docs/formats.md).",
        exists=True,
    ),  # fmt: skip
    Option(
        "outcome_groups",
        "compare",
        "path",
        "Outcome-group CSV for --reference (docs/formats.md; e.g. outcome_pt_groups.csv).",
        exists=True,
    ),  # fmt: skip
    Option("force", "release", "bool", "Replace an existing release folder."),
    Option(
        "work",
        "release",
        "path",
        "Parent of the private (0700) work folder holding the raw intermediate "
        "tables, removed at the end [default: the system temp folder, $TMPDIR].",
        flags=("--work-dir", "--work"),
        folder=True,
    ),  # fmt: skip
    Option("keep_work", "release", "bool", "Keep the intermediate (raw) tables after the run."),
    Option(
        "ledger",
        "release",
        "path",
        "The agency's private release ledger of a series (docs/series.md): "
        "returning cases stay composition-safe; updated with the release (never published).",
        folder=True,
    ),  # fmt: skip
    Option(
        "republish",
        "release",
        "bool",
        "With --ledger: publish a returning case with group-mates republished from earlier releases "
        "(more follow-ups published, but an attacker who knows when its reports came in tells it from "
        "them; docs/series.md §4). A series keeps one setting.",
    ),  # fmt: skip
)

OPTIONS: Mapping[str, Option] = MappingProxyType({o.name: o for o in _TABLE})
"""Option name (= TOML key, underscores) → :class:`Option`, in ``--help`` order."""
