"""A generated series of consecutive quarters with cross-quarter follow-ups (tests, benchmarks).

Source: issue 14 ("about 20 % of a quarter's reports follow up an earlier case"); quarters from
:func:`faers_anon.synthetic.make_quarter`.

Quarter i (seed ``seed + i``) is drawn on its own; then in every quarter after the first a share
``follow`` of its cases becomes a follow-up of a distinct random case of an earlier quarter: the
case takes that caseid, its versions are moved above the earlier case's latest version, and its
primaryids become caseid followed by the version (FAERS's form), in every table.

Two models of what a follow-up says (``followups``):

* ``unrelated`` (the stress case, and the tests' default): the later case keeps its own drawn patient,
  drugs and reactions, so a follow-up describes another patient under the earlier caseid: its sex
  agrees with the earlier version's about half the time, its age and weight never by design, its drugs
  and reactions by chance only.
* ``same-patient``: the follow-up is the same patient's report updated, calibrated on the 114
  consecutive version pairs of the 110 multi-version caseids of the real FAERS excerpts
  (``shared/data/faers_samples/_index/multi_version_cases.txt``; docs/series.md §6). There the later
  version had the earlier one's sex in 90.4 %, its age in 76.3 % (7 % an age added, 8 % dropped, the
  rest 1–4 years lower), its weight in 78.1 %, and 72 % of its drugs and 85 % of its reactions were in
  the version before. Here each follow-up report takes its case's earlier sex with probability 0.82,
  its weight 0.21 and its age 0.66 (0.20 an age added or dropped, else 1–4 years lower), and otherwise
  its own drawn value, which often agrees by chance (both missing); it carries the earlier drug rows
  (with their INDI and THER rows), reactions and outcomes, and adds each of its own drawn drugs (with
  its indications and therapy dates) with probability 0.35 and each own reaction with 0.15. Generated
  (20,000 cases a quarter, realistic shape): sex 89.8 %, age 78.4 %, weight 78.1 % the same; 74.6 %
  of the drugs and 86.3 % of the reactions already there (``tests/faers_anon/series/test_generate.py``
  compares with the excerpts).

Only those cases link to an earlier quarter. The generator derives a caseid from the case's first
receipt date (:mod:`faers_anon.synthetic`), so independently drawn quarters also share caseids by
accident, more often the larger the quarter: 2 % of a 100k quarter's cases, 9–13 % of a 400k one's
(which then held 29–33 % returning cases instead of 20 %, each accidental one an unrelated case with
other demographics under an earlier caseid). Such a case takes a fresh caseid above every caseid seen
so far, keeping its version; the quarter's DELETE list follows every moved caseid.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

__all__ = ["FOLLOWUPS", "quarter_labels", "make_series", "relink_reports"]

#: The follow-up models (module docstring).
FOLLOWUPS = ("unrelated", "same-patient")
_DEMO_KEPT = {"sex": 0.82, "wt": 0.21}  # kept from the version before with this probability (docstring)
_AGE_KEPT, _AGE_FLIPPED = 0.66, 0.20  # the rest: 1-4 years lower (real pairs: 63 -> 61, 68 -> 64)
_OWN_DRUG, _OWN_REAC = 0.35, 0.15  # each of the case's own drawn drugs / reactions added
_ITEMS = ("DRUG", "INDI", "THER", "REAC", "OUTC")
_SEQ = {"DRUG": "drug_seq", "INDI": "indi_drug_seq", "THER": "dsg_drug_seq"}


def quarter_labels(first: str, n: int) -> list[str]:
    """``n`` consecutive labels from ``first`` (``2021Q4``, 2 → ``2021Q4``, ``2022Q1``)."""
    start = int(first[:4]) * 4 + int(first[-1]) - 1
    return [f"{(start + i) // 4}Q{(start + i) % 4 + 1}" for i in range(n)]


def _relink(tables: dict[str, pl.DataFrame], seen: pl.DataFrame, follow: float, rng: np.random.Generator,
            before: dict[str, pl.DataFrame] | None = None) -> dict[str, pl.DataFrame]:  # fmt: skip
    """Make a share ``follow`` of the quarter's cases follow-ups of earlier cases (``seen``); with
    ``before`` (the earlier cases' latest versions: :func:`_latest_rows`) as the same patient's."""
    demo = tables["DEMO"]
    cases = demo.get_column("caseid").unique().sort()
    chosen = cases.filter(pl.Series(rng.random(cases.len()) < follow)).head(seen.height)
    target = seen.sample(n=chosen.len(), seed=int(rng.integers(2**31))) if chosen.len() else seen.head(0)
    moved = pl.concat([
        pl.DataFrame({"caseid": chosen, "new_caseid": target["caseid"], "offset": target["version"]}),
        _fresh(cases.filter(~cases.is_in(chosen.implode())), seen),
    ])  # fmt: skip
    if moved.is_empty():
        return tables
    keys = (
        demo.select("primaryid", "caseid", "caseversion")
        .join(moved, on="caseid")
        .with_columns((pl.col("caseversion").cast(pl.Int64) + pl.col("offset")).alias("new_version"))
        .with_columns(pl.col("new_version").cast(pl.Utf8))
        .with_columns(pl.concat_str("new_caseid", "new_version").alias("new_primaryid"))
        .select("primaryid", "new_primaryid", "new_caseid", "new_version")
    )  # fmt: skip
    tables = relink_reports(tables, keys)
    if before is not None and chosen.len():
        targets = moved.filter(pl.col("caseid").is_in(chosen.implode()))  # not the fresh caseids
        followed = keys.join(targets, on="new_caseid", how="semi")
        tables = _same_patient(tables, followed.get_column("new_primaryid"), before, rng)
    if "DELETE" in tables:
        renamed = moved.select("caseid", "new_caseid")
        tables["DELETE"] = (
            tables["DELETE"].join(renamed, on="caseid", how="left")
            .select(pl.coalesce("new_caseid", "caseid").alias("caseid"))
        )  # fmt: skip
    return tables


def _latest_rows(tables: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """The latest version of each case of a quarter: its DEMO row and its item rows (by caseid)."""
    demo = tables["DEMO"].with_columns(pl.col("caseversion").cast(pl.Int64).alias("_v"))
    latest = demo.sort("caseid", "_v", "primaryid").group_by("caseid", maintain_order=True).last().drop("_v")
    ids = latest.select("primaryid")
    items = {n: tables[n].join(ids, on="primaryid", how="semi") for n in _ITEMS if n in tables}
    return {"DEMO": latest, **items}


def _merged(before: dict[str, pl.DataFrame], quarter: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """``before`` with the quarter's latest versions in place of the versions they follow."""
    if not before:
        return quarter
    cases = quarter["DEMO"].select("caseid")
    return {n: pl.concat([before[n].join(cases, on="caseid", how="anti"), frame], how="vertical_relaxed")
            for n, frame in quarter.items()}  # fmt: skip


def _same_patient(tables: dict[str, pl.DataFrame], reports: pl.Series, before: dict[str, pl.DataFrame],
                  rng: np.random.Generator) -> dict[str, pl.DataFrame]:  # fmt: skip
    """The follow-up ``reports`` made the same patient's as their case's earlier latest version
    (module docstring: the rates)."""
    out, demo = dict(tables), tables["DEMO"]
    is_followup = pl.col("primaryid").is_in(reports.implode())
    mine = demo.filter(is_followup)
    out["DEMO"] = pl.concat([demo.filter(~is_followup), _demographics(mine, before["DEMO"], rng)])
    link = mine.select("primaryid", "caseid")  # each follow-up report and its case
    carried = {n: before[n].drop("primaryid").join(link, on="caseid").select(tables[n].columns)
               for n in _ITEMS if n in tables}  # fmt: skip
    own = {n: tables[n].filter(is_followup) for n in _ITEMS if n in tables}
    added = own["DRUG"].filter(pl.Series(rng.random(own["DRUG"].height) < _OWN_DRUG))
    top = carried["DRUG"].group_by("primaryid").agg(pl.col("drug_seq").cast(pl.Int64).max().alias("_top"))
    renumber = added.select("primaryid", "drug_seq").join(top, on="primaryid", how="left").with_columns(
        (pl.col("drug_seq").cast(pl.Int64) + pl.col("_top").fill_null(0)).cast(pl.Utf8).alias("_new")
    )  # an added drug's seq above the carried ones, with its INDI and THER rows
    for name, column in _SEQ.items():
        if name in own:
            seqs = renumber.select("primaryid", pl.col("drug_seq").alias(column), "_new")
            own[name] = own[name].join(seqs, on=["primaryid", column]).with_columns(
                pl.col("_new").alias(column)
            ).select(tables[name].columns)  # fmt: skip
    own["REAC"] = own["REAC"].filter(pl.Series(rng.random(own["REAC"].height) < _OWN_REAC))
    if "OUTC" in own:
        own["OUTC"] = own["OUTC"].join(carried["OUTC"], on=["primaryid", "outc_cod"], how="anti")
    for name in own:
        out[name] = pl.concat([tables[name].filter(~is_followup), carried[name], own[name]])
    return out


def _demographics(mine: pl.DataFrame, before: pl.DataFrame, rng: np.random.Generator) -> pl.DataFrame:
    """The follow-up reports ``mine`` with their case's earlier sex, age and weight, each kept, or
    changed as real follow-ups change them (module docstring)."""
    fields = ("sex", "age", "age_cod", "age_grp", "wt", "wt_cod")
    old = before.select("caseid", *[pl.col(c).alias(f"_{c}") for c in fields])
    frame = mine.join(old, on="caseid", how="left")
    draw = {c: pl.Series(rng.random(frame.height)) for c in ("sex", "wt", "age")}
    lower = pl.Series(rng.integers(1, 5, frame.height))  # a corrected age: 1-4 years lower
    known = pl.col("_age").is_not_null()
    lowered = (pl.col("_age").cast(pl.Float64, strict=False) - lower).clip(0).cast(pl.Int64).cast(pl.Utf8)

    def age_field(c: str) -> pl.Expr:
        flipped = pl.when(known).then(pl.lit(None, pl.Utf8)).otherwise(pl.col(c))  # added or dropped
        years = known & (pl.col("_age_cod") == "YR")
        corrected = pl.when(years).then(lowered if c == "age" else pl.col(f"_{c}"))
        return (
            pl.when(draw["age"] < _AGE_KEPT).then(pl.col(f"_{c}"))
            .when(draw["age"] < _AGE_KEPT + _AGE_FLIPPED).then(flipped)
            .otherwise(corrected.otherwise(pl.col(f"_{c}"))).alias(c)
        )  # fmt: skip

    return frame.with_columns(
        pl.when(draw["sex"] < _DEMO_KEPT["sex"]).then(pl.col("_sex")).otherwise(pl.col("sex")).alias("sex"),
        *[pl.when(draw["wt"] < _DEMO_KEPT["wt"]).then(pl.col(f"_{c}")).otherwise(pl.col(c)).alias(c)
          for c in ("wt", "wt_cod")],
        *[age_field(c) for c in ("age", "age_cod", "age_grp")],
    ).select(mine.columns)  # fmt: skip


def _fresh(others: pl.Series, seen: pl.DataFrame) -> pl.DataFrame:
    """The cases of ``others`` whose caseid an earlier quarter already holds, each with a fresh caseid
    above every caseid seen and every one of ``others`` (version offset 0)."""
    clash = others.filter(others.is_in(seen.get_column("caseid").implode())).sort()
    numbers = np.concatenate([seen.get_column("caseid").cast(pl.Int64), others.cast(pl.Int64)])
    top = int(numbers.max()) if numbers.size else 0
    fresh = pl.Series(np.arange(top + 1, top + 1 + clash.len(), dtype=np.int64)).cast(pl.Utf8)
    offset = pl.Series(np.zeros(clash.len(), dtype=np.int64))
    return pl.DataFrame({"caseid": clash, "new_caseid": fresh, "offset": offset})


def relink_reports(tables: dict[str, pl.DataFrame], keys: pl.DataFrame, /) -> dict[str, pl.DataFrame]:
    """Rewrite every table's ids by ``keys`` (primaryid → new_primaryid, new_caseid, new_version).

    Reports absent from ``keys`` keep their ids; DEMO's caseversion takes the new version.
    """
    keys = keys.select("primaryid", "new_primaryid", "new_caseid", "new_version")
    out = {}
    for name, frame in tables.items():
        if "primaryid" not in frame.columns:
            out[name] = frame
            continue
        fixed = frame.join(keys, on="primaryid", how="left").with_columns(
            pl.coalesce("new_primaryid", "primaryid").alias("primaryid"),
            pl.coalesce("new_caseid", "caseid").alias("caseid"),
        )
        if name == "DEMO":
            fixed = fixed.with_columns(pl.coalesce("new_version", "caseversion").alias("caseversion"))
        out[name] = fixed.select(frame.columns)
    return out


def make_series(
    n_cases: int, out: Path, /, *, quarters: int = 3, first: str = "2024Q1", follow: float = 0.2,
    seed: int = 0, shape: str = "small", followups: str = "unrelated",
) -> list[Path]:  # fmt: skip
    """Write ``quarters`` linked quarters under ``out/<label>/`` (FDA layout); return their folders.
    ``followups``: what a follow-up says (:data:`FOLLOWUPS`, module docstring)."""
    if followups not in FOLLOWUPS:
        raise ValueError(f"followups: one of {', '.join(FOLLOWUPS)}, not {followups!r}")
    from faers_anon.synthetic import make_quarter, write_quarter

    rng = np.random.default_rng(seed)
    seen = pl.DataFrame(schema={"caseid": pl.Utf8, "version": pl.Int64})
    folders = []
    before: dict[str, pl.DataFrame] = {}  # same-patient: the earlier cases' latest versions
    for i, label in enumerate(quarter_labels(first, quarters)):
        tables = make_quarter(n_cases, seed=seed + i, quarter=label, shape=shape, malformed=False)  # type: ignore[arg-type]
        if i:
            tables = _relink(tables, seen, follow, rng, before if followups == "same-patient" else None)
        if followups == "same-patient" and i < quarters - 1:
            before = _merged(before, _latest_rows(tables))
        folder = out / label
        write_quarter(tables, folder, quarter=label)
        latest = (
            tables["DEMO"].group_by("caseid").agg(pl.col("caseversion").cast(pl.Int64).max().alias("version"))
        )
        seen = pl.concat([seen, latest]).group_by("caseid").agg(pl.col("version").max()).sort("caseid")
        folders.append(folder)
    return folders
