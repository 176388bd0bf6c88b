"""P(s | c) of a series' members over what they expose now and exposed before.

Source: SPEC §5, §11 "Composition"; docs/series.md §4 (rule 4). The series step asks for P(s | c) of
the units' members, the recheck's members and the earlier intersections' holders
(:mod:`faers_anon.series.step`, :mod:`faers_anon.series.earlier`): each member's value lists are
the union of its current lists and every value the ledger records it exposed, its OUTC codes those
of this quarter and the ledger's, and P is computed as for a release.

Cost: P(s | c) explodes the lists and keeps one row per (case, value), so the union is not sorted
per row (that took 0.8 CPU-s a call, six calls a 100k quarter); it is made unique (``list.unique``,
no sort): a republished member's stored lists repeat its ledger values, and P's explode, join and
sort over the repeats cost more (a 100k quarter 4's 88,852 members: 1.94 → 1.44 CPU-s); a set union
(``list.set_union``, null terms left to P, which drops them) on the needed columns only costs 0.30
CPU-s where the concatenation made unique on the members' every column cost 0.75 (the same P). Keeping each
case's rows over the calls and recomputing only where E's rows of its drugs changed was tried and
does not pay here (:mod:`.recheck` does it for a recheck's later attempts, per changed value): each
attempt's own E changes the weights of the common drugs (a withheld unit's cases change every share
of their drugs), which 70 % (first recheck) and 42 % (second) of the members hold, the republished
members' OUTC codes differ between the quarter's and the composition's, and the bookkeeping cost
more than the rows it saved (100k quarter 4).
"""

from __future__ import annotations

import polars as pl

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.value_classes import read_classes, with_classes_and_outcomes
from knowledge import case_value_probabilities

__all__ = ["exposed_probabilities"]

_LISTS = ("indications", "reactions", "drug_keys")
#: Members per P(s | c) computation (module docstring).
CHUNK = 100_000


def exposed_probabilities(
    members: pl.DataFrame,
    entries: pl.DataFrame,
    knowledge: pl.DataFrame,
    config: AnonymizeConfig,
    outcomes: pl.DataFrame | None,
) -> pl.DataFrame:
    """P(s | c) of a unit's members over the union of their current values and the ledger's.

    Args:
        members: ``caseid`` (raw), ``pseudonym`` and the value lists (current or stored).
        entries: the ledger's state (or rows); outcomes: this quarter's (caseid, outc_cod), None if
            unbounded.

    Each list attribute is the union of the member's list and every value the ledger records it
    exposed; P is then computed as for a release (SPEC §5, with the value classes and OUTC
    pseudo-values of :mod:`faers_anon.anonymize.value_classes`), so p is the largest an attacker
    holding every release can read (with the current E and class file). Computed per :data:`CHUNK`
    members (module docstring).
    """
    if members.height <= CHUNK:
        return _exposed(members, entries, knowledge, config, outcomes)
    chunk = ((pl.col("caseid").rank("dense") - 1) // CHUNK).alias("_chunk")
    parts = members.with_columns(chunk).partition_by("_chunk", include_key=False, as_dict=True)
    return pl.concat([_exposed(parts[key], entries, knowledge, config, outcomes) for key in sorted(parts)])


def _exposed(
    members: pl.DataFrame,
    entries: pl.DataFrame,
    knowledge: pl.DataFrame,
    config: AnonymizeConfig,
    outcomes: pl.DataFrame | None,
) -> pl.DataFrame:
    """:func:`exposed_probabilities` of one chunk of members."""
    state = "history" in entries.columns  # the ledger's state: one row per case, the union already made
    wanted = ["caseid", *_LISTS, *(["outcomes"] if outcomes is not None else [])]
    entries = entries.select(wanted).join(members.select(pl.col("pseudonym").alias("caseid")), on="caseid",
                                          how="semi")  # fmt: skip
    past = entries.rename({"caseid": "pseudonym"})
    if state:
        past = past.select("pseudonym", *[pl.col(n).alias(f"_past_{n}") for n in _LISTS])
    else:
        past = past.group_by("pseudonym").agg(
            pl.col(name).explode().drop_nulls().alias(f"_past_{name}") for name in _LISTS
        )
    # P(s | c) explodes the lists, drops null terms and keeps one row per (case, value): order and null
    # terms do not matter, repeats cost; a set union is cheaper than concat + unique (module docstring)
    merged = [pl.col(n).list.set_union(f"_past_{n}").alias(n) for n in _LISTS]
    ids = members.select("caseid", "pseudonym")
    own = members.select("caseid", "pseudonym", *_LISTS)
    union = own.join(past, on="pseudonym", how="left").with_columns(
        pl.col(f"_past_{n}").fill_null(pl.lit([], pl.List(pl.Utf8))) for n in _LISTS
    ).select("caseid", *merged)  # fmt: skip
    probabilities = case_value_probabilities(union, knowledge, sensitive=config.sensitive)
    if outcomes is not None:
        past_codes = (
            entries.select(pl.col("caseid").alias("pseudonym"), pl.col("outcomes").alias("outc_cod"))
            .explode("outc_cod")
            .join(ids, on="pseudonym")
            .select("caseid", "outc_cod")
        )
        now = outcomes.select(pl.col("caseid").cast(pl.Int64), "outc_cod").join(ids, on="caseid", how="semi")
        outcomes = pl.concat([now, past_codes])
    return with_classes_and_outcomes(probabilities, classes=read_classes(config.classes), outcomes=outcomes)
