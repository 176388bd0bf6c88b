"""``faers-anon evaluate``: every model and method on every quarter and θ* setting (SPEC §7–§9).

Reproduces the comparison of Lin, Yang & Wang 2016 ("Results and Discussions", Figures 3–4): NIL and
DR of k-anonymity, (X,Y)-anonymity, multi-sensitive l-diversity, (α,k)-anonymity and MS(k, θ*)-bounding
(and the other systems of SPEC §7: random anonymization, (k,l)-anonymity, swapping, disassociation) for
k (or l) in a grid, θ (or α) in a grid, and the three θ* settings, plus signal survival.

Sources: each SRC is one quarter, an FDA zip or folder (ingested into a private work folder, as
``faers-anon release`` does: :mod:`faers_anon.io.workspace`, 0700, under the system temp folder or
``work``, removed at the end, on an error or an interrupt too; the raw tables never sit in ``OUT``) or
an already-ingested folder (has ``cases.parquet``; ingest it once with ``faers-anon ingest`` to reuse
it across evaluations). E is mined from each quarter's INDI and DRUG unless ``knowledge`` is given.

θ* settings (:mod:`faers_anon.anonymize.thresholds`): ``uniform`` (θ_s = θ), ``level`` (a class file; default
the bundled ``faers_anon/data/level_classes.csv``: stigmatizing conditions 0.2, product terms and
common symptoms 1, every other value θ), ``frequency`` (θ_s = min(1, θ + slope · P(s))). Infeasible
values (θ_s < P(s)) are raised to P(s) + 1/k by default (``on_infeasible``), as the paper could only
observe the resulting high NIL; the ``raised_values`` column counts them.

Outputs in ``OUT``: ``results.csv`` (tidy: one row per quarter × model × k × setting × θ; columns in
:data:`CORE_COLUMNS`, then each method's scalar privacy figures), ``figures/*.png`` and
``evaluation.html`` (:mod:`faers_anon.evaluate.report`). How each model is run and measured:
:mod:`faers_anon.evaluate.runs`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon._paths import bundled
from faers_anon.anonymize.inputs import knowledge_table
from faers_anon.anonymize.thresholds import ON_INFEASIBLE, THETA_RULES
from faers_anon.errors import ConfigError, InputError
from faers_anon.evaluate.report import draw_figures, render_page, summary_table
from faers_anon.evaluate.runs import CORE_COLUMNS, RunSpec, load_quarter, quarter_rows
from faers_anon.io.ingest import demo_source, ingest_quarters
from faers_anon.io.targets import check_work_dir
from faers_anon.io.workspace import signals_raise, work_folder
from faers_anon.methods import METHODS
from faers_anon.models import MODELS
from knowledge import SENSITIVE_ATTRIBUTES

__all__ = ["CORE_COLUMNS", "DEFAULT_LEVEL_FILE", "EvaluateConfig", "EvaluationResult", "evaluate_sources"]

DEFAULT_LEVEL_FILE = bundled("level_classes.csv")
Progress = Callable[[str], None]


@dataclass(frozen=True, kw_only=True, slots=True)
class EvaluateConfig:
    """Options of ``faers-anon evaluate`` (validated).

    Attributes:
        models: keys of :data:`faers_anon.models.MODELS` (default all).
        methods: keys of :data:`faers_anon.methods.METHODS` (default none).
        ks: k (or l) values, each ≥ 2.
        thetas: θ (or α) values in (0, 1].
        settings: θ* settings among ``uniform``, ``level``, ``frequency``.
        theta_file: the level-wise class file (default :data:`DEFAULT_LEVEL_FILE`).
        frequency_slope: slope of the frequency rule (≥ 0).
        sensitive: sensitive attributes (subset of indications, reactions, diseases).
        knowledge: an E file for every quarter; None mines E from each quarter.
        on_infeasible: ``raise-theta`` (default), ``suppress`` or ``error``.
        seed: seed of every run's generator.
        signals: compute signal survival for every partition.
        demo: add the bundled demo quarter to the sources.
        complete_qids: keep only the cases whose reports all have age, sex and weight, as the paper's
            experiments did (default: every case; missing values are kept, SPEC §5).
        candidates, scan_limit: the greedy engine's search bounds.
        work: the parent of the private work folder the sources are ingested into (default: the
            system temp folder); never recorded in options.json.
    """

    models: tuple[str, ...] = tuple(MODELS)
    methods: tuple[str, ...] = ()
    ks: tuple[int, ...] = (5, 10, 15, 20)
    thetas: tuple[float, ...] = (0.2, 0.4)
    settings: tuple[str, ...] = THETA_RULES
    theta_file: Path | None = None
    frequency_slope: float = 1.0
    sensitive: tuple[str, ...] = SENSITIVE_ATTRIBUTES
    knowledge: Path | None = None
    on_infeasible: str = "raise-theta"
    seed: int = 0
    signals: bool = True
    demo: bool = False
    complete_qids: bool = False
    candidates: int = 64
    scan_limit: int = 4096
    work: Path | None = None

    def __post_init__(self) -> None:
        named = (
            ("model", self.models, tuple(MODELS)),
            ("method", self.methods, tuple(METHODS)),
            ("theta setting", self.settings, THETA_RULES),
            ("sensitive attribute", self.sensitive, SENSITIVE_ATTRIBUTES),
        )
        for what, given, known in named:
            bad = [g for g in given if g not in known]
            if bad:
                raise ConfigError(f"{what}: unknown {bad[0]!r} (expected one of {', '.join(known)})")
        if not self.models and not self.methods:
            raise ConfigError("evaluate: no model and no method to run")
        if not self.ks or any(isinstance(k, bool) or not isinstance(k, int) or k < 2 for k in self.ks):
            raise ConfigError(f"k must be integers >= 2; got {list(self.ks)!r}")
        if not self.thetas or any(not 0.0 < t <= 1.0 for t in self.thetas):
            raise ConfigError(f"theta must be numbers in (0, 1]; got {list(self.thetas)!r}")
        if not self.settings or not self.sensitive:
            raise ConfigError("evaluate: give at least one theta setting and one sensitive attribute")
        if not self.frequency_slope >= 0.0:
            raise ConfigError(f"frequency slope must be >= 0; got {self.frequency_slope!r}")
        if self.on_infeasible not in ON_INFEASIBLE:
            raise ConfigError(
                f"on_infeasible: unknown {self.on_infeasible!r} (expected one of {', '.join(ON_INFEASIBLE)})"
            )
        if self.candidates < 1 or self.scan_limit < self.candidates:
            got = f"{self.candidates}, {self.scan_limit}"
            raise ConfigError(f"candidates must be >= 1 and scan_limit >= candidates; got {got}")

    def spec(self) -> RunSpec:
        """The per-quarter run options."""
        return RunSpec(
            models=self.models,
            methods=self.methods,
            ks=tuple(sorted(set(self.ks))),
            thetas=tuple(sorted(set(self.thetas))),
            settings=self.settings,
            theta_file=self.theta_file or DEFAULT_LEVEL_FILE,
            frequency_slope=self.frequency_slope,
            sensitive=self.sensitive,
            on_infeasible=self.on_infeasible,
            seed=self.seed,
            signals=self.signals,
            candidates=self.candidates,
            scan_limit=self.scan_limit,
            complete_qids=self.complete_qids,
        )

    def options(self) -> dict[str, Any]:
        """JSON-ready options (paths as text, tuples as lists)."""
        out = {k: (str(v) if isinstance(v, Path) else list(v) if isinstance(v, tuple) else v)
               for k, v in asdict(self).items() if k != "work"}  # fmt: skip
        out["theta_file"] = str(self.theta_file or DEFAULT_LEVEL_FILE)
        return out


@dataclass(frozen=True, kw_only=True, slots=True)
class EvaluationResult:
    """What an evaluation wrote and measured.

    Attributes:
        out: the output folder; rows: the tidy table (also ``results.csv``); figures: PNG file names.
        quarters: (label, ingested folder) per source (a source ingested by the run names its
            private work folder, removed when the run ends); seconds: wall time in total.
    """

    out: Path
    rows: pl.DataFrame
    figures: tuple[str, ...]
    quarters: tuple[tuple[str, Path], ...]
    seconds: float
    summary_rows: pl.DataFrame = field(repr=False, default_factory=pl.DataFrame)

    def summary(self) -> str:
        """A few lines: quarters, rows, the best NIL among DR-0 models per setting, where things are."""
        lines = [f"evaluated {len(self.quarters)} quarter(s) ({', '.join(q for q, _ in self.quarters)}): "
                 f"{self.rows.height} rows in {self.seconds:.0f} s"]  # fmt: skip
        safe = self.summary_rows.filter(pl.col("dr") == 0.0)
        for (setting, theta), part in safe.group_by("theta_setting", "theta", maintain_order=True):
            best = part.sort("nil").row(0, named=True)
            lines.append(f"  {setting} θ={theta:g}: lowest NIL with DR 0: {best['model']} "
                         f"(k={best['k']}) NIL {best['nil']:.4f}")  # fmt: skip
        lines.append(f"results: {self.out / 'results.csv'}; page: {self.out / 'evaluation.html'}")
        return "\n".join(lines)


def _quarter_label(ingested: Path) -> str:
    quarters = pl.read_parquet(ingested / "reports.parquet", columns=["quarter"])["quarter"].unique().sort()
    return "+".join(str(q) for q in quarters.to_list()) or ingested.name


def _prepare(sources: Sequence[Path], work: Path, demo: bool, progress: Progress) -> list[tuple[str, Path]]:
    """One ingested folder per source (module docstring), labelled by its quarter(s).

    A source that is not an ingested folder is ingested into ``work`` (the run's private work folder),
    in a subfolder named after the file and a hash of its absolute path, so two zips of the same name
    (a synthetic ``faers_ascii_2025q1.zip`` and the demo's) never share one. Two sources of the same
    quarter are told apart in the labels as ``2025Q1``, ``2025Q1#2``, …
    """
    prepared: list[tuple[str, Path]] = []
    for source in [*map(Path, sources), *([demo_source()] if demo else [])]:
        if not source.exists():
            raise InputError("no such file or folder", path=source)
        if (source / "cases.parquet").is_file():
            ingested = source
        else:
            tag = hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:8]
            ingested = work / f"{source.name.removesuffix('.zip').lower()}-{tag}"
            progress(f"ingesting {source} (private work folder)")
            ingest_quarters([source], ingested)
        label = _quarter_label(ingested)
        seen = sum(1 for other, _ in prepared if other == label or other.startswith(f"{label}#"))
        prepared.append((f"{label}#{seen + 1}" if seen else label, ingested))
    if not prepared:
        raise InputError(
            "evaluate: no source given (pass FAERS zips, folders or ingested folders, or --demo)"
        )
    return prepared


_TEXT = ("quarter", "kind", "model", "unit", "theta_setting")
_COUNTS = ("k", "groups", "dangerous_groups", "k_achieved", "n_units", "raised_values", "forced",
           "invalid_groups", "new_signals", "panel_survived", "panel_raw_signals")  # fmt: skip


def _tidy(records: list[dict[str, Any]]) -> pl.DataFrame:
    """The rows as one frame: core columns first with fixed types (null where a row has no value)."""
    frame = pl.from_dicts(records, infer_schema_length=None)
    types = {c: pl.Utf8 if c in _TEXT else pl.Int64 if c in _COUNTS else pl.Float64 for c in CORE_COLUMNS}
    frame = frame.with_columns(
        (pl.col(c) if c in frame.columns else pl.lit(None)).cast(t).alias(c) for c, t in types.items()
    )
    extra = sorted(c for c in frame.columns if c not in CORE_COLUMNS)
    return frame.select(*CORE_COLUMNS, *extra)


def _records(quarters: list[tuple[str, Path]], config: EvaluateConfig, say: Progress) -> list[dict[str, Any]]:
    """Every row of every quarter (:func:`faers_anon.evaluate.runs.quarter_rows`)."""
    spec = config.spec()
    records: list[dict[str, Any]] = []
    for label, ingested in quarters:
        say(f"quarter {label}")
        knowledge = knowledge_table(ingested, sensitive=config.sensitive, knowledge=config.knowledge)
        records.extend(quarter_rows(load_quarter(label, ingested, knowledge, spec), spec, say))
    return records


def evaluate_sources(
    sources: Sequence[Path], out: Path, /, *, config: EvaluateConfig, progress: Progress | None = None
) -> EvaluationResult:
    """Run the evaluation and write ``results.csv``, ``figures/`` and ``evaluation.html`` into ``out``.

    Raises:
        InputError: a missing or unreadable source, or an unwritable output folder.
        ConfigError: invalid options.
        InfeasibleThetaError: infeasible θ_s with ``on_infeasible = "error"``.
    """
    say = progress or (lambda _line: None)
    clock = time.perf_counter()
    check_work_dir(config.work, outputs=[out], inputs=[Path(s) for s in sources])
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the output folder ({exc.strerror})", path=out) from exc
    with signals_raise(), work_folder("evaluate", config.work) as work:
        quarters = _prepare(sources, work, config.demo, say)
        records = _records(quarters, config, say)
    rows = _tidy(records).sort(
        "quarter", "theta_setting", "theta", "k", "model", nulls_last=True, maintain_order=True
    )
    rows.write_csv(out / "results.csv")
    figures = draw_figures(rows, out / "figures")
    options = config.options()
    (out / "evaluation.html").write_text(render_page(rows, figures, options, "results.csv"), encoding="utf-8")
    (out / "options.json").write_text(json.dumps(options, indent=2) + "\n", encoding="utf-8")
    return EvaluationResult(
        out=out,
        rows=rows,
        figures=tuple(figures),
        quarters=tuple(quarters),
        seconds=time.perf_counter() - clock,
        summary_rows=summary_table(rows),
    )
