"""The folder a ledgered release is made from, held in memory until its plan passes (issue 14 item 7).

Source: docs/series.md §6 ("The series step's cost"). A ledgered release is made from the quarter's
ingested tables without the withheld cases' rows, with the republished cases' stored rows
(:mod:`.store`) and the pending cases offered again (:mod:`.pending`): the *composition*. It mines its
own E, P(s | c) and θ* (SPEC §5), which the series step checks every planned unit against
(:func:`faers_anon.series.step.prepare`); a unit over θ* there is withheld and the plan made again
until one passes. :func:`mine` gives its cases, E and OUTC codes alone (every plan is checked with
them before P(s | c) and θ* are computed); :func:`release_inputs` completes them.

Each attempt's composition is a set of lazy frames over the quarter's files and the added rows
(:class:`Composition`); :func:`release_inputs` computes E, P(s | c) and θ* from them exactly as the anonymizer
computes them from a folder (:mod:`faers_anon.anonymize.inputs`: E mined from INDI × DRUG or matched from the
user's table, the published drug names, the value classes and OUTC codes; a test compares the two on a written
folder), and the folder is written once, for the plan that passes (:meth:`Composition.write`). Before, each
attempt wrote every table and read it back: 2.2 s of CPU an attempt on a 100k quarter, three attempts a
quarter from quarter 3 on.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import polars as pl

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.inputs import sensitive_thresholds, with_drug_names, with_earlier
from faers_anon.anonymize.thresholds import Thresholds
from faers_anon.anonymize.value_classes import read_classes
from faers_anon.io.column_policy import load_policy
from faers_anon.io.outputs import write_table
from faers_anon.series.exposed import exposed_probabilities
from knowledge import (
    E_SCHEMA,
    load_table,
    match_table,
    mine_from_indications,
    vocabulary_of_cases,
    with_combinations,
)
from knowledge.drug_names import drug_key_expr
from knowledge.mining import indication_rows, mine_from_links
from knowledge.values import value_key_expr

__all__ = [
    "Composition",
    "Mined",
    "Miner",
    "ReleaseInputs",
    "composition_probabilities",
    "left_out",
    "mine",
    "release_inputs",
    "without_links",
]

log = logging.getLogger(__name__)

_DRUG_NAMES = ("drugname", "prod_ai")
_READ = ("cases", "outc")  # the added tables :func:`_read` reads


@dataclass(frozen=True, slots=True)
class Composition:
    """The quarter's ingested folder without the ``withheld`` cases, with the ``added`` rows per table.

    Attributes:
        ingested: the quarter's ingested folder; withheld: raw caseids whose rows are left out;
        added: table name → rows added (the republished cases' stored rows, the offered pending
        ones), cast to the table's schema when read; held: table name → the quarter's rows of that
        table already read (its file's rows, read in place of the file: the step holds the quarter's
        super-records, which each re-plan's :func:`mine` read again from the file, 0.2 CPU-s a read at
        the 400k quarter 4).
    """

    ingested: Path
    withheld: pl.Series
    added: dict[str, pl.DataFrame] = field(default_factory=dict)
    links: pl.DataFrame | None = None
    held: dict[str, pl.DataFrame] = field(default_factory=dict)

    def table(self, name: str) -> pl.LazyFrame:
        """One table of the composition (a table with a ``caseid`` column): the quarter's rows, then
        the added ones, less the withheld cases' rows (and for ``indi``, the rows of the ``links``
        left out: :func:`without_links`)."""
        held = self.held.get(name)
        rows = pl.scan_parquet(self.ingested / f"{name}.parquet") if held is None else held.lazy()
        extra = self.extra(name)
        if extra is not None:
            rows = pl.concat([rows, extra])
        rows = rows.filter(~pl.col("caseid").is_in(self.withheld.implode()))
        if name == "indi" and self.links is not None and self.links.height:
            rows = left_out(rows, self.table("drug"), self.links, keep=True)
        return rows

    def extra(self, name: str) -> pl.LazyFrame | None:
        """The ``added`` rows of one table cast to the quarter's schema (None: none)."""
        extra = self.added.get(name)
        if extra is None or not extra.height:
            return None
        schema = pl.read_parquet_schema(self.ingested / f"{name}.parquet")
        return extra.lazy().select(list(schema)).cast(schema)  # type: ignore[arg-type]

    def write(self, out: Path, *, cases: pl.DataFrame | None = None) -> Path:
        """The composition as an ingested folder ``out`` (0700): each table with a ``caseid`` composed,
        every other file and folder copied. ``cases``: its super-records when read (:func:`mine`),
        written as they are, not read again.

        Each composed table is collected and written by :func:`faers_anon.io.outputs.write_table`, the
        ingest's writer (Arrow's encoder, LZ4 pages, no statistics): the same rows in the same order as
        polars' streaming writer wrote, at about half its CPU (the 400k quarter 4's composition: 6.9 → 3.6
        CPU-s in the step, 101 → 92 MB; docs/series.md §6, fourteenth session), the same bytes however polars
        chunked the rows, so INDI with links left out (:func:`left_out`, whose joins lay rows out as the
        threads ran) is the same file from run to run, as the ledger's store needs (it records the SHA-256 of
        the files copied from this folder). One table at a time is held (DRUG, the largest, ~0.3 GB at that
        quarter: the step's peak, 4.7 GB, is earlier and did not move)."""
        out.mkdir(mode=0o700)
        for path in self.ingested.iterdir():
            target = out / path.name
            if path.is_dir():
                shutil.copytree(path, target)
            elif path.name == "cases.parquet" and cases is not None:
                write_table(cases, target)
            elif path.suffix == ".parquet" and "caseid" in pl.read_parquet_schema(path):
                write_table(self.table(path.stem).collect(), target)
            else:
                shutil.copy2(path, target)
        return out


def without_links(composition: Composition, links: pl.DataFrame) -> Composition:
    """The composition with the INDI rows of the (``drug_key``, ``disease``) ``links`` left out
    (:func:`left_out`; :mod:`faers_anon.series.raised`: a weight this release would raise)."""
    return replace(composition, links=links.select("drug_key", "disease").unique())


def left_out(
    indi: pl.LazyFrame, drug: pl.LazyFrame, links: pl.DataFrame, *, keep: bool = False
) -> pl.LazyFrame:
    """The INDI rows that link a drug to an indication of ``links`` as E's mining counts them
    (:func:`knowledge.mine_from_indications`: INDI ⋈ DRUG on primaryid and indi_drug_seq = drug_seq,
    suspect roles PS/SS, the drug's ``drug_key`` and the INDI_PT's canonical key); ``keep``: the
    other rows instead. Without them that (drug, disease) pair has no case in the release's E."""
    roles = pl.col("role_cod").cast(pl.Utf8).str.strip_chars().str.to_uppercase()
    names = drug.collect_schema().names()
    key = pl.col("drug_key") if "drug_key" in names else drug_key_expr(pl.col("prod_ai"), pl.col("drugname"))
    suspects = drug.filter(roles.is_in(["PS", "SS"])).select(
        pl.col("primaryid").cast(pl.Int64).alias("_pid"), pl.col("drug_seq").cast(pl.Int64).alias("_seq"),
        key.cast(pl.Utf8).alias("drug_key"),
    )  # fmt: skip
    marked = (
        indi.with_row_index("_row").with_columns(
            pl.col("primaryid").cast(pl.Int64).alias("_pid"),
            pl.col("indi_drug_seq").cast(pl.Int64).alias("_seq"),
            value_key_expr(pl.col("indi_pt").cast(pl.Utf8)).alias("disease"),
        )  # fmt: skip
    )
    hits = (
        marked.select("_row", "_pid", "_seq", "disease")
        .join(suspects, on=["_pid", "_seq"])
        .join(links.lazy().select("drug_key", "disease"), on=["drug_key", "disease"], how="semi")
        .select("_row")
        .unique()
    )
    chosen = marked.join(hits, on="_row", how="anti" if keep else "semi")
    return chosen.sort("_row").drop("_row", "_pid", "_seq", "disease")


@dataclass(frozen=True, slots=True)
class Mined:
    """What a composition gives before P(s | c): its super-records, E as the release publishes it
    (E*_t: with every earlier release's weights, :func:`faers_anon.anonymize.inputs.with_earlier`), and
    (caseid, outc_cod) (None when OUTC codes are not bounded); ``own``: E_t, mined from the composition
    alone (None: ``knowledge`` is it), which the raise check compares with E*_{t−1}
    (:mod:`faers_anon.series.raised`). The recheck of a planned unit reads only these and θ*
    (:class:`faers_anon.series.recheck.Recheck`)."""

    cases: pl.DataFrame
    knowledge: pl.DataFrame
    outcomes: pl.DataFrame | None
    own: pl.DataFrame | None = None


@dataclass(frozen=True, slots=True)
class ReleaseInputs:
    """What the anonymizer computes from a composition's folder besides the partition.

    Attributes:
        cases: the super-records (``cases.parquet``); knowledge: E as the release publishes it (E*_t);
        outcomes: (caseid, outc_cod), None when OUTC codes are not bounded; probabilities: P(s | c)
        with the value classes and OUTC pseudo-values; thresholds: θ* over them; own: E_t as mined
        (:class:`Mined`).
    """

    cases: pl.DataFrame
    knowledge: pl.DataFrame
    outcomes: pl.DataFrame | None
    probabilities: pl.DataFrame
    thresholds: Thresholds
    own: pl.DataFrame | None = None


def _knowledge(composition: Composition, cases: pl.DataFrame, config: AnonymizeConfig) -> pl.DataFrame:
    """E of the composition, as :func:`faers_anon.anonymize.inputs.knowledge_table` makes it of a folder."""
    if "diseases" not in config.sensitive:
        return pl.DataFrame(schema=E_SCHEMA)
    if config.knowledge is not None:
        given = load_table(config.knowledge).select(list(E_SCHEMA))
        lists = cases.select("indications", "reactions", "drug_keys")
        matched, report = match_table(given, vocabulary_of_cases(lists))
        log.info("knowledge %s: %s", config.knowledge.name, report.summary())
        keys = lists.get_column("drug_keys").explode().drop_nulls()
        return with_combinations(matched, keys).select(list(E_SCHEMA))
    return mine_from_indications(composition.table("drug"), composition.table("indi")).select(list(E_SCHEMA))


def _drug_names(composition: Composition, config: AnonymizeConfig) -> pl.DataFrame | None:
    """(caseid, key) of the other published drug columns, as
    :func:`faers_anon.anonymize.inputs.published_drug_names` reads them from a folder."""
    policy = load_policy(config.column_policy)
    columns = [c for c in _DRUG_NAMES if policy.role("drug", c) != "drop"]
    if not columns:
        return None
    return (
        composition.table("drug")
        .select("caseid", *columns)
        .unpivot(index="caseid", on=columns)
        .select("caseid", value_key_expr(pl.col("value")).alias("key"))
        .drop_nulls()
        .unique()
        .collect()
    )


def mine(
    composition: Composition, config: AnonymizeConfig, *, earlier: pl.DataFrame | None = None,
    own: pl.DataFrame | None = None, read: tuple[pl.DataFrame, pl.DataFrame | None] | None = None,
) -> Mined:  # fmt: skip
    """The composition's super-records, E and OUTC codes (:class:`Mined`), as the anonymizer reads them
    from its folder: about a fifth of :func:`release_inputs`' cost at a 100k quarter (P(s | c) and θ*
    of every case are the rest). ``earlier``: E*_{t−1}; E is then max(E_t, E*_{t−1}) per pair, as the
    anonymizer's with ``earlier_knowledge`` (:func:`faers_anon.anonymize.inputs.knowledge_table`);
    ``own``: E_t when already mined (:class:`Miner`); ``read``: its super-records and OUTC codes, when
    already read."""
    cases, outcomes = _read(composition, config) if read is None else read
    own = _knowledge(composition, cases, config) if own is None else own
    knowledge = own if earlier is None or "diseases" not in config.sensitive else with_earlier(own, earlier)
    return Mined(cases, knowledge, outcomes, own)


def _read(composition: Composition, config: AnonymizeConfig) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """The composition's super-records and (caseid, outc_cod) (None when OUTC codes are not bounded)."""
    cases, outc = composition.table("cases").collect(), (composition.ingested / "outc.parquet").is_file()
    read = config.protect_outcomes and outc
    return cases, composition.table("outc").select("caseid", "outc_cod").collect() if read else None


#: A ledger with no case: P of a composition reads its cases' own lists only.
_LIST: pl.DataType = pl.List(pl.Utf8)
_NO_LEDGER = pl.Schema([("caseid", pl.Int64), *((c, _LIST) for c in ("indications", "reactions", "drug_keys",
                                                                      "outcomes"))])  # fmt: skip


def composition_probabilities(
    cases: pl.DataFrame, knowledge: pl.DataFrame, *, config: AnonymizeConfig, outcomes: pl.DataFrame | None
) -> pl.DataFrame:
    """P(s | c) of ``cases`` with the value classes (``config.classes``) and ``outcomes``' OUTC codes: the
    frame of :func:`knowledge.case_value_probabilities` + ``with_classes_and_outcomes``, row for row, as
    the series' array pass (:func:`.exposed.exposed_probabilities` with an empty ledger; tests compare
    the two). The step computes it for whole compositions (590k cases at the 400k quarter 4) twice."""
    lists = [c for c in ("indications", "reactions", "drug_keys") if c in cases.columns]
    members = cases.select(pl.col("caseid").cast(pl.Int64), *lists, pl.lit(None, pl.Int64).alias("pseudonym"))
    return exposed_probabilities(members, pl.DataFrame(schema=_NO_LEDGER), knowledge, config, outcomes)


def release_inputs(
    composition: Composition, config: AnonymizeConfig, *, mined: Mined | None = None,
    earlier: pl.DataFrame | None = None,
) -> ReleaseInputs:  # fmt: skip
    """E, OUTC codes, P(s | c) and θ* of the composition, as the anonymizer computes them from its folder
    (:func:`faers_anon.anonymize.pipeline.anonymize_folder`); ``mined``: :func:`mine` of it, when done
    (else mined with ``earlier``, E*_{t−1})."""
    found = mine(composition, config, earlier=earlier) if mined is None else mined
    computed = partial(composition_probabilities, config=config, outcomes=found.outcomes)
    probabilities, thresholds = sensitive_thresholds(
        with_drug_names(found.cases, _drug_names(composition, config)), found.knowledge, config=config,
        classes=read_classes(config.classes), outcomes=found.outcomes, computed=computed,
    )  # fmt: skip
    return ReleaseInputs(found.cases, found.knowledge, found.outcomes, probabilities, thresholds, found.own)


class Miner:
    """:func:`mine` over the attempts of one release, each INDI row of the quarter joined and keyed once.

    E_t is mined from the composition's INDI ⋈ DRUG rows (:func:`knowledge.mining.indication_rows`): the
    quarter's, less the withheld cases' (a row goes when its INDI or its DRUG row's caseid is withheld,
    as :meth:`Composition.table` filters each table), with the added cases' (joined once a plan: they
    change with it), less the INDI rows of the links left out (an INDI row that joins a suspect
    of a left-out pair, as :func:`left_out`). The joined rows of the quarter are the same for every
    attempt, so they are joined and keyed (the INDI_PT's canonical key) once, and each attempt only
    filters them and counts (:func:`knowledge.mining.mine_from_links`): the same E as mining the
    composition's tables, bit for bit (a test compares them). The rows of two parts join only within a
    part when no primaryid of the added rows is the quarter's (ingested reports of another quarter);
    otherwise (or with a user's E, or no diseases protected) the composition is mined as before.
    """

    def __init__(self, config: AnonymizeConfig, *, earlier: pl.DataFrame | None = None) -> None:
        self._config, self._earlier = config, earlier
        self._quarter: tuple[Path, pl.DataFrame, pl.Series, int] | None = None
        self._last: tuple[object, object, bool, pl.DataFrame | None, object] | None = None
        self._read: tuple[tuple[object, ...], tuple[pl.DataFrame, pl.DataFrame | None]] | None = None

    def __call__(self, composition: Composition) -> Mined:
        """:func:`mine` of ``composition`` (with ``earlier``); the last call's super-records and OUTC codes
        again when it withholds and adds the same frames (a pass leaving links out composes the same
        plan: only INDI differs, which neither reads; 3 of 7 attempts at the 400k quarter 4)."""
        own = self._own(composition)
        same = (composition.ingested, composition.withheld, *(composition.added.get(n) for n in _READ))
        last = self._read
        if (
            last is None
            or last[0][0] != same[0]
            or any(a is not b for a, b in zip(last[0][1:], same[1:], strict=True))
        ):
            self._read = None  # the last super-records let go before these are read (memory)
            last = self._read = (same, _read(composition, self._config))
        return mine(composition, self._config, earlier=self._earlier, own=own, read=last[1])

    def quarter(self, ingested: Path) -> pl.DataFrame | None:
        """E of the quarter's folder alone (:func:`faers_anon.anonymize.inputs.knowledge_table` without
        ``earlier``) from its joined rows; None: not mined here (a user's E, no diseases, no tables)."""
        if "diseases" not in self._config.sensitive or self._config.knowledge is not None:
            return None
        if not all((ingested / f"{name}.parquet").is_file() for name in ("drug", "indi")):
            return None  # knowledge_table says which is missing
        return mine_from_links(self._rows(ingested)[0]).select(list(E_SCHEMA))

    def _rows(self, ingested: Path) -> tuple[pl.DataFrame, pl.Series, int]:
        """The quarter's joined rows, its reports' primaryids (DRUG and INDI) and INDI rows, made once."""
        if self._quarter is None or self._quarter[0] != ingested:
            drug, indi = (
                pl.scan_parquet(ingested / "drug.parquet"),
                pl.scan_parquet(ingested / "indi.parquet"),
            )
            rows = indication_rows(drug, indi).with_columns(pl.col("_row").cast(pl.Int64)).collect()
            ids = pl.concat([drug.select(pl.col("primaryid").cast(pl.Int64)),
                             indi.select(pl.col("primaryid").cast(pl.Int64))]).unique().collect()  # fmt: skip
            size = indi.select(pl.len()).collect().item()
            self._quarter, self._last = (ingested, rows, ids.get_column("primaryid"), size), None
        return self._quarter[1:]

    def _own(self, composition: Composition) -> pl.DataFrame | None:
        """E_t of the composition from the joined rows; None: mined from its tables (class docstring)."""
        if "diseases" not in self._config.sensitive or self._config.knowledge is not None:
            return None
        rows, _, _ = self._rows(composition.ingested)
        apart, added = self._added(composition)
        if not apart:
            return None
        parts = [rows.lazy()] if added is None else [rows.lazy(), added.lazy()]
        gone = composition.withheld.implode()
        kept = pl.concat(parts).filter(~pl.col("caseid").is_in(gone) & ~pl.col("indi_caseid").is_in(gone))
        if composition.links is not None and composition.links.height:
            hits = kept.join(composition.links.lazy(), on=["drug_key", "disease"], how="semi").select("_row")
            kept = kept.join(hits, on="_row", how="anti")
        return mine_from_links(kept).select(list(E_SCHEMA))

    def _added(self, composition: Composition) -> tuple[bool, pl.DataFrame | None]:
        """Whether no added primaryid is the quarter's, and the joined rows of the added DRUG and INDI
        rows (INDI row numbers after the quarter's; None: none added or not apart). The last call's
        again for the same added frames (a pass leaving links out composes the same plan:
        :class:`.store.StoredRows`), less the dropped cases' rows for the last ones less those cases' rows
        (a re-plan, :class:`.store.Rows`: rows apart stay apart; a primaryid is one case's)."""
        frames = (composition.added.get("drug"), composition.added.get("indi"))
        token, since = getattr(composition.added, "token", None), getattr(composition.added, "since", None)
        last = self._last
        if last is not None and last[0] is frames[0] and last[1] is frames[1]:
            return last[2], last[3]
        if last is not None and last[2] and since is not None and since[0] is last[4] is not None:
            drop = pl.any_horizontal(pl.col("caseid", "indi_caseid").is_in(since[1].implode()))
            kept = last[3] if last[3] is None else last[3].filter(~drop)
            self._last = (*frames, True, kept, token)
            return True, kept
        _, ids, size = self._rows(composition.ingested)
        drug, indi = composition.extra("drug"), composition.extra("indi")
        found, apart = None, True
        if drug is not None or indi is not None:
            drug = pl.scan_parquet(composition.ingested / "drug.parquet").clear() if drug is None else drug
            indi = pl.scan_parquet(composition.ingested / "indi.parquet").clear() if indi is None else indi
            pids = pl.concat([drug.select("primaryid"), indi.select("primaryid")]).collect()
            apart = not pids.get_column("primaryid").cast(pl.Int64).is_in(ids.implode()).any()
            if apart:
                offset = pl.col("_row").cast(pl.Int64) + size  # an INDI row number of its own
                found = indication_rows(drug, indi).with_columns(offset.alias("_row")).collect()
        self._last = (frames[0], frames[1], apart, found, token)
        return apart, found
