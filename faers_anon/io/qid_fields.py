"""DEMO fields declared ``qid`` by the column policy: the engine's codes, and their group's common value.

The clustering engine groups cases on every declared QID (docs/engine.md): :func:`field_codes` gives
it each field as per-level codes of a unit's DEMO rows, and :func:`generalize_fields` then writes, for
each group of the final partition, the lowest common value of the whole group in the field's
hierarchy, over every report (every version) of every case of the group, so all reports of a group
agree on it (SPEC §4, §11). Then every case's class over all its released DEMO fields contains its
group: ≥ k cases whenever the partition's groups have ≥ k cases. The engine's loss of a group is the
loss computed here (``tests/faers_anon/algorithms/test_field_qids.py``).

Hierarchies (level 0 = the value, the top level ``*``):

* ``date``: ``YYYYMMDD`` → ``YYYYMM`` → ``YYYYQn`` → ``YYYY`` → ``*`` (height 4).
* ``value``: the value as text → ``*`` (height 1).
* a named tree (value → parent; a parent → ``*``; an unlisted value → ``*``): height = the longest
  chain from a listed value to ``*``; a shorter chain stays at ``*`` above its end.
* ``outcome`` (the case's OUTC codes as a set, SPEC §11; column ``outcome`` of :func:`with_outcome_sets`):
  the exact set (codes in severity order DE > LT > HO > DS > CA > RI > OT, comma-joined; ``none`` when
  the case has no code) → ``most severe X`` → ``serious`` / ``non-serious`` → ``*`` (height 3). Every
  version of a case carries the case's set (the union over its reports), so all versions agree.
* ``seriousness`` (the same column, docs/outcomes.md): ``serious`` / ``non-serious`` → ``*`` (height 1);
  ``death`` (the same column): ``death`` / ``other serious`` / ``non-serious`` → ``serious`` /
  ``non-serious`` → ``*`` (height 2). With θ-bounded OUTC codes an exact set or ``most severe X``
  makes its codes certain for the whole group (conf 1 > θ_o), so only these coarser levels can be
  released: the shorter hierarchies give the engine's loss the levels that can.

Released value of a group g for field f: the value at the lowest level where every non-missing value
of g agrees; missing values follow SPEC §5: a group whose reports are all missing stays missing
(null), a group mixing missing and known values is released as ``*``.

Loss (SPEC §6 for categorical QIDs): h(f, g) / h(f), with h(f, g) the level released and h(f) the
height; ``*`` counts as full loss (1) whatever its level, a missing group 0. NIL_f = Σ_g |g| · loss /
N, |g| the distinct units (cases, or reports for a report-level partition) of g, N all units — the
per-QID term of SPEC §8's NIL, in [0, 1].
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from faers_anon.algorithms.types import FieldQid
from faers_anon.errors import ConfigError
from faers_anon.io.column_policy import FAERS_COLUMNS, ColumnPolicy

__all__ = [
    "OUTCOME_FIELD",
    "OUTCOME_SEVERITY",
    "ROOT",
    "certain_codes",
    "field_codes",
    "generalize_fields",
    "level_keys",
    "outcome_texts",
    "value_levels",
    "released_outcome_rows",
    "with_outcome_sets",
]

ROOT = "*"
OUTCOME_FIELD = "outcome"
OUTCOME_SEVERITY: tuple[str, ...] = ("DE", "LT", "HO", "DS", "CA", "RI", "OT")
"""FAERS OUTC codes, most severe first: death, life-threatening, hospitalization, disability,
congenital anomaly, required intervention, other serious."""
_NONE, _MOST, _DEATH = "none", "most severe ", "death"


def with_outcome_sets(demo: pl.DataFrame, outc: pl.DataFrame) -> pl.DataFrame:
    """``demo`` with column ``outcome``: its case's OUTC codes as one text (module docstring).

    outcome(c) = the distinct codes of every report of c, upper case, in :data:`OUTCOME_SEVERITY` order
    (an unknown code after them, alphabetically), joined by ``,``; ``none`` for a case without a code.
    A quarter without any OUTC row or code (a source without the table) gives null everywhere (missing,
    not non-serious).
    """
    demo = demo.drop(OUTCOME_FIELD, strict=False)
    if outc.height == 0 or "outc_cod" not in outc.columns:
        return demo.with_columns(pl.lit(None, pl.String).alias(OUTCOME_FIELD))
    code = pl.col("outc_cod").cast(pl.String).str.strip_chars().str.to_uppercase()
    sets = outcome_texts(outc.select(pl.col("caseid"), code.alias("code")).filter(pl.col("code") != ""))
    return demo.join(sets, on="caseid", how="left", maintain_order="left").with_columns(
        pl.col(OUTCOME_FIELD).fill_null(_NONE)
    )


def outcome_texts(codes: pl.DataFrame) -> pl.DataFrame:
    """``caseid``, ``outcome``: each case's distinct ``code`` values in :func:`with_outcome_sets` order.

    A case whose codes are all in :data:`OUTCOME_SEVERITY` gets the text of its bit set
    m(c) = OR over its codes of 2^rank(code) (rank 0 the most severe), texts of the 2^7 sets made once,
    so its rows are OR-ed in a group_by and never sorted; a case with any other code has its distinct
    codes sorted by (rank, code), an unknown code ranking last. The rows come in no set order.
    """
    bits = {c: 1 << i for i, c in enumerate(OUTCOME_SEVERITY)}
    flagged = codes.with_columns(
        pl.col("code").replace_strict(bits, default=0, return_dtype=pl.Int64).alias("b")
    )
    odd = flagged.filter(pl.col("b") == 0).select("caseid").unique()
    masks = (
        flagged.join(odd, on="caseid", how="anti").group_by("caseid").agg(pl.col("b").bitwise_or().alias("m"))
    )
    texts = {m: ",".join(c for c in OUTCOME_SEVERITY if m & bits[c]) for m in range(1, 1 << len(bits))}
    known = masks.select(
        "caseid", pl.col("m").replace_strict(texts, return_dtype=pl.String).alias(OUTCOME_FIELD)
    )
    rank = {code: i for i, code in enumerate(OUTCOME_SEVERITY)}
    others = (
        codes.join(odd, on="caseid", how="semi")
        .unique()
        .with_columns(
            pl.col("code").replace_strict(rank, default=len(rank), return_dtype=pl.Int64).alias("r")
        )
        .sort("caseid", "r", "code")
        .group_by("caseid", maintain_order=True)
        .agg(pl.col("code").str.join(",").alias(OUTCOME_FIELD))
    )
    return pl.concat([known, others])


def released_outcome_rows(outc: pl.DataFrame, demo: pl.DataFrame, partition: pl.DataFrame) -> pl.DataFrame:
    """The OUTC rows a release publishes when its partition carries ``outcome`` (docs/formats.md).

    Per DEMO report (``demo``: ``primaryid``, ``caseid``, ``quarter``), one row per code its case's
    released outcome makes certain (:func:`certain_codes`), in severity order: every version of a
    case carries the same codes, and a case released as ``serious``, ``non-serious`` or ``*`` has no
    row (a row would tell serious from not). The other columns of ``outc`` are null. ``outc`` as is
    when the partition has no ``outcome`` (a policy without that qid).
    """
    if OUTCOME_FIELD not in partition.columns:
        return outc
    key = "primaryid" if "primaryid" in partition.columns else "caseid"
    rows = (
        demo.select("primaryid", "caseid", "quarter")
        .join(partition.select(key, OUTCOME_FIELD), on=key, how="left", maintain_order="left")
        .with_columns(certain_codes(pl.col(OUTCOME_FIELD)).alias("outc_cod"))
        .explode("outc_cod")
        .drop_nulls("outc_cod")
    )
    return rows.select(pl.col(c) if c in rows.columns else pl.lit(None).alias(c) for c in outc.columns).cast(
        outc.schema
    )


def certain_codes(released: pl.Expr) -> pl.Expr:
    """The OUTC codes a released ``outcome`` value makes certain, as a list (empty when none).

    Exact set → its codes; ``most severe X`` and ``death`` → [X], [DE]; ``none``, ``serious``,
    ``non-serious``, ``other serious``, ``*``, null → [].
    """
    text = released.cast(pl.String)
    vague = text.is_null() | text.is_in([_NONE, "serious", "non-serious", "other serious", ROOT])
    return (
        pl.when(vague)
        .then(pl.lit([], pl.List(pl.String)))
        .when(text == _DEATH)
        .then(pl.lit(["DE"], pl.List(pl.String)))
        .when(text.str.starts_with(_MOST))
        .then(pl.concat_list(text.str.strip_prefix(_MOST)))
        .otherwise(text.str.split(","))
    )


def _chain(value: str, tree: Mapping[str, str]) -> list[str]:
    chain, seen = [value], {value}
    while chain[-1] in tree and tree[chain[-1]] != ROOT:
        parent = tree[chain[-1]]
        if parent in seen:
            raise ConfigError(f"column policy: hierarchy cycle at {parent!r}")
        chain.append(parent)
        seen.add(parent)
    return chain


def level_keys(name: str, hierarchy: str, trees: Mapping[str, Mapping[str, str]]) -> list[pl.Expr]:
    """One text expression per level below the root, level 0 first (module docstring)."""
    col = pl.col(name)
    if hierarchy == "date":
        date = col.cast(pl.Date)
        return [
            date.dt.strftime("%Y%m%d"),
            date.dt.strftime("%Y%m"),
            pl.format("{}Q{}", date.dt.year(), date.dt.quarter()),
            date.dt.strftime("%Y"),
        ]
    text = col.cast(pl.String)
    if hierarchy == "value":
        return [text]
    if hierarchy in ("outcome", "seriousness", "death"):
        none = text == _NONE
        serious = pl.when(none).then(pl.lit("non-serious")).otherwise(pl.lit("serious"))
        if hierarchy == "seriousness":
            return [serious]
        if hierarchy == "death":
            died = text.str.split(",").list.first() == "DE"
            return [pl.when(none).then(pl.lit("non-serious")).when(died).then(pl.lit(_DEATH)).otherwise(
                pl.lit("other serious")), serious]  # fmt: skip
        most = pl.when(none).then(pl.lit(_NONE)).otherwise(pl.lit(_MOST) + text.str.split(",").list.first())
        return [text, most, serious]
    tree = trees[hierarchy]
    chains = {value: _chain(value, tree) for value in tree}
    height = max((len(c) for c in chains.values()), default=1)
    return [text] + [
        text.replace_strict(
            {v: c[level] if level < len(c) else ROOT for v, c in chains.items()},
            default=pl.lit(ROOT),
            return_dtype=pl.String,
        )
        for level in range(1, height)
    ]


def value_levels(values: pl.Series, levels: list[pl.Expr]) -> pl.DataFrame:
    """The distinct values of a field with, per level i, its text ``t<i>`` and dense code ``c<i>``.

    Each level is computed once per distinct value instead of once per row; ``c<i>`` is the dense
    rank (from 1) of ``t<i>`` among the distinct values' texts, which is its rank among the rows'
    texts (the same set). A null value (missing) has null texts and codes.
    """
    name = values.name
    table = values.unique().to_frame().select(name, *(e.alias(f"t{i}") for i, e in enumerate(levels)))
    return table.with_columns(
        pl.col(f"t{i}").rank("dense").cast(pl.Int64).alias(f"c{i}") for i in range(len(levels))
    )


def _field(coded: pl.DataFrame, name: str, table: pl.DataFrame, height: int) -> pl.DataFrame:
    """group_id → released value and loss of one field (module docstring), from each group's per-level
    least and greatest code (``coded``: group_id, ``<name>_missing``, ``rows``, ``<name>_lo<i>``,
    ``<name>_hi<i>``): the rows agree at level i when lo = hi (codes of known rows; missing rows have
    none), and the released text is the one of that code."""
    value: pl.Expr = pl.lit(ROOT)
    level: pl.Expr = pl.lit(float(height))
    for i in reversed(range(height)):
        lo, hi = pl.col(f"{name}_lo{i}"), pl.col(f"{name}_hi{i}")
        pairs = table.select(f"c{i}", f"t{i}").drop_nulls().unique()
        text = lo.replace_strict(pairs[f"c{i}"], pairs[f"t{i}"], default=None, return_dtype=pl.String)
        agree = hi.is_not_null() & (lo == hi)
        value = pl.when(agree).then(text).otherwise(value)
        level = pl.when(agree).then(pl.lit(float(i))).otherwise(level)
    missing = pl.col(f"{name}_missing")
    all_missing = missing == pl.col("rows")
    mixed = missing > 0
    value = pl.when(all_missing).then(pl.lit(None, pl.String)).when(mixed).then(pl.lit(ROOT)).otherwise(value)
    loss = pl.when(all_missing).then(0.0).when(mixed | (value == ROOT)).then(1.0).otherwise(level / height)
    return coded.select("group_id", "units", value.alias(name), loss.alias("loss"))


def _declared(
    reports: pl.DataFrame, policy: ColumnPolicy, skip: Sequence[str]
) -> tuple[pl.DataFrame, dict[str, str]]:
    """The policy's field qids not in ``skip`` and the DEMO rows with every one of them (absent: null).

    Raises:
        ConfigError: a declared field that is not a DEMO column, or a date hierarchy on a non-date column.
    """
    fields = {f: h for f, h in policy.field_qids().items() if f not in skip}
    missing = [f for f in fields if f not in reports.columns and f not in FAERS_COLUMNS["demo"]]
    if missing:
        raise ConfigError(f"column policy: qid column(s) {', '.join(missing)} not in the DEMO table")
    # a FAERS column an era lacks is all missing: released empty, loss 0 (module docstring)
    absent = [f for f in fields if f not in reports.columns]
    reports = reports.with_columns(
        pl.lit(None, pl.Date if fields[f] == "date" else pl.String).alias(f) for f in absent
    )
    for name, hierarchy in fields.items():
        if hierarchy == "date" and not (
            reports.schema[name] == pl.Date or reports.schema[name] == pl.Datetime
        ):
            raise ConfigError(f"column policy: demo.{name}: hierarchy date needs a date column")
    return reports, fields


def field_codes(
    reports: pl.DataFrame, policy: ColumnPolicy, /, *, key: str = "caseid"
) -> tuple[pl.DataFrame, tuple[FieldQid, ...]]:
    """Per unit, each field qid of ``policy`` as the engine's per-level codes (:class:`FieldQid`).

    A unit (``key``: ``caseid``, or ``primaryid`` for report units) covers its DEMO rows the way the
    release generalizes them (:func:`generalize_fields`), so the engine's loss of a group is the
    released one: all rows missing → a null list (missing); some missing → every level −1 (the root
    ``*``); else at level l the dense code of the rows' common level-l value, −1 where they differ or
    the value is ``*``. Codes are dense ranks of the level's text, so they are the same on every run.
    Levels and ranks are computed once per distinct value (:func:`value_levels`), the agreement of a
    unit's rows from their least and greatest code (equal, and no row without one).

    Returns:
        (frame with ``key`` and one List(Int64) column per field, the fields with their heights).

    Raises:
        ConfigError: as :func:`generalize_fields`.
    """
    reports, fields = _declared(reports, policy, ())
    coded = reports.select(key, *fields)
    specs: list[FieldQid] = []
    aggs: list[pl.Expr] = []
    lists: list[pl.Expr] = []
    for j, (name, hierarchy) in enumerate(fields.items()):
        levels = [
            pl.when(e == ROOT).then(None).otherwise(e) for e in level_keys(name, hierarchy, policy.trees)
        ]
        table = value_levels(reports.get_column(name), levels)
        codes = [f"_{j}_{i}" for i in range(len(levels))]
        coded = coded.join(
            table.select(name, *(pl.col(f"c{i}").alias(c) for i, c in enumerate(codes))), on=name, how="left"
        )
        aggs += [
            pl.col(name).is_null().all().alias(f"_{j}_all"),
            pl.col(name).is_null().any().alias(f"_{j}_any"),
        ]
        aggs += [
            pl.when((pl.col(c).null_count() == 0) & (pl.col(c).min() == pl.col(c).max()))
            .then(pl.col(c).min())
            .alias(c)
            for c in codes
        ]
        known = (pl.when(pl.col(f"_{j}_any")).then(-1).otherwise(pl.col(c).fill_null(-1)) for c in codes)
        # concat_arr then a cast: several times cheaper than concat_list on 400k rows
        arrays = pl.when(pl.col(f"_{j}_all")).then(None).otherwise(pl.concat_arr(*known))
        lists.append(arrays.cast(pl.List(pl.Int64)).alias(name))
        specs.append(FieldQid(name=name, height=len(levels)))
    out = coded.group_by(key).agg(*aggs).select(key, *lists).sort(key)
    return out, tuple(specs)


def generalize_fields(
    partition: pl.DataFrame, reports: pl.DataFrame, policy: ColumnPolicy
) -> tuple[pl.DataFrame, dict[str, float]]:
    """Add each field qid of ``policy`` (not already a partition column) as its group's common value.

    Levels are computed once per distinct value (:func:`value_levels`) and every field is aggregated
    in one pass over the groups (:func:`_field`).

    Args:
        partition: one row per case (``caseid``) or per report (``primaryid``) with ``group_id``.
        reports: the DEMO rows (``caseid``, ``primaryid`` and the fields), raw values.
        policy: the column policy (:meth:`ColumnPolicy.field_qids`).

    Returns:
        The partition with one String column per field, and NIL per field (module docstring).

    Raises:
        ConfigError: a declared field the DEMO table lacks, or a date hierarchy on a non-date column.
    """
    reports, fields = _declared(reports, policy, partition.columns)
    if not fields:
        return partition, {}
    key = "primaryid" if "primaryid" in partition.columns else "caseid"
    units = reports.select(key, *fields).join(partition.select(key, "group_id"), on=key, how="inner")
    tables: dict[str, pl.DataFrame] = {}
    aggs = [pl.col(key).n_unique().alias("units"), pl.len().alias("rows")]
    for name, hierarchy in fields.items():
        tables[name] = table = value_levels(
            reports.get_column(name), level_keys(name, hierarchy, policy.trees)
        )
        height = (table.width - 1) // 2
        units = units.join(
            table.select(name, *(pl.col(f"c{i}").alias(f"{name}_c{i}") for i in range(height))),
            on=name,
            how="left",
        )
        aggs.append(pl.col(name).null_count().alias(f"{name}_missing"))
        for i in range(height):
            aggs += [
                pl.col(f"{name}_c{i}").min().alias(f"{name}_lo{i}"),
                pl.col(f"{name}_c{i}").max().alias(f"{name}_hi{i}"),
            ]
    coded = units.group_by("group_id").agg(*aggs).sort("group_id")
    released = coded.select("group_id")
    nil = {}
    n = partition.height
    for name, table in tables.items():
        one = _field(coded, name, table, (table.width - 1) // 2)
        nil[name] = float((one["units"] * one["loss"]).sum()) / n if n else 0.0
        released = released.with_columns(one.get_column(name))
    out = partition.join(released, on="group_id", how="left", maintain_order="left")
    return out, nil
