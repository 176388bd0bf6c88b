"""E weights a release raises, and the earlier intersections they lift over θ (issue 14 item 3).

Source: SPEC §5, §11 "Composition"; docs/series.md §4 (rule 6). The attacker holds every release,
so after release t he reads any case through every release's knowledge, each weight at its largest:

    E*_t(x, s) = max_{r ≤ t} E_r(x, s)        (a pair absent from E_r counts 0),

E_r being release r's ``knowledge.csv``, which he can also mine himself from release r's DRUG and
INDI (:func:`knowledge.mine_from_indications`: w = n(x, s) / n(x) over the suspect drugs' linked
indications, at least 3 cases): the *data* must not support a weight, lowering the file alone would
be cosmetic. Release t raises

    R_t = {(x, s) : E_t(x, s) > E*_{t−1}(x, s)},

and P(s | d) = max over d's drugs of E*(x, s) (SPEC §5) rises for every earlier case d holding x,
also one release t does not hold: every intersection I(h) holding d reads more, while rule 4's
earlier check sees only the histories a published case reaches and reads the cases kept behind as
before. So, for every kept history h (not every case of h is published in t; a history none of whose
cases is in t included) whose I(h) holds a case d with P_t(s | d) > P_{t−1}(s | d) through the raise:

    conf_t(I(h) → s) = Σ_{e ∈ I(h)} P_t(s | e) / |I(h)|,

P_t through E*_t over e's values (the ledger's, and for a case published in t its current ones too),
P_{t−1} through E*_{t−1} over the ledger's values (what the releases before t let him read). (h, s)
fails when conf_t > θ_s and conf_t > conf_{t−1} (a conf already there before is not charged, as in
rule 4). A member is *raised by E* for s when its P through E*_t exceeds its P over the same values
through E*_{t−1} (a published case's new own value is rule 4's business, not this one's).

Remedy (:func:`links_over_theta`): for each failing (h, s), the raised pairs (x, s') with x a drug of
a member of I(h) raised by E for s, s' = s or a member of the value class s, and E_t(x, s') above
that member's P(s) through E*_{t−1} (a weight under it does not lift it): release t leaves out every
INDI row that links x to s' as mining counts them (:func:`faers_anon.series.composition.left_out`),
so E_t has no case of (x, s') and the pair vanishes; the cases keep every other row. Mining again can
raise other weights (n(x) falls when a case's only informative indication of x was s'), so the step
checks again until nothing fails (:func:`faers_anon.series.step.prepare`); each pass only adds pairs.
Leaving out all of a pair's links is the simple remedy: capping the weight at the largest value that
keeps every history within θ (leaving out only as many links as that needs) would keep more rows,
at the cost of a search per pair over mining's thresholds (min cases, lift); not done. The rows left
out are counted (``left_out_indi_rows``, ``left_out_links`` in the ledger's record and report.json).
A user-given E (``knowledge``) is not mined from the data: no row can lower it, and it is the same
table in every release; the check is skipped then.
"""

from __future__ import annotations

import polars as pl

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.value_classes import CLASS_PREFIX, read_classes
from faers_anon.series.composition import Composition, left_out
from faers_anon.series.earlier import _histories, _intersections, _reached, kept_histories
from faers_anon.series.exposed import exposed_probabilities
from faers_anon.series.renew import as_read, change, only_terms
from knowledge.drug_names import name_key_expr
from knowledge.values import value_key_expr

__all__ = ["LINKS_SCHEMA", "left_out_rows", "links_over_theta", "raised_rows"]

_LISTS = ("indications", "reactions", "drug_keys")
_EPS = 1e-12
#: The (drug, disease) pairs of E a release leaves out, keyed as mining writes them.
LINKS_SCHEMA = {"drug_key": pl.Utf8, "disease": pl.Utf8}


def raised_rows(earlier: pl.DataFrame, current: pl.DataFrame) -> pl.DataFrame:
    """R_t: the rows of ``current`` (E_t as mined: ``drug_key``, ``disease``, ``weight``) above the
    largest weight of ``earlier`` (E*_{t−1}) for the pair as P reads it (:func:`.renew.as_read`; 0 when
    absent), with the read keys ``read_drug`` and ``value``."""
    read = current.select(
        "drug_key", "disease", pl.col("weight").cast(pl.Float64),
        name_key_expr(pl.col("drug_key")).alias("read_drug"),
        value_key_expr(pl.col("disease")).alias("value"),
    )  # fmt: skip
    before = as_read(earlier).select(
        pl.col("drug_key").alias("read_drug"), "value", pl.col("weight").alias("_w")
    )
    return (
        read.join(before, on=["read_drug", "value"], how="left")
        .filter(pl.col("weight") > pl.col("_w").fill_null(0.0) + _EPS)
        .drop("_w")
    )


def _star(earlier: pl.DataFrame, current: pl.DataFrame) -> pl.DataFrame:
    """E*_t = max(E*_{t−1}, E_t) per (drug_key, disease)."""
    both = [t.select("drug_key", "disease", pl.col("weight").cast(pl.Float64)) for t in (earlier, current)]
    return pl.concat(both).group_by("drug_key", "disease").agg(pl.col("weight").max())


def _probabilities(
    frame: pl.DataFrame, state: pl.DataFrame, table: pl.DataFrame, config: AnonymizeConfig,
    reads: list[str], wanted: list[str],
) -> pl.DataFrame:  # fmt: skip
    """``pseudonym``, ``value``, ``p``: P(s | e) of the ``frame``'s cases (``pseudonym`` and value
    lists: their current ones, empty for a case kept behind) over those lists and the ledger's,
    through E ``table``, for the ``wanted`` values only (lists and E cut to the values they read)."""
    members = only_terms(frame.with_columns(pl.col("pseudonym").alias("caseid")), reads)
    ids = frame.select(pl.col("pseudonym").alias("caseid"))
    entries = only_terms(state.join(ids, on="caseid", how="semi"), reads)
    cut = table.filter(value_key_expr(pl.col("disease")).is_in(reads))
    p = exposed_probabilities(members, entries, cut, config, None)
    return p.filter(pl.col("value").is_in(wanted)).select(pl.col("caseid").alias("pseudonym"), "value", "p")


def _frame(cases: pl.DataFrame, published: pl.DataFrame, *, now: bool) -> pl.DataFrame:
    """``pseudonym`` and value lists of ``cases``: a published case's current lists when ``now``, else
    empty (P reads the ledger's values then)."""
    empty = pl.lit([], pl.List(pl.Utf8))
    frame = cases.select("pseudonym").unique().with_columns(*[empty.alias(n) for n in _LISTS])
    if not now or published.is_empty():
        return frame
    current = published.select("pseudonym", *_LISTS).unique("pseudonym")
    behind = frame.join(current, on="pseudonym", how="anti")
    return pl.concat([behind, current.join(frame, on="pseudonym", how="semi")])


def _holders(state: pl.DataFrame, published: pl.DataFrame, drugs: pl.Series) -> pl.DataFrame:
    """``pseudonym`` of the ledger cases holding one of ``drugs`` in the ledger or (published) now."""
    wanted = drugs.implode()
    lists = [state.select(pl.col("caseid").alias("pseudonym"), "drug_keys")]
    if not published.is_empty():
        lists.append(published.select("pseudonym", "drug_keys"))
    exploded = pl.concat(lists).explode("drug_keys").filter(pl.col("drug_keys").is_in(wanted))
    known = state.select(pl.col("caseid").alias("pseudonym"))
    return exploded.select("pseudonym").unique().join(known, on="pseudonym", how="semi")


def _reads(values: list[str], config: AnonymizeConfig) -> pl.DataFrame:
    """``v`` (a checked value or class), ``value`` (an E value it reads: itself, or a class member)."""
    members = read_classes(config.classes).members.select(
        (pl.lit(CLASS_PREFIX) + pl.col("class")).alias("v"), "value"
    )
    own = pl.DataFrame({"v": values, "value": values}, schema={"v": pl.Utf8, "value": pl.Utf8})
    return pl.concat([own, members.filter(pl.col("v").is_in(values))])


def links_over_theta(
    published: pl.DataFrame, past: pl.DataFrame, state: pl.DataFrame, earlier: pl.DataFrame,
    current: pl.DataFrame, thetas: dict[str, float], config: AnonymizeConfig,
) -> pl.DataFrame:  # fmt: skip
    """The (``drug_key``, ``disease``) pairs of E_t whose INDI links release t must leave out (module
    docstring): empty when no kept history rises over θ through a raised weight.

    Args:
        published: the ledger cases release t publishes (``pseudonym``, ``history``, current value
            lists); past: ``pseudonym``, ``history`` of every ledger case; state: the ledger's state.
        earlier: E*_{t−1} (``drug_key``, ``disease``, ``weight``); current: E_t as mined.
        thetas: θ* of release t; config: the run's options (the class file).
    """
    empty = pl.DataFrame(schema=LINKS_SCHEMA)
    rows = raised_rows(earlier, current)
    if rows.is_empty() or not thetas or config.knowledge is not None:
        return empty
    star = _star(earlier, current)
    found = change(as_read(earlier), as_read(star), config)
    wanted = [v for v in found.values if v in thetas]
    if not wanted:
        return empty
    holders = _holders(state, published, found.drugs)
    p_now = _probabilities(_frame(holders, published, now=True), state, star, config, found.reads, wanted)
    p_mid = _probabilities(_frame(holders, published, now=True), state, earlier, config, found.reads, wanted)
    up = (
        p_now.join(p_mid.rename({"p": "p_mid"}), on=["pseudonym", "value"], how="left")
        .filter(pl.col("p") > pl.col("p_mid").fill_null(0.0) + _EPS)
        .select("pseudonym", "value", pl.col("p_mid").fill_null(0.0))
    )
    if up.is_empty():
        return empty
    failing = _failing(up, published, past, state, earlier, star, thetas, config, found.reads, wanted)
    return _pairs(failing, up, published, state, rows, _reads(wanted, config))


def _failing(
    up: pl.DataFrame, published: pl.DataFrame, past: pl.DataFrame, state: pl.DataFrame,
    earlier: pl.DataFrame, star: pl.DataFrame, thetas: dict[str, float], config: AnonymizeConfig,
    reads: list[str], wanted: list[str],
) -> pl.DataFrame:  # fmt: skip
    """``inner`` (a history's number), ``value``, ``pseudonym``: the kept histories h over θ_s through a
    raise, with the members of I(h) raised by E for s (``up``)."""
    index = _histories(past)
    sizes = past.group_by("history").agg(pl.len().alias("n"))
    kept = kept_histories(sizes, published) if "history" in published.columns else sizes.select("history")
    raised = past.join(up.select("pseudonym").unique(), on="pseudonym", how="semi")
    both, reached = _reached(index, raised, kept)
    if reached.is_empty():
        return pl.DataFrame(schema={"inner": pl.UInt32, "value": pl.Utf8, "pseudonym": pl.Int64})
    lifted = reached.join(up, on="pseudonym").select("inner", "value", "pseudonym")
    members = _intersections(index, both.join(lifted.select(pl.col("inner").alias("_h")).unique(), on="_h"))
    cases = members.select("pseudonym").unique()
    now = _probabilities(_frame(cases, published, now=True), state, star, config, reads, wanted)
    before = _probabilities(_frame(cases, published, now=False), state, earlier, config, reads, wanted)
    theta = pl.DataFrame({"value": list(thetas), "theta": list(thetas.values())},
                         schema={"value": pl.Utf8, "theta": pl.Float64})  # fmt: skip
    size = members.group_by("inner").agg(pl.len().alias("size"))
    pairs = lifted.select("inner", "value").unique()
    p = now.join(before.rename({"p": "p_before"}), on=["pseudonym", "value"], how="full", coalesce=True)
    sums = (
        members.join(pairs, on="inner")
        .join(p, on=["pseudonym", "value"], how="left")
        .group_by("inner", "value")
        .agg(pl.col("p").fill_null(0.0).sum().alias("now"),
             pl.col("p_before").fill_null(0.0).sum().alias("before"))
        .join(size, on="inner")
        .join(theta, on="value")
        .filter((pl.col("now") / pl.col("size") > pl.col("theta") + _EPS)
                & (pl.col("now") > pl.col("before") + _EPS))
    )  # fmt: skip
    return lifted.join(sums.select("inner", "value"), on=["inner", "value"], how="semi")


def _pairs(
    failing: pl.DataFrame, up: pl.DataFrame, published: pl.DataFrame, state: pl.DataFrame,
    rows: pl.DataFrame, reads: pl.DataFrame,
) -> pl.DataFrame:  # fmt: skip
    """The raised pairs behind the ``failing`` (history, value)s (module docstring): a drug of a member
    raised by E, a disease the value reads, a weight above the member's P before the raise."""
    if failing.is_empty():
        return pl.DataFrame(schema=LINKS_SCHEMA)
    lists = [state.select(pl.col("caseid").alias("pseudonym"), "drug_keys")]
    if not published.is_empty():
        lists.append(published.select("pseudonym", "drug_keys"))
    drugs = pl.concat(lists).explode("drug_keys").select("pseudonym", pl.col("drug_keys").alias("read_drug"))
    who = failing.select("pseudonym", pl.col("value").alias("v")).unique()
    lifted = who.join(up.rename({"value": "v"}), on=["pseudonym", "v"]).join(drugs, on="pseudonym")
    found = (
        lifted.join(reads, on="v")
        .join(rows.select("read_drug", "value", "weight", "drug_key", "disease"), on=["read_drug", "value"])
        .filter(pl.col("weight") > pl.col("p_mid") + _EPS)
    )
    return found.select("drug_key", "disease").unique().sort("drug_key", "disease")


def left_out_rows(composition: Composition) -> int:
    """How many INDI rows of ``composition`` its left-out links remove (0 without any)."""
    links = composition.links
    if links is None or links.is_empty():
        return 0
    whole = Composition(composition.ingested, composition.withheld, composition.added)
    rows = left_out(whole.table("indi"), whole.table("drug"), links)
    return int(rows.select(pl.len()).collect().item())
