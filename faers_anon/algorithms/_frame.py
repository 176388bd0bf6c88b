"""Frames ↔ kernel arrays for the greedy clustering: encode the cases and P(s | c), decode the groups.

* age: hierarchy-based. A case's node is ``tree.cover(age_min, age_max)`` of its super-record on a
  numeric tree (the MeSH tree), or its ``age_group`` node name on a categorical tree (the paper's
  Figure 1 tree of Example 2); missing age is the `missing` leaf. The group is released at the LCA.
* sex: hierarchy-based on the sex tree (F, M → ``*``; `missing`); null in the frame when the group is
  all missing.
* weight: hierarchy-free. The group is released as [min wt_min, max wt_max] when every case is known;
  all missing → released null with 0 loss; a mix → released null (SPEC §5 releases the root, which for
  a hierarchy-free attribute is "any weight", written as null) and counted as full loss (1) in IL.
* field QIDs (``h.fields``): per-level codes (:class:`~faers_anon.algorithms.types.FieldQid`, read by
  :func:`field_matrix`); the engine uses them for the loss only: the release writes each group's
  common value (:func:`faers_anon.io.qid_fields.generalize_fields`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon.algorithms._encode import (
    _dense,
    build_cases,
    build_pool,
    build_tables,
    class_cap,
    class_levels,
    csr_links,
)
from faers_anon.algorithms._fields import MISSING
from faers_anon.algorithms._groups import Store
from faers_anon.algorithms._pool import Cases, Pool, Tables
from faers_anon.algorithms.types import QidHierarchies
from faers_anon.anonymize.partition import PARTITION_SCHEMA
from faers_anon.errors import InputError
from faers_anon.models.base import Requirements
from hierarchies import Hierarchy


@dataclass(frozen=True, slots=True)
class Encoded:
    """The kernel's arrays for one cases frame (cases sorted by caseid)."""

    caseid: NDArray[np.int64]
    pool: Pool
    tab: Tables
    cases: Cases
    req: NDArray[np.int64]
    n_values: int


def _require(frame: pl.DataFrame, columns: list[str]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(
            f"missing columns {missing} (expected the cases.parquet contract)", path="cases.parquet"
        )


def tree_codes(tree: Hierarchy, names: pl.Series) -> NDArray[np.int64]:
    """``tree.encode`` of a column of node names, called once per distinct name (null → `missing`).

    Raises:
        HierarchyError: a name no node has (the first such name in row order, as ``tree.encode``).
    """
    values = names.cast(pl.Utf8)
    distinct = values.drop_nulls().unique(maintain_order=True)
    codes = pl.Series(tree.encode(distinct.to_list()), dtype=pl.Int64)
    mapped = values.replace_strict(distinct, codes, default=None, return_dtype=pl.Int64)
    return mapped.fill_null(tree.missing).to_numpy().astype(np.int64)


def _float(frame: pl.DataFrame, column: str) -> NDArray[np.float64]:
    return frame.get_column(column).cast(pl.Float64).fill_null(np.nan).to_numpy()


def field_matrix(frame: pl.DataFrame, h: QidHierarchies) -> NDArray[np.int64]:
    """The field QIDs' codes, one row per case, field f in columns off_f … off_f + H_f − 1; a missing
    value (null list) is MISSING at every level.

    Raises:
        InputError: a missing column, or a code list whose length is not the field's height.
    """
    _require(frame, [f.name for f in h.fields])
    blocks = [np.zeros((frame.height, 0), np.int64)]
    for field in h.fields:
        codes = frame.get_column(field.name).cast(pl.List(pl.Int64))
        lengths = codes.list.len().drop_nulls()
        if lengths.len() and (lengths.min() != field.height or lengths.max() != field.height):
            raise InputError(f"{field.name}: expected {field.height} codes per case", path="cases.parquet")
        full = codes.fill_null(pl.lit([MISSING] * field.height, pl.List(pl.Int64)))
        blocks.append(full.list.to_array(field.height).to_numpy().astype(np.int64).reshape(-1, field.height))
    return np.ascontiguousarray(np.hstack(blocks), np.int64)


def _class_base(
    cat: NDArray[np.int64], wmiss: NDArray[np.bool_], fcode: NDArray[np.int64], h: QidHierarchies
) -> NDArray[np.int64]:
    """Dense ids of (categorical nodes, weight-missing flag, each field's missing flag)."""
    ids = wmiss.astype(np.int64)
    columns = [cat[:, j] for j in range(cat.shape[1])]
    start = 0
    for field in h.fields:
        columns.append((fcode[:, start] == MISSING).astype(np.int64))
        start += field.height
    for column in columns:
        ids, _ = _dense(ids * (int(column.max(initial=0)) + 1) + column)
    return ids


@dataclass(frozen=True, slots=True)
class Links:
    """P(s | c) of a :class:`QidCodes`' cases in CSR form (:func:`with_links`), for the protected values
    ``values`` (a model's θ keys, in order): made once for a frame whose parts the engine runs on."""

    values: tuple[str, ...]
    val_ptr: NDArray[np.int64]
    val_id: NDArray[np.int32]
    val_p: NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class QidCodes:
    """The kernel's QID arrays of one cases frame (:func:`encode_qids`): what :func:`encode` needs besides
    P(s | c), so that it can be made beside P(s | c) and θ* (issue 18 item 6). ``levels``/``class_id``
    are None when not made (a frame only parts of which the engine runs on: each part gets its own,
    :func:`part_codes`); ``links``: P(s | c) in CSR form when made (:func:`with_links`)."""

    caseid: NDArray[np.int64]
    cat: NDArray[np.int64]
    wmiss: NDArray[np.bool_]
    lo: NDArray[np.float64]
    hi: NDArray[np.float64]
    rows: NDArray[np.int64]
    fcode: NDArray[np.int64]
    heights: NDArray[np.int64]
    levels: NDArray[np.int64] | None
    class_id: NDArray[np.int64] | None
    links: Links | None = None


def encode_qids(
    cases: pl.DataFrame, h: QidHierarchies, *, max_classes: int | None = None, classes: bool = True
) -> QidCodes:
    """Sort the cases by caseid and code their QIDs: categorical nodes, weight ranges, rows, field codes,
    the class levels and each case's class (``max_classes``: as :func:`encode`; ``classes`` False: no
    class levels, for a frame whose parts the engine runs on).

    Raises:
        InputError: a missing column or duplicate caseids.
    """
    _require(cases, ["caseid"])
    frame = cases if cases.get_column("caseid").is_sorted() else cases.sort("caseid")
    n = frame.height
    caseid = frame.get_column("caseid").cast(pl.Int64).to_numpy()
    repeated = (
        bool(np.any(caseid[1:] == caseid[:-1]))
        if caseid.dtype == np.int64
        else (n != np.unique(caseid).shape[0])
    )  # sorted: a repeated caseid sits next to itself (nulls: to_numpy gives floats)
    if repeated:
        raise InputError("caseid: duplicate caseids (expected one row per case)", path="cases.parquet")
    columns: list[NDArray[np.int64]] = []
    if h.age is not None:
        if h.age.is_numeric:
            _require(frame, ["age_min", "age_max"])
            columns.append(h.age.cover(_float(frame, "age_min"), _float(frame, "age_max")))
        else:
            _require(frame, ["age_group"])
            columns.append(tree_codes(h.age, frame.get_column("age_group")))
    if h.sex is not None:
        _require(frame, ["sex"])
        columns.append(tree_codes(h.sex, frame.get_column("sex")))
    cat = np.stack(columns, axis=1) if columns else np.zeros((n, 0), np.int64)
    if h.weight:
        _require(frame, ["wt_min", "wt_max"])
        lo, hi = _float(frame, "wt_min"), _float(frame, "wt_max")
        hi = np.where(np.isnan(hi), lo, hi)
        lo = np.where(np.isnan(lo), hi, lo)
        wmiss = np.isnan(lo)
    else:
        lo = hi = np.full(n, np.nan)
        wmiss = np.ones(n, np.bool_)
    rows = (
        frame.get_column("n_reports").cast(pl.Int64).fill_null(1).to_numpy()
        if "n_reports" in frame.columns
        else np.ones(n, np.int64)
    )
    fcode = field_matrix(frame, h)
    heights = np.array([f.height for f in h.fields], np.int64)
    q = QidCodes(caseid, cat, wmiss, lo, hi, rows, fcode, heights, None, None)
    return _with_classes(q, h, max_classes) if classes else q


def _with_classes(q: QidCodes, h: QidHierarchies, max_classes: int | None) -> QidCodes:
    """``q`` with its class levels and each case's class (:func:`class_levels`, cap as :func:`encode`)."""
    cap = class_cap(q.caseid.shape[0]) if max_classes is None else max_classes
    levels, class_id = class_levels(_class_base(q.cat, q.wmiss, q.fcode, h), q.fcode, q.heights, cap)
    return replace(q, levels=levels, class_id=class_id)


def _positions(qids: QidCodes, cases: pl.DataFrame) -> NDArray[np.int64] | None:
    """Where the caseids of ``cases`` (in caseid order) sit in ``qids``; None unless all are there once."""
    ids = cases.get_column("caseid") if "caseid" in cases.columns else None
    if ids is None or ids.null_count() or ids.len() > qids.caseid.shape[0]:
        return None
    mine = ids.sort().cast(pl.Int64).to_numpy()
    if mine.shape[0] > 1 and bool(np.any(mine[1:] == mine[:-1])):
        return None
    at = np.minimum(np.searchsorted(qids.caseid, mine), max(qids.caseid.shape[0] - 1, 0))
    if mine.shape[0] and not bool(np.array_equal(qids.caseid[at], mine)):
        return None
    return at.astype(np.int64)


def part_codes(qids: QidCodes, at: NDArray[np.int64], h: QidHierarchies, max_classes: int | None) -> QidCodes:
    """The codes of the cases at ``at`` (ascending) of ``qids``, their class levels made for them, and
    their P(s | c) links when ``qids`` has them: the same arrays :func:`encode_qids` and :func:`encode`
    make from those cases' rows (the links keep each case's entries in order)."""
    links = qids.links
    if links is not None:
        start, stop = links.val_ptr[at], links.val_ptr[at + 1]
        val_ptr = np.zeros(at.shape[0] + 1, np.int64)
        np.cumsum(stop - start, out=val_ptr[1:])
        entry = np.arange(val_ptr[-1], dtype=np.int64) + np.repeat(start - val_ptr[:-1], stop - start)
        links = Links(links.values, val_ptr, links.val_id[entry], links.val_p[entry])
    q = QidCodes(
        qids.caseid[at], qids.cat[at], qids.wmiss[at], qids.lo[at], qids.hi[at], qids.rows[at],
        np.ascontiguousarray(qids.fcode[at]), qids.heights, None, None, links,
    )  # fmt: skip
    return _with_classes(q, h, max_classes)


def _value_ids(req: Requirements) -> pl.DataFrame:
    """(vid, value, theta) of the protected values, in the order of ``req.thetas``."""
    return pl.DataFrame(
        {"value": list(req.thetas.keys()), "theta": list(req.thetas.values())},
        schema={"value": pl.Utf8, "theta": pl.Float64},
    ).with_row_index("vid")


def _links(caseid: NDArray[np.int64], probabilities: pl.DataFrame, req: Requirements) -> Links:
    """P(s | c) of the cases ``caseid`` (sorted) in CSR form over the values of ``req`` (others left out)."""
    n = caseid.shape[0]
    values = _value_ids(req)
    vid = (
        pl.col("value")
        .cast(pl.Utf8)
        .replace_strict(
            values.get_column("value"), values.get_column("vid"), default=None, return_dtype=pl.Int64
        )
    )  # values the model does not protect: null, left out
    linked = probabilities.select(
        pl.col("caseid").cast(pl.Int64), vid.alias("vid"), pl.col("p").cast(pl.Float64)
    ).filter(pl.col("vid").is_not_null())
    link_case = linked.get_column("caseid").to_numpy()
    at = np.minimum(np.searchsorted(caseid, link_case), max(n - 1, 0))
    keep = caseid[at] == link_case if n else np.zeros(link_case.shape[0], np.bool_)
    val_ptr, val_id, val_p = csr_links(
        at[keep], linked.get_column("vid").to_numpy()[keep], linked.get_column("p").to_numpy()[keep], n
    )
    return Links(tuple(req.thetas), val_ptr, val_id, val_p)


def with_links(qids: QidCodes, probabilities: pl.DataFrame, req: Requirements) -> QidCodes:
    """``qids`` with the P(s | c) of its cases in CSR form (:class:`Links`), so that each part the engine
    runs on takes its cases' entries instead of reading P(s | c) again (:func:`part_codes`)."""
    return replace(qids, links=_links(qids.caseid, probabilities, req))


def encode(
    cases: pl.DataFrame,
    probabilities: pl.DataFrame,
    req: Requirements,
    h: QidHierarchies,
    *,
    max_classes: int | None = None,
    qids: QidCodes | None = None,
) -> Encoded:
    """Sort the cases by caseid and build the kernel's arrays (QID codes, P(s | c) in CSR form, pool).

    ``max_classes`` caps the pool's classes (default :func:`~faers_anon.algorithms._encode.class_cap`).
    ``qids``: :func:`encode_qids` of these ``cases``, ``h`` and ``max_classes`` when already made (the
    same arrays); made here when None or made for other caseids.

    Raises:
        InputError: a missing column or duplicate caseids.
    """
    q = qids
    if q is None or (at := _positions(q, cases)) is None:
        q = encode_qids(cases, h, max_classes=max_classes)
    elif at.shape[0] < q.caseid.shape[0] or q.levels is None:  # a part of the frame coded ahead
        q = part_codes(q, at, h, max_classes)
    links = q.links
    if links is None or links.values != tuple(req.thetas):
        links = _links(q.caseid, probabilities, req)
    caseid = q.caseid
    assert q.levels is not None and q.class_id is not None  # made above
    theta = np.array(list(req.thetas.values()), np.float64)
    kernel_cases = build_cases(q.rows, links.val_ptr, links.val_id, links.val_p, theta)
    req_arr = np.array(
        [
            req.min_size,
            req.size_unit == "rows",
            req.value_caps,
            req.cap_unit == "rows",
            req.risk == "eta",
            req.min_size,
        ],
        np.int64,
    )
    return Encoded(
        caseid=caseid,
        pool=build_pool(
            q.cat, q.wmiss, q.lo, q.hi, q.rows, kernel_cases.sig, q.fcode, q.class_id, q.heights, q.levels
        ),
        tab=build_tables(h.trees, q.lo, q.hi, q.wmiss, h.weight_domain, q.heights, q.levels),
        cases=kernel_cases,
        req=req_arr,
        n_values=max(len(req.thetas), 1),
    )


def decode(enc: Encoded, store: Store, n_groups: int, h: QidHierarchies) -> pl.DataFrame:
    """The partition frame of the engine's groups (:func:`partition_frame` of the store's state)."""
    cat = store.cat[:n_groups]
    w = store.w[:n_groups]
    known = (w[:, 0] > 0) & (w[:, 1] == 0) if h.weight else np.zeros(n_groups, np.bool_)
    return partition_frame(
        enc.caseid,
        store.group_of.copy(),
        h,
        nodes=[cat[:, j] for j in range(len(h.trees))],
        wt_known=known,
        wt_lo=w[:, 2],
        wt_hi=w[:, 3],
    )


def partition_frame(
    caseid: NDArray[np.int64],
    group_of: NDArray[np.int64],
    h: QidHierarchies,
    /,
    *,
    nodes: list[NDArray[np.int64]],
    wt_known: NDArray[np.bool_],
    wt_lo: NDArray[np.float64],
    wt_hi: NDArray[np.float64],
) -> pl.DataFrame:
    """The partition frame (docs/architecture.md) from each group's generalized QIDs.

    Args:
        caseid: the cases; ``group_of`` their group ids (0 … G−1).
        h: the QIDs; ``nodes[j]`` holds, per group, the node code of ``h.trees[j]`` (age first).
        wt_known: per group, whether weight is released (every case known on it); then
            ``wt_lo``/``wt_hi`` are its range.
    """
    n_groups = wt_known.shape[0]
    groups: dict[str, object] = {"group_id": np.arange(n_groups, dtype=np.int64)}
    codes = iter(nodes)
    if h.age is not None:
        age = next(codes)
        groups["age_group"] = h.age.names[age].astype(str).tolist()
        groups["age_min"] = h.age.lo[age]
        top = h.age.hi[age]
        groups["age_max"] = np.where(np.isinf(top), np.nan, top)
    else:
        groups["age_group"] = [None] * n_groups
        groups["age_min"] = groups["age_max"] = np.full(n_groups, np.nan)
    if h.sex is not None:
        sex = next(codes)
        names = h.sex.names[sex].astype(object)
        names[sex == h.sex.missing] = None
        groups["sex"] = names.tolist()
    else:
        groups["sex"] = [None] * n_groups
    groups["wt_min"] = np.where(wt_known, wt_lo, np.nan)
    groups["wt_max"] = np.where(wt_known, wt_hi, np.nan)
    per_group = pl.DataFrame(groups).with_columns(pl.col(pl.Float64).fill_nan(None))
    per_case = pl.DataFrame({"caseid": caseid, "group_id": group_of})
    return per_case.join(per_group, on="group_id", how="left").select(
        [pl.col(c).cast(t) for c, t in PARTITION_SCHEMA.items()]
    )
