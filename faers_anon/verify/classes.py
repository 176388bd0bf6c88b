"""Verifier rules for issue 18, from the release's files alone (imports nothing of the anonymizer).

* ``demo_fields``: on the released case view (SPEC §11: each case's latest DEMO row, highest report
  id last), every case's class over all its released DEMO fields (every DEMO column but the ids and
  ``is_latest``; ``quarter`` counts: a release labels every row with its own quarter, so it varies
  inside no group) has ≥ k distinct cases. Reported for cases whose QID-group has ≥ k
  cases (a smaller group is already rule ``k``'s), once per group, naming its first such case.
* ``class_theta``: for each value class C of the release's ``classes.csv`` (``value,class[,theta]``;
  ``*,<C>,<θ>`` rows give θ_C) and each group q: conf(q → C) = Σ_{c ∈ q} P(C | c) / |q| ≤ θ_C, with
  P(C | c) = max_{s ∈ C} P(s | c) (SPEC §11), P(s | c) = 1 for the case's own sensitive values,
  else max over its drug names (``drug_key``; ``drugname``, ``prod_ai`` when released) of w(d, s)
  from ``knowledge.csv``. A class without a θ row is
  not checked (the release states no bound for it).
* ``outcome_theta``: for each OUTC code o of the release's ``outcomes.csv`` (``outc_cod,theta``):
  conf(q → o) = (cases of q with o) / |q| ≤ θ_o.

Each rule returns violation rows (``group``, ``rule``, ``detail``) like the other verifier rules;
a release without ``classes.csv``/``outcomes.csv`` (written before issue 18) yields none for them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl

from faers_anon.verify.stated import canonical_column

__all__ = [
    "NOT_FIELDS",
    "class_violations",
    "demo_classes",
    "demo_field_violations",
    "release_class_rules",
    "released_demo",
    "released_drug_names",
    "split_groups_below_k",
]

TableReader = Callable[..., pl.LazyFrame]  # (table, columns, optional=()) -> the table's columns
DRUG_COLUMNS = ("drug_key", "drugname", "prod_ai")
#: DEMO columns that are not case-view fields (SPEC §11): the ids and the derived latest flag. ``quarter``
#: is a field: a release labels every row with its own quarter (writer_draft.one_quarter).
NOT_FIELDS = ("primaryid", "caseid", "is_latest")
_EMPTY = pl.Schema({"group": pl.Int64(), "rule": pl.String(), "detail": pl.String()})


def _key(expr: pl.Expr) -> pl.Expr:
    key = expr.str.replace_all(r"\s+", " ").str.strip_chars().str.to_uppercase()
    return pl.when(key.str.len_chars() > 0).then(key)


def split_groups_below_k(sizes: pl.DataFrame, members: pl.DataFrame, k: int) -> pl.DataFrame:
    """The classes (``size``, a member ``caseid``) of fewer than k cases inside a group of ≥ k cases.

    A group below k is rule k's; the class rules flag the classes a group of ≥ k splits into.
    ``members`` is (caseid, group) with caseid of the same type as ``sizes``'.
    """
    groups = members.group_by("group").agg(pl.col("caseid").n_unique().alias("cases"))
    return (
        sizes.filter(pl.col("size") < k)
        .join(members, on="caseid", how="left")
        .join(groups, on="group", how="left")
        .filter(pl.col("cases") >= k)
    )


def demo_classes(demo: pl.DataFrame) -> pl.DataFrame:
    """The released case view's classes over all its DEMO fields (rule ``demo_fields``, SPEC §11).

    The view is each case's latest row of ``demo`` (highest ``primaryid``, compared as its type); one
    row per distinct tuple of its fields: the fields, ``size`` (cases), ``caseid`` (the least) and
    ``members`` (its caseids). Rule ``outcome_set`` (:mod:`faers_anon.verify.outcomes`) shares it.
    """
    fields = [c for c in demo.columns if c not in NOT_FIELDS]
    view = demo.sort("primaryid").unique("caseid", keep="last", maintain_order=True).select("caseid", *fields)
    return view.group_by(fields).agg(
        pl.len().alias("size"), pl.col("caseid").min().alias("caseid"), pl.col("caseid").alias("members")
    )


def released_demo(release: Path, read: TableReader) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """Every published DEMO column (``caseid`` as text) and its :func:`demo_classes`, read once for the
    rules ``demo_fields``, ``outcome_set`` and ``outcome_versions``; no classes when ``primaryid`` is not
    Int64 (rule ``outcome_set`` orders versions by the id as Int64: each rule then groups on its own).
    """
    names = pl.scan_parquet(release / "parquet" / "demo.parquet").collect_schema().names()
    demo = read("demo", names).collect()
    return demo, demo_classes(demo) if demo.schema["primaryid"] == pl.Int64 else None


def demo_field_violations(
    demo: pl.DataFrame, members: pl.DataFrame, k: int, classes: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Rule ``demo_fields`` (module docstring); ``demo`` is every published DEMO column.

    ``classes``: :func:`demo_classes` of ``demo`` when already computed.
    """
    fields = [c for c in demo.columns if c not in NOT_FIELDS]
    sizes = demo_classes(demo) if classes is None else classes
    small = split_groups_below_k(sizes.select("size", "caseid"), members, k)
    return (
        small.sort("group", "caseid")
        .select(
            "group",
            pl.lit("demo_fields").alias("rule"),
            pl.format(
                "{} case(s) share all {} released DEMO fields of case {} (k = {})",
                "size",
                pl.lit(len(fields)),
                "caseid",
                pl.lit(k),
            ).alias("detail"),
        )
        .unique("group", keep="first", maintain_order=True)
        .cast(_EMPTY)
    )


def _class_probabilities(
    read: TableReader, tables: Sequence[str], knowledge: pl.DataFrame, listed: pl.DataFrame
) -> pl.LazyFrame:
    """(caseid, name, p): P(C | c) = max over the values s of class C of P(s | c) (module docstring).

    Terms and drug names meet their canonical value, E and their class once per distinct text; ``listed``
    is (value, name), canonical values.
    """
    own = {"indi": "indi_pt", "reac": "pt"}
    classes = listed.lazy()
    parts = [pl.DataFrame(schema={"caseid": pl.Int64, "name": pl.String, "p": pl.Float64}).lazy()]
    for table in tables:
        rows = read(table, ["caseid", own[table]]).with_columns(pl.col("caseid").cast(pl.Int64))
        terms = canonical_column(rows.select(pl.col(own[table]).unique()), own[table], "value")
        found = rows.join(terms.join(classes, on="value"), on=own[table])
        parts.append(found.select("caseid", "name", pl.lit(1.0).alias("p")))
    if knowledge.height:
        e = knowledge.lazy().select(
            _key(pl.col("drug_key")).alias("drug_key"),
            _key(pl.col("disease")).alias("value"),
            pl.col("weight").cast(pl.Float64).alias("p"),
        )
        names = released_drug_names(read).select(
            pl.col("caseid").cast(pl.Int64), pl.col("drug_key").alias("_name")
        )
        reach = canonical_column(names.select(pl.col("_name").unique()), "_name", "drug_key").join(
            e, on="drug_key"
        )
        found = names.join(reach.join(classes, on="value"), on="_name")  # repeats change no maximum
        parts.append(found.select("caseid", "name", "p"))
    return pl.concat(parts).group_by("caseid", "name").agg(pl.col("p").max())


def released_drug_names(read: TableReader) -> pl.LazyFrame:
    """(caseid, drug_key): every released drug column's value as a drug name (SPEC §11).

    P(s | c) reads every drug column the release publishes through E: ``drug_key`` always,
    ``drugname`` and ``prod_ai`` when the release carries them (a column policy that keeps them).
    """
    drug = read("drug", ["caseid", "drug_key"], optional=DRUG_COLUMNS[1:])
    names = [c for c in DRUG_COLUMNS if c in drug.collect_schema().names()]
    return drug.unpivot(index="caseid", on=names, value_name="_name").select(
        "caseid", pl.col("_name").alias("drug_key")
    )


def _read_csv(path: Path) -> pl.DataFrame | None:
    return pl.read_csv(path, infer_schema=False, comment_prefix="#") if path.is_file() else None


def _over(
    members: pl.DataFrame, p: pl.LazyFrame, thetas: pl.DataFrame, rule: str, tol: float
) -> pl.DataFrame:
    sizes = members.group_by("group").agg(pl.len().alias("cases"))
    conf = (
        members.lazy()
        .join(p, on="caseid")
        .group_by("group", "name")
        .agg(pl.col("p").sum().alias("sigma"))
        .join(sizes.lazy(), on="group")
        .join(thetas.lazy(), on="name")
        .with_columns((pl.col("sigma") / pl.col("cases")).alias("conf"))
        .filter(pl.col("conf") > pl.col("theta") + tol)
        .collect()
    )
    return (
        conf.sort("group", "name")
        .select(
            "group",
            pl.lit(rule).alias("rule"),
            pl.format("conf({}) = {} > theta {}", "name", pl.col("conf").round(6), "theta").alias("detail"),
        )
        .cast(_EMPTY)
    )


def class_violations(
    release: Path, read: TableReader, members: pl.DataFrame, *, tables: Sequence[str], tolerance: float
) -> pl.DataFrame:
    """Rules ``class_theta`` and ``outcome_theta`` (module docstring); members: (caseid, group)."""
    members = members.with_columns(pl.col("caseid").cast(pl.Int64))
    found = [pl.DataFrame(schema=_EMPTY)]
    classes = _read_csv(release / "classes.csv")
    if classes is not None and {"value", "class", "theta"} <= set(classes.columns):
        star = classes.filter(pl.col("value").str.strip_chars() == "*")
        thetas = star.select(
            pl.col("class").str.strip_chars().alias("name"), pl.col("theta").cast(pl.Float64, strict=False)
        ).drop_nulls()
        listed = classes.filter(pl.col("value").str.strip_chars() != "*").select(
            _key(pl.col("value")).alias("value"), pl.col("class").str.strip_chars().alias("name")
        )
        knowledge = _read_csv(release / "knowledge.csv")
        e = (
            knowledge
            if knowledge is not None
            else pl.DataFrame(schema={"drug_key": pl.String, "disease": pl.String, "weight": pl.String})
        )
        p = _class_probabilities(read, tables, e, listed)
        found.append(_over(members, p, thetas, "class_theta", tolerance))
    outcomes = _read_csv(release / "outcomes.csv")
    if outcomes is not None and {"outc_cod", "theta"} <= set(outcomes.columns):
        thetas = outcomes.select(_key(pl.col("outc_cod")).alias("name"), pl.col("theta").cast(pl.Float64))
        p = (
            read("outc", ["caseid", "outc_cod"])
            .select(pl.col("caseid").cast(pl.Int64), _key(pl.col("outc_cod")).alias("name"))
            .drop_nulls()
            .unique()
            .with_columns(pl.lit(1.0).alias("p"))
        )
        found.append(_over(members, p, thetas, "outcome_theta", tolerance))
    return pl.concat(found)


def release_class_rules(
    release: Path,
    read: TableReader,
    members: pl.DataFrame,
    *,
    k: int,
    tables: Sequence[str],
    tolerance: float,
    case_groups: bool,
    theta: bool,
    policy_roles: bool,
    demo: Callable[[], tuple[pl.DataFrame, pl.DataFrame | None]] | None = None,
    rows: TableReader | None = None,
) -> list[pl.DataFrame]:
    """The rules this module adds, as the verifier calls them (one hook in ``faers_anon.verify.verifier``).

    ``demo_fields`` runs for models whose groups are sets of cases and releases whose manifest
    declares column roles (written since issue 18); the θ rules for models that bound θ. ``demo``:
    :func:`released_demo` of the release, cached by the caller (default: read here). ``rows``: a
    reader of the tables with ``caseid`` as stored (the θ rules turn it into Int64 themselves, so
    it need not become text first; default ``read``).
    """
    found: list[pl.DataFrame] = []
    if case_groups and policy_roles:
        table, classes = demo() if demo is not None else released_demo(release, read)
        found.append(demo_field_violations(table, members, k, classes))
    if theta:
        found.append(class_violations(release, rows or read, members, tables=tables, tolerance=tolerance))
    return found
