"""Mining E from FAERS itself: which diseases are the suspect drugs reported for (INDI ⋈ DRUG).

An attacker who has FAERS (this quarter or others) can estimate, for a drug d, the probability that
a patient taking it has indication s. That estimate is the knowledge E the release must resist, so
the default E of a run is mined from the data being released (``default_table``), optionally pooled
with other quarters.

Rule (SPEC §5 for the role of E; the counting follows the ingested-folder contract):

- INDI joins DRUG on (primaryid, indi_drug_seq = drug_seq); only DRUG rows whose ``role_cod`` is in
  ``roles`` (default suspect drugs: PS primary, SS secondary) count: concomitant drugs are reported
  with the patient's other conditions, not their own indication.
- Filler terms that name no condition (``FILLER_TERMS``: "Product used for unknown indication", …)
  are dropped, as are empty terms. A drug–case pair with only filler says nothing about which
  disease the drug treats, so it is left out of the denominator too.
- Counts are of distinct caseids (k counts cases, never rows; follow-ups and quarters merge).
  n(d) = cases with d and an informative indication of d; n(d, s) = those among them with s;
  n(s) = cases with s as an informative indication of any counted drug; N = all such cases.
- support = n(d, s); confidence = n(d, s) / n(d) = P(s | d); lift = confidence / (n(s) / N).
- weight = confidence, in (0, 1]. A drug's weights may sum above 1 (a case may list several
  indications for one drug).

Default thresholds and why: ``min_cases = 3`` (the Evans signal convention a ≥ 3: one or two cases
are anecdotes, and a pair seen once is itself close to identifying); ``min_confidence = 0.05`` (a
belief under 5 % is below any θ used in practice, 0.2–0.6, and such rows are mostly noise);
``min_lift = 1.0`` (s is at least as frequent with d as among all counted cases, so a pair that
merely reflects a common indication reported with an unrelated drug is not kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from knowledge.drug_names import drug_key_expr
from knowledge.errors import KnowledgeError
from knowledge.values import value_key_expr

__all__ = [
    "FILLER_TERMS",
    "MiningConfig",
    "default_table",
    "indication_rows",
    "mine_from_indications",
    "mine_from_links",
]

#: INDI_PT terms that name no condition; compared by canonical key (case-insensitive).
FILLER_TERMS: tuple[str, ...] = (
    "Product used for unknown indication",
    "Drug use for unknown indication",
    "Unknown indication",
    "Indication unknown",
    "Ill-defined disorder",
    "Unevaluable event",
    "No adverse event",
    "Drug therapy",
    "Off label use",
    "Product used for other indication",
)
_ROLES = ("PS", "SS", "C", "I")


@dataclass(frozen=True, kw_only=True, slots=True)
class MiningConfig:
    """Thresholds of ``mine_from_indications`` (module docstring gives each default's reason).

    Attributes:
        min_cases: minimum support n(d, s), an integer ≥ 1.
        min_confidence: minimum P(s | d), in [0, 1].
        min_lift: minimum lift, ≥ 0.
        roles: DRUG ``role_cod`` values that count, a non-empty subset of PS, SS, C, I.
        filler_terms: INDI_PT terms dropped as naming no condition.
    """

    min_cases: int = 3
    min_confidence: float = 0.05
    min_lift: float = 1.0
    roles: tuple[str, ...] = ("PS", "SS")
    filler_terms: tuple[str, ...] = FILLER_TERMS

    def __post_init__(self) -> None:
        if isinstance(self.min_cases, bool) or not isinstance(self.min_cases, int) or self.min_cases < 1:
            raise KnowledgeError(f"mining: min_cases must be an integer >= 1; got {self.min_cases!r}")
        if not 0.0 <= self.min_confidence <= 1.0:
            raise KnowledgeError(f"mining: min_confidence must be in [0, 1]; got {self.min_confidence!r}")
        if not self.min_lift >= 0.0:
            raise KnowledgeError(f"mining: min_lift must be >= 0; got {self.min_lift!r}")
        if not self.roles or not set(self.roles) <= set(_ROLES):
            raise KnowledgeError(
                f"mining: roles must be a non-empty subset of {', '.join(_ROLES)}; got {self.roles!r}"
            )


def _columns(frame: pl.LazyFrame, needed: Sequence[str], where: str) -> None:
    present = frame.collect_schema().names()
    missing = [c for c in needed if c not in present]
    if missing:
        raise KnowledgeError(
            f"{where}: missing columns {missing} (expected the ingested {where}.parquet contract)"
        )


def _joined(drug: pl.LazyFrame, indi: pl.LazyFrame, config: MiningConfig, *extra: pl.Expr) -> pl.LazyFrame:
    """INDI ⋈ DRUG as mining counts it (suspect roles, indi_drug_seq = drug_seq): ``caseid`` (the DRUG
    row's), ``drug_key``, ``disease`` (the INDI_PT's canonical key), ``extra`` columns of the INDI rows."""
    drug_names = drug.collect_schema().names()
    if "drug_key" not in drug_names:
        _columns(drug, ["prod_ai", "drugname"], "drug")
        drug = drug.with_columns(drug_key=drug_key_expr(pl.col("prod_ai"), pl.col("drugname")))
    _columns(drug, ["primaryid", "caseid", "drug_seq", "role_cod"], "drug")
    _columns(indi, ["primaryid", "indi_drug_seq", "indi_pt"], "indi")
    suspects = drug.filter(
        pl.col("role_cod").cast(pl.Utf8).str.strip_chars().str.to_uppercase().is_in(list(config.roles))
    ).select(
        pl.col("primaryid").cast(pl.Int64),
        pl.col("caseid").cast(pl.Int64),
        pl.col("drug_seq").cast(pl.Int64),
        pl.col("drug_key").cast(pl.Utf8),
    )
    indications = indi.select(
        *extra,
        pl.col("primaryid").cast(pl.Int64),
        pl.col("indi_drug_seq").cast(pl.Int64).alias("drug_seq"),
        value_key_expr(pl.col("indi_pt").cast(pl.Utf8)).alias("disease"),
    )
    return suspects.join(indications, on=["primaryid", "drug_seq"], how="inner")


def _mine(drug: pl.LazyFrame, indi: pl.LazyFrame, config: MiningConfig) -> pl.DataFrame:
    return _weights(_joined(drug, indi, config).select("caseid", "drug_key", "disease"), config)


def indication_rows(
    drug: pl.DataFrame | pl.LazyFrame, indi: pl.DataFrame | pl.LazyFrame, /, *,
    roles: Sequence[str] = ("PS", "SS"),
) -> pl.LazyFrame:  # fmt: skip
    """The rows ``mine_from_indications`` counts, one per (INDI row, suspect DRUG row) it joins: ``_row``
    (the INDI row's index), ``indi_caseid`` (its caseid), ``primaryid``, ``drug_seq``, ``caseid`` (the
    DRUG row's), ``drug_key``, ``disease``; nulls and filler terms kept. :func:`mine_from_links` of the
    rows of some INDI and DRUG rows is ``mine_from_indications`` of those rows (a caller mining many
    subsets of one folder joins and keys its rows once)."""
    config = MiningConfig(roles=tuple(r.strip().upper() for r in roles))
    indi = indi.lazy().with_row_index("_row")
    return _joined(
        drug.lazy(), indi, config, pl.col("_row"), pl.col("caseid").cast(pl.Int64).alias("indi_caseid")
    )


def mine_from_links(
    links: pl.DataFrame | pl.LazyFrame, /, *, min_cases: int = 3, min_confidence: float = 0.05,
    min_lift: float = 1.0, filler_terms: Sequence[str] = FILLER_TERMS,
) -> pl.DataFrame:  # fmt: skip
    """E of joined rows (``caseid``, ``drug_key``, ``disease``: :func:`indication_rows`), as
    ``mine_from_indications`` (the same thresholds) gives it of the INDI and DRUG rows they came from."""
    config = MiningConfig(min_cases=min_cases, min_confidence=min_confidence, min_lift=min_lift,
                          filler_terms=tuple(filler_terms))  # fmt: skip
    return _weights(links.lazy().select("caseid", "drug_key", "disease"), config)


def _weights(links: pl.LazyFrame, config: MiningConfig) -> pl.DataFrame:
    """E of the joined (caseid, drug_key, disease) rows: nulls and filler terms dropped, distinct cases."""
    filler_keys = (
        pl.DataFrame({"term": list(config.filler_terms)}, schema={"term": pl.Utf8})
        .select(value_key_expr(pl.col("term")))
        .to_series()
        .drop_nulls()
    )
    links = (
        links.drop_nulls(["caseid", "drug_key", "disease"])
        .filter(~pl.col("disease").is_in(filler_keys.implode()))
        .select("caseid", "drug_key", "disease")
        .unique()
    )
    n_drug = links.group_by("drug_key").agg(pl.col("caseid").n_unique().alias("_n_drug"))
    n_value = links.group_by("disease").agg(pl.col("caseid").n_unique().alias("_n_value"))
    n_all = links.select(pl.col("caseid").n_unique().alias("_n_all"))
    confidence = pl.col("cases") / pl.col("_n_drug")
    return (
        links.group_by("drug_key", "disease")
        .agg(pl.len().cast(pl.Int64).alias("cases"))
        .join(n_drug, on="drug_key")
        .join(n_value, on="disease")
        .join(n_all, how="cross")
        .with_columns(confidence=confidence.cast(pl.Float64))
        .with_columns(lift=pl.col("confidence") / (pl.col("_n_value") / pl.col("_n_all")))
        .filter(
            (pl.col("cases") >= config.min_cases)
            & (pl.col("confidence") >= config.min_confidence)
            & (pl.col("lift") >= config.min_lift)
        )
        .select("drug_key", "disease", pl.col("confidence").alias("weight"), "cases", "confidence", "lift")
        .sort("drug_key", "disease")
        .collect()
    )


def mine_from_indications(
    drug: pl.DataFrame | pl.LazyFrame,
    indi: pl.DataFrame | pl.LazyFrame,
    /,
    *,
    min_cases: int = 3,
    min_confidence: float = 0.05,
    min_lift: float = 1.0,
    roles: Sequence[str] = ("PS", "SS"),
    filler_terms: Sequence[str] = FILLER_TERMS,
) -> pl.DataFrame:
    """E mined from FAERS INDI and DRUG: weight = P(indication | drug) over distinct cases.

    The rule, the counts and the defaults' reasons are in the module docstring.

    Args:
        drug: DRUG rows: primaryid, caseid, drug_seq, role_cod, and drug_key (else prod_ai and
            drugname, keyed with ``drug_key_expr``).
        indi: INDI rows: primaryid, indi_drug_seq, indi_pt.
        min_cases, min_confidence, min_lift, roles, filler_terms: see ``MiningConfig``.

    Returns:
        A frame (drug_key Utf8, disease Utf8 = the INDI_PT canonical key, weight Float64 in (0, 1],
        cases Int64, confidence Float64, lift Float64), sorted by drug_key then disease; the first
        three columns are an E.

    Raises:
        KnowledgeError: a threshold out of range or a missing column.
    """
    config = MiningConfig(
        min_cases=min_cases,
        min_confidence=min_confidence,
        min_lift=min_lift,
        roles=tuple(r.strip().upper() for r in roles),
        filler_terms=tuple(filler_terms),
    )
    return _mine(drug.lazy(), indi.lazy(), config)


def default_table(
    folder: str | Path, /, *, extra_folders: Sequence[str | Path] = (), config: MiningConfig | None = None
) -> pl.DataFrame:
    """The default E of a run: mined from the ingested folder being released, plus other quarters.

    Reads ``drug.parquet`` and ``indi.parquet`` of each folder (the ingested-folder contract) and
    mines them together, so a case seen in several quarters counts once.

    Args:
        folder: the ingested folder of the release.
        extra_folders: more ingested folders whose indications the attacker may also know.
        config: thresholds; ``MiningConfig()`` when not given.

    Returns:
        E as ``mine_from_indications`` returns it.

    Raises:
        KnowledgeError: a folder lacks ``drug.parquet`` or ``indi.parquet``, or a column.
    """
    folders = [Path(folder), *(Path(f) for f in extra_folders)]
    frames: dict[str, list[pl.LazyFrame]] = {"drug": [], "indi": []}
    for path in folders:
        for table, parts in frames.items():
            file = path / f"{table}.parquet"
            if not file.is_file():
                raise KnowledgeError(
                    f"{file}: file not found (expected an ingested folder with {table}.parquet)"
                )
            parts.append(pl.scan_parquet(file))
    drug = pl.concat(frames["drug"], how="diagonal_relaxed")
    indi = pl.concat(frames["indi"], how="diagonal_relaxed")
    return _mine(drug, indi, config if config is not None else MiningConfig())
