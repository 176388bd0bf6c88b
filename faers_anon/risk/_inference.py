"""Attribute inference on a release (SPEC §5, §11): how confidently a group reveals a value.

For a QID-group q (the cases sharing one released tuple of ``age_group, age_min, age_max, sex,
wt_min, wt_max``) and a value s: conf(q → s, E) = Σ_{c ∈ q} P(s | c) / |q|, with P(s | c) = 1 when s
is among the case's indications, reactions or OUTC codes, else max over the case's drugs d (every
released drug column: ``drug_key``, ``drugname``, ``prod_ai``) of w(d, s) from ``knowledge.csv``.
For a value class C (a set of values, e.g. all "high" values of a class file):
P(C | c) = max_{s ∈ C} P(s | c) and conf(q → C) = Σ_c P(C | c) / |q|. OUTC codes (DE, LT, HO, DS,
CA, RI, OT) are values like reactions.

Thresholds: θ_s from ``thresholds.csv`` for single values (a value it does not list has θ = 1, so
it cannot exceed); a class's θ from its ``*,class,theta`` row in the class file, else the release's
uniform θ (manifest ``parameters.theta``); OUTC codes take their θ from the release's
``outcomes.csv`` when it ships one, else the release's θ. The class file defaults to the release's
own ``classes.csv`` (the classes it was bounded on), else the bundled level-wise classes. A (group,
value) pair is *above θ* when conf > θ + 1e-9.

The sums of values and classes are one pass of :func:`._sums.group_key_sums` (each value counts for
itself and for its classes), each σ summed in case-id order within its group: a fixed order (the
former max and sum group-bys summed in hash order, which changed with the thread count).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from faers_anon.errors import InputError
from faers_anon.risk._sums import group_key_sums
from faers_anon.risk._view import CaseData, terms
from knowledge.values import value_key_expr

__all__ = ["case_probabilities", "coded_probabilities", "inference", "read_classes"]

_TOLERANCE = 1e-9


def _csv(path: Path, columns: tuple[str, ...]) -> pl.DataFrame | None:
    if not path.is_file():
        return None
    try:
        frame = pl.read_csv(path, infer_schema=False, comment_prefix="#")
    except pl.exceptions.PolarsError as exc:
        raise InputError(f"unreadable CSV ({str(exc).splitlines()[0]})", path=path) from exc
    for column in columns:
        if column not in frame.columns:
            raise InputError("missing column", path=path, field=column)
    return frame


def read_classes(path: Path) -> tuple[pl.DataFrame, dict[str, float]]:
    """A class file (``value,class[,theta]``; the level-wise θ file format): members and class θs.

    Returns:
        ``value`` (canonical), ``class`` for each listed value; and class → θ from ``*`` rows.
    """
    frame = _csv(path, ("value", "class"))
    if frame is None:
        raise InputError("missing class file", path=path)
    frame = frame.with_columns(pl.col("class").str.strip_chars())
    star = frame.filter(pl.col("value").str.strip_chars() == "*")
    thetas: dict[str, float] = {}
    if "theta" in frame.columns:
        for name, theta in star.select("class", pl.col("theta").cast(pl.Float64, strict=False)).iter_rows():
            if name and theta is not None:
                thetas[name] = theta
    members = frame.filter(
        (pl.col("value").str.strip_chars() != "*") & pl.col("class").is_not_null() & (pl.col("class") != "")
    ).select(value_key_expr(pl.col("value")).alias("value"), "class")
    return members.drop_nulls(), thetas


def coded_probabilities(release: Path, data: CaseData) -> tuple[pl.DataFrame, pl.DataFrame]:
    """P(s | c) > 0 as integers: ``caseid``, ``v`` (the value's code), ``p``; and ``v``, ``value``.

    Values are numbered once (an Enum of the distinct texts) so that the (case, value) and (group,
    value) group-bys run on integers; texts come back only for the answer.
    """
    rows, values = _probability_rows(release, data)
    return _max_per_case_value(rows, values.height), values


def _probability_rows(release: Path, data: CaseData) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``caseid``, ``v``, ``p`` before the per-case maximum (a case may hold a value through several
    drugs, or as its own term and through a drug); and the codes ``v``, ``value``."""
    own = pl.concat([data.reactions, terms(release, "indi", ("indi_pt",))])
    knowledge = _csv(release / "knowledge.csv", ("drug_key", "disease", "weight"))
    e = pl.DataFrame(schema={"term": pl.String, "value": pl.String, "p": pl.Float64})
    if knowledge is not None and knowledge.height:
        e = knowledge.select(
            value_key_expr(pl.col("drug_key")).alias("term"),
            value_key_expr(pl.col("disease")).alias("value"),
            pl.col("weight").cast(pl.Float64, strict=False).alias("p"),
        ).drop_nulls()
    names = pl.concat([own.get_column("term"), e.get_column("value")]).unique().sort()
    code = pl.Enum(names)
    values = pl.DataFrame({"value": names}).with_columns(pl.col("value").cast(code).to_physical().alias("v"))
    parts = [own.select("caseid", pl.col("term").cast(code).to_physical().alias("v"), pl.lit(1.0).alias("p"))]
    if e.height:
        coded = e.select("term", pl.col("value").cast(code).to_physical().alias("v"), "p")
        parts.append(data.drugs.join(coded, on="term").select("caseid", "v", "p"))
    return pl.concat(parts), values.select("v", "value")


def _max_per_case_value(rows: pl.DataFrame, width: int) -> pl.DataFrame:
    """``caseid``, ``v``, ``p``: the largest p per (case, value).

    Non-negative case ids small enough are packed with the value code into one Int64 key
    (caseid · width + v; one hashed column instead of two), else grouped on both.
    """
    ids = rows.get_column("caseid")
    low, high = ids.min(), ids.max()
    if rows.height == 0 or low is None or int(low) < 0 or (int(high) + 1) * max(width, 1) >= 1 << 62:  # type: ignore[arg-type]
        return rows.group_by("caseid", "v").agg(pl.col("p").max())
    key = (pl.col("caseid") * max(width, 1) + pl.col("v").cast(pl.Int64)).alias("_key")
    best = rows.group_by(key).agg(pl.col("p").max())
    v_type = rows.schema["v"]
    return best.select(
        (pl.col("_key") // max(width, 1)).alias("caseid"),
        (pl.col("_key") % max(width, 1)).cast(v_type).alias("v"),
        "p",
    )


def case_probabilities(release: Path, data: CaseData) -> pl.DataFrame:
    """``caseid``, ``value``, ``p`` = P(s | c) > 0 for every case and value (module docstring)."""
    p, values = coded_probabilities(release, data)
    return p.join(values, on="v").select("caseid", "value", "p")


def _summary(conf: pl.DataFrame, name: str, names: pl.DataFrame | None = None) -> dict[str, Any]:
    """max conf (and where), and how many (group, value) pairs and groups exceed θ.

    ``names``: when ``conf`` holds codes ``v`` instead of ``name``, their texts (``v``, ``name``);
    ties of the largest conf go to the first text in order.
    """
    if conf.height == 0:
        return {"max_conf": 0.0, name: None, "pairs_above_theta": 0, "groups_above_theta": 0}
    best = conf.filter(pl.col("conf") == pl.col("conf").max())
    if names is not None:
        best = best.join(names, on="v")
    top = best.sort(name).row(0, named=True)
    above = conf.filter(pl.col("conf") > pl.col("theta") + _TOLERANCE)
    return {
        "max_conf": top["conf"],
        name: top[name],
        "theta_there": top["theta"],
        "pairs_above_theta": above.height,
        "groups_above_theta": above.select(pl.col("group").n_unique()).item(),
    }


def _conf(members: pl.DataFrame, p: pl.DataFrame, key: str) -> pl.DataFrame:
    """``group``, ``key``, ``sigma`` = Σ_{c ∈ group} P(key | c), ``cases`` = |group|, conf = sigma / cases.

    An integer ``key`` (value codes) is packed with the group into one UInt64 (group · width + key)
    so that the sum groups on one column; other keys (class names, codes) group on both.
    """
    sizes = members.group_by("group").agg(pl.len().alias("cases"))
    rows = members.join(p, on="caseid")
    top = (
        rows.select(pl.col("group").max().alias("g"), pl.col(key).max().alias("k")).row(0)
        if rows.height
        else None
    )
    if top is not None and rows.schema[key].is_integer() and (int(top[0]) + 1) * (int(top[1]) + 1) < 1 << 63:
        width = int(top[1]) + 1
        packed = (pl.col("group").cast(pl.UInt64) * width + pl.col(key).cast(pl.UInt64)).alias("_key")
        sums = (
            rows.group_by(packed)
            .agg(pl.col("p").sum().alias("sigma"))
            .select(
                (pl.col("_key") // width).cast(rows.schema["group"]).alias("group"),
                (pl.col("_key") % width).cast(rows.schema[key]).alias(key),
                "sigma",
            )
        )
    else:
        sums = rows.group_by("group", key).agg(pl.col("p").sum().alias("sigma"))
    return sums.join(sizes, on="group").with_columns((pl.col("sigma") / pl.col("cases")).alias("conf"))


def _group_conf(
    members: pl.DataFrame, rows: pl.DataFrame, keys: tuple[np.ndarray, np.ndarray]
) -> pl.DataFrame:
    """``group``, ``key``, ``sigma``, ``cases``, ``conf``: sigma(g, key) = Σ_{c ∈ g} max of the case's
    p over the rows whose value counts for the key (:func:`._sums.group_key_sums`, the CSR map
    ``keys``), conf = sigma / |g|."""
    sizes = members.group_by("group").agg(pl.len().alias("cases"))
    group, key, sigma = group_key_sums(
        (members.get_column("caseid").to_numpy(), members.get_column("group").to_numpy()),
        (
            rows.get_column("caseid").to_numpy(),
            rows.get_column("v").to_numpy(),
            rows.get_column("p").to_numpy(),
        ),
        keys,
    )
    sums = pl.DataFrame(
        [
            pl.Series("group", group).cast(members.schema["group"]),
            pl.Series("key", key, pl.Int64),
            pl.Series("sigma", sigma, pl.Float64),
        ]
    )
    return sums.join(sizes, on="group").with_columns((pl.col("sigma") / pl.col("cases")).alias("conf"))


def _key_map(
    width: int, members_of: pl.DataFrame | None, names: pl.DataFrame
) -> tuple[np.ndarray, np.ndarray, pl.Series]:
    """The CSR map of :func:`._sums.group_key_sums`: value code v counts for key v (the value itself)
    and for key ``width`` + i of each class i it belongs to; and the ``class`` names by i."""
    in_class = pl.DataFrame(schema={"v": pl.Int64, "class": pl.String})
    if members_of is not None:
        in_class = names.join(members_of, on="value").select(pl.col("v").cast(pl.Int64), "class").unique()
    classes = in_class.get_column("class").unique().sort()
    numbered = in_class.join(classes.to_frame().with_row_index("i"), on="class").select(
        "v", (pl.col("i").cast(pl.Int64) + width).alias("key")
    )
    own = pl.DataFrame({"v": np.arange(width, dtype=np.int64), "key": np.arange(width, dtype=np.int64)})
    pairs = pl.concat([own, numbered]).sort("v", "key")
    counts = np.bincount(pairs.get_column("v").to_numpy(), minlength=width)
    starts = np.concatenate([[0], np.cumsum(counts[:width])]).astype(np.int64)
    return starts, pairs.get_column("key").to_numpy().astype(np.int64), classes


def inference(
    release: Path,
    data: CaseData,
    *,
    qids: list[str],
    theta: float,
    classes: tuple[pl.DataFrame, dict[str, float]] | None,
) -> dict[str, Any]:
    """The ``inference`` section of risk.json: per single value, per value class, per OUTC code."""
    # a group's id: the row of its first case (one window over the QIDs, missing equal to missing)
    group = pl.col("_row").first().over(qids).alias("group")
    members = data.view.with_row_index("_row").select("caseid", group)
    rows, names = _probability_rows(release, data)
    thresholds = _csv(release / "thresholds.csv", ("value", "theta"))
    thetas = (
        thresholds.select(value_key_expr(pl.col("value")).alias("value"), pl.col("theta").cast(pl.Float64))
        .group_by("value")
        .agg(pl.col("theta").min())
        if thresholds is not None
        else pl.DataFrame(schema={"value": pl.String, "theta": pl.Float64})
    )
    coded = names.join(thetas, on="value").select("v", "theta")
    starts, key_of, class_names = _key_map(names.height, None if classes is None else classes[0], names)
    conf = _group_conf(members, rows, (starts, key_of))
    values = (
        conf.filter(pl.col("key") < names.height)
        .with_columns(pl.col("key").cast(names.schema["v"]).alias("v"))
        .join(coded, on="v", how="left")
        .with_columns(pl.col("theta").fill_null(1.0))
    )
    protected = values.join(coded.filter(pl.col("theta") < 1.0), on="v", how="semi")
    result: dict[str, Any] = {
        "groups": members.get_column("group").n_unique(),
        "values": _summary(values, "value", names),
        "protected_values": _summary(protected, "value", names),
    }
    if classes is not None:
        numbered = class_names.to_frame().with_row_index("key")
        conf = conf.join(
            numbered.with_columns(pl.col("key").cast(pl.Int64) + names.height), on="key"
        ).with_columns(
            pl.col("class").replace_strict(classes[1], default=theta, return_dtype=pl.Float64).alias("theta")
        )
        # a class whose θ is 1 (e.g. "non-sensitive") bounds nothing: left out
        result["classes"] = _summary(conf.filter(pl.col("theta") < 1.0), "class")
    codes = (
        terms(release, "outc", ("outc_cod",)).rename({"term": "code"}).with_columns(pl.lit(1.0).alias("p"))
    )
    bounds = _csv(release / "outcomes.csv", ("outc_cod", "theta"))  # θ per code, when the release ships it
    per_code = (
        {}
        if bounds is None
        else dict(bounds.select("outc_cod", pl.col("theta").cast(pl.Float64)).iter_rows())
    )
    conf = _conf(members, codes, "code").with_columns(
        pl.col("code").replace_strict(per_code, default=theta, return_dtype=pl.Float64).alias("theta")
    )
    result["outcomes"] = _summary(conf, "code")
    return result
