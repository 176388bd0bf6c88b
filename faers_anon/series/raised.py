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

import weakref
from dataclasses import dataclass, field

import polars as pl

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.value_classes import CLASS_PREFIX, read_classes
from faers_anon.series.composition import Composition, left_out
from faers_anon.series.raised_arrays import Ledger
from faers_anon.series.renew import Change, as_read, change
from knowledge.drug_names import name_key_expr
from knowledge.values import value_key_expr

__all__ = [
    "FAILING_SCHEMA", "LINKS_SCHEMA", "Inputs", "Step", "check", "inputs", "left_out_rows",
    "links_over_theta", "pairs", "raised_rows",
]  # fmt: skip

_EPS = 1e-12
#: The (drug, disease) pairs of E a release leaves out, keyed as mining writes them.
LINKS_SCHEMA = {"drug_key": pl.Utf8, "disease": pl.Utf8}
#: The failing (history, value) pairs of a check.
FAILING_SCHEMA = {"history": pl.Utf8, "value": pl.Utf8}
_KEYS = {"drug_key": pl.Utf8, "read_drug": pl.Utf8}


def _keyed(current: pl.DataFrame, keys: pl.DataFrame | None = None) -> pl.DataFrame:
    """E_t's rows (``drug_key``, ``disease``, ``weight`` as Float64) with the keys P reads them by,
    ``read_drug`` (:func:`knowledge.drug_names.name_key_expr`; from ``keys`` when given: ``drug_key``
    → ``read_drug``) and ``value``."""
    rows = current.select("drug_key", "disease", pl.col("weight").cast(pl.Float64))
    if keys is None:
        rows = rows.with_columns(name_key_expr(pl.col("drug_key")).alias("read_drug"))
    else:
        rows = rows.join(keys, on="drug_key", how="left", maintain_order="left")
    return rows.with_columns(value_key_expr(pl.col("disease")).alias("value"))


def _raised(before: pl.DataFrame, keyed: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``keyed`` (:func:`_keyed`) above ``before``'s weight (E*_{t−1} as P reads it; 0 when
    absent)."""
    before = before.select(pl.col("drug_key").alias("read_drug"), "value", pl.col("weight").alias("_w"))
    return (
        keyed.join(before, on=["read_drug", "value"], how="left")
        .filter(pl.col("weight") > pl.col("_w").fill_null(0.0) + _EPS)
        .drop("_w")
    )


def raised_rows(earlier: pl.DataFrame, current: pl.DataFrame) -> pl.DataFrame:
    """R_t: the rows of ``current`` (E_t as mined: ``drug_key``, ``disease``, ``weight``) above the
    largest weight of ``earlier`` (E*_{t−1}) for the pair as P reads it (:func:`.renew.as_read`; 0 when
    absent), with the read keys ``read_drug`` and ``value``."""
    return _raised(as_read(earlier), _keyed(current))


@dataclass
class Step:
    """What every raise check of one series step shares: E*_{t−1} as P reads it, the drug keys as P
    reads them, the class file's members and the ledger as arrays (:class:`.raised_arrays.Ledger`),
    each made once (the ledger, E*_{t−1} and the class file are the same in every pass)."""

    earlier: tuple[pl.DataFrame, pl.DataFrame] | None = None
    keys: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=_KEYS))
    members: pl.DataFrame | None = None
    ledger: tuple[weakref.ref[pl.DataFrame], weakref.ref[pl.DataFrame], Ledger] | None = None

    def read_earlier(self, earlier: pl.DataFrame) -> pl.DataFrame:
        """:func:`.renew.as_read` of E*_{t−1} (weights as Float64), again only when it changed."""
        if self.earlier is None or not self.earlier[0].equals(earlier):
            read = as_read(earlier).with_columns(pl.col("weight").cast(pl.Float64))
            self.earlier = (earlier, read)
        return self.earlier[1]

    def keyed(self, current: pl.DataFrame) -> pl.DataFrame:
        """:func:`_keyed` of E_t, each drug name read once per step (a name's key is its own)."""
        names = current.select("drug_key").unique()
        new = names.join(self.keys, on="drug_key", how="anti")
        if new.height:
            read = new.with_columns(name_key_expr(pl.col("drug_key")).alias("read_drug"))
            self.keys = pl.concat([self.keys, read])
        return _keyed(current, self.keys)

    def classes(self, config: AnonymizeConfig) -> pl.DataFrame:
        """The class file's ``value``, ``class``."""
        if self.members is None:
            self.members = read_classes(config.classes).members
        return self.members

    def arrays(self, state: pl.DataFrame, past: pl.DataFrame, config: AnonymizeConfig) -> Ledger:
        """The ledger as arrays, made again only for another ``state`` or ``past`` frame."""
        if self.ledger is None or self.ledger[0]() is not state or self.ledger[1]() is not past:
            self.ledger = (
                weakref.ref(state),
                weakref.ref(past),
                Ledger(state, past, tuple(config.sensitive)),
            )
        return self.ledger[2]


@dataclass(frozen=True, slots=True)
class Inputs:
    """What a raise check reads besides the histories: R_t (:func:`raised_rows`), E*_{t−1} and E*_t as P
    reads them (``before``, ``star``), the changes between them (``found``) and the wanted values (changed
    and bounded); None when nothing can fail (:func:`inputs`)."""

    rows: pl.DataFrame
    before: pl.DataFrame
    star: pl.DataFrame
    found: Change
    wanted: list[str]


def inputs(
    earlier: pl.DataFrame,
    current: pl.DataFrame,
    thetas: dict[str, float],
    config: AnonymizeConfig,
    step: Step,
) -> Inputs | None:
    """The :class:`Inputs` of a raise check (arguments as :func:`links_over_theta`); None when E_t
    raises no weight, θ* is empty, E is user-given or no changed value is bounded. E*_t as P reads it
    is the larger of E*_{t−1}'s and E_t's weights per read pair (as :func:`.renew.as_read` of their
    max per (drug_key, disease): a max of maxima)."""
    before = step.read_earlier(earlier)
    keyed = step.keyed(current)
    rows = _raised(before, keyed)
    if rows.is_empty() or not thetas or config.knowledge is not None:
        return None
    now = keyed.select(pl.col("read_drug").alias("drug_key"), "value", "weight")
    star = pl.concat([before, now]).group_by("drug_key", "value").agg(pl.col("weight").max())
    found = change(before, star, config)
    wanted = [v for v in found.values if v in thetas]
    if not wanted:
        return None
    return Inputs(rows, before, star, found, wanted)


def check(
    published: pl.DataFrame, past: pl.DataFrame, state: pl.DataFrame, earlier: pl.DataFrame,
    current: pl.DataFrame, thetas: dict[str, float], config: AnonymizeConfig, step: Step,
) -> tuple[pl.DataFrame, pl.DataFrame]:  # fmt: skip
    """(the pairs of :func:`links_over_theta`, the failing ``history``, ``value`` pairs), with what
    ``step`` keeps for the step's other checks."""
    found = inputs(earlier, current, thetas, config, step)
    if found is None:
        return pl.DataFrame(schema=LINKS_SCHEMA), pl.DataFrame(schema=FAILING_SCHEMA)
    members = step.classes(config)
    arrays = step.arrays(state, past, config)
    result = arrays.lifted(
        published, (found.before, found.star), found.found.reads, found.wanted, members, thetas
    )
    return pairs(result.lifted, published, state, found.rows, _reads(found.wanted, members)), result.failing


def links_over_theta(
    published: pl.DataFrame, past: pl.DataFrame, state: pl.DataFrame, earlier: pl.DataFrame,
    current: pl.DataFrame, thetas: dict[str, float], config: AnonymizeConfig,
) -> pl.DataFrame:  # fmt: skip
    """The (``drug_key``, ``disease``) pairs of E_t whose INDI links release t must leave out (module
    docstring): empty when no kept history rises over θ through a raised weight. The step checks
    pass after pass with :class:`faers_anon.series.raised_passes.RaiseCheck` (the same pairs).

    Args:
        published: the ledger cases release t publishes (``pseudonym``, ``history``, current value
            lists); past: ``pseudonym``, ``history`` of every ledger case; state: the ledger's state.
        earlier: E*_{t−1} (``drug_key``, ``disease``, ``weight``); current: E_t as mined.
        thetas: θ* of release t; config: the run's options (the class file).
    """
    return check(published, past, state, earlier, current, thetas, config, Step())[0]


def _reads(values: list[str], members: pl.DataFrame) -> pl.DataFrame:
    """``v`` (a checked value or class), ``value`` (an E value it reads: itself, or a class member)."""
    classes = members.select((pl.lit(CLASS_PREFIX) + pl.col("class")).alias("v"), "value")
    own = pl.DataFrame({"v": values, "value": values}, schema={"v": pl.Utf8, "value": pl.Utf8})
    return pl.concat([own, classes.filter(pl.col("v").is_in(values))])


def pairs(
    lifted: pl.DataFrame, published: pl.DataFrame, state: pl.DataFrame, rows: pl.DataFrame,
    reads: pl.DataFrame,
) -> pl.DataFrame:  # fmt: skip
    """The raised pairs behind the failing (history, value)s (module docstring; ``lifted``: their
    members raised by E, with P before the raise, ``p_mid``): a drug of such a member, a disease the
    value reads, a weight above the member's P before the raise."""
    if lifted.is_empty():
        return pl.DataFrame(schema=LINKS_SCHEMA)
    who = lifted.select("pseudonym", pl.col("value").alias("v"), "p_mid").unique()
    ids = who.select("pseudonym").unique()
    lists = [
        state.select(pl.col("caseid").alias("pseudonym"), "drug_keys").join(ids, on="pseudonym", how="semi")
    ]
    if not published.is_empty():
        lists.append(published.select("pseudonym", "drug_keys").join(ids, on="pseudonym", how="semi"))
    drugs = pl.concat(lists).explode("drug_keys").select("pseudonym", pl.col("drug_keys").alias("read_drug"))
    found = (
        who.join(drugs, on="pseudonym")
        .join(reads, on="v")
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
