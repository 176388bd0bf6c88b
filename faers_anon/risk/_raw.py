"""The raw half of ``faers-anon risk``: what it reads from the ingested folder alone (SPEC §11).

Journalist risk and linkage compare the release with the raw quarter. Reading the raw case view,
its item lists and its report rows (:func:`._view.read_cases`) needs only the ingested folder, so
the release pipeline can do it before the release exists, beside the engine, and hand the result to
:func:`faers_anon.risk.assess_risk` (``raw_side=``). It is read with **every** DEMO field; the
release's fields are picked out afterwards (:func:`restricted`), giving the very frame a read
restricted to them gives. The raw drug items are read from ``drug_columns``, which must be the drug
columns the release publishes (``drug_key``, plus ``drugname``/``prod_ai`` when the column policy
keeps them); when the release publishes others, only the raw drug items are read again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from faers_anon.risk._view import DRUG_COLUMNS, CaseData, read_cases, table, terms

__all__ = ["RawCases", "raw_cases", "restricted"]


@dataclass(frozen=True, kw_only=True, slots=True)
class RawCases:
    """The raw quarter as :func:`faers_anon.risk.assess_risk` reads it (module docstring).

    Attributes:
        folder: the ingested folder it was read from.
        data: its case view (every DEMO field), item lists and report rows.
        drug_columns: the drug columns asked for (the items come from those the raw drug table has).
    """

    folder: Path
    data: CaseData
    drug_columns: tuple[str, ...]


def raw_cases(ingested: Path, /, *, drug_columns: tuple[str, ...] = ("drug_key",)) -> RawCases:
    """Read the raw half of the risk stage from an ingested folder (module docstring).

    Args:
        ingested: the ingested folder (``reports.parquet``, ``drug.parquet``, …).
        drug_columns: the drug columns the release will publish (default: ``drug_key`` alone, the
            bundled column policy's).

    Raises:
        InputError: no DEMO table, or one without ids.
    """
    unknown = [c for c in drug_columns if c not in DRUG_COLUMNS]
    if unknown:
        raise ValueError(f"drug_columns: {', '.join(unknown)} not among {', '.join(DRUG_COLUMNS)}")
    return RawCases(
        folder=ingested, data=read_cases(ingested, drug_columns=drug_columns), drug_columns=drug_columns
    )


def restricted(raw: RawCases, keep: tuple[str, ...], drug_columns: tuple[str, ...]) -> CaseData:
    """``raw``'s data as :func:`._view.read_cases` (``keep``, ``drug_columns``) reads it: the kept
    fields in the same order, and the drug items read again when other columns are asked for."""
    data = raw.data
    fields = tuple(f for f in data.fields if f in keep)
    drugs, present = data.drugs, data.drug_columns
    if tuple(drug_columns) != raw.drug_columns:
        drug = table(raw.folder, "drug")
        names = () if drug is None else drug.collect_schema().names()
        present = tuple(c for c in drug_columns if c in names)
        drugs = terms(raw.folder, "drug", present)
    reports = [c for c in data.reports.columns if c in ("primaryid", "caseid") or c in fields]
    return replace(
        data,
        view=data.view.select("caseid", *fields),
        fields=fields,
        drugs=drugs,
        reports=data.reports.select(reports),
        drug_columns=present,
    )
