"""Shared types of the comparison methods: the registry entry, the result, the released frame.

The methods of this package (random anonymization, (k,l)-anonymity, swapping; SPEC §7) are algorithms,
not privacy models for the clustering engine (STYLE §6): each takes a cases frame (docs/architecture.md,
``cases.parquet``: one row per caseid) and returns a :class:`MethodResult` whose ``release`` has the
columns of the partition frame, so that the common metrics (NIL, DR, signal survival) are computed on
the same footing as for the models.

Point releases (random anonymization, swapping) put one value per case in the frame: ``age_min ==
age_max`` is the released age in years and ``wt_min == wt_max`` the released weight in kg (a point, so
the partition frame's "max exclusive" does not apply); ``age_group`` is the MeSH leaf holding that
point. ``group_id`` numbers the equivalence classes of identical released QIDs (age, sex, weight).

A case whose versions disagree (``age_min < age_max`` in ``cases.parquet``, SPEC §4) is represented by
the midpoint of its range in the point releases: a point method needs one value per case, and the
midpoint lies within half the versions' spread of every version's value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon.algorithms.types import QidHierarchies
from faers_anon.anonymize.partition import PARTITION_SCHEMA
from faers_anon.errors import ConfigError, InputError
from hierarchies import Hierarchy

if TYPE_CHECKING:  # an annotation only: signals pulls in scipy (the series step's child needs neither)
    from signals import CaseTables

__all__ = [
    "CASE_COLUMNS",
    "Capabilities",
    "ItemForm",
    "RELEASE_SCHEMA",
    "Method",
    "MethodResult",
    "case_points",
    "check_cases",
    "dense_groups",
    "point_release",
    "sex_codes",
]

CASE_COLUMNS: tuple[str, ...] = ("caseid", "age_min", "age_max", "sex", "wt_min", "wt_max")
"""Columns of ``cases.parquet`` every method reads (list columns are checked by the methods using them)."""

RELEASE_SCHEMA: Mapping[str, pl.DataType] = PARTITION_SCHEMA
"""The partition frame of docs/architecture.md, column by column, in order."""


@dataclass(frozen=True, slots=True)
class MethodResult:
    """What a method returns.

    Attributes:
        method: Registry name of the method (``faers_anon.methods.METHODS`` key).
        release: One row per caseid with the columns of :data:`RELEASE_SCHEMA`.
        privacy: The method's own privacy figures (JSON-serializable: numbers, strings, flat dicts).
        parameters: The configuration as JSON-serializable data (the config's ``describe()``).
        seconds: Wall-clock seconds of the run (building the release included).
    """

    method: str
    release: pl.DataFrame
    privacy: Mapping[str, Any]
    parameters: Mapping[str, Any]
    seconds: float

    def describe(self) -> dict[str, Any]:
        """Method name and parameters, for a manifest or report (JSON-serializable)."""
        return {"method": self.method, **dict(self.parameters)}

    def summary(self) -> str:
        """One line: method, cases, groups, seconds and the scalar privacy figures."""
        scalars = ", ".join(
            f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
            for k, v in self.privacy.items()
            if isinstance(v, int | float)
        )
        groups = self.release["group_id"].n_unique() if self.release.height else 0
        return (
            f"{self.method}: {self.release.height} cases in {groups} QID-groups, "
            f"{self.seconds:.2f} s; {scalars}"
        )


RunFunction = Callable[..., MethodResult]
IdMapping = Callable[[pl.DataFrame], pl.DataFrame]
"""Replaces the raw ``caseid`` of a frame by the release's pseudonym (the writer's ``IdMap.apply``)."""


class ItemForm(Protocol):
    """How a method that publishes the drug and reaction lists in its own form (not as rows) is released.

    A release writes the method's point partition like a model's; :meth:`publish` then replaces the
    row-level DRUG and REAC tables by the method's form and records it in manifest.json. The signal
    comparison reads the release side through :meth:`case_tables` with drug role ``signals_role`` on
    both sides, and the report says so with ``signals_note``.
    """

    @property
    def signals_note(self) -> str:
        """How the report describes the release side of the signal comparison."""
        ...

    @property
    def signals_role(self) -> str:
        """The drug role (``ps``, ``suspect``, ``any``) both sides of the comparison use."""
        ...

    def publish(self, out: Path, result: MethodResult, ids: IdMapping, /) -> None:
        """Replace the item tables of the written release ``out`` by the method's form."""
        ...

    def case_tables(self, release: Path, /, *, seed: int) -> CaseTables:
        """The release side of the signal comparison (released DEMO, the lists as the form allows)."""
        ...


@dataclass(frozen=True, kw_only=True, slots=True)
class Capabilities:
    """What a method takes from a run's options and what its release needs (as models declare
    :class:`~faers_anon.models.base.Requirements`), so that no caller names a method.

    Attributes:
        group_size: its config's ``k`` is a group size: it takes the run's k (``--k``, evaluate's grid).
        seeded: its config has a ``seed``: it takes the run's seed.
        sensitive_lists: its config's ``sensitive`` names list columns: it takes the run's sensitive
            indications and reactions (both when the run names neither).
        item_form: the drug and reaction lists are published in the method's own form (None: as rows,
            like a model's release; the released-QID signal figures then measure the method).
    """

    group_size: bool = False
    seeded: bool = False
    sensitive_lists: bool = False
    item_form: ItemForm | None = None

    def options(self, *, k: int, seed: int, sensitive: tuple[str, ...]) -> dict[str, Any]:
        """The options of the method's config that a run passes on (the others keep their defaults)."""
        options: dict[str, Any] = {}
        if self.group_size:
            options["k"] = k
        if self.seeded:
            options["seed"] = seed
        if self.sensitive_lists:
            lists = tuple(s for s in sensitive if s in ("indications", "reactions"))
            options["sensitive"] = lists or ("indications", "reactions")
        return options


@dataclass(frozen=True, slots=True)
class Method:
    """A registry entry: how the evaluation harness finds, configures and runs a method.

    ``run(cases, /, *, config, rng, trees=None)`` is the common call; ``config`` is an instance of
    ``config_type`` (``config_type(**options)`` validates and raises :class:`ConfigError`), ``rng`` a
    ``numpy.random.Generator`` (deterministic methods accept and ignore it), ``trees`` the QIDs and
    their hierarchies (:class:`~faers_anon.algorithms.types.QidHierarchies`, the engine's type; default
    :meth:`QidHierarchies.default`; a method reads the age and sex trees and weight as numbers).
    """

    name: str
    config_type: type
    run: RunFunction
    source: str = field(default="")
    capabilities: Capabilities = field(default_factory=Capabilities)

    def __call__(
        self,
        cases: pl.DataFrame,
        /,
        *,
        config: Any = None,
        rng: np.random.Generator,
        trees: QidHierarchies | None = None,
    ) -> MethodResult:
        """Run with ``config`` (default: ``config_type()``)."""
        cfg = self.config_type() if config is None else config
        if not isinstance(cfg, self.config_type):
            raise ConfigError(
                f"{self.name}: config of type {type(cfg).__name__} (expected {self.config_type.__name__})"
            )
        return self.run(cases, config=cfg, rng=rng, trees=trees)


def check_cases(cases: pl.DataFrame, where: str, *, lists: tuple[str, ...] = ()) -> None:
    """Raise :class:`InputError` naming the first missing column of the cases contract.

    Also rejects duplicate caseids (the frame must hold one row per case, SPEC §4).
    """
    for name in (*CASE_COLUMNS, *lists):
        if name not in cases.columns:
            raise InputError(
                f"{where}: cases frame has no column (expected the cases.parquet contract: "
                f"{', '.join((*CASE_COLUMNS, *lists))})",
                field=name,
            )
    if cases.height != cases["caseid"].n_unique():
        raise InputError(f"{where}: duplicate caseids (expected one row per case)", field="caseid")


def case_points(cases: pl.DataFrame) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """One age (years) and one weight (kg) per case: the midpoint of its [min, max]; NaN when missing."""
    out = cases.select(
        ((pl.col("age_min").cast(pl.Float64) + pl.col("age_max").cast(pl.Float64)) / 2).alias("age"),
        ((pl.col("wt_min").cast(pl.Float64) + pl.col("wt_max").cast(pl.Float64)) / 2).alias("wt"),
    )
    age = out["age"].to_numpy().astype(np.float64, copy=True)
    wt = out["wt"].to_numpy().astype(np.float64, copy=True)
    return age, wt


def sex_codes(cases: pl.DataFrame, tree: Hierarchy) -> NDArray[np.int64]:
    """Codes of ``cases.sex`` in the sex tree (``F``, ``M``, ``*``; null → `missing`)."""
    return tree.encode(cases["sex"].to_list())


def dense_groups(*keys: NDArray[np.floating[Any]] | NDArray[np.integer[Any]]) -> NDArray[np.int64]:
    """Dense ids 0..G-1 of the distinct key tuples, in lexicographic order of the keys; NaN equals NaN.

    Keys are non-negative (ages, weights, node codes), so NaN is replaced by -1 before ``np.unique``.
    """
    if not keys or keys[0].size == 0:
        return np.zeros(0 if not keys else keys[0].size, dtype=np.int64)
    cols = [np.where(np.isnan(k), -1.0, k) if k.dtype.kind == "f" else k.astype(np.float64) for k in keys]
    _, inverse = np.unique(np.column_stack(cols), axis=0, return_inverse=True)
    return inverse.ravel().astype(np.int64)


def _nullable(x: NDArray[np.float64]) -> pl.Series:
    return pl.Series(x, dtype=pl.Float64).fill_nan(None)


def point_release(
    caseid: NDArray[np.int64],
    age: NDArray[np.float64],
    sex: NDArray[np.int64],
    wt: NDArray[np.float64],
    trees: QidHierarchies,
) -> pl.DataFrame:
    """The partition frame of a point release (module docstring).

    Args:
        caseid: Case ids, shape (n,).
        age: Released age in years per case, NaN when missing.
        sex: Released sex codes in ``trees.sex``.
        wt: Released weight in kg per case, NaN when missing.
        trees: The hierarchies (age leaf names for ``age_group``; sex names).

    Returns:
        A frame with :data:`RELEASE_SCHEMA`; ``age_group`` is the leaf of the age ("missing" when
        missing), ``sex`` is null when missing.
    """
    group = dense_groups(age, sex, wt)
    age_tree, sex_tree = trees.age_tree, trees.sex_tree
    sex_names = sex_tree.decode(sex).astype(object)
    sex_names[sex == sex_tree.missing] = None
    frame = pl.DataFrame(
        {
            "caseid": pl.Series(caseid, dtype=pl.Int64),
            "group_id": pl.Series(group, dtype=pl.Int64),
            "age_group": pl.Series(age_tree.decode(age_tree.leaf_of(age)).tolist(), dtype=pl.String),
            "age_min": _nullable(age),
            "age_max": _nullable(age),
            "sex": pl.Series(sex_names.tolist(), dtype=pl.String),
            "wt_min": _nullable(wt),
            "wt_max": _nullable(wt),
        }
    )
    return frame.select([pl.col(c).cast(t) for c, t in RELEASE_SCHEMA.items()])
