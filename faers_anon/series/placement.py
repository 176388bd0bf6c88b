"""Composition-safe placement of returning cases: frozen groups, released together or not at all.

Source: issue 14 item 3; SPEC §11 "Composition"; Xiao & Tao 2007 (m-invariance: a record keeps the
same signature across releases); docs/series.md (the argument and its limits).

Terms: a case's *history* is the list of (release, group) it had in the releases of the ledger
(:func:`faers_anon.series.ledger.history`); I(c) = ∩ G_r(c) over those releases is what an attacker
who follows its pseudonym learns (:mod:`faers_anon.risk._composition`). Two cases with the same
history shared a group in every release where either appeared, so each is in the other's I.

Rule, for the cases of this quarter (``cases.parquet``, raw caseids; pseudonyms under the series key):

1. a case not in the ledger is *fresh*: the engine places it as in a stand-alone release;
2. a case in the ledger is *returning*; returning cases with the same history form a *bundle* B;
3. a bundle with |B| ≥ k is published as one group (a *frozen* group: its own group id, not the
   engine's) whose region is its last released region, widened to the root of any QID where a
   member's current value falls outside it (so the region is never narrower than before: no QID
   range shrinks by intersecting releases); it is kept only if it meets θ* on its own
   (conf(B → s) = Σ_{c∈B} P(s | c) / |B| ≤ θ_s for every protected s, with P(s | c) over the
   union of what c exposes now and what the ledger says it exposed before: the attacker who
   follows the pseudonym sees every release);
4. every other returning case is *withheld*: none of its reports is in this release (it stays in
   the ledger with its earlier releases, and is counted).

Why it bounds composition: a published returning case c has G_new(c) ⊇ B (other cases may share the
tuple, never fewer) and B ⊆ G_r(c) for every earlier r (same history), so I_new(c) ⊇ B and
|I_new(c)| ≥ |B| ≥ k. A fresh case appears once; a withheld case's I is unchanged. By induction over
the releases every case in several releases keeps |I(c)| ≥ k.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from faers_anon.pseudonyms import case_pseudonyms
from faers_anon.series.ledger import REGION, history

__all__ = ["SeriesPlan", "plan_series", "pseudonym_ids", "ROOT"]

#: The root of each QID's generalization: the region a QID is widened to when a follow-up leaves it.
ROOT: dict[str, dict[str, object]] = {
    "age": {"age_group": "*", "age_min": 0.0, "age_max": None},
    "sex": {"sex": "*"},
    "weight": {"wt_min": None, "wt_max": None},
}


@dataclass(frozen=True, slots=True)
class SeriesPlan:
    """Where this quarter's returning cases go.

    Attributes:
        frozen: one row per published returning case: ``caseid`` (raw), ``bundle`` (index), the
            region columns (:data:`faers_anon.series.ledger.REGION`).
        withheld: raw caseids of the returning cases not published in this release.
        counts: ``fresh``, ``returning``, ``bundles``, ``published_returning``, ``withheld``,
            ``withheld_small`` (bundle below k), ``withheld_theta`` (bundle over θ*), ``widened``.
    """

    frozen: pl.DataFrame
    withheld: pl.Series
    counts: dict[str, int]


def _outside(region: str, lo: str, hi: str, exclusive: bool) -> pl.Expr:
    """True where a case's [lo, hi] (super-record range) leaves the region's [min, max)."""
    top = pl.col(f"{region}_max")
    above = (pl.col(hi) >= top) if exclusive else (pl.col(hi) > top)
    below = pl.col(f"{region}_min").is_not_null() & (pl.col(lo) < pl.col(f"{region}_min"))
    return pl.col(lo).is_not_null() & (below | (top.is_not_null() & above))


def _widened(bundles: pl.DataFrame) -> pl.DataFrame:
    """Widen each bundle's region to the root of any QID a member's current value leaves."""
    outside = {
        "age": _outside("age", "case_age_min", "case_age_max", exclusive=True),
        "sex": pl.col("case_sex").is_not_null() & (pl.col("sex").is_null() | (
            (pl.col("sex") != "*") & (pl.col("sex") != pl.col("case_sex")))),
        "weight": _outside("wt", "case_wt_min", "case_wt_max", exclusive=False),
    }  # fmt: skip
    flags = bundles.with_columns(**{f"_out_{q}": e.any().over("bundle") for q, e in outside.items()})
    widen = []
    for qid, root in ROOT.items():
        for column, value in root.items():
            root_value = pl.lit(value, flags.schema[column])
            widen.append(
                pl.when(pl.col(f"_out_{qid}")).then(root_value).otherwise(pl.col(column)).alias(column)
            )
    widened = pl.any_horizontal(pl.col(f"_out_{q}") for q in ROOT)
    return flags.with_columns(*widen, widened.alias("widened")).drop(f"_out_{q}" for q in ROOT)


def _within_theta(members: pl.DataFrame, probabilities: pl.DataFrame, thetas: dict[str, float]) -> pl.Series:
    """Bundles whose conf(B → s) ≤ θ_s for every protected s (SPEC §5 on the bundle alone)."""
    theta = pl.DataFrame({"value": list(thetas), "theta": list(thetas.values())},
                         schema={"value": pl.Utf8, "theta": pl.Float64})  # fmt: skip
    sizes = members.group_by("bundle").len("size")
    over = (
        members.select("bundle", "caseid")
        .join(probabilities, on="caseid")
        .group_by("bundle", "value")
        .agg(pl.col("p").sum())
        .join(sizes, on="bundle")
        .join(theta, on="value")
        .filter(pl.col("p") / pl.col("size") > pl.col("theta") + 1e-12)
    )
    return sizes.join(over, on="bundle", how="anti").get_column("bundle")


def pseudonym_ids(cases: pl.DataFrame, pseudonym_key: bytes) -> pl.DataFrame:
    """``caseid`` (raw) → ``pseudonym`` of this quarter's cases under the series key."""
    mapping, _ = case_pseudonyms(cases.get_column("caseid").to_list(), pseudonym_key)
    return pl.DataFrame({"caseid": list(mapping), "pseudonym": list(mapping.values())},
                        schema={"caseid": pl.Int64, "pseudonym": pl.Int64})  # fmt: skip


def plan_series(
    cases: pl.DataFrame,
    entries: pl.DataFrame,
    pseudonym_key: bytes,
    *,
    k: int,
    probabilities: pl.DataFrame,
    thetas: dict[str, float],
) -> SeriesPlan:
    """Split this quarter's cases into fresh, published returning (frozen bundles) and withheld.

    Args:
        cases: this quarter's super-records (``caseid`` raw, ``age_min``/``age_max``, ``sex``,
            ``wt_min``/``wt_max``).
        entries: the ledger's rows of every earlier release.
        pseudonym_key: the series key's pseudonym key (the ledger holds pseudonyms).
        k: the release's k.
        probabilities: P(s | c) of the returning cases over everything they exposed (caseid raw,
            value, p; :func:`faers_anon.series.step.exposed_probabilities`).
        thetas: θ* of the protected values.
    """
    ids = pseudonym_ids(cases, pseudonym_key)
    current = cases.select(
        "caseid", *[pl.col(c).alias(f"case_{c}") for c in ("age_min", "age_max", "sex", "wt_min", "wt_max")]
    ).join(ids, on="caseid")
    past = history(entries).rename({"caseid": "pseudonym"})
    returning = current.join(past, on="pseudonym")
    bundles = returning.with_columns(pl.col("history").rank("dense").cast(pl.Int64).alias("bundle"))
    bundles = bundles.with_columns(pl.len().over("bundle").alias("_size"))
    large = _widened(bundles.filter(pl.col("_size") >= k))
    kept = _within_theta(large, probabilities, thetas)
    frozen = large.filter(pl.col("bundle").is_in(kept.implode()))
    withheld = returning.join(frozen, on="caseid", how="anti").get_column("caseid")
    counts = {
        "fresh": current.height - returning.height,
        "returning": returning.height,
        "bundles": int(kept.len()),
        "published_returning": frozen.height,
        "withheld": withheld.len(),
        "withheld_small": bundles.filter(pl.col("_size") < k).height,
        "withheld_theta": large.height - frozen.height,
        "widened": int(frozen.get_column("widened").sum()),
    }
    return SeriesPlan(frozen.select("caseid", "bundle", *REGION), withheld, counts)
