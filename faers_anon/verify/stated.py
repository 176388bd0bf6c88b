"""What the agency states separately, against what the release says about itself (verify overrides).

A release names its own k, θ*, E and column policy; a forger who edits them edits the guarantee. The
verifier therefore takes them from the command line when given (``--k``, ``--thresholds``,
``--knowledge``, ``--policy``: files the agency publishes apart from the release), checks the release
against those, and names every difference as a ``stated`` violation:

* thresholds: a value whose θ differs, or that one side lists and the other does not;
* knowledge: (drug_key, disease) rows whose weight differs or that one side lacks;
* policy: the stated policy (JSON, the shape of the manifest's ``policy`` entry: ``columns`` table →
  column → keep/drop/restricted, ``rejects``) differs from the manifest's.

Rule ``policy`` holds with or without ``--policy``: every column published in ``parquet/`` or
``ascii/`` is one the policy keeps (``keep``) or generalizes (``qid``), a generalized age, sex or
weight column, ``quarter``, or (only when no policy is stated) a QID the manifest lists
(``columns.demo.qid``).
Rule ``unlisted``: every value of a sensitive attribute the release holds (its own INDI/REAC terms and
the E diseases its drugs reach) is listed in the thresholds, so each decision is stated, not inferred
from an absence. Values are compared by their canonical key upper(strip(collapse whitespace)).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.errors import InputError

__all__ = [
    "canonical",
    "canonical_column",
    "checked_inputs",
    "policy_violations",
    "read_csv",
    "stated_differences",
]

_SHOWN = 10
_ENGINE_QIDS = ("age_group", "age_min", "age_max", "sex", "wt_min", "wt_max")


def canonical(expr: pl.Expr) -> pl.Expr:
    """upper(strip(collapse whitespace(term))); empty → null."""
    key = expr.cast(pl.String).str.replace_all(r"\s+", " ").str.strip_chars().str.to_uppercase()
    return pl.when(key.str.len_chars() > 0).then(key)


def canonical_column(frame: pl.LazyFrame, column: str, alias: str) -> pl.LazyFrame:
    """``frame`` with ``alias`` = :func:`canonical` of ``column``, computed once per distinct value.

    Same values as ``frame.with_columns(canonical(pl.col(column)).alias(alias))`` (row order aside):
    the regexes run over the few thousand distinct terms, a hash join spreads them over the rows.
    """
    values = frame.select(pl.col(column).unique())
    keys = values.with_columns(canonical(pl.col(column)).alias(alias))
    return frame.join(keys, on=column, how="left", nulls_equal=True)


def read_csv(path: Path, numeric: str, text: Sequence[str]) -> pl.DataFrame:
    """A CSV with text columns ``text`` and a number in [0, 1] in ``numeric``; line = 1-based."""
    if not path.is_file():
        raise InputError("missing file", path=path)
    try:
        frame = pl.read_csv(path, infer_schema=False, row_index_name="line", row_index_offset=2)
    except pl.exceptions.PolarsError as exc:
        raise InputError(f"unreadable CSV ({str(exc).splitlines()[0]})", path=path) from exc
    for name in (*text, numeric):
        if name not in frame.columns:
            raise InputError("missing column", path=path, field=name)
    frame = frame.with_columns(pl.col(numeric).cast(pl.Float64, strict=False).alias("_num"))
    bad = frame.filter(pl.col("_num").is_null() | pl.col("_num").is_nan() | ~pl.col("_num").is_between(0, 1))
    if bad.height:
        raise InputError(
            f"{bad[numeric][0]!r} is not a number in [0, 1]",
            path=path,
            line=int(bad["line"][0]),
            field=numeric,
        )
    return frame.select(*(canonical(pl.col(c)).alias(c) for c in text), pl.col("_num").alias(numeric))


def _rows(details: Sequence[str], rule: str) -> pl.DataFrame:
    return pl.DataFrame(
        {"group": [None] * len(details), "rule": [rule] * len(details), "detail": list(details)},
        schema={"group": pl.Int64, "rule": pl.String, "detail": pl.String},
    )


def _diff(what: str, release: pl.DataFrame, stated: pl.DataFrame, keys: list[str], value: str) -> list[str]:
    both = release.unique(keys).join(
        stated.unique(keys), on=keys, how="full", coalesce=True, suffix="_stated"
    )
    differ = both.filter(pl.col(value).ne_missing(pl.col(f"{value}_stated"))).sort(keys)
    shown = [
        f"{what}: {' / '.join(str(r[k]) for k in keys)}: the release says {r[value]}, "
        f"the agency states {r[f'{value}_stated']}"
        for r in differ.head(_SHOWN).iter_rows(named=True)
    ]
    if differ.height > _SHOWN:
        shown.append(f"{what}: … and {differ.height - _SHOWN} more differences")
    return shown


def stated_differences(
    *,
    params: Mapping[str, Any],
    k: int | None,
    thresholds: tuple[pl.DataFrame, pl.DataFrame | None],
    knowledge: tuple[pl.DataFrame, pl.DataFrame | None],
) -> pl.DataFrame:
    """Rule ``stated``: each difference between the release's own k, θ*, E and the stated ones."""
    found = []
    if k is not None and params.get("k") is not None and params.get("k") != k:
        found.append(f"k: the release says {params.get('k')}, the agency states {k}")
    release_t, stated_t = thresholds
    if stated_t is not None:
        found += _diff("thresholds", release_t, stated_t, ["value"], "theta")
    release_e, stated_e = knowledge
    if stated_e is not None:
        found += _diff("knowledge", release_e, stated_e, ["drug_key", "value"], "weight")
    return _rows(found, "stated")


def _policy(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"unreadable policy JSON ({exc})", path=path) from exc
    if not isinstance(data, dict) or not isinstance(data.get("columns"), dict):
        raise InputError(
            "expected a JSON object with a 'columns' object (table → column → action)", path=path
        )
    return data


def _published(release: Path, table: str) -> list[str]:
    columns: list[str] = []
    parquet = release / "parquet" / f"{table}.parquet"
    if parquet.is_file():
        columns += pl.read_parquet_schema(parquet).keys()
    for path in (
        sorted((release / "ascii").glob(f"{table.upper()}*.txt")) if (release / "ascii").is_dir() else []
    ):
        with path.open(encoding="utf-8", errors="replace") as handle:
            columns += handle.readline().rstrip("\n").split("$")
    return list(dict.fromkeys(columns))


def policy_violations(release: Path, manifest: Mapping[str, Any], stated: Path | None) -> pl.DataFrame:
    """Rules ``stated`` (policy differences) and ``policy`` (columns published against it)."""
    own = manifest.get("policy") if isinstance(manifest.get("policy"), Mapping) else None
    found: list[tuple[str, str]] = []
    policy = own
    if stated is not None:
        policy = _policy(stated)
        for table in sorted(set((own or {}).get("columns", {})) | set(policy["columns"])):
            mine = ((own or {}).get("columns") or {}).get(table) or {}
            theirs = policy["columns"].get(table) or {}
            for column in sorted(set(mine) | set(theirs)):
                if mine.get(column) != theirs.get(column):
                    found.append(("stated", f"policy: {table}.{column}: the release says {mine.get(column)}, "
                                            f"the agency states {theirs.get(column)}"))  # fmt: skip
        if (own or {}).get("rejects") != policy.get("rejects"):
            found.append(("stated", f"policy: rejects: the release says {(own or {}).get('rejects')}, "
                                    f"the agency states {policy.get('rejects')}"))  # fmt: skip
    if policy is not None:
        columns = policy.get("columns") or {}
        # the release's own list of QID columns counts only when the agency states no policy
        qids = set(_ENGINE_QIDS)
        if stated is None:
            qids |= set(((manifest.get("columns") or {}).get("demo") or {}).get("qid") or [])
        for table, actions in sorted(columns.items()):
            allowed = {c for c, a in (actions or {}).items() if a in ("keep", "qid")} | {"quarter"}
            allowed |= qids if table == "demo" else set()
            extra = [c for c in _published(release, table) if c not in allowed]
            if extra:
                found.append(
                    ("policy", f"{table}: published column(s) {', '.join(extra)} the policy does not keep")
                )
    return pl.DataFrame(
        {"group": [None] * len(found), "rule": [r for r, _ in found], "detail": [d for _, d in found]},
        schema={"group": pl.Int64, "rule": pl.String, "detail": pl.String},
    )


def checked_inputs(
    release: Path,
    params: Mapping[str, Any],
    *,
    k: int | None,
    thresholds: Path | None,
    knowledge: Path | None,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """θ* and E to check against (the agency's when stated, else the release's) and rule ``stated``."""

    def theta_table(path: Path) -> pl.DataFrame:
        frame = read_csv(path, "theta", ["value"]).drop_nulls("value")
        return frame.group_by("value").agg(pl.col("theta").min())

    def e_table(path: Path) -> pl.DataFrame:
        return read_csv(path, "weight", ["drug_key", "disease"]).rename({"disease": "value"})

    own_t, own_e = theta_table(release / "thresholds.csv"), e_table(release / "knowledge.csv")
    stated_t = theta_table(thresholds) if thresholds is not None else None
    stated_e = e_table(knowledge) if knowledge is not None else None
    stated = stated_differences(params=params, k=k, thresholds=(own_t, stated_t), knowledge=(own_e, stated_e))
    return (
        stated_t if stated_t is not None else own_t,
        stated_e if stated_e is not None else own_e,
        stated,
    )
