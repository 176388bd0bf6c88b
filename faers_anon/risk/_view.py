"""The released case view and item sets of SPEC §11, read from a release or an ingested folder.

* **Case view**: one row per case, its latest released version (highest ``caseversion``, then latest
  ``fda_dt``, then highest ``primaryid``; nulls rank lowest), with every DEMO column except the ids
  (``primaryid``, ``caseid``: pseudonyms, never attacker knowledge) and ``is_latest`` (a derived flag,
  true for every row of the view), plus ``reports``: the case's number of DEMO rows (every report of a
  case is a DEMO row under one case pseudonym, so anyone counts its versions: a released field, issue 18
  item 1), and ``outc_cod``: the case's OUTC codes as a set, written as the sorted, comma-joined text
  so that a set compares as one value. The raw side (an ingested folder) counts its reports the same
  way: the raw case's rows of ``reports.parquet``; journalist risk compares the two counts for equality
  (:mod:`._population`, "any other field"). A case whose oldest superseded reports the release left out
  (docs/formats.md "The number of a case's reports") has fewer released rows than raw ones and does not
  cover itself, so equality counts fewer raw cases than a reader who knew which counts were top-coded:
  the journalist figure is over-, never under-stated; a ledgered release's republished reports can
  give counts the raw quarter never has, and the field is then not measured (:mod:`._codes`).
* **Item sets**: ``drugs`` are the canonical values (upper case, whitespace collapsed) of every drug
  column present among ``drug_key``, ``drugname`` and ``prod_ai`` (an attacker may match a drug on
  any of them, and a verbatim brand name is often rarer than its key); ``reactions`` are the canonical
  PTs. Items, like OUTC codes, are the union over the case's released reports (the super-record of
  SPEC §4): an attacker matching the target may hit any version.

Items are encoded as integers (``item``) so that the class computations group on numbers; the
same string gets the same code in the release and in the raw data (:func:`encode_items`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from faers_anon.anonymize.partition import QID_COLUMNS
from faers_anon.errors import InputError
from knowledge.values import value_key_expr

__all__ = [
    "terms", "CaseData", "ID_COLUMNS", "QIDS", "DRUG_COLUMNS", "REPORTS", "read_cases", "encode_items",
    "table",
]  # fmt: skip

ID_COLUMNS: tuple[str, ...] = ("primaryid", "caseid")
QIDS: tuple[str, ...] = QID_COLUMNS  # the released QID tuple (faers_anon.anonymize.partition)
DRUG_COLUMNS: tuple[str, ...] = ("drug_key", "drugname", "prod_ai")
_NOT_FIELDS = frozenset({*ID_COLUMNS, "is_latest", "source_file", "line"})
_ORDER = ("caseversion", "fda_dt", "primaryid")
REPORTS = "reports"  # the case's number of DEMO rows (module docstring)


@dataclass(frozen=True, kw_only=True, slots=True)
class CaseData:
    """What the attacker measures run on, for one release or raw folder.

    Attributes:
        view: one row per ``caseid`` (Int64) with the case-view fields (module docstring).
        fields: the view's field names, in DEMO order, then ``reports``, then ``outc_cod``.
        drugs, reactions: ``caseid``, ``term`` (canonical text), one row per distinct (case, term).
        reports: every DEMO row (``primaryid``, ``caseid`` and the fields), for linkage.
        drug_columns: the drug columns the items were read from.
    """

    view: pl.DataFrame
    fields: tuple[str, ...]
    drugs: pl.DataFrame
    reactions: pl.DataFrame
    reports: pl.DataFrame
    drug_columns: tuple[str, ...] = DRUG_COLUMNS


def table(folder: Path, name: str) -> pl.LazyFrame | None:
    """``parquet/<name>.parquet`` of a release or ``<name>.parquet`` of an ingested folder; None if absent."""
    for path in (folder / "parquet" / f"{name}.parquet", folder / f"{name}.parquet"):
        if path.is_file():
            return pl.scan_parquet(path)
    return None


def _demo(folder: Path) -> pl.LazyFrame:
    frame = table(folder, "demo")
    if frame is None:
        frame = table(folder, "reports")  # an ingested folder
    if frame is None:
        raise InputError("neither parquet/demo.parquet (release) nor reports.parquet (ingested)", path=folder)
    names = frame.collect_schema().names()
    for column in ("primaryid", "caseid"):
        if column not in names:
            raise InputError("DEMO table has no id column", path=folder, field=column)
    return frame


def terms(folder: Path, name: str, columns: tuple[str, ...]) -> pl.DataFrame:
    """(caseid, term): canonical values of ``columns`` of table ``name``, distinct, sorted by (caseid,
    term); empty when absent."""
    frame = table(folder, name)
    empty = pl.DataFrame(schema={"caseid": pl.Int64, "term": pl.String})
    if frame is None:
        return empty
    present = [c for c in columns if c in frame.collect_schema().names()]
    if not present:
        return empty
    parts = [frame.select(pl.col("caseid").cast(pl.Int64), pl.col(c).alias("verbatim")) for c in present]
    pairs = pl.concat(parts).drop_nulls().collect()
    # the canonical key is a regex per string: computed once per distinct spelling; spellings and
    # keys are then numbered (Enums) so that the rows are mapped and made distinct as integers
    spellings = pairs.get_column("verbatim").unique()
    canonical = spellings.to_frame("verbatim").select(value_key_expr(pl.col("verbatim"))).to_series()
    names = canonical.drop_nulls().unique().sort()  # key codes in text order: rows come out sorted
    to_key = canonical.cast(pl.Enum(names)).to_physical()  # spelling i → its key's code (null: no key)
    key = to_key.gather(pairs.get_column("verbatim").cast(pl.Enum(spellings)).to_physical())
    # distinct (case, key): the case's dense rank and the key packed into one UInt64 (one hashed column)
    ids = pairs.get_column("caseid")
    width = max(names.len(), 1)
    packed = (ids.rank("dense").cast(pl.UInt64) * width + key.cast(pl.UInt64)).drop_nulls().unique().sort()
    cases = ids.unique().sort().gather(packed // width - 1)
    return pl.DataFrame([cases.alias("caseid"), names.gather(packed % width).alias("term")])


def _outcome_sets(outc: pl.DataFrame) -> pl.DataFrame:
    """``caseid``, ``outc_cod``: each case's codes, sorted and comma-joined.

    The codes are few (7 in FAERS): each case's set is made a bit mask (a sum of distinct bits) and
    only the distinct masks are written out as text (one column per code, not one sort per case).
    """
    names = outc.get_column("term").unique().sort()
    if names.len() == 0 or names.len() > 63:
        return outc.group_by("caseid").agg(pl.col("term").sort().str.join(",").alias("outc_cod"))
    bits = {name: 1 << i for i, name in enumerate(names)}
    bit = pl.col("term").replace_strict(bits, return_dtype=pl.UInt64)
    masks = outc.unique().group_by("caseid").agg(bit.sum().alias("mask"))
    distinct = masks.select(pl.col("mask").unique())
    present = [pl.when((pl.col("mask") & bits[name]) > 0).then(pl.lit(name)) for name in names]
    texts = distinct.with_columns(pl.concat_str(present, separator=",", ignore_nulls=True).alias("outc_cod"))
    return masks.join(texts, on="mask").select("caseid", "outc_cod")


def _latest(rows: pl.DataFrame, order: list[str]) -> pl.DataFrame:
    """Each case's latest row (the largest ``order`` keys, nulls lowest), in ``caseid`` order.

    The sort keys alone are sorted by (caseid, order) and the last row of each case's run is taken;
    the chosen rows are then filtered out of ``rows`` when they come in row order (rows sorted by
    case: a filter copies far less than a gather), else gathered.
    """
    keys = rows.select("caseid", *order).with_row_index("_row").sort(["caseid", *order], nulls_last=False)
    case = keys.get_column("caseid")
    last = case.ne_missing(case.shift(-1)).to_numpy().copy()  # a case's last row (nulls: one case)
    last[-1:] = True
    chosen = keys.get_column("_row").to_numpy()[last]
    if len(chosen) > 1 and not bool(np.all(chosen[1:] > chosen[:-1])):
        return rows[chosen]
    mask = np.zeros(rows.height, bool)
    mask[chosen] = True
    return rows.filter(pl.Series(mask))


def read_cases(
    folder: Path, *, keep: tuple[str, ...] | None = None, drug_columns: tuple[str, ...] = DRUG_COLUMNS
) -> CaseData:
    """The case view, items and report rows of a release (or of an ingested folder for ``--raw``).

    Args:
        folder: a release folder (``parquet/``) or an ingested folder (``reports.parquet``).
        keep: DEMO fields to keep (None: every field); an ingested folder's extra columns (raw ages,
            countries) are dropped this way so that only fields the release shares are compared.
        drug_columns: the drug columns items are read from (the raw data's items are read from the
            columns the release publishes, so that both lists hold the same kind of names).

    Raises:
        InputError: no DEMO table, or one without ids.
    """
    demo = _demo(folder)
    names = demo.collect_schema().names()
    fields = [c for c in names if c not in _NOT_FIELDS and (keep is None or c in keep)]
    order = [c for c in _ORDER if c in names]
    hidden = [c for c in order if c not in fields and c != "primaryid"]  # sort keys not in the view
    rows = demo.select(pl.col("primaryid", "caseid").cast(pl.Int64), *fields, *hidden).collect()
    latest = _latest(rows, order).drop("primaryid", *hidden)
    reports = rows.drop(hidden)
    if (keep is None or REPORTS in keep) and REPORTS not in names:
        counts = rows.group_by("caseid").agg(pl.len().cast(pl.Int64).alias(REPORTS))
        latest = latest.join(counts, on="caseid", how="left", maintain_order="left")
        fields.append(REPORTS)
    if keep is None or "outc_cod" in keep:
        latest = latest.join(_outcome_sets(terms(folder, "outc", ("outc_cod",))), on="caseid", how="left")
        fields.append("outc_cod")
    drug = table(folder, "drug")
    present = () if drug is None else tuple(c for c in drug_columns if c in drug.collect_schema().names())
    return CaseData(
        view=latest if latest.get_column("caseid").is_sorted() else latest.sort("caseid"),
        fields=tuple(fields),
        drugs=terms(folder, "drug", present),
        reactions=terms(folder, "reac", ("pt",)),
        reports=reports,
        drug_columns=present,
    )


def encode_items(*frames: pl.DataFrame) -> list[pl.DataFrame]:
    """Replace ``term`` by an integer ``item`` (UInt32), one code per distinct term over all ``frames``."""
    # each frame's distinct terms first (no copy of every row's text into one column)
    names = pl.concat([f.get_column("term").drop_nulls().unique() for f in frames]).unique().sort()
    term = pl.Enum(names)  # item = the term's rank among the sorted distinct terms, by a hash lookup
    return [
        f.drop_nulls("term").select(
            "caseid", pl.col("term").cast(term).to_physical().cast(pl.UInt32).alias("item")
        )
        for f in frames
    ]
