"""What an anonymize run reads besides the cases and E (:class:`RunInputs`; a leaf of
:mod:`faers_anon.anonymize.pipeline`)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from faers_anon.anonymize.thresholds import Thresholds
from faers_anon.anonymize.value_classes import ValueClasses
from faers_anon.io.column_policy import ColumnPolicy

__all__ = ["NO_INPUTS", "RunInputs"]


@dataclass(frozen=True, kw_only=True, slots=True)
class RunInputs:
    """What a run reads besides the cases and E; each None leaves its part out (a run on frames alone).

    Attributes:
        reports: :func:`.units.report_records`, for a model whose unit is the report.
        classes, outcomes: value classes and OUTC codes bounded by θ (a model's run only).
        demo, policy: the DEMO rows and the column policy: its field QIDs are clustered on (models)
            and generalized over the groups (models and methods).
        drug_names: the other published drug columns (:func:`.inputs.published_drug_names`), read
            through E by P(s | c). known: P(s | c) and θ* already computed (a series step's).
    """

    reports: pl.DataFrame | None = None
    classes: ValueClasses | None = None
    outcomes: pl.DataFrame | None = None
    demo: pl.DataFrame | None = None
    policy: ColumnPolicy | None = None
    drug_names: pl.DataFrame | None = None
    known: tuple[pl.DataFrame, Thresholds] | None = None


NO_INPUTS = RunInputs()
