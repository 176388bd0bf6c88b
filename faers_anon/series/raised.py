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

from dataclasses import dataclass

import polars as pl

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.value_classes import CLASS_PREFIX, read_classes
from faers_anon.series.composition import Composition, left_out
from faers_anon.series.earlier import _histories, _intersections, _reached, kept_histories
from faers_anon.series.renew import Change, as_read, change
from knowledge.drug_names import name_key_expr
from knowledge.values import value_key_expr

__all__ = [
    "FAILING_SCHEMA", "LINKS_SCHEMA", "Inputs", "failing", "inputs", "kept_of", "left_out_rows",
    "links_over_theta", "pairs", "raised_by_e", "raised_rows", "raised_up",
    "read_apart",
]  # fmt: skip

_LISTS = ("indications", "reactions", "drug_keys")
_LIST = pl.List(pl.Utf8)
_ROWS = {"pseudonym": pl.Int64, "v": pl.UInt32, "p": pl.Float64, "before": pl.Boolean, "mid": pl.Boolean,
         "now": pl.Boolean}  # fmt: skip
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


_SIDES = ("before", "mid", "now")


class _Reader:
    """P(s | e) of ledger cases three ways, for the wanted values only (SPEC §5: p = 1 for an own
    indication or reaction of a sensitive attribute, else the largest weight of the case's drugs; a
    class's p the largest of its members'; as :func:`.exposed.exposed_probabilities` computes it,
    with no OUTC code: no wanted value is one):

    * ``before``: the ledger's values through E*_{t−1} (what the releases before t let him read);
    * ``mid``: the ledger's and, for a published case, its current values, through E*_{t−1};
    * ``now``: the same values through E*_t.

    Only the terms and E rows of the values ``reads`` (the wanted values and every member of a
    wanted class) are read, values numbered, each case's lists exploded once for the three (and
    kept for the cases asked again), the intersections' members summed on their lifted values only:
    computing P of every read value per side and call (``exposed_probabilities`` four times a call)
    cost 31 of the 47 CPU-s this check took on a 100k quarter 4 (five calls); this way the check
    takes 25–29 (load 9; the rest: the grouping of ~2 M (case, value) rows a call).
    """

    def __init__(
        self, state: pl.DataFrame, published: pl.DataFrame, tables: tuple[pl.DataFrame, pl.DataFrame],
        config: AnonymizeConfig, reads: list[str], wanted: list[str],
    ) -> None:  # fmt: skip
        self._state, self._config, self._wanted = state, config, wanted
        none = pl.DataFrame(schema={"pseudonym": pl.Int64, **dict.fromkeys(_LISTS, _LIST)})
        has = "pseudonym" in published.columns
        self._current = published.select("pseudonym", *_LISTS).unique("pseudonym") if has else none
        # values numbered: the sums group (Int64, UInt32) pairs, not (Int64, text) (less CPU)
        codes = pl.DataFrame({"value": sorted(set(reads))}, schema={"value": pl.Utf8})
        self._codes = codes.with_row_index("v")
        self._tables = [as_read(t).join(self._codes, on="value").drop("value") for t in tables]
        self._members = read_classes(config.classes).members.join(self._codes, on="value").drop("value")
        self._rows = pl.DataFrame(schema=_ROWS)

    def _parts(self, lists: pl.DataFrame, sides: tuple[tuple[bool, ...], ...]) -> list[pl.DataFrame]:
        """Rows (``pseudonym``, ``value``, ``p`` and a flag per side) of ``lists``: own values with the
        flags ``sides[0]``, E*_{t−1}'s weights with ``sides[1]``, E*_t's with ``sides[2]``."""

        def flagged(frame: pl.DataFrame, flags: tuple[bool, ...]) -> pl.DataFrame:
            named = [pl.lit(f).alias(n) for f, n in zip(flags, _SIDES, strict=True)]
            return frame.select("pseudonym", "v", "p", *named)

        parts = []
        for name in [n for n in ("indications", "reactions") if n in self._config.sensitive]:
            terms = lists.select("pseudonym", pl.col(name).alias("term")).explode("term").drop_nulls("term")
            keys = terms.select("term").unique().with_columns(value_key_expr(pl.col("term")).alias("value"))
            own = terms.join(keys.join(self._codes, on="value"), on="term")
            parts.append(flagged(own.with_columns(pl.lit(1.0).alias("p")), sides[0]))
        if "diseases" in self._config.sensitive:
            drugs = lists.select("pseudonym", pl.col("drug_keys").alias("drug_key")).explode("drug_key")
            for table, flags in zip(self._tables, sides[1:], strict=True):
                parts.append(flagged(drugs.join(table, on="drug_key").rename({"weight": "p"}), flags))
        return [x.cast(_ROWS) for x in parts]  # type: ignore[arg-type]

    def __call__(
        self, ids: pl.DataFrame, values: list[str] | None = None, *, keep: bool = True
    ) -> pl.DataFrame:
        """``pseudonym``, ``value``, ``before``, ``mid``, ``now`` of the cases ``ids`` (``pseudonym``), for
        the wanted ``values`` (all when None; a class reads its members' rows). The rows read are kept
        for the next calls unless ``keep`` is False (:func:`raised_up`)."""
        ids = ids.select("pseudonym").unique()
        new = ids.join(self._rows.select("pseudonym").unique(), on="pseudonym", how="anti")
        rows = self._rows.join(ids, on="pseudonym", how="semi")
        if new.height:
            ledger = self._state.select(pl.col("caseid").alias("pseudonym"), *_LISTS)
            ledger = ledger.join(new, on="pseudonym", how="semi")
            current = self._current.join(new, on="pseudonym", how="semi")
            parts = self._parts(ledger, ((True, True, True), (True, True, False), (False, False, True)))
            parts += self._parts(current, ((False, True, True), (False, True, False), (False, False, True)))
            rows = pl.concat([rows, *parts])
            if keep:
                self._rows = pl.concat([self._rows, *parts])
        if values is not None:
            names = [v.removeprefix(CLASS_PREFIX) for v in values if v.startswith(CLASS_PREFIX)]
            read = self._codes.filter(pl.col("value").is_in(values)).select("v")
            read = pl.concat([read, self._members.filter(pl.col("class").is_in(names)).select("v")])
            rows = rows.join(read.unique(), on="v", how="semi")
        sides = [(pl.col("p") * pl.col(n).cast(pl.Float64)).max().alias(n) for n in _SIDES]
        p = rows.group_by("pseudonym", "v").agg(sides)
        classes = (
            p.join(self._members, on="v")
            .group_by("pseudonym", "class")
            .agg(pl.col(_SIDES).max())
            .select("pseudonym", (pl.lit(CLASS_PREFIX) + pl.col("class")).alias("value"), *_SIDES)
        )
        wanted = pl.col("value").is_in(self._wanted)
        single = p.join(self._codes, on="v").select("pseudonym", "value", *_SIDES).filter(wanted)
        return pl.concat([single, classes.filter(wanted)])


def raised_up(reader: _Reader, holders: pl.DataFrame) -> pl.DataFrame:
    """:func:`raised_by_e` of ``reader``'s rows of ``holders`` (:func:`read_apart`): the
    full check reads nearly every ledger case (1.04 M at the 400k quarter 4), and their rows at once
    were the step's peak (+1.9 GB); a later pass reads the few cases it needs again."""
    return raised_by_e(read_apart(reader, holders, None))


#: Cases a raise check reads at once when it reads more (:func:`read_apart`).
READ_APART = 200_000


def read_apart(reader: _Reader, ids: pl.DataFrame, values: list[str] | None) -> pl.DataFrame:
    """``reader(ids, values)``; more than :data:`READ_APART` cases are read that many at a time and not
    kept (the reader's rows of nearly every ledger case at once were the 400k quarter 4 step's peak)."""
    ids = ids.select("pseudonym").unique()
    size = READ_APART
    if ids.height <= size:
        return reader(ids, values)
    return pl.concat([reader(ids.slice(i, size), values, keep=False) for i in range(0, ids.height, size)])


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


@dataclass(frozen=True, slots=True)
class Inputs:
    """What a raise check reads besides the histories: R_t (:func:`raised_rows`), E*_t as P reads it
    (``star``), the changes from E*_{t−1} (``found``), the wanted values (changed and bounded) and a
    :class:`_Reader` over them; None when nothing can fail (:func:`inputs`)."""

    rows: pl.DataFrame
    star: pl.DataFrame
    found: Change
    wanted: list[str]
    reader: _Reader


def inputs(
    published: pl.DataFrame, state: pl.DataFrame, earlier: pl.DataFrame, current: pl.DataFrame,
    thetas: dict[str, float], config: AnonymizeConfig,
) -> Inputs | None:  # fmt: skip
    """The :class:`Inputs` of a raise check (arguments as :func:`links_over_theta`); None when E_t
    raises no weight, θ* is empty, E is user-given or no changed value is bounded."""
    rows = raised_rows(earlier, current)
    if rows.is_empty() or not thetas or config.knowledge is not None:
        return None
    star = _star(earlier, current)
    read = as_read(star)
    found = change(as_read(earlier), read, config)
    wanted = [v for v in found.values if v in thetas]
    if not wanted:
        return None
    reader = _Reader(state, published, (earlier, star), config, found.reads, wanted)
    return Inputs(rows, read, found, wanted, reader)


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
    found = inputs(published, state, earlier, current, thetas, config)
    if found is None:
        return pl.DataFrame(schema=LINKS_SCHEMA)
    up = raised_up(found.reader, _holders(state, published, found.found.drugs))
    lifted, _ = failing(up, None, kept_of(past, published), published, past, found.reader, thetas)
    return pairs(lifted, published, state, found.rows, _reads(found.wanted, config))


def kept_of(past: pl.DataFrame, published: pl.DataFrame) -> pl.DataFrame:
    """``history``: the kept histories (not every case published; every history when none is)."""
    sizes = past.group_by("history").agg(pl.len().alias("n"))
    return kept_histories(sizes, published) if "history" in published.columns else sizes.select("history")


def raised_by_e(p: pl.DataFrame) -> pl.DataFrame:
    """``pseudonym``, ``value``, ``p_mid``: the rows of a :class:`_Reader` frame whose P through E*_t
    exceeds their P over the same values through E*_{t−1} (``mid``)."""
    return p.filter(pl.col("now") > pl.col("mid") + _EPS).select("pseudonym", "value", p_mid=pl.col("mid"))


FAILING_SCHEMA = {"history": pl.Utf8, "value": pl.Utf8}
_LIFTED = {"inner": pl.UInt32, "value": pl.Utf8, "pseudonym": pl.Int64, "p_mid": pl.Float64}


def failing(
    up: pl.DataFrame, extra: pl.DataFrame | None, kept: pl.DataFrame, published: pl.DataFrame,
    past: pl.DataFrame, reader: _Reader, thetas: dict[str, float],
) -> tuple[pl.DataFrame, pl.DataFrame]:  # fmt: skip
    """(``inner`` (a history's number), ``value``, ``pseudonym``, ``p_mid``: the members raised by E for s
    of the ``kept`` histories h over θ_s through a raise; the failing ``history``, ``value``), over the
    (h, s) reached from ``up`` and the ``extra`` (``history``, ``value``) pairs."""
    index = _histories(past)
    raised = past.join(up.select("pseudonym").unique(), on="pseudonym", how="semi")
    both, reached = _reached(index, raised, kept)
    checked = reached.join(up, on="pseudonym").select("inner", "value")
    if extra is not None and extra.height:
        again = extra.join(kept, on="history", how="semi").join(both.select("history", "_h"), on="history")
        again = again.select(pl.col("_h").cast(checked.schema["inner"]).alias("inner"), "value")
        checked = pl.concat([checked, again])
    checked = checked.unique()
    if checked.is_empty():
        return pl.DataFrame(schema=_LIFTED), pl.DataFrame(schema=FAILING_SCHEMA)
    members = _intersections(index, both.join(checked.select(pl.col("inner").alias("_h")).unique(), on="_h"))
    p = read_apart(reader, members, checked.get_column("value").unique().to_list())
    theta = pl.DataFrame({"value": list(thetas), "theta": list(thetas.values())},
                         schema={"value": pl.Utf8, "theta": pl.Float64})  # fmt: skip
    size = members.group_by("inner").agg(pl.len().alias("size"))
    # the members' rows (P > 0) of the checked pairs, not every member × value: a member without a row
    # adds 0 to both sums, and a pair with no row at all is not over θ (the dense product of the
    # members and the checked values was 2.9 GB of the 400k quarter 4 step's 7.3 GB peak)
    sums = (
        p.join(members.select("pseudonym", "inner"), on="pseudonym")
        .join(checked, on=["inner", "value"], how="semi")
        .group_by("inner", "value")
        .agg(pl.col("now").sum(), pl.col("before").fill_null(0.0).sum())
        .join(size, on="inner")
        .join(theta, on="value")
        .filter((pl.col("now") / pl.col("size") > pl.col("theta") + _EPS)
                & (pl.col("now") > pl.col("before") + _EPS))
    )  # fmt: skip
    lifted = (
        members.join(sums.select("inner", "value"), on="inner")
        .join(raised_by_e(p), on=["pseudonym", "value"])
        .select("inner", "value", "pseudonym", "p_mid")
    )
    numbers = both.select(pl.col("_h").cast(lifted.schema["inner"]).alias("inner"), "history")
    over = lifted.select("inner", "value").unique().join(numbers, on="inner").select("history", "value")
    return lifted, over


def pairs(
    lifted: pl.DataFrame, published: pl.DataFrame, state: pl.DataFrame, rows: pl.DataFrame,
    reads: pl.DataFrame,
) -> pl.DataFrame:  # fmt: skip
    """The raised pairs behind the failing (history, value)s (module docstring; ``lifted``: their
    members raised by E, with P before the raise, ``p_mid``): a drug of such a member, a disease the
    value reads, a weight above the member's P before the raise."""
    if lifted.is_empty():
        return pl.DataFrame(schema=LINKS_SCHEMA)
    lists = [state.select(pl.col("caseid").alias("pseudonym"), "drug_keys")]
    if not published.is_empty():
        lists.append(published.select("pseudonym", "drug_keys"))
    drugs = pl.concat(lists).explode("drug_keys").select("pseudonym", pl.col("drug_keys").alias("read_drug"))
    who = lifted.select("pseudonym", pl.col("value").alias("v"), "p_mid").unique()
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
