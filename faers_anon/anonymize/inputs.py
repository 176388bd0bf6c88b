"""What an anonymize run reads besides the cases: E, P(s | c) and θ* (SPEC §5; issue 13).

Shared by the model path (:mod:`.pipeline`), the method path (:mod:`.method_run`) and the series step
(:mod:`faers_anon.series.step`), so that none of them imports another to reach these.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import polars as pl

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.thresholds import Thresholds, build_thresholds, with_declared_values
from faers_anon.anonymize.value_classes import ValueClasses, with_class_thetas, with_classes_and_outcomes
from faers_anon.errors import InputError
from faers_anon.io.column_policy import ColumnPolicy, load_policy
from faers_anon.io.qid_fields import with_outcome_sets
from knowledge import (
    E_SCHEMA,
    case_value_probabilities,
    load_table,
    match_table,
    mine_from_indications,
    vocabulary_of_cases,
    with_combinations,
)
from knowledge.values import value_key_expr

__all__ = [
    "knowledge_table",
    "published_drug_names",
    "read_knowledge",
    "read_demo",
    "read_table",
    "sensitive_thresholds",
    "with_drug_names",
    "with_earlier",
]

log = logging.getLogger(__name__)


def read_table(path: Path) -> pl.DataFrame:
    """One ingested Parquet table (InputError naming the file when missing or unreadable).

    ``reports.parquet`` (the DEMO rows) comes with the derived field ``outcome``, its case's OUTC set
    (:func:`read_demo`), so that every reader of the DEMO rows sees the qid the column policy declares.
    """
    if not path.is_file():
        raise InputError("missing ingested table (run `faers-anon ingest` first)", path=path)
    try:
        frame = pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise InputError(f"unreadable parquet ({str(exc).splitlines()[0]})", path=path) from exc
    if path.name == "reports.parquet":
        return _with_outcomes(frame, path.parent)
    return frame


def read_demo(ingested: Path) -> pl.DataFrame:
    """The DEMO rows of an ingested folder with ``outcome``: the case's OUTC codes as a set, one text
    (:func:`faers_anon.io.qid_fields.with_outcome_sets`; null throughout when the folder has no OUTC row)."""
    return read_table(ingested / "reports.parquet")


def _with_outcomes(demo: pl.DataFrame, ingested: Path) -> pl.DataFrame:
    outc = ingested / "outc.parquet"
    codes = (
        pl.read_parquet(outc, columns=["caseid", "outc_cod"])
        if outc.is_file()
        else pl.DataFrame(schema={"caseid": pl.Int64, "outc_cod": pl.String})
    )
    return with_outcome_sets(demo, codes)


def knowledge_table(
    ingested: Path, /, *, sensitive: Sequence[str], knowledge: Path | None, earlier: Path | None = None
) -> pl.DataFrame:
    """E for a run on an ingested folder (SPEC §5).

    With a user's table (``knowledge``): its drug names keyed like DRUG rows, its disease names
    matched to the folder's FAERS terms (:func:`knowledge.match_table`: case, comma inversion,
    spelling; the match share is logged), and rows added for the combination products the folder
    holds (:func:`knowledge.with_combinations`), so that knowledge.csv reproduces every P(s | c).
    Without one: E mined from the folder's INDI × DRUG (:func:`knowledge.mine_from_indications`).
    Empty when ``diseases`` is not a sensitive attribute. With ``earlier`` (a ledgered release t:
    E*_{t−1}, :attr:`AnonymizeConfig.earlier_knowledge`): E*_t = max(E_t, E*_{t−1}) per pair
    (:func:`with_earlier`).

    Raises:
        InputError: a table needed to mine E is missing.
        KnowledgeError: the user's table cannot be read.
    """
    if "diseases" not in sensitive:
        return pl.DataFrame(schema=E_SCHEMA)
    own = _own_knowledge(ingested, knowledge)
    return own if earlier is None else with_earlier(own, read_knowledge(earlier))


def read_knowledge(path: Path) -> pl.DataFrame:
    """A (drug_key, disease, weight) CSV as written by the release (``knowledge.csv``), weights Float64."""
    frame = pl.read_csv(path, infer_schema=False)
    return frame.select("drug_key", "disease", pl.col("weight").cast(pl.Float64))


def with_earlier(own: pl.DataFrame, earlier: pl.DataFrame | None) -> pl.DataFrame:
    """E*_t(x, s) = max(E_t(x, s), E*_{t−1}(x, s)), a pair absent from one side counting 0 (the rows of
    either side kept; docs/series.md §4): the E a ledgered release t is bounded against and publishes.
    An attacker holding releases 1..t reads every case through E*_t; no data of release t can lower
    an earlier weight, so the release must hold against it. Sorted by (drug_key, disease)."""
    if earlier is None:
        return own
    return (
        pl.concat([own.select(list(E_SCHEMA)).cast(E_SCHEMA),  # type: ignore[arg-type]
                   earlier.select(list(E_SCHEMA)).cast(E_SCHEMA)])  # type: ignore[arg-type]
        .group_by("drug_key", "disease")
        .agg(pl.col("weight").max())
        .sort("drug_key", "disease")
        .select(list(E_SCHEMA))
    )  # fmt: skip


def _own_knowledge(ingested: Path, knowledge: Path | None) -> pl.DataFrame:
    """E of the folder alone: the user's table matched to it, or mined from its INDI × DRUG."""
    if knowledge is not None:
        given = load_table(knowledge).select(list(E_SCHEMA))
        cases = read_table(ingested / "cases.parquet").select("indications", "reactions", "drug_keys")
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


def published_drug_names(ingested: Path, policy: ColumnPolicy) -> pl.DataFrame | None:
    """(caseid, key) of every drug name the release publishes besides ``drug_key`` (SPEC §11).

    P(s | c) reads every released drug column through E: when the column policy keeps ``drugname``
    or ``prod_ai`` (the bundled default drops both), each of their values, keyed like E's drug
    names (:func:`knowledge.values.value_key_expr`), counts as one more drug of its case, over
    every version of the case. None when the release publishes ``drug_key`` alone.
    """
    columns = [c for c in ("drugname", "prod_ai") if policy.role("drug", c) != "drop"]
    if not columns:
        return None
    return (
        pl.scan_parquet(ingested / "drug.parquet")
        .select("caseid", *columns)
        .unpivot(index="caseid", on=columns)
        .select("caseid", value_key_expr(pl.col("value")).alias("key"))
        .drop_nulls()
        .unique()
        .collect()
    )


def with_drug_names(cases: pl.DataFrame, names: pl.DataFrame | None) -> pl.DataFrame:
    """``cases`` whose ``drug_keys`` also hold the published drug names (:func:`published_drug_names`)."""
    if names is None or names.height == 0:
        return cases
    extra = names.group_by("caseid").agg(pl.col("key").alias("_names"))
    return (
        cases.join(extra, on="caseid", how="left")
        .with_columns(
            pl.concat_list(pl.col("drug_keys"), pl.col("_names").fill_null(pl.lit([], pl.List(pl.String))))
            .list.unique(maintain_order=True)
            .alias("drug_keys")
        )
        .drop("_names")
    )


def sensitive_thresholds(
    cases: pl.DataFrame,
    knowledge: pl.DataFrame,
    /,
    *,
    config: AnonymizeConfig,
    classes: ValueClasses | None = None,
    outcomes: pl.DataFrame | None = None,
    ingested: Path | None = None,
    computed: Callable[[pl.DataFrame, pl.DataFrame], pl.DataFrame] | None = None,
) -> tuple[pl.DataFrame, Thresholds]:
    """P(s | c) of the cases (SPEC §5) and θ* over the values they reach (:mod:`.thresholds`).

    With ``classes``/``outcomes`` (caseid, outc_cod), P(s | c) also holds the class and OUTC pseudo-values
    of :mod:`.value_classes`, so θ* and the model bound them like single values (SPEC §11).
    With ``ingested`` (the folder ``cases`` come from), P(s | c) reads every drug column the run's
    column policy (``config.column_policy``) publishes through E (:func:`published_drug_names`), as
    the verifier does: the method path and the series step get it by passing their folder. A caller
    whose ``cases`` already hold those names (the model path, :func:`with_drug_names`) leaves it None.
    ``computed``: the same P(s | c) frame of (cases, E) computed another way (the series step's array pass,
    :func:`faers_anon.series.composition.composition_probabilities`, with these classes and outcomes).
    """
    if ingested is not None:
        cases = with_drug_names(cases, published_drug_names(ingested, load_policy(config.column_policy)))
    if computed is None:
        probabilities = case_value_probabilities(cases, knowledge, sensitive=config.sensitive)
        probabilities = with_classes_and_outcomes(probabilities, classes=classes, outcomes=outcomes)
    else:
        probabilities = computed(cases, knowledge)
    thresholds = build_thresholds(
        probabilities,
        cases.height,
        rule=config.theta_rule,  # type: ignore[arg-type]
        theta=config.theta,
        theta_file=config.theta_file,
        slope=config.frequency_slope,
        on_infeasible=config.on_infeasible,  # type: ignore[arg-type]
        k=config.k,
        outcome_rule=config.outcome_theta,
    )
    thresholds = replace(thresholds, frame=with_class_thetas(thresholds.frame, classes))
    # thresholds.csv lists every value of the sensitive attributes, fillers with the reason (issue 17)
    thresholds = with_declared_values(thresholds, cases, knowledge, sensitive=config.sensitive)
    return probabilities, thresholds
