"""``faers-anon risk``: what an attacker who knows X can learn from a release (SPEC §11).

Four measures, with the definitions of SPEC §11 (the released case view, equivalence classes,
prosecutor and journalist risk, linkage, inference, composition):

* ``reidentification``: one record per knowledge set K (released case-view fields, optionally m items
  of the drug or reaction list): ``cases``; ``unique`` and ``below_k`` (shares of cases whose class
  has 1 case, fewer than k cases); ``prosecutor_max``/``prosecutor_mean`` (1 / class size, ARX's
  sample-based prosecutor risk); with the raw data, ``journalist_max``/``journalist_mean`` (1 / the
  class size counted among raw cases, :mod:`._population`; null for item knowledge and for fields the
  raw data lacks). Classes: :mod:`._classes`.
* ``linkage`` (with the raw data): :mod:`._linkage`. ``inference``: :mod:`._inference`.
* ``composition`` (with ``series``): :mod:`._composition`.

Default knowledge sets: the QIDs alone (``age_group, age_min, age_max, sex, wt_min, wt_max``); the
QIDs plus each other case-view field in turn; the QIDs plus all of them; the QIDs plus 1 and 2 drugs
and plus 1 and 2 reactions; the whole drug list alone and the whole reaction list alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon._paths import bundled
from faers_anon.errors import ConfigError, InputError
from faers_anon.release.manifest import read_manifest
from faers_anon.risk._clock import Clock
from faers_anon.risk._composition import composition
from faers_anon.risk._inference import inference, read_classes
from faers_anon.risk._linkage import linkage
from faers_anon.risk._raw import RawCases, raw_cases, restricted
from faers_anon.risk._reidentify import KnowledgeSet, default_knowledge, reidentify
from faers_anon.risk._view import QIDS, read_cases
from knowledge.values import value_key_expr

__all__ = [
    "RiskConfig",
    "RiskResult",
    "KnowledgeSet",
    "RawCases",
    "assess_risk",
    "default_knowledge",
    "parse_items",
    "raw_cases",
    "write_risk",
]

DEFAULT_CLASSES = bundled("level_classes.csv")


@dataclass(frozen=True, kw_only=True, slots=True)
class RiskConfig:
    """Options of ``faers-anon risk``.

    Args:
        raw: the ingested raw folder (linkage, journalist risk); series: more releases to compose.
        knows: one knowledge set of fields instead of the defaults; knows_items: ("drugs", m) or
            ("reactions", m) added to ``knows`` (m ≥ 1 or "all").
        k: the k of below_k (default: the manifest's, else 5); theta: θ for classes and OUTC codes
            (default: the manifest's, else 0.4); classes: value-class file (default: bundled
            level_classes.csv).
    """

    raw: Path | None = None
    series: tuple[Path, ...] = ()
    knows: tuple[str, ...] | None = None
    knows_items: tuple[str, int | str] | None = None
    k: int | None = None
    theta: float | None = None
    classes: Path | None = None

    def __post_init__(self) -> None:
        if self.k is not None and self.k < 2:
            raise ConfigError(f"k must be an integer >= 2; got {self.k!r}")
        if self.knows_items is not None:
            kind, count = self.knows_items
            if kind not in ("drugs", "reactions") or not (count == "all" or count in (1, 2)):
                raise ConfigError(
                    f"--knows-items: expected drugs:M or reactions:M with M 1, 2 or all; got {kind}:{count}"
                )


@dataclass(frozen=True, kw_only=True, slots=True)
class RiskResult:
    """The content of risk.json (``figures``) and where it was written."""

    release: Path
    figures: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)  # wall seconds per step (not in risk.json)
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds per step (all threads)

    def summary(self) -> str:
        lines = [f"risk of {self.release} (k = {self.figures['k']}):"]
        for row in self.figures["reidentification"]:
            items = "" if row["items"] is None else f" + {json.dumps(row['items'])}"
            lines.append(
                f"  knows {', '.join(row['knows']) or '(nothing)'}{items}: unique {row['unique']:.1%}, "
                f"below k {row['below_k']:.1%}, prosecutor max {row['prosecutor_max']:.2f}"
            )
        if "linkage" in self.figures:
            link = self.figures["linkage"]
            lines.append(
                f"  linkage: by ids {link['by_ids']:.1%} of rows, by shared fields {link['by_fields']:.1%}"
            )
        if "composition" in self.figures:
            lines += _composition_lines(self.figures["composition"])
        return "\n".join(lines)


def _composition_lines(found: dict[str, Any]) -> list[str]:
    """The summary's composition lines: by the member sets, then knowing when reports came in."""
    return [
        f"  composition over {found['releases']} releases: {found['cases_in_several']:,} cases in several; "
        f"below k {found['below_k']:.1%}, unique {found['unique']:.1%}, "
        f"{found['intersections_above_theta']} intersections over theta",
        f"  knowing when each report came in: below k {found['below_k_by_receipt']:.1%}, unique "
        f"{found['unique_by_receipt']:.1%}; of the {found['cases_with_a_new_report']:,} with a new report, "
        f"{found['new_report_below_k_by_receipt']:.1%} below k",
    ]


def parse_items(text: str | None) -> tuple[str, int | str] | None:
    """``drugs:M`` or ``reactions:M`` (M = 1, 2 or all) → (list, M); None stays None.

    Raises:
        ConfigError: any other text.
    """
    if text is None:
        return None
    kind, _, count = text.strip().partition(":")
    value: int | str = count if count == "all" else int(count) if count.isdigit() else -1
    if kind not in ("drugs", "reactions") or value not in (1, 2, "all"):
        raise ConfigError(f"--knows-items: expected drugs:M or reactions:M with M 1, 2 or all; got {text!r}")
    return kind, value


def write_risk(result: RiskResult, path: Path) -> Path:
    """Write ``result.figures`` as risk.json (sorted keys, rounded floats: byte-identical reruns)."""
    from faers_anon.release.report import write_json

    if not path.parent.is_dir():
        raise InputError("output folder does not exist", path=path.parent)
    try:
        path.write_bytes(write_json(result.figures))
    except OSError as exc:
        raise InputError(f"cannot write ({exc.strerror})", path=path) from exc
    return path


def _release_qids(release: Path, fields: tuple[str, ...]) -> list[str]:
    """The QID columns the release's groups are formed on (manifest ``columns.demo.qid``, else the six)."""
    manifest = read_manifest(release) or {}
    listed = ((manifest.get("columns") or {}).get("demo") or {}).get("qid") or QIDS
    return [f for f in listed if f in fields]


def _manifest_value(release: Path, name: str) -> Any:
    manifest = read_manifest(release) or {}
    return (manifest.get("parameters") or {}).get(name)


def _thetas(release: Path) -> pl.DataFrame:
    path = release / "thresholds.csv"
    if not path.is_file():
        return pl.DataFrame(schema={"value": pl.String, "theta": pl.Float64})
    frame = pl.read_csv(path, infer_schema=False)
    return (
        frame.select(value_key_expr(pl.col("value")).alias("value"), pl.col("theta").cast(pl.Float64))
        .group_by("value")
        .agg(pl.col("theta").min())
    )


def assess_risk(
    release: Path, /, *, config: RiskConfig | None = None, raw_side: RawCases | None = None
) -> RiskResult:
    """Measure every attack of SPEC §11 on ``release`` (module docstring).

    ``raw_side``: the raw data already read (:func:`raw_cases`, e.g. beside the engine), used when
    it was read from ``config.raw``; the figures are those of reading ``config.raw`` here.

    Raises:
        InputError: a folder without a DEMO table, a malformed class, knowledge or thresholds file.
        ConfigError: a ``knows`` field the release does not have.
    """
    cfg = config or RiskConfig()
    if not release.is_dir():
        raise InputError("not a release folder", path=release)
    clock = Clock()
    data = read_cases(release)
    k = cfg.k or int(_manifest_value(release, "k") or 5)
    theta = cfg.theta if cfg.theta is not None else float(_manifest_value(release, "theta") or 0.4)
    if cfg.knows is not None:
        unknown = [f for f in cfg.knows if f not in data.fields]
        if unknown:
            raise ConfigError(
                f"--knows: {', '.join(unknown)} not in the released case view "
                f"(fields: {', '.join(data.fields)})"
            )
        kind, count = cfg.knows_items or (None, None)
        sets = [KnowledgeSet(knows=tuple(cfg.knows), items=kind, count=count)]
    elif cfg.knows_items is not None:
        sets = [KnowledgeSet(knows=(), items=cfg.knows_items[0], count=cfg.knows_items[1])]
    else:
        sets = default_knowledge(data.fields)
    clock.lap("read")
    raw = None
    if cfg.raw is not None:
        keep = (*data.fields, "age_years", "weight_kg")
        if raw_side is not None and raw_side.folder == cfg.raw:
            raw = restricted(raw_side, keep, data.drug_columns)
        else:
            raw = read_cases(cfg.raw, keep=keep, drug_columns=data.drug_columns)
        clock.lap("read raw")
    qids = _release_qids(release, data.fields)  # the groups' columns: inference and composition
    shipped = release / "classes.csv"  # the classes the release was bounded on, when it ships them
    classes = read_classes(cfg.classes or (shipped if shipped.is_file() else DEFAULT_CLASSES))
    figures: dict[str, Any] = {
        "release": release.name,
        "k": k,
        "theta": theta,
        "fields": list(data.fields),
        "qids": qids,
        "reidentification": reidentify(data, raw, sets, k, clock),
    }
    figures["inference"] = inference(release, data, qids=qids, theta=theta, classes=classes)
    clock.lap("inference")
    if raw is not None:
        figures["linkage"] = linkage(data, raw)
        clock.lap("linkage")
    if cfg.series:
        series = [(release, data)] + [(path, read_cases(path)) for path in cfg.series]
        figures["composition"] = composition(series, qids=qids, k=k, thetas=_thetas(release))
        clock.lap("composition")
    clock.total()
    return RiskResult(release=release, figures=figures, timings=clock.wall, cpu=clock.cpu)
