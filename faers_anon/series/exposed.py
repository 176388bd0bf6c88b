"""P(s | c) of a series' members over what they expose now and exposed before.

Source: SPEC §5, §11 "Composition"; docs/series.md §4 (rule 4). The series step asks for P(s | c) of
the units' members, the recheck's members and the earlier intersections' holders
(:mod:`faers_anon.series.step`, :mod:`faers_anon.series.earlier`): each member's value lists are
the union of its current lists and every value the ledger records it exposed, its OUTC codes those
of this quarter and the ledger's, and P is computed as for a release.

Cost: P is computed as arrays (:mod:`.linked`), the frame of
:func:`knowledge.case_value_probabilities` and
:func:`faers_anon.anonymize.value_classes.with_classes_and_outcomes` row for row (tests compare them):
the ledger's lists (state: one row per case) are numbered once per step and kept while that frame
lives, each call numbers only its members' current lists, maps both through the call's sorted
dictionary of values and runs one kernel. The union of a member's lists and the ledger's is the
kernel's: it keeps the largest p per (case, value), so repeats cost nothing and no list is merged
(a null current list counts as empty: the set union before, ``list.set_union``, dropped the ledger's
values of such a member; the step's members have none). A 100k quarter 4's 8 calls: 2.9–3.2 → 0.8–0.9
CPU-s (twelfth session; before: the set union, explode, join, sort and unique of polars frames, and
the class and outcome rows joined, grouped and sorted after). Members are still taken per
:data:`CHUNK` (each chunk's cases whole, chunks in caseid order: the same frame). Thirteenth session:
the members' terms are read as (row, id) pairs without a CSR (:func:`.linked.terms`: every row is
read, so no sort by row), their ledger rows found by binary search in the ledger's pseudonyms sorted
once (:func:`.linked.matches`, a hash join of the 1M-row ledger a call before) and their OUTC codes by
binary search in the sorted cases; the kernel sorts a case's ranks in place. 400k quarter 4's 31
calls replayed: 7.5–8.9 → 6.9–8.1 CPU-s (load 6–10), the same frames. Fifteenth session: the OUTC
codes made pseudo-values and sorted by caseid once per outcomes frame (:func:`_codes`; each chunk
searched every code row of the quarter in its cases before, an argsort of 744k caseids a chunk), a
chunk's codes a range of them; the cases numbered by one argsort (:func:`_numbered_cases`); the
ledger's rows found by one search (its keys are distinct: :func:`.linked.matches`). The same frames
(docs/series.md §6, fifteenth session). Sixteenth session: a call cut into chunks partitions only the
columns a chunk reads (the planner's members carry 20), the class file is read once a call, and E's drug
keys are made canonical once per process (:func:`.linked.read`); the same frames. Computing a call's
strings once and only the kernel per chunk was measured and dropped: its call-wide arrays (up to ~5 M
pairs) cost more in page faults and copies than the per-chunk dictionaries it saved.
"""

from __future__ import annotations

import weakref
from dataclasses import replace
from typing import TypeVar

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.value_classes import CLASS_PREFIX, OUTC_PREFIX, read_classes
from faers_anon.series.linked import (
    Group,
    ReadE,
    case_rows,
    expand,
    lists,
    matches,
    read,
    search,
    terms,
)
from knowledge.mining import FILLER_TERMS
from knowledge.values import value_key_expr

__all__ = ["exposed_probabilities", "term_groups"]

_OWN = ("indications", "reactions")
#: The filler terms' canonical keys, as :func:`knowledge.case_value_probabilities` leaves them out.
_FILLER_KEYS = [" ".join(term.upper().split()) for term in FILLER_TERMS]
_SCHEMA = pl.Schema({"caseid": pl.Int64, "value": pl.Utf8, "p": pl.Float64})
#: Members per P(s | c) computation (module docstring).
CHUNK = 100_000
_A = TypeVar("_A")
_B = TypeVar("_B")


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
    codes = None if outcomes is None else _codes(outcomes)
    classes = read_classes(config.classes).members  # once a call, not once a chunk
    if members.height <= CHUNK:
        return _exposed(members, entries, knowledge, config, codes, classes)
    lists_ = {c: 0 for columns, _ in _groups(config.sensitive, False).values() for c in columns}
    read = ["caseid", "pseudonym", *lists_]  # what a chunk reads: the partition copies only these
    chunk = ((pl.col("caseid").rank("dense") - 1) // CHUNK).alias("_chunk")
    parts = members.select(read).with_columns(chunk).partition_by("_chunk", include_key=False, as_dict=True)
    found = [_exposed(parts[key], entries, knowledge, config, codes, classes) for key in sorted(parts)]
    return pl.concat(found)


_CODES: dict[int, tuple[weakref.ref[pl.DataFrame], tuple[NDArray[np.int64], pl.Series]]] = {}


def _codes(outcomes: pl.DataFrame) -> tuple[NDArray[np.int64], pl.Series]:
    """``outcomes``' (caseid, OUTC pseudo-value) rows, nulls left out, sorted by caseid (stable), as
    (caseids, values); made once per distinct code and kept while ``outcomes`` lives (the planner's
    calls share one frame, and a call's chunks read it each: a search of every row before)."""
    for gone in [gone for gone, (ref, _) in _CODES.items() if ref() is None]:
        del _CODES[gone]
    known = _CODES.get(id(outcomes))
    if known is not None and known[0]() is outcomes:
        return known[1]
    codes = outcomes.select(pl.col("caseid").cast(pl.Int64), pl.col("outc_cod").cast(pl.Utf8)).drop_nulls()
    distinct = pl.col("outc_cod").unique(maintain_order=True)
    value = pl.col("outc_cod").replace(distinct, _code(distinct)).alias("value")
    codes = codes.select("caseid", value).drop_nulls().sort("caseid", maintain_order=True)
    found = codes.get_column("caseid").to_numpy().astype(np.int64), codes.get_column("value")
    _CODES[id(outcomes)] = weakref.ref(outcomes), found
    return found


def term_groups(sensitive: tuple[str, ...] | list[str]) -> dict[str, Group]:
    """The list groups of verbatim terms (:class:`.linked.Lists`): own terms (``own``), drug keys
    (``drugs``). The ledger's state is numbered once per step for P here and for rule 6's raise check
    (:class:`.raised_arrays.Ledger`), each making its values of the distinct terms."""
    groups: dict[str, Group] = {}
    own = tuple(name for name in _OWN if name in sensitive)
    if own:
        groups["own"] = own, pl.col("t")
    if "diseases" in sensitive:
        groups["drugs"] = ("drug_keys",), pl.col("t")
    return groups


def _groups(sensitive: tuple[str, ...] | list[str], codes: bool) -> dict[str, Group]:
    """The list groups P reads: :func:`term_groups`, OUTC codes as ``outc:`` pseudo-values."""
    groups = term_groups(sensitive)
    if codes:
        groups["codes"] = ("outcomes",), _code(pl.col("t"))
    return groups


_OWN_VALUES: dict[int, tuple[weakref.ref[pl.Series], pl.Series]] = {}


def _own_values(terms: pl.Series) -> pl.Series:
    """Own terms as values (canonical keys; filler terms none), kept while ``terms`` lives (the ledger's)."""
    for gone in [gone for gone, (ref, _) in _OWN_VALUES.items() if ref() is None]:
        del _OWN_VALUES[gone]
    known = _OWN_VALUES.get(id(terms))
    if known is not None and known[0]() is terms:
        return known[1]
    key = value_key_expr(pl.col("t"))
    values = terms.to_frame("t").select(pl.when(key.is_in(_FILLER_KEYS)).then(None).otherwise(key))
    _OWN_VALUES[id(terms)] = weakref.ref(terms), values.to_series()
    return values.to_series()


def _as_values(found: dict[str, tuple[_A, _B, pl.Series]]) -> dict[str, tuple[_A, _B, pl.Series]]:
    """``found``'s groups with the own terms made values (:func:`_own_values`)."""
    return {name: (a, b, _own_values(v) if name == "own" else v) for name, (a, b, v) in found.items()}


def _exposed(
    members: pl.DataFrame,
    entries: pl.DataFrame,
    knowledge: pl.DataFrame,
    config: AnonymizeConfig,
    outcomes: tuple[NDArray[np.int64], pl.Series] | None,
    classes: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """:func:`exposed_probabilities` of one chunk of members, as arrays (:mod:`.linked`); ``outcomes``:
    :func:`_codes`; ``classes``: the class file's members (read here when None)."""
    groups = _groups(config.sensitive, outcomes is not None)
    past = lists(entries, "caseid", groups)  # the ledger's lists, numbered once per step
    past = replace(past, groups=_as_values(past.groups))
    now = _as_values(terms(members, {k: g for k, g in groups.items() if k != "codes"}))  # every row: no CSR
    cases, member_case = _numbered_cases(members.get_column("caseid").cast(pl.Int64))
    sorted_cases = cases.to_numpy()
    hit_members, hit_rows = matches(past.keys, "caseid", members.get_column("pseudonym"))
    hit_cases = member_case[hit_members]
    marks = pl.DataFrame(schema={"_c": pl.Int64, "value": pl.Utf8})
    if outcomes is not None and sorted_cases.size:  # the chunk's cases' rows: a range of the sorted codes
        code_case, code_value = outcomes
        lo = int(np.searchsorted(code_case, sorted_cases[0], "left"))
        hi = int(np.searchsorted(code_case, sorted_cases[-1], "right"))
        at = np.searchsorted(sorted_cases, code_case[lo:hi])  # sorted: no argsort
        within = sorted_cases[np.minimum(at, sorted_cases.size - 1)] == code_case[lo:hi]
        marks = pl.DataFrame({"_c": at[within], "value": code_value.slice(lo, hi - lo).filter(within)},
                             schema=marks.schema)  # fmt: skip
    table = read(knowledge) if "drugs" in groups else None
    classes = read_classes(config.classes).members if classes is None else classes
    dictionary = (
        pl.concat([
            *[groups_[g][2].drop_nulls().to_frame("value") for groups_ in (past.groups, now)
              for g in ("own", "codes") if g in groups_],
            marks.select("value"),
            classes.select((pl.lit(CLASS_PREFIX) + pl.col("class")).alias("value")),
            *([table.values.to_frame("value")] if table is not None else []),
        ]).unique().sort("value").with_row_index("_r")
    )  # fmt: skip
    own_c, own_r = [marks.get_column("_c").to_numpy()], [_ranks(marks.get_column("value"), dictionary)]
    drug_c: list[NDArray[np.int64]] = []
    drug_d: list[NDArray[np.int64]] = []
    now_pairs = {name: (member_case[row], ids, values) for name, (row, ids, values) in now.items()}
    past_pairs = {name: (*expand(start, ids, hit_rows, hit_cases), values)
                  for name, (start, ids, values) in past.groups.items()}  # fmt: skip
    for found in (now_pairs, past_pairs):
        for name, (c, i, values) in found.items():
            if name == "drugs":
                assert table is not None
                mapped = _drug_ids(values, table)[i]
                keep = mapped >= 0
                drug_c.append(c[keep])
                drug_d.append(mapped[keep])
            else:
                mapped = _ranks(values, dictionary)[i]
                keep = mapped >= 0
                own_c.append(c[keep])
                own_r.append(mapped[keep])
    if table is not None:
        e = (table.start, _ranks(table.values, dictionary)[table.value], table.weight)
    else:
        e = (np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0))
    class_pairs = (
        classes.join(dictionary, on="value")
        .select("_r", (pl.lit(CLASS_PREFIX) + pl.col("class")).alias("value"))
        .join(dictionary.rename({"_r": "_class"}), on="value").sort("_r", "_class")
    )  # fmt: skip
    class_start = np.zeros(dictionary.height + 1, np.int64)
    np.cumsum(np.bincount(_array(class_pairs, "_r"), minlength=dictionary.height), out=class_start[1:])
    case, rank, p = case_rows(
        len(cases),
        (_joined(own_c), _joined(own_r)),
        (_joined(drug_c), _joined(drug_d)),
        e,
        (class_start, _array(class_pairs, "_class")),
    )
    return pl.DataFrame({
        "caseid": cases.gather(case),
        "value": dictionary.get_column("value").gather(rank),
        "p": p,
    }, schema=_SCHEMA)  # fmt: skip


def _numbered_cases(caseids: pl.Series) -> tuple[pl.Series, NDArray[np.int64]]:
    """(the distinct ``caseids`` sorted, each row's number among them), by one stable argsort (a
    ``unique``, a ``sort`` and a sorted search before: the same numbers); nulls by the search."""
    if caseids.null_count():
        cases = caseids.unique().sort()
        return cases, search(cases.to_numpy(), caseids.to_numpy())
    ids = caseids.to_numpy()
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    first = np.ones(ordered.size, np.bool_)
    first[1:] = ordered[1:] != ordered[:-1]
    number = np.empty(ordered.size, np.int64)
    number[order] = np.cumsum(first) - 1
    return pl.Series("caseid", ordered[first], pl.Int64), number


def _code(code: pl.Expr) -> pl.Expr:
    """An OUTC code's pseudo-value (:func:`faers_anon.anonymize.value_classes.with_classes_and_outcomes`)."""
    return pl.lit(OUTC_PREFIX) + value_key_expr(code)


def _joined(parts: list[NDArray[np.int64]]) -> NDArray[np.int64]:
    """The parts end to end, as int64."""
    return np.concatenate([np.asarray(part, np.int64) for part in parts]) if parts else np.zeros(0, np.int64)


def _ranks(values: pl.Series, dictionary: pl.DataFrame) -> NDArray[np.int64]:
    """Each of ``values``' rank in ``dictionary`` (−1 for a null)."""
    found = values.to_frame("value").join(dictionary, on="value", how="left", maintain_order="left")
    return found.get_column("_r").fill_null(-1).to_numpy().astype(np.int64)


def _drug_ids(values: pl.Series, table: ReadE) -> NDArray[np.int64]:
    """Each drug key's number in E (−1 when E has no row of it)."""
    found = values.to_frame("drug_key").join(table.drugs, on="drug_key", how="left", maintain_order="left")
    return found.get_column("_d").fill_null(-1).to_numpy().astype(np.int64)


def _array(frame: pl.DataFrame, column: str) -> NDArray[np.int64]:
    """``frame[column]`` as int64 numbers."""
    return frame.get_column(column).to_numpy().astype(np.int64)
