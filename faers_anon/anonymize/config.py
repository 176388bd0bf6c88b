"""The options of one anonymize run (a leaf: configs hold no orchestration; issue 13).

:class:`AnonymizeConfig` is validated on construction and ``asdict`` goes into manifest.json;
:data:`QIDS` names the QIDs the engine generalizes (their released columns:
:data:`faers_anon.anonymize.partition.QID_COLUMNS`); :data:`RELEASE_METHODS` the methods ``--method``
accepts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from faers_anon.algorithms.types import QIDS, QidHierarchies
from faers_anon.anonymize.items import ITEM_STRATEGIES, MAX_ITEMS_M, ItemProtection
from faers_anon.anonymize.thresholds import ON_INFEASIBLE, OUTCOME_RULES, THETA_RULES
from faers_anon.anonymize.units import model_unit
from faers_anon.errors import ConfigError
from faers_anon.methods import METHODS
from faers_anon.models import MODELS
from hierarchies import mesh_age_tree, sex_tree
from knowledge import SENSITIVE_ATTRIBUTES

__all__ = ["QIDS", "RELEASE_METHODS", "AnonymizeConfig", "items_protection"]  # QIDS: from algorithms.types


RELEASE_METHODS: tuple[str, ...] = tuple(METHODS)
"""The methods ``--method`` accepts (:mod:`faers_anon.anonymize.method_run`)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class AnonymizeConfig:
    """Options of ``faers-anon anonymize`` (validated; ``asdict`` goes into manifest.json).

    Attributes:
        model: a key of :data:`faers_anon.models.MODELS`.
        k: minimum distinct cases per group (≥ 2).
        theta: θ of the uniform rule, the base of the frequency rule, the level rule's default.
        theta_rule: ``uniform``, ``level`` or ``frequency`` (:mod:`.thresholds`).
        theta_file: the level-wise CSV (required by ``level``).
        frequency_slope: slope of the frequency rule (≥ 0).
        sensitive: a non-empty subset of ``indications``, ``reactions``, ``diseases``.
        knowledge: an E file (drug, disease[, weight]); None mines E from the folder's INDI and DRUG.
        on_infeasible: ``error``, ``raise-theta`` or ``suppress``.
        seed: seed of the run's random generator.
        frozen: frozen bundles of a composition-safe series (:mod:`faers_anon.series.step`): these
            cases are kept out of the engine and added as their own groups; never in the manifest.
        earlier_knowledge: E*_{t−1} of a ledgered release t, a CSV (drug_key, disease, weight) the series
            step writes into its private work folder: E is the largest weight of each pair over the E
            mined here and it (:func:`faers_anon.anonymize.inputs.knowledge_table`; docs/series.md §4),
            so the release is bounded against every earlier release's E and publishes E*_t as its
            knowledge.csv; never in the manifest (the file is private, knowledge.csv states the E used).
        republish: a ledgered release's ``republish`` setting (set by the release, docs/series.md §4),
            stated in the manifest for ``verify --series``; None (not stated) without a ledger.
        qids: a non-empty subset of ``age``, ``sex``, ``weight``.
        candidates: M, exact ΔIL' evaluations per search (≥ 1).
        scan_limit: evaluations per search at most (≥ candidates).
        force: replace an existing release folder.
        method: a key of :data:`faers_anon.methods.METHODS` run instead of the model (exclusive with a
            non-default ``model``; :mod:`faers_anon.anonymize.method_run`).
        key_file: the agency key file (:mod:`faers_anon.keys`; None: ``$FAERS_ANON_KEY_FILE``); never
            recorded in the manifest.
        column_policy: a user's column-policy file (TOML or CSV) overriding the bundled default
            (:func:`faers_anon.io.column_policy.load_policy`); its other DEMO qids are generalized to
            their group's common value and their NIL reported per field (:mod:`faers_anon.io.qid_fields`).
        classes: a value-class file (None: the bundled default); classes and OUTC codes are bounded by
            θ like single values (:mod:`.value_classes`) and travel as classes.csv, outcomes.csv.
        protect_outcomes: bound the OUTC codes by θ (default; False: they are published unbounded).
        outcome_theta: θ of the OUTC codes: ``same`` (the run's θ* rule) or ``frequency``
            (θ_o = min(1, θ + P(o)); :func:`faers_anon.anonymize.thresholds.outcome_thetas`); recorded
            in the manifest only when not ``same``.
        outcome_strata: run the engine on serious and non-serious cases apart
            (:func:`faers_anon.anonymize.strata.seriousness_strata`; docs/outcomes.md); recorded in
            the manifest only when true.
        items_m: m of k^m-anonymity of the drug and reaction sets inside each group (0: off, 1 or 2;
            :mod:`faers_anon.anonymize.items`); items_strategy: ``suppress`` or ``disassociate``.
    """

    model: str = "ms-k-theta"
    k: int = 5
    theta: float = 0.6
    theta_rule: str = "uniform"
    theta_file: Path | None = None
    frequency_slope: float = 1.0
    sensitive: tuple[str, ...] = SENSITIVE_ATTRIBUTES
    knowledge: Path | None = None
    on_infeasible: str = "error"
    seed: int = 0
    frozen: Path | None = None
    earlier_knowledge: Path | None = None
    republish: bool | None = None
    qids: tuple[str, ...] = QIDS
    candidates: int = 64
    scan_limit: int = 4096
    force: bool = False
    method: str | None = None
    key_file: Path | None = None
    column_policy: Path | None = None
    classes: Path | None = None
    protect_outcomes: bool = True
    outcome_theta: str = "frequency"
    outcome_strata: bool = True
    items_m: int = 0
    items_strategy: str = "suppress"

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ConfigError(f"model: unknown {self.model!r} (expected one of {', '.join(sorted(MODELS))})")
        if self.method is not None:
            _check_method(self.method, self.model)
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 2:
            raise ConfigError(f"k must be an integer >= 2; got {self.k!r}")
        if not 0.0 < self.theta <= 1.0:
            raise ConfigError(f"theta must be in (0, 1]; got {self.theta!r}")
        if self.theta_rule not in THETA_RULES:
            raise ConfigError(
                f"theta rule: unknown {self.theta_rule!r} (expected one of {', '.join(THETA_RULES)})"
            )
        if self.theta_rule == "level" and self.theta_file is None:
            raise ConfigError("theta rule 'level' needs a theta file (--theta-file)")
        if not self.frequency_slope >= 0.0:
            raise ConfigError(f"frequency slope must be >= 0; got {self.frequency_slope!r}")
        bad = [s for s in self.sensitive if s not in SENSITIVE_ATTRIBUTES]
        if bad or not self.sensitive:
            raise ConfigError(
                f"sensitive: got {list(self.sensitive)!r} (expected a non-empty subset of "
                f"{', '.join(SENSITIVE_ATTRIBUTES)})"
            )
        if self.on_infeasible not in ON_INFEASIBLE:
            raise ConfigError(
                f"on_infeasible: unknown {self.on_infeasible!r} (expected one of {', '.join(ON_INFEASIBLE)})"
            )
        bad = [q for q in self.qids if q not in QIDS]
        if bad or not self.qids:
            raise ConfigError(
                f"qids: got {list(self.qids)!r} (expected a non-empty subset of {', '.join(QIDS)})"
            )
        _check_items(self)
        if self.outcome_strata and (self.method is not None or model_unit(self.model) != "cases"):
            # on by default: strata are a model's case groups; a method or a report-unit model runs whole
            object.__setattr__(self, "outcome_strata", False)
        if self.outcome_theta not in OUTCOME_RULES:
            raise ConfigError(
                f"outcome theta: unknown {self.outcome_theta!r} (expected one of {', '.join(OUTCOME_RULES)})"
            )
        if self.candidates < 1 or self.scan_limit < self.candidates:
            raise ConfigError(
                "candidates must be >= 1 and scan_limit >= candidates; "
                f"got {self.candidates}, {self.scan_limit}"
            )

    def hierarchies(self) -> QidHierarchies:
        """The QIDs with their bundled trees (MeSH age, sex) and hierarchy-free weight."""
        return QidHierarchies(
            age=mesh_age_tree() if "age" in self.qids else None,
            sex=sex_tree() if "sex" in self.qids else None,
            weight="weight" in self.qids,
        )

    def parameters(self) -> dict[str, object]:
        """JSON-ready parameters for manifest.json (paths as text; ``sensitive`` as the verifier reads it)."""
        out: dict[str, object] = {
            key: (
                str(value) if isinstance(value, Path) else list(value) if isinstance(value, tuple) else value
            )
            for key, value in asdict(self).items()
            if key not in ("force", "key_file", "frozen", "earlier_knowledge")
            and not (key == "method" and value is None)
            and not (key == "outcome_theta" and value == "same")  # manifests before the option: unchanged
            and not (key == "outcome_strata" and value is False)
            and not (key == "republish" and value is None)  # set for a ledgered release only
        }
        if self.method is not None:
            out.pop("model")  # the method replaces the model
        out["sensitive_attributes"] = list(self.sensitive)
        out["sensitive"] = [s for s in self.sensitive if s != "diseases"]
        return out


def _check_items(config: AnonymizeConfig) -> None:
    """One-line errors for ``--items-m`` / ``--items-strategy`` (:mod:`faers_anon.anonymize.items`)."""
    m = config.items_m
    if isinstance(m, bool) or not isinstance(m, int) or not 0 <= m <= MAX_ITEMS_M:
        raise ConfigError(f"items-m must be 0 (off), 1 or {MAX_ITEMS_M}; got {m!r}")
    if config.items_strategy not in ITEM_STRATEGIES:
        raise ConfigError(
            f"items strategy: unknown {config.items_strategy!r} "
            f"(expected one of {', '.join(ITEM_STRATEGIES)})"
        )
    if m and (config.method is not None or model_unit(config.model) != "cases"):
        raise ConfigError(  # the groups of a method or a report-level model are not sets of cases
            f"items-m {m} needs a model whose groups are sets of cases (not --method, not {config.model})"
        )


def items_protection(config: AnonymizeConfig) -> ItemProtection | None:
    """The item-set protection the writer applies (None when ``items_m`` is 0)."""
    if not config.items_m:
        return None
    return ItemProtection(k=config.k, m=config.items_m, strategy=config.items_strategy)


def _check_method(method: str, model: str) -> None:
    """One-line errors for ``--method``: unknown name, a model given too."""
    if method not in RELEASE_METHODS:
        raise ConfigError(f"method: unknown {method!r} (expected one of {', '.join(RELEASE_METHODS)})")
    if model != "ms-k-theta":
        raise ConfigError(
            f"--method {method} and --model {model} are exclusive (a method replaces the privacy model)"
        )
