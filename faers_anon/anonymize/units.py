"""What a privacy model's algorithm is fed, and its partition mapped back to cases and reports (SPEC §4, §7).

Every registered model declares in its :class:`~faers_anon.models.base.Requirements` how it is fed:

* ``unit = "cases"``: the engine's units are the case super-records of ``cases.parquet`` (SPEC §4);
  the partition frame has one row per caseid and every report of a case carries its group's QIDs.
* ``unit = "reports"``: one unit per report, with the report's *own* age (``age_years``), sex and
  weight (``weight_kg``) and its own indications, reactions and drugs (follow-ups not merged:
  k-anonymity and (α,k)-anonymity). The engine sees the primaryid as its unit id; the partition
  frame written to the release then has one row per report, with ``primaryid`` and ``caseid``.
* ``knowledge``: whether P(s | unit) includes the diseases reached through E; without it only the
  unit's own indications and reactions count (``p = 1``).
* ``algorithm``: ``greedy`` (:func:`~faers_anon.algorithms.greedy_cluster`) or ``mondrian``
  (:func:`~faers_anon.algorithms.mondrian.mondrian`, fed the values of each attribute in
  ``attributes`` keyed ``"<attribute>:<value>"``).

Field QIDs (the column policy's DEMO qids other than age, sex and weight: dates, sender, countries, …)
are fed as per-level codes of each unit's DEMO rows (:func:`engine_fields`;
:func:`faers_anon.io.qid_fields.field_codes`), so the engine clusters on every declared QID.

Privacy is always measured on cases, the way an attacker sees a release whose reports are linked by
caseid: a group's members are the distinct caseids with a report in it (:func:`case_members`), each
with the P(s | c) of its whole super-record. Utility (NIL) is measured on the model's own units
(:func:`unit_view`): a report-unit release loses what its reports lose.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import polars as pl

from faers_anon._numba_cache import JIT_MIN_CASES, chosen_mode
from faers_anon._numba_cache import mode as kernel_mode
from faers_anon.algorithms import Partition, QidHierarchies, greedy_cluster
from faers_anon.algorithms.greedy_cluster import QidCodes, encode_qids
from faers_anon.algorithms.mondrian import mondrian
from faers_anon.anonymize.partition import case_members, unit_view  # re-exported: the partition's views
from faers_anon.errors import ConfigError, InputError
from faers_anon.io.column_policy import ColumnPolicy
from faers_anon.io.qid_fields import field_codes
from faers_anon.models import MODELS, GroupModel
from knowledge import E_SCHEMA, case_value_probabilities

__all__ = [
    "ModelPartition",
    "case_members",
    "engine_fields",
    "engine_inputs",
    "model_unit",
    "partition_model",
    "report_records",
    "unit_probabilities",
    "unit_view",
]

_OWN = ("indications", "reactions")
WARM_CASES = 64
"""Cases of the run that loads the engine's compiled kernels beside P(s | c) (:func:`engine_inputs`):
numba loads a kernel from its cache on its first call in a process (~0.3-0.6 CPU-s, under a lock), which
otherwise both engine threads waited for at their start."""
_NO_P = pl.DataFrame(schema={"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})


def model_unit(name: str) -> str:
    """``"cases"`` or ``"reports"``: the unit a registered model is fed (read from its requirements).

    Raises:
        ConfigError: unknown model name.
    """
    if name not in MODELS:
        raise ConfigError(f"model: unknown {name!r} (expected one of {', '.join(sorted(MODELS))})")
    return MODELS[name](k=2, thetas={}).requirements().unit


def _scan(ingested: Path, name: str, columns: Sequence[str]) -> pl.LazyFrame:
    path = ingested / name
    if not path.is_file():
        raise InputError("missing ingested table (run `faers-anon ingest` first)", path=path)
    present = pl.read_parquet_schema(path)
    for column in columns:
        if column not in present:
            raise InputError("missing column", path=path, field=column)
    return pl.scan_parquet(path).select(columns)


def report_records(ingested: Path, /) -> pl.DataFrame:
    """One record per report, in the cases.parquet shape, from an ingested folder.

    Columns: ``primaryid``, ``caseid``, ``age_min`` = ``age_max`` = the report's ``age_years``,
    ``sex``, ``wt_min`` = ``wt_max`` = its ``weight_kg``, ``n_reports`` = 1, and the report's own
    ``indications``, ``reactions`` and ``drug_keys`` (unique, sorted; empty lists when none).

    Raises:
        InputError: a missing table or column, or a primaryid listed twice.
    """
    reports = _scan(ingested, "reports.parquet", ["primaryid", "caseid", "age_years", "sex", "weight_kg"])
    lists = {
        "indications": _scan(ingested, "indi.parquet", ["primaryid", "indi_pt"]),
        "reactions": _scan(ingested, "reac.parquet", ["primaryid", "pt"]),
        "drug_keys": _scan(ingested, "drug.parquet", ["primaryid", "drug_key"]),
    }
    frame = reports.select(
        "primaryid",
        "caseid",
        pl.col("age_years").alias("age_min"),
        pl.col("age_years").alias("age_max"),
        "sex",
        pl.col("weight_kg").alias("wt_min"),
        pl.col("weight_kg").alias("wt_max"),
        pl.lit(1, pl.UInt32).alias("n_reports"),
    )
    for name, table in lists.items():
        term = table.collect_schema().names()[1]
        per = table.drop_nulls(term).group_by("primaryid").agg(pl.col(term).unique().sort().alias(name))
        frame = frame.join(per, on="primaryid", how="left").with_columns(
            pl.col(name).fill_null(pl.lit([], pl.List(pl.Utf8)))
        )
    out = frame.sort("primaryid").collect()
    if out.height != out.get_column("primaryid").n_unique():
        raise InputError(
            "primaryid: listed twice (expected one row per report)", path=ingested / "reports.parquet"
        )
    return out


def unit_probabilities(
    units: pl.DataFrame, knowledge: pl.DataFrame, /, *, model: GroupModel, sensitive: Sequence[str]
) -> pl.DataFrame:
    """P(s | unit) as the model needs it: (caseid = unit id, value, p).

    Greedy models get the values of ``sensitive`` (E's diseases only when the model uses knowledge).
    Top-down models get each attribute of ``requirements().attributes`` that is sensitive, its values
    keyed ``"<attribute>:<value>"``.

    Raises:
        ConfigError: a top-down model none of whose attributes is sensitive.
    """
    req = model.requirements()
    empty = pl.DataFrame(schema=E_SCHEMA)
    if req.algorithm == "mondrian":
        attributes = [a for a in req.attributes if a in sensitive]
        if not attributes:
            raise ConfigError(
                f"{model.name}: none of its attributes ({', '.join(req.attributes)}) is sensitive "
                f"(sensitive: {', '.join(sensitive)})"
            )
        parts = [
            case_value_probabilities(units, empty, sensitive=(a,)).with_columns(
                pl.concat_str(pl.lit(f"{a}:"), pl.col("value")).alias("value")
            )
            for a in attributes
        ]
        return pl.concat(parts).sort("caseid", "value")
    chosen = tuple(s for s in sensitive if req.knowledge or s in _OWN)
    if not chosen:
        return pl.DataFrame(schema={"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})
    return case_value_probabilities(units, knowledge if req.knowledge else empty, sensitive=chosen)


def engine_fields(
    demo: pl.DataFrame, policy: ColumnPolicy, hierarchies: QidHierarchies, /, *, unit: str
) -> tuple[pl.DataFrame, QidHierarchies]:
    """The policy's field QIDs as codes per engine unit, and ``hierarchies`` with them.

    Args:
        demo: the DEMO rows (reports.parquet: ``caseid``, ``primaryid`` and the fields).
        policy: the column policy (:meth:`ColumnPolicy.field_qids`).
        hierarchies: the engine's age, sex and weight.
        unit: ``"cases"`` (codes cover every version of a case) or ``"reports"`` (one report each).

    Returns:
        (codes keyed by unit id in ``caseid``, ``hierarchies`` with ``fields`` set).
    """
    key = "primaryid" if unit == "reports" else "caseid"
    codes, fields = field_codes(demo, policy, key=key)
    if key != "caseid":
        codes = codes.rename({key: "caseid"})
    return codes, replace(hierarchies, fields=fields)


def engine_inputs(
    cases: pl.DataFrame,
    demo: pl.DataFrame | None,
    policy: ColumnPolicy | None,
    hierarchies: QidHierarchies,
    /,
    *,
    model: str,
    whole: bool,
    parts: bool = False,
) -> tuple[pl.DataFrame | None, QidHierarchies, QidCodes | None]:
    """What the engine is fed besides P(s | c) and θ*, made ahead of them (issue 18 item 6): the field
    QIDs' codes per unit and ``hierarchies`` with them (:func:`engine_fields`, with ``demo`` and
    ``policy``), and the greedy engine's QID arrays of the units :func:`partition_model` feeds it
    (``cases`` joined with the codes; none for a model fed reports or partitioned top-down, or when
    the engine is not fed the ``whole`` cases frame, as in a series step). With ``parts`` the engine
    runs on parts of it (strata): the arrays are made without class levels, which each part makes for
    itself (:func:`~faers_anon.algorithms._frame.part_codes`).
    """
    codes = None
    if demo is not None and policy is not None:
        codes, hierarchies = engine_fields(demo, policy, hierarchies, unit=model_unit(model))
    req = MODELS[model](k=2, thetas={}).requirements()
    if (
        not whole
        or req.unit != "cases"
        or req.algorithm != "greedy"
        or (hierarchies.fields and codes is None)
    ):
        return codes, hierarchies, None
    units = cases.join(codes, on="caseid", how="left") if hierarchies.fields and codes is not None else cases
    qids = encode_qids(units, hierarchies, classes=not parts)
    if units.height >= JIT_MIN_CASES and chosen_mode() != "interpreted":  # the engine runs
        with kernel_mode("compiled"):  # compiled: its kernels are loaded (or compiled) here, ahead
            greedy_cluster(units.head(WARM_CASES), probabilities=_NO_P, model=MODELS[model](k=2, thetas={}),
                           hierarchies=hierarchies, rng=np.random.default_rng(0))  # fmt: skip
    return codes, hierarchies, qids


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelPartition:
    """A model's partition in the shapes its consumers need.

    Attributes:
        partition: the engine's output; ``partition.frame`` is the release's partition frame (one row
            per caseid, or one row per report with ``primaryid`` for report-unit models).
        units: the engine's input (raw QIDs), keyed by unit id in ``caseid``.
        unit: ``"cases"`` or ``"reports"``.
    """

    partition: Partition
    units: pl.DataFrame
    unit: str


def partition_model(
    cases: pl.DataFrame,
    knowledge: pl.DataFrame,
    /,
    *,
    model: GroupModel,
    hierarchies: QidHierarchies,
    rng: np.random.Generator,
    sensitive: Sequence[str],
    reports: pl.DataFrame | None = None,
    probabilities: pl.DataFrame | None = None,
    candidates: int = 64,
    scan_limit: int = 4096,
    codes: pl.DataFrame | None = None,
    qids: QidCodes | None = None,
) -> ModelPartition:
    """Feed a model's algorithm its units and map the partition back (module docstring).

    Args:
        cases: the cases frame (cases.parquet contract).
        knowledge: E (drug_key, disease, weight).
        model: a registered model.
        hierarchies: the QIDs.
        rng: the run's generator (draws the greedy engine's first seed).
        sensitive: the sensitive attributes of the run.
        reports: :func:`report_records` of the same folder; required by report-unit models.
        probabilities: the cases' P(s | c) when already computed (used for case-unit models with
            knowledge, which need exactly that frame).
        candidates, scan_limit: the greedy engine's search bounds.
        codes: the field QIDs' codes per unit (:func:`engine_fields`), required when
            ``hierarchies.fields`` is not empty; Mondrian ignores them (the release still generalizes
            the fields over its groups).
        qids: the QID arrays of :func:`engine_inputs` when made ahead (greedy engine).

    Raises:
        ConfigError: a report-unit model without ``reports``, or field QIDs without ``codes``.
    """
    req = model.requirements()
    if req.unit == "reports":
        if reports is None:
            raise ConfigError(f"{model.name}: is fed one unit per report; pass the report records")
        units = unit_view(reports)
    else:
        units = cases
    if hierarchies.fields:
        if codes is None:
            raise ConfigError("field QIDs need their codes per unit (units.engine_fields)")
        units = units.join(codes, on="caseid", how="left")
    if probabilities is not None and req.unit == "cases" and req.knowledge and req.algorithm == "greedy":
        probs = probabilities
    else:
        probs = unit_probabilities(units, knowledge, model=model, sensitive=sensitive)
    if req.algorithm == "mondrian":
        partition = mondrian(units, probabilities=probs, model=model, hierarchies=hierarchies, rng=rng)
    else:
        partition = greedy_cluster(
            units,
            probabilities=probs,
            model=model,
            hierarchies=hierarchies,
            rng=rng,
            candidates=candidates,
            scan_limit=scan_limit,
            qids=qids,
        )
    if req.unit == "reports" and reports is not None:
        frame = (
            partition.frame.rename({"caseid": "primaryid"})
            .join(reports.select("primaryid", "caseid"), on="primaryid", how="left")
            .select("primaryid", "caseid", *(c for c in partition.frame.columns if c != "caseid"))
        )
        partition = replace(partition, frame=frame)
    return ModelPartition(partition=partition, units=units, unit=req.unit)
