"""The anonymize step: ingested folder → cases, E, P(s | c), θ* → partition → release (SPEC §1, §5–§8, §10).

One run reads ``cases.parquet`` (and ``drug.parquet``/``indi.parquet`` to mine E when no knowledge file
is given), computes P(s | c) (:func:`knowledge.case_value_probabilities`), θ*
(:func:`faers_anon.anonymize.thresholds.build_thresholds`), builds the model from the registry, partitions the
cases with :func:`faers_anon.algorithms.greedy_cluster` (one ``numpy.random.default_rng(seed)`` per run),
measures NIL, DR and the group sizes, and writes the release with
:func:`faers_anon.release.writer.write_release`.

When ``diseases`` is not among the sensitive attributes the release carries an empty E: the bound then
does not cover what E reveals, and an empty knowledge.csv tells a re-verifier the same.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from faers_anon.algorithms import Partition, QidHierarchies
from faers_anon.anonymize import metrics
from faers_anon.anonymize.items import ITEM_STRATEGIES, MAX_ITEMS_M, ItemProtection
from faers_anon.anonymize.method_run import RELEASE_METHODS, anonymize_with_method
from faers_anon.anonymize.thresholds import (
    ON_INFEASIBLE,
    THETA_RULES,
    Thresholds,
    build_thresholds,
    with_declared_values,
)
from faers_anon.anonymize.units import (
    case_members,
    engine_fields,
    model_unit,
    partition_model,
    report_records,
    unit_view,
)
from faers_anon.anonymize.value_classes import (
    ValueClasses,
    read_classes,
    read_outcomes,
    release_files,
    with_class_thetas,
    with_classes_and_outcomes,
)
from faers_anon.errors import ConfigError, InputError
from faers_anon.io.column_policy import ColumnPolicy, load_policy
from faers_anon.io.qid_fields import generalize_fields
from faers_anon.keys import load_key
from faers_anon.methods import MethodResult
from faers_anon.models import MODELS, make_model
from faers_anon.release.writer import write_release
from hierarchies import mesh_age_tree, sex_tree
from knowledge import (
    E_SCHEMA,
    SENSITIVE_ATTRIBUTES,
    case_value_probabilities,
    load_table,
    match_table,
    mine_from_indications,
    vocabulary_of_cases,
    with_combinations,
)

__all__ = [
    "AnonymizeConfig",
    "AnonymizeResult",
    "QIDS",
    "anonymize_folder",
    "knowledge_table",
    "partition_cases",
]

log = logging.getLogger(__name__)

QIDS = ("age", "sex", "weight")


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
    qids: tuple[str, ...] = QIDS
    candidates: int = 64
    scan_limit: int = 4096
    force: bool = False
    method: str | None = None
    key_file: Path | None = None
    column_policy: Path | None = None
    classes: Path | None = None
    protect_outcomes: bool = True
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
            if key not in ("force", "key_file", "frozen") and not (key == "method" and value is None)
        }
        if self.method is not None:
            out.pop("model")  # the method replaces the model
        out["sensitive_attributes"] = list(self.sensitive)
        out["sensitive"] = [s for s in self.sensitive if s != "diseases"]
        return out


@dataclass(frozen=True, kw_only=True, slots=True)
class AnonymizeResult:
    """What one anonymize run did and measured.

    Attributes:
        release: the release folder (None when only the partition was computed).
        partition: the engine's output.
        thresholds: θ* with shares and actions.
        cases: number of cases N; nil: NIL in [0, 1]; nil_by_qid: per QID; dr: DR in [0, 1].
        group_sizes: (size, groups, cases); share_k: share of cases in groups of exactly k.
        seconds: wall time per step.
        items: what the item-set protection suppressed (``counts.items`` of manifest.json), or None.
    """

    release: Path | None
    partition: Partition
    thresholds: Thresholds
    k: int
    cases: int
    nil: float
    nil_by_qid: dict[str, float]
    dr: float
    group_sizes: pl.DataFrame
    share_k: float
    seconds: dict[str, float] = field(default_factory=dict)
    method: MethodResult | None = None
    items: dict[str, Any] | None = None

    def summary(self) -> str:
        """A few lines for the CLI."""
        sizes = ", ".join(f"{s}: {g}" for s, g, _ in self.group_sizes.head(12).iter_rows())
        more = f", … ({self.group_sizes.height - 12} more sizes)" if self.group_sizes.height > 12 else ""
        t = self.thresholds
        lines = [
            f"cases {self.cases}, groups {self.partition.groups}"
            + (f", written to {self.release}" if self.release else ""),
            f"NIL {self.nil:.4f} ("
            + ", ".join(f"{q} {v:.4f}" for q, v in self.nil_by_qid.items())
            + f"), DR {self.dr:.4f}",
            f"group sizes (cases: groups): {sizes}{more}; "
            f"in groups of exactly k={self.k}: {self.share_k:.1%}",
            f"thresholds ({t.rule}): {t.count('protected') + t.count('raised')} protected values, "
            f"{t.count('raised')} raised, {t.count('suppressed')} suppressed",
            f"stage 2 placed {self.partition.leftovers} leftovers ({self.partition.forced} forced), "
            f"{self.partition.invalid_groups} invalid groups",
            "seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in self.seconds.items()),
        ]
        if self.method is not None:
            lines[4] = self.method.summary()
        if self.items is not None:
            i = self.items
            lines.insert(4, f"items (k^m, m = {i['m']}, {i['strategy']}): {i['case_items_suppressed']:,} "
                         f"of {i['case_items']:,} (case, item) pairs suppressed in "
                         f"{i['cases_with_suppression']:,} cases")  # fmt: skip
        return "\n".join(lines)


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


def _read(path: Path) -> pl.DataFrame:
    if not path.is_file():
        raise InputError("missing ingested table (run `faers-anon ingest` first)", path=path)
    try:
        return pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise InputError(f"unreadable parquet ({str(exc).splitlines()[0]})", path=path) from exc


def knowledge_table(ingested: Path, /, *, sensitive: Sequence[str], knowledge: Path | None) -> pl.DataFrame:
    """E for a run on an ingested folder (SPEC §5).

    With a user's table (``knowledge``): its drug names keyed like DRUG rows, its disease names
    matched to the folder's FAERS terms (:func:`knowledge.match_table`: case, comma inversion,
    spelling; the match share is logged), and rows added for the combination products the folder
    holds (:func:`knowledge.with_combinations`), so that knowledge.csv reproduces every P(s | c).
    Without one: E mined from the folder's INDI × DRUG (:func:`knowledge.mine_from_indications`).
    Empty when ``diseases`` is not a sensitive attribute.

    Raises:
        InputError: a table needed to mine E is missing.
        KnowledgeError: the user's table cannot be read.
    """
    if "diseases" not in sensitive:
        return pl.DataFrame(schema=E_SCHEMA)
    if knowledge is not None:
        given = load_table(knowledge).select(list(E_SCHEMA))
        cases = _read(ingested / "cases.parquet").select("indications", "reactions", "drug_keys")
        matched, report = match_table(given, vocabulary_of_cases(cases))
        log.info("knowledge %s: %s", knowledge.name, report.summary())
        keys = cases.get_column("drug_keys").explode().drop_nulls()
        return with_combinations(matched, keys).select(list(E_SCHEMA))
    for name in ("drug.parquet", "indi.parquet"):
        if not (ingested / name).is_file():
            raise InputError(  # ingest writes every table (empty when not in the source)
                "missing ingested table (run `faers-anon ingest` first)", path=ingested / name
            )
    mined = mine_from_indications(
        pl.scan_parquet(ingested / "drug.parquet"), pl.scan_parquet(ingested / "indi.parquet")
    )
    return mined.select(list(E_SCHEMA))


def sensitive_thresholds(
    cases: pl.DataFrame,
    knowledge: pl.DataFrame,
    /,
    *,
    config: AnonymizeConfig,
    classes: ValueClasses | None = None,
    outcomes: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, Thresholds]:
    """P(s | c) of the cases (SPEC §5) and θ* over the values they reach (:mod:`.thresholds`).

    With ``classes``/``outcomes`` (caseid, outc_cod), P(s | c) also holds the class and OUTC pseudo-values
    of :mod:`.value_classes`, so θ* and the model bound them like single values (SPEC §11).
    """
    probabilities = case_value_probabilities(cases, knowledge, sensitive=config.sensitive)
    probabilities = with_classes_and_outcomes(probabilities, classes=classes, outcomes=outcomes)
    thresholds = build_thresholds(
        probabilities,
        cases.height,
        rule=config.theta_rule,  # type: ignore[arg-type]
        theta=config.theta,
        theta_file=config.theta_file,
        slope=config.frequency_slope,
        on_infeasible=config.on_infeasible,  # type: ignore[arg-type]
        k=config.k,
    )
    thresholds = replace(thresholds, frame=with_class_thetas(thresholds.frame, classes))
    # thresholds.csv lists every value of the sensitive attributes, fillers with the reason (issue 17)
    thresholds = with_declared_values(thresholds, cases, knowledge, sensitive=config.sensitive)
    return probabilities, thresholds


def partition_cases(
    cases: pl.DataFrame,
    knowledge: pl.DataFrame,
    /,
    *,
    config: AnonymizeConfig,
    reports: pl.DataFrame | None = None,
    classes: ValueClasses | None = None,
    outcomes: pl.DataFrame | None = None,
    demo: pl.DataFrame | None = None,
    policy: ColumnPolicy | None = None,
) -> tuple[Partition, Thresholds, pl.DataFrame]:
    """P(s | c), θ* and the partition of one cases frame (no files); returns (partition, θ*, P(s | c)).

    The model is fed as its requirements say (:mod:`.units`): models whose unit is the report
    need ``reports`` (:func:`.units.report_records`), and their partition frame has one row
    per report (``primaryid``, ``caseid``). θ* and P(s | c) are always those of the cases.
    With ``demo`` (the DEMO rows) and ``policy``, the engine also clusters on the policy's other DEMO
    qids (:func:`.units.engine_fields`).
    """
    probabilities, thresholds = sensitive_thresholds(
        cases, knowledge, config=config, classes=classes, outcomes=outcomes
    )
    model = make_model(config.model, k=config.k, thetas=thresholds.thetas)
    hierarchies, codes = config.hierarchies(), None
    if demo is not None and policy is not None:
        codes, hierarchies = engine_fields(demo, policy, hierarchies, unit=model_unit(config.model))

    def run(engine_cases: pl.DataFrame) -> Partition:
        return partition_model(
            engine_cases,
            knowledge,
            model=model,
            hierarchies=hierarchies,
            rng=np.random.default_rng(config.seed),
            sensitive=config.sensitive,
            reports=reports,
            probabilities=probabilities,
            candidates=config.candidates,
            scan_limit=config.scan_limit,
            codes=codes,
        ).partition

    if config.frozen is None:
        partition = run(cases)
    else:  # a series: frozen bundles placed around the engine (faers_anon.series.step)
        from faers_anon.series.step import with_frozen  # the series step imports this module

        partition = with_frozen(cases, config.frozen, run)
    if partition.invalid_groups:
        log.warning(
            "%d groups do not satisfy %s (%d leftovers forced)",
            partition.invalid_groups,
            config.model,
            partition.forced,
        )
    return partition, thresholds, probabilities


def anonymize_folder(ingested: Path, out: Path | None, /, *, config: AnonymizeConfig) -> AnonymizeResult:
    """Anonymize an ingested folder and write the release to ``out`` (None: compute only).

    Raises:
        InputError: a missing or unreadable ingested table or knowledge file.
        ConfigError: ``out`` exists without ``force``, or an invalid option.
        InfeasibleThetaError: some θ_s < P(s) with ``on_infeasible = "error"``.
    """
    clock = time.perf_counter()
    seconds: dict[str, float] = {}
    cases = _read(ingested / "cases.parquet")
    knowledge = knowledge_table(ingested, sensitive=config.sensitive, knowledge=config.knowledge)
    if config.method is not None:
        return anonymize_with_method(ingested, out, config=config, cases=cases, knowledge=knowledge)
    reports = report_records(ingested) if model_unit(config.model) == "reports" else None
    policy = load_policy(config.column_policy)
    seconds["read"] = time.perf_counter() - clock
    clock = time.perf_counter()
    classes = read_classes(config.classes)
    demo = _read(ingested / "reports.parquet")
    partition, thresholds, probabilities = partition_cases(
        cases, knowledge, config=config, reports=reports, classes=classes,
        outcomes=read_outcomes(ingested) if config.protect_outcomes else None, demo=demo, policy=policy,
    )  # fmt: skip
    frame, field_nil = generalize_fields(partition.frame, demo, policy)  # the engine's groups' values
    seconds["anonymize"] = time.perf_counter() - clock
    clock = time.perf_counter()
    # NIL on the model's own units (reports or cases), DR on the cases an attacker finds in each group.
    units = partition.frame if reports is None else unit_view(partition.frame)
    raw = cases if reports is None else unit_view(reports)
    losses = metrics.information_loss(units, raw, hierarchies=config.hierarchies())
    result_metrics = {
        # SPEC §8 over every QID: the engine's and the policy's other DEMO qids (a mean of per-QID NILs)
        "nil": (metrics.nil(losses, qids=len(config.qids)) * len(config.qids) + sum(field_nil.values()))
        / (len(config.qids) + len(field_nil)),
        "nil_by_qid": {q: v for q, v in metrics.nil_by_qid(losses).items() if q in config.qids} | field_nil,
        "dr": metrics.dangerous_ratio(case_members(partition.frame), probabilities, thresholds.frame),
        "group_sizes": metrics.group_sizes(units),
        "share_k": metrics.share_exactly_k(units, k=config.k),
    }
    seconds["metrics"] = time.perf_counter() - clock
    release, items = None, None
    if out is not None:
        clock = time.perf_counter()
        singles, class_files = release_files(thresholds.frame, classes)
        written = write_release(
            ingested,
            frame,
            out,
            policy=policy,
            knowledge=knowledge,
            thresholds=singles,
            parameters=config.parameters(),
            extra_files=class_files,
            force=config.force,
            key=load_key(config.key_file),
            items=items_protection(config),
        )
        release = out
        items = written.manifest["counts"].get("items")
        seconds["write"] = time.perf_counter() - clock
    return AnonymizeResult(
        release=release,
        partition=partition,
        thresholds=thresholds,
        k=config.k,
        cases=cases.height,
        seconds=seconds,
        items=items,
        **result_metrics,  # type: ignore[arg-type]
    )
