"""Units of a series: the earlier cases a returning case must be published with.

Source: issue 14 item 3; docs/series.md §4. A case's *history* is its ``release:group`` list in the
ledger (:func:`faers_anon.series.ledger.history`), e.g. ``1:5|2:7``. Every case whose history starts
with h (h itself or h followed by ``|…``) shared a group with every case of history h in every
release of h, so it lies in their intersection I.

For the histories of this quarter's returning cases, the *units* are the maximal ones: a returning
history is a unit unless a proper prefix of it is also a returning history (then it travels inside
that unit). Each ledger case belongs to at most one unit (the prefixes of one history form a chain,
so two maximal histories cannot both be prefixes of it). The work is done once per distinct history
string (their number is that of the groups, not of the cases).
"""

from __future__ import annotations

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon._numba_cache import njit, sized
from faers_anon.release.pseudonyms import case_table
from faers_anon.series.raised_kernels import by_key, csr

__all__ = [
    "prefixes",
    "unit_of",
    "intersection_pairs",
    "over",
    "over_theta",
    "pair_key",
    "pair_parts",
    "pseudonym_ids",
]

_SHIFT = 1 << 32
_I64 = NDArray[np.int64]
_I32 = NDArray[np.int32]
_F64 = NDArray[np.float64]


def pseudonym_ids(cases: pl.DataFrame, pseudonym_key: bytes) -> pl.DataFrame:
    """``caseid`` (raw) → ``pseudonym`` of this quarter's cases under the series key: the pseudonyms of
    :func:`.release.pseudonyms.case_pseudonyms` as :func:`.release.pseudonyms.case_table` makes them
    (the same rows in the same order, increasing caseid; the HMAC words kept as an array, not turned
    into a dict of Python ints and back into lists)."""
    table, _ = case_table(cases.get_column("caseid"), pseudonym_key)
    return table.rename({"case_pseudo": "pseudonym"})


def prefixes(history: str) -> list[str]:
    """``1:5|2:7`` → ``["1:5", "1:5|2:7"]`` (every prefix, the history itself last)."""
    parts = history.split("|")
    return ["|".join(parts[: i + 1]) for i in range(len(parts))]


def _with_prefixes(frame: pl.DataFrame, depth: int) -> pl.DataFrame:
    """``frame`` (``history``) with ``n`` (its number of pairs) and ``_p1`` … ``_p{depth}``: its prefixes
    of 1 … depth pairs (the history itself from ``n`` on)."""
    parts = pl.col("history").str.split("|")
    return frame.with_columns(
        parts.list.len().alias("n"),
        *[parts.list.slice(0, i).list.join("|").alias(f"_p{i}") for i in range(1, depth + 1)],
    )


def unit_of(histories: pl.Series, returning: pl.Series) -> pl.DataFrame:
    """``history`` → ``unit`` for every ledger history that lies in a unit of the returning histories.

    Args:
        histories: the distinct histories of the ledger's cases.
        returning: the histories of this quarter's returning cases.

    Returns:
        ``history``, ``unit`` (Utf8), one row per history inside a unit. Vectorized over the prefix
        lengths (a history has one pair per release): the loop over every history string before
        cost 1.4 CPU-s a 100k quarter.
    """
    wanted = pl.DataFrame({"history": returning.unique()}, schema={"history": pl.Utf8})
    ledger = pl.DataFrame({"history": histories.unique()}, schema={"history": pl.Utf8})
    depth = (
        int(pl.concat([wanted, ledger]).select(pl.col("history").str.count_matches(r"\|").max()).item() or 0)
        + 1
    )
    listed = wanted.get_column("history").implode()
    proper = pl.any_horizontal(
        pl.lit(False), *[(pl.col("n") > i) & pl.col(f"_p{i}").is_in(listed) for i in range(1, depth)]
    )
    units = _with_prefixes(wanted, depth).filter(~proper).get_column("history").implode()
    inside = pl.coalesce(
        pl.lit(None, pl.Utf8),
        *[pl.when(pl.col(f"_p{i}").is_in(units)).then(pl.col(f"_p{i}")) for i in range(1, depth + 1)],
    )
    return (
        _with_prefixes(ledger, depth)
        .select("history", inside.alias("unit"))
        .filter(pl.col("unit").is_not_null())
    )


def intersection_pairs(members: pl.DataFrame, /) -> pl.DataFrame:
    """Within each unit, which histories lie in which members' intersections after the release.

    A member e lies in d's intersection I(d) when e shared d's group in every release of d, i.e.
    e's ``release:group`` pairs contain d's (e may have more). Published as one group, the unit
    leaves d with I(d) = the members whose history contains d's (other units never share all of d's
    groups: they would be in this unit).

    Args:
        members: ``unit``, ``history`` (one row per member).

    Returns:
        ``unit``, ``d_history``, ``e_history``: e's history contains d's (each history contains itself).
        Vectorized: d's pairs found among e's pairs of the same unit, all of them (a history lists
        each release once); the per-unit Python loop before took 30 s of a 325 s series step on a
        100k quarter.
    """
    classes = members.select("unit", "history").unique()
    split = pl.col("history").str.split("|")
    e_pairs = classes.select("unit", pl.col("history").alias("e_history"), split.alias("pair"))
    e_pairs = e_pairs.explode("pair")
    d_pairs = classes.select(
        "unit", pl.col("history").alias("d_history"), split.list.len().alias("size"), split.alias("pair")
    ).explode("pair")
    return (
        d_pairs.join(e_pairs, on=["unit", "pair"])
        .group_by("unit", "d_history", "size", "e_history")
        .agg(pl.len().alias("hit"))
        .filter(pl.col("hit") == pl.col("size"))
        .select("unit", "d_history", "e_history")
        .sort("unit", "d_history", "e_history")
    )


def over_theta(
    members: pl.DataFrame, probabilities: pl.DataFrame, thetas: dict[str, float]
) -> frozenset[str]:
    """The units with some member d and protected s where conf(I(d) → s) > θ_s.

    Args:
        members: ``caseid`` (raw), ``unit``, ``history``; probabilities: P(s | c) of them (caseid,
            value, p); thetas: θ* of the protected values.

    conf(I(d) → s) = Σ_{e ∈ I(d)} P(s | e) / |I(d)| (SPEC §5 over the attacker's intersection, which
    is the whole unit for a member whose history is the unit's).

    The classes (unit, history) and θ*'s values numbered (an ``Enum`` cast: a value θ* lacks is left
    out), the sums one kernel (:func:`.units.over`) instead of a lazy query joining ~3 M value strings
    and grouping millions of (class, value) pairs twice (100k quarter 4's 7 calls replayed: 1.1–1.2 →
    0.55–0.58 CPU-s, 0.4 of it loading the kernel once; its largest call 0.43 → 0.14–0.19).
    """
    keyed = members.select("unit", "history").unique().with_row_index("_h")  # the classes, numbered
    pairs = intersection_pairs(members).join(keyed.rename({"history": "d_history", "_h": "_d"}),
                                             on=["unit", "d_history"])  # fmt: skip
    pairs = pairs.join(keyed.rename({"history": "e_history"}), on=["unit", "e_history"])
    classes = members.select("caseid", "unit", "history").join(keyed, on=["unit", "history"])
    value = pl.col("value").cast(pl.Enum(list(thetas)), strict=False).to_physical().alias("_v")
    rows = (
        probabilities.lazy().select("caseid", value, "p").drop_nulls("_v")
        .join(classes.lazy().select("caseid", "_h"), on="caseid").select("_h", "_v", "p").collect()
    )  # fmt: skip
    found = over(pairs.select("_d", "_h"), classes.get_column("_h"), rows.select("_h", "_v", "p"), thetas)
    return frozenset(keyed.get_column("unit").filter(pl.Series(found)).unique().to_list())


def pair_key(key: str, /) -> pl.Expr:
    """``_pair`` = ``key`` × 2^32 + ``_v``: a (history number, value number) pair as one integer.

    The series checks sum P(s | c) per (history, value); grouping one integer column costs about a
    third of grouping the two (400k quarter 4, 6.4 M rows: 0.7 against 2.2 CPU-s)."""
    return (pl.col(key).cast(pl.UInt64) * _SHIFT + pl.col("_v")).alias("_pair")


def pair_parts(key: str, /) -> list[pl.Expr]:
    """``key`` and ``_v`` (UInt32) back from :func:`pair_key`'s ``_pair``."""
    return [
        (pl.col("_pair") // _SHIFT).cast(pl.UInt32).alias(key),
        (pl.col("_pair") % _SHIFT).cast(pl.UInt32).alias("_v"),
    ]


@njit(cache=True)
def _over(
    n: int, d_start: _I64, d_e: _I64, size: _F64, h_start: _I64, by_h: _I64, row_v: _I32, row_p: _F64,
    theta: _F64,
) -> NDArray[np.bool_]:  # fmt: skip
    """:func:`over`: Σ P per (class, value) over the rows by class (``h_start``, ``by_h``: their CSR),
    then per d over its e's."""
    acc = np.zeros(len(theta))
    seen = np.zeros(len(theta), np.bool_)
    touched = np.empty(len(theta), np.int64)
    sum_start = np.zeros(n + 1, np.int64)
    sum_v = np.empty(len(by_h), np.int32)
    sum_p = np.empty(len(by_h))
    k = 0
    for h in range(n):  # Σ P(s | e) per (class, value), as the frames summed them first
        m = 0
        for at in range(h_start[h], h_start[h + 1]):
            v = row_v[by_h[at]]
            if not seen[v]:
                seen[v] = True
                touched[m] = v
                m += 1
            acc[v] += row_p[by_h[at]]
        for t in range(m):
            v = touched[t]
            sum_v[k], sum_p[k] = v, acc[v]
            k += 1
            acc[v], seen[v] = 0.0, False
        sum_start[h + 1] = k
    result = np.zeros(n, np.bool_)
    for d in range(n):
        m = 0
        for j in range(d_start[d], d_start[d + 1]):
            e = d_e[j]
            for at in range(sum_start[e], sum_start[e + 1]):
                v = sum_v[at]
                if not seen[v]:
                    seen[v] = True
                    touched[m] = v
                    m += 1
                acc[v] += sum_p[at]
        for t in range(m):
            v = touched[t]
            if acc[v] / size[d] > theta[v] + 1e-12:
                result[d] = True
            acc[v], seen[v] = 0.0, False
    return result


def over(
    pairs: pl.DataFrame, classes: pl.Series, rows: pl.DataFrame, thetas: dict[str, float]
) -> NDArray[np.bool_]:
    """For each class d (histories of a unit numbered 0 … n − 1), whether conf(I(d) → s) > θ_s for some s.

    Args:
        pairs: ``_d``, ``_h``: class numbers, h's history containing d's (:func:`intersection_pairs`);
        classes: each member's class number; rows: ``_h``, ``_v`` (value number: its place in
        ``thetas``), ``p``: the members' P(s | c) rows; thetas: θ* (its values numbered in order).

    conf(I(d) → s) = Σ_{(d, e)} Σ_{c ∈ e} P(s | c) / Σ_{(d, e)} |e|, summed per (e, s) first, then per d.
    """
    counts = np.bincount(_ints(classes))  # every class has a member
    n = len(counts)
    d, e = _ints(pairs.get_column("_d")), _ints(pairs.get_column("_h"))
    d_start, d_e = csr(d, e, n)
    size = np.bincount(d, weights=counts[e].astype(np.float64), minlength=n)
    row_v, row_p = rows.get_column("_v").cast(pl.Int32).to_numpy(), rows.get_column("p").to_numpy()
    theta = np.asarray(list(thetas.values()), np.float64)
    with sized(rows.height):
        h_start, by_h = _by_class(_ints(rows.get_column("_h")), n)  # the rows by class, in order
        return _over(n, d_start, d_e, size, h_start, by_h, row_v, row_p, theta)  # type: ignore[no-any-return]


def _by_class(row_h: _I64, n: int) -> tuple[_I64, _I64]:
    """(start, rows) of the rows by class 0 … n − 1, each class's rows in order: the counting sort
    :func:`.raised_kernels.by_key`, the CSR :func:`.raised_kernels.csr` makes of them by a stable argsort
    (400k quarter 4: ~3.5 M rows a call)."""
    start = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(row_h, minlength=n), out=start[1:])
    return start, by_key(row_h, n)


def _ints(column: pl.Series) -> _I64:
    """``column`` as int64 numbers."""
    return column.to_numpy().astype(np.int64)
