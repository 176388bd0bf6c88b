"""The release pipeline's series step: before anonymization, and at publication.

Source: issue 14 items 2–3; :mod:`faers_anon.series.ledger`, :mod:`faers_anon.series.placement`.

Before anonymization (:func:`prepare`): the ledger is opened and checked (key, checksums, the next
quarter), P(s | c) and θ* of this quarter's cases are computed as anonymization will compute them,
and the returning cases are planned with their units (:mod:`faers_anon.series.placement`). The
release's own E (E*_t: the composition's mined E_t with every earlier release's weights, each pair at
its largest, which the anonymizer bounds and the release publishes as knowledge.csv), P(s | c) and θ*
are those of the composition (:mod:`faers_anon.series.composition`: the quarter without the withheld
cases, every table by caseid, with the republished cases' stored rows, :mod:`faers_anon.series.store`),
computed in memory; a planned unit over θ* with them is withheld and the plan made again
(:mod:`faers_anon.series.recheck`: from the second attempt on, only what the withheld units changed is
checked again). The plan reads the stored OUTC codes of the
members it may republish (the composition holds their ``outc`` rows; the ledger records none when the
release publishes the OUTC set as a case QID).

The order of the checks (docs/series.md §6, eleventh session). Every plan is checked first with the
composition's own E (mined: :func:`faers_anon.series.composition.mine`) and the last composition's θ*
(the plan's before the first): the first plan with the recheck (rules 4–5), then the raise check
(rule 6); every later plan with the raise check first, then the recheck. A unit over θ* there is
withheld, a raised pair's links left out, at the cost of E alone. Only a plan passing both gets the
composition's P(s | c) and θ*, and is checked again with them (the recheck, then the raise check): the
last word, so the loop ends only on a plan that passes with its own E and θ* whatever the order before.
After a raise check left links out, the same plan is mined again and raise-checked first (no re-plan, no
recheck between): leaving a pair's links out lowers n(x) of its drug x where a case's only linked
indication of x was the pair's, which raises x's other weights, and the raise check finds those next;
rechecking the composition in between withheld units over θ* through weights the next pass left out
anyway (the 100k quarter 4: 7 and 15 units after passes of 136 and 6 pairs, then 1 unit after the 144
pairs at once; 2,126 → 2,088 returning cases withheld). A later plan (units withheld) is raise-checked
before its recheck for the same reason: its raise check may leave links out, which changes E again.

The composition that passes is written once, inside the private work folder (nothing of the withheld
cases reaches the writer); the frozen units are written to ``frozen.parquet`` for :func:`with_frozen`,
which places them around the engine (the engine sees only the other cases).

At publication (:func:`publish_with_ledger`): the ledger update is staged, the release renamed into
place, then the ledger committed; see :mod:`faers_anon.series.ledger` for the failure cases.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import polars as pl

from faers_anon.algorithms import Partition
from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.inputs import knowledge_table, sensitive_thresholds, with_earlier
from faers_anon.anonymize.partition import PARTITION_SCHEMA
from faers_anon.anonymize.value_classes import read_classes, read_outcomes
from faers_anon.errors import ConfigError, InputError
from faers_anon.keys import AgencyKey
from faers_anon.series.composition import (
    Composition,
    Miner,
    ReleaseInputs,
    composition_probabilities,
    release_inputs,
    without_links,
)
from faers_anon.series.exposed import exposed_probabilities
from faers_anon.series.ledger import Ledger, check_republish, history, open_ledger, stage
from faers_anon.series.pending import carried, waiting, write_pending
from faers_anon.series.placement import Memo, Planner, SeriesPlan, unit_members
from faers_anon.series.raised import LINKS_SCHEMA, left_out_rows
from faers_anon.series.recheck import Recheck
from faers_anon.series.store import (
    StoredRows,
    cases_for_store,
    stored_cases,
    stored_deleted,
    stored_knowledge,
    stored_outcomes,
)
from faers_anon.series.units import pseudonym_ids

__all__ = ["SeriesStep", "exposed_probabilities", "prepare", "with_frozen", "publish_with_ledger"]

FROZEN_NAME = "frozen.parquet"
EARLIER_NAME = "earlier-knowledge.csv"
_NO_E = {"drug_key": pl.Utf8, "disease": pl.Utf8, "weight": pl.Float64}


@dataclass(frozen=True, slots=True)
class SeriesStep:
    """What the series step decided for one release.

    Attributes:
        ledger: the opened ledger; plan: the placement; ingested: the folder to anonymize (a filtered copy
        when cases are withheld); frozen: the frozen bundles' file; quarters: this release's quarters;
        pending: the withheld cases' rows, for the ledger's store (None: none withheld;
        :mod:`faers_anon.series.pending`); ids: raw caseid → pseudonym of this quarter's (the offered and the
        republished) cases, reused by the store; inputs: E, P(s | c) and θ* of ``ingested`` as the anonymizer
        computes them (None when the quarter is released as it came); earlier_knowledge: E*_{t−1}, every
        earlier release's E at its largest weight, written for the anonymizer
        (:attr:`AnonymizeConfig.earlier_knowledge`: it bounds and publishes E*_t = max(E_t, E*_{t−1}); None
        for the first release); cases: the store's ``cases.parquet`` of ``ingested``, made of the
        composition's super-records in memory (None: made at publication); republish: the release's
        ``republish`` setting (recorded in the ledger: :func:`faers_anon.series.ledger.check_republish`).
    """

    ledger: Ledger
    plan: SeriesPlan
    ingested: Path
    frozen: Path
    quarters: list[str]
    pending: Path | None = None
    ids: pl.DataFrame | None = None
    inputs: ReleaseInputs | None = None
    earlier_knowledge: Path | None = None
    cases: Path | None = None
    republish: bool = False


def _release_inputs(
    folder: Path, config: AnonymizeConfig, *, cases: pl.DataFrame | None = None,
    earlier: pl.DataFrame | None = None, own: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame | None, dict[str, float]]:  # fmt: skip
    """Cases, E, OUTC codes and θ* of an ingested folder, as anonymization computes them (the drug
    columns the column policy publishes read through E: ``ingested=``); ``cases``: its super-records
    (the offered pending ones included) when already read; ``earlier``: E*_{t−1} (E is then E*_t);
    ``own``: the folder's E as mined (:meth:`Miner.quarter`), when known."""
    cases = pl.read_parquet(folder / "cases.parquet") if cases is None else cases
    knowledge = own if own is not None else knowledge_table(folder, sensitive=config.sensitive,
                                                             knowledge=config.knowledge)  # fmt: skip
    if earlier is not None and "diseases" in config.sensitive:
        knowledge = with_earlier(knowledge, earlier)
    outcomes = read_outcomes(folder) if config.protect_outcomes else None
    _, thresholds = sensitive_thresholds(
        cases, knowledge, config=config, classes=read_classes(config.classes), outcomes=outcomes,
        ingested=folder, computed=partial(composition_probabilities, config=config, outcomes=outcomes),
    )  # fmt: skip
    return cases, knowledge, outcomes, thresholds.thetas


def _first_inputs(
    ingested: Path, cases: pl.DataFrame, ids: pl.DataFrame, ledger: Ledger, config: AnonymizeConfig,
    offered: dict[str, pl.DataFrame], earlier: pl.DataFrame | None, miner: Miner,
) -> tuple[pl.DataFrame, pl.DataFrame | None, dict[str, float]]:  # fmt: skip
    """E*_t (with every earlier release's weights: ``earlier``), OUTC codes (the offered ones too) and
    θ* of this quarter (through E*_t, as the release computes them), for the plan's checks; nothing is
    computed when no case returns (the first release). E_t of the quarter from the miner's joined rows
    (the same E as mining its folder; the attempts' compositions filter those rows)."""
    returning = ids.join(ledger.state.select(pl.col("caseid").alias("pseudonym")), on="pseudonym", how="semi")
    if returning.is_empty():
        return pl.DataFrame(schema=_NO_E), None, {}
    own = miner.quarter(ingested)
    _, knowledge, outcomes, thetas = _release_inputs(ingested, config, cases=cases, earlier=earlier, own=own)
    if outcomes is not None and "outc" in offered:
        extra = offered["outc"].select(outcomes.columns).cast(outcomes.schema)  # type: ignore[arg-type]
        outcomes = pl.concat([outcomes, extra])
    return knowledge, outcomes, thetas


def _with_stored_outcomes(
    outcomes: pl.DataFrame | None, ledger: Ledger, stored: pl.DataFrame | None, ids: pl.DataFrame
) -> pl.DataFrame | None:
    """The plan's OUTC codes with those of the stored members that may be republished (not returning
    now): the composition holds their stored ``outc`` rows, which the ledger does not record when the
    release publishes no OUTC rows (the OUTC set is a case QID), so without them the plan reads P = 0
    for a republished member's codes where the recheck reads 1 (docs/series.md §6, seventh session)."""
    if outcomes is None or stored is None:
        return outcomes
    again = stored.join(ids, on="pseudonym", how="anti").select("caseid", "store")
    extra = stored_outcomes(ledger.path, ledger.meta["releases"], again)
    return pl.concat([outcomes, extra.select(outcomes.columns).cast(outcomes.schema)])  # type: ignore[arg-type]


def _more(withhold: frozenset[str], failing: frozenset[str]) -> frozenset[str]:
    """The withheld units with this attempt's failing ones. A plan holds no withheld unit, so each
    failing attempt adds one at least and the loop of :func:`prepare` ends; a plan published as it
    came after a cap of attempts (the rule before: 4) was never checked with its own E and θ*."""
    if failing <= withhold:
        raise RuntimeError(f"series step: units withheld already fail again: {sorted(failing)[:3]}")
    return withhold | failing


def _more_links(links: pl.DataFrame, more: pl.DataFrame) -> pl.DataFrame:
    """The left-out links with this attempt's: a pair left out has no case in E, so ``more`` holds
    new pairs only, and the loop of :func:`prepare` ends (E's pairs are finitely many)."""
    new = more.join(links, on=["drug_key", "disease"], how="anti")
    if new.is_empty():
        raise RuntimeError(f"series step: links left out already fail again: {more.head(3).rows()}")
    return pl.concat([links, new])


def _deleted(ledger: Ledger, ingested: Path, key: AgencyKey) -> pl.Series:
    """Case pseudonyms on a stored DELETE list or on this quarter's."""
    deleted = stored_deleted(ledger.path, ledger.meta["releases"], key.pseudonym_key)
    if (ingested / "deleted.parquet").is_file():
        now = pl.read_parquet(ingested / "deleted.parquet", columns=["caseid"]).unique()
        deleted = pl.concat([deleted, pseudonym_ids(now, key.pseudonym_key).get_column("pseudonym")])
    return deleted


def _with_offered(cases: pl.DataFrame, offered: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """This quarter's super-records and the pending ones offered again (:mod:`.pending`)."""
    if not offered:
        return cases
    extra = offered["cases"].select(cases.columns).cast(cases.schema)  # type: ignore[arg-type]
    return pl.concat([cases, extra])


def _waiting(
    offered: dict[str, pl.DataFrame], counts: dict[str, int], cases: pl.DataFrame, past: pl.DataFrame,
    key: AgencyKey,
) -> tuple[dict[str, pl.DataFrame], dict[str, pl.DataFrame]]:  # fmt: skip
    """Split the pending cases offered again into those offered and those that wait (no new follow-up in
    their unit: :func:`.pending.waiting`); ``counts`` (``retried``, ``retried_reports``,
    ``pending_waiting``) counts the offered and the waiting ones; ``past``: the ledger's histories."""
    if not offered:
        return offered, {}
    arrived = pseudonym_ids(cases.select("caseid"), key.pseudonym_key).join(past, on="pseudonym")
    pending = pseudonym_ids(offered["cases"].select("caseid"), key.pseudonym_key)
    wait = waiting(pending, past, arrived.get_column("history")).implode()
    waited = {name: table.filter(pl.col("caseid").is_in(wait)) for name, table in offered.items()}
    kept = {name: table.filter(~pl.col("caseid").is_in(wait)) for name, table in offered.items()}
    counts["pending_waiting"] = waited["cases"].height
    counts["retried"] = kept["cases"].height
    counts["retried_reports"] = kept["reports"].height if "reports" in kept else 0
    return (kept if kept["cases"].height else {}), (waited if waited["cases"].height else {})


def prepare(
    ledger_dir: Path, ingested: Path, quarters: list[str], work: Path, config: AnonymizeConfig,
    key: AgencyKey, republish: bool = False,
) -> SeriesStep:  # fmt: skip
    """Open and check the ledger, plan this quarter's returning cases, write what anonymize needs.

    The pending cases of the last release (withheld there, :mod:`faers_anon.series.pending`) are offered again
    with this quarter's cases. The units are checked against θ* with this quarter's E and θ*; the folder the
    release is made from (with the republished cases) mines its own E and θ*, so each planned unit is checked
    again with those, and a unit over θ* there is withheld and the plan made again until one passes
    (:func:`_more`; each plan is checked with the composition's E and the last θ* before its P(s | c) and θ*
    are computed, a later plan and the same plan after links left out with the raise check first: module
    docstring; the recheck and the raise check with the final composition's own E and θ*, then the release's
    verification, stay the last word). The withheld cases' rows are written for the ledger's store
    (``pending``).

    ``republish`` (the release's ``republish`` setting, docs/series.md §4 "Knowing when a report came
    in"): a returning case is published with group-mates republished from the ledger's store; without it
    (the default) only with returning cases of its own unit, at least k in every member's intersection,
    so that every case of an intersection shows a new report wherever the others do.

    Raises:
        InputError: a ledger that does not match (another key, tampered, a missing earlier quarter, a
            series released with the other ``republish`` setting).
        ConfigError: a model or method whose unit is not the case (frozen groups are case groups).
    """
    if config.method is not None or config.model != "ms-k-theta":
        raise ConfigError("ledger: composition-safe series need the ms-k-theta model without --method")
    ledger = open_ledger(ledger_dir, key)
    ledger.check_next(quarters)
    check_republish(ledger, republish)
    cases = pl.read_parquet(ingested / "cases.parquet")
    deleted, compose = _deleted(ledger, ingested, key), partial(Composition, ingested, held={"cases": cases})
    offered, retried = carried(ledger.path, ledger.meta["releases"], cases.get_column("caseid"), deleted,
                               key.pseudonym_key)  # fmt: skip
    past = history(ledger.state).rename({"caseid": "pseudonym"})
    offered, waited = (offered, {}) if republish else _waiting(offered, retried, cases, past, key)
    cases = _with_offered(cases, offered)
    ids = pseudonym_ids(cases, key.pseudonym_key)
    earlier = _earlier(ledger)
    miner = Miner(config, earlier=earlier)  # E_t of each attempt from the quarter's INDI ⋈ DRUG joined once
    knowledge, outcomes, thetas = _first_inputs(ingested, cases, ids, ledger, config, offered, earlier, miner)
    wanted = unit_members(ids, ledger.state)
    if not republish:  # no earlier case is republished: the planner places returning cases alone
        wanted = wanted.head(0)
    stored, _ = stored_cases(ledger.path, ledger.meta["releases"], key.pseudonym_key, wanted=wanted)
    outcomes = _with_stored_outcomes(outcomes, ledger, stored, ids)
    withhold: frozenset[str] = frozenset()
    before = _before(ledger, config, outcomes, earlier)
    planner = Planner(
        cases, ledger.state, key.pseudonym_key, k=config.k, thetas=thetas, stored=stored, deleted=deleted,
        ids=ids, probabilities=lambda m: exposed_probabilities(m, ledger.state, knowledge, config, outcomes),
        before=before,
    )  # fmt: skip
    known = planner.members.select("caseid", "pseudonym")  # the members' pseudonyms (no HMAC again)
    recheck = Recheck(ledger, past, known, config, before)
    rows, inputs = StoredRows(ledger.path, ledger.meta["releases"], extra=offered, cases=stored), None
    links = pl.DataFrame(schema=LINKS_SCHEMA)  # E's pairs whose INDI links are left out (.raised)
    passes = 0  # the checks that left out links (with E alone or with the composition's θ*)
    first = thetas  # θ* of a plan's first checks: the last composition's (the plan's before the first)
    early = False  # a plan's raise check before its recheck: every plan but the first (module docstring)
    while True:  # each failing plan withholds units it held, or leaves out links: finitely many plans
        plan = planner.plan(withhold)  # links left out only: the last plan (a copy) and rows again
        plain = not (plan.withheld.len() or plan.republish.height or offered or links.height)
        if plain and not ledger.meta["releases"]:  # the first release: no earlier E a weight could raise
            inputs = None
            break
        composition = without_links(compose(plan.withheld, rows(plan.republish)), links)  # cases read once
        inputs = None  # the last attempt's frames are let go before this one's are computed (memory)
        found = miner(composition)
        if early and (more := recheck.links(plan, found, first)).height:
            links, passes = _more_links(links, more), passes + 1  # E alone; n(x) fell: x's other weights rose
            continue
        failing = recheck(plan, found, first)  # E alone, the last θ*: no P(s | c) and θ* of a failing plan
        checked, early = early, True
        if failing:
            withhold = _more(withhold, failing)
            continue
        if not checked and (more := recheck.links(plan, found, first)).height:
            links, passes = _more_links(links, more), passes + 1
            continue
        inputs = release_inputs(composition, config, mined=found)
        first = inputs.thresholds.thetas
        failing = recheck(plan, inputs)  # its own E and θ*: the last word
        if failing:
            withhold = _more(withhold, failing)
            continue
        more = recheck.links(plan, inputs)  # a raised E weight lifting a kept history over θ*
        if more.is_empty():
            inputs = None if plain else inputs  # nothing changed: the quarter is released as it came
            break
        links, passes = _more_links(links, more), passes + 1
    folder = ingested if inputs is None else composition.write(work / "ingested-series", cases=inputs.cases)
    plan.counts["left_out_links"], plan.counts["left_out_passes"] = links.height, passes
    plan.counts["left_out_indi_rows"] = _left_out_rows(composition, folder) if inputs is not None else 0
    frozen = work / FROZEN_NAME
    plan.frozen.write_parquet(frozen)
    plan.counts["rechecked_withheld_units"] = len(withhold)
    plan.counts.update(retried)
    plan.counts["retried_published"] = retried["retried"] - int(
        offered["cases"].get_column("caseid").is_in(plan.withheld.implode()).sum() if offered else 0
    )
    plan.counts.update(_report_counts(ingested, folder, plan, offered))
    pending = write_pending(ingested, offered, plan.withheld, work / "pending", waited)
    ids = pl.concat([ids, known.join(ids, on="caseid", how="anti")])  # the store's index, republished too
    cased = cases_for_store(inputs.cases if inputs else None, key.pseudonym_key, ids, work / "store-cases")
    written = None if earlier is None else work / EARLIER_NAME
    if earlier is not None:  # the anonymizer's E*_t when it mines E itself (inputs None)
        earlier.write_csv(work / EARLIER_NAME)
    return SeriesStep(ledger, plan, folder, frozen, quarters, pending, ids, inputs, written, cased, republish)


def _left_out_rows(composition: Composition, folder: Path) -> int:
    """:func:`.raised.left_out_rows` of the composition written to ``folder``: its INDI rows less those
    written (:func:`.composition.left_out` keeps the complement), not INDI ⋈ DRUG again (1 CPU-s at 400k)."""
    if composition.links is None or composition.links.is_empty() or not (folder / "indi.parquet").is_file():
        return left_out_rows(composition)
    whole = replace(composition, links=None).table("indi").select(pl.len()).collect().item()
    return int(whole) - int(pl.scan_parquet(folder / "indi.parquet").select(pl.len()).collect().item())


def _earlier(ledger: Ledger) -> pl.DataFrame | None:
    """E*_{t−1}: each (drug_key, disease) at its largest weight over every earlier release's
    ``knowledge.csv`` (:func:`.store.stored_knowledge`); None for the first release. A ledgered release
    is bounded against E*_t = max(E_t, E*_{t−1}) and publishes it (docs/series.md §4): an attacker
    holding the earlier releases reads its fresh groups through their weights too."""
    if not ledger.meta["releases"]:
        return None
    return stored_knowledge(ledger.path, ledger.meta["releases"], pl.DataFrame(schema=_NO_E))


def _before(ledger: Ledger, config: AnonymizeConfig, outcomes: pl.DataFrame | None,
            earlier: pl.DataFrame | None = None) -> Memo:  # fmt: skip
    """P(s | c) of ledger-only members (``caseid`` = pseudonym, no current values) through E as the
    earlier releases published it (each weight the largest over them): what an earlier intersection
    read before this release (:mod:`faers_anon.series.earlier`). It depends on neither the plan nor
    the attempt, so the plan's rounds and every recheck share one memo (no OUTC code of this quarter:
    a ledger-only member has none; the ledger's are read); before, each recheck computed it again
    (≈ 1 CPU-s an attempt at 100k)."""
    if earlier is None:
        earlier = stored_knowledge(ledger.path, ledger.meta["releases"], pl.DataFrame(schema=_NO_E))
    codes = None if outcomes is None else outcomes.clear()
    return Memo(lambda m: exposed_probabilities(m, ledger.state, earlier, config, codes))


def _report_counts(
    ingested: Path, folder: Path, plan: SeriesPlan, offered: dict[str, pl.DataFrame]
) -> dict[str, int]:
    """Reports (DEMO rows) withheld and republished: the release's reports are the quarter's kept
    reports + ``retried_reports`` − ``withheld_reports`` + ``republished_reports``."""

    def rows(path: Path, cases: pl.Series) -> int:
        scan = pl.scan_parquet(path).filter(pl.col("caseid").is_in(cases.implode()))
        return int(scan.select(pl.len()).collect().item())

    reports = "reports.parquet"
    again = plan.republish.get_column("caseid")
    carried_back = offered["reports"].filter(pl.col("caseid").is_in(plan.withheld.implode())).height if (
        "reports" in offered) else 0  # fmt: skip
    return {"withheld_reports": rows(ingested / reports, plan.withheld) + carried_back,
            "republished_reports": rows(folder / reports, again) if folder != ingested else 0}  # fmt: skip


def with_frozen(
    cases: pl.DataFrame, frozen_path: Path, run: Callable[[pl.DataFrame], Partition]
) -> Partition:
    """Run the engine (``run``) on the cases not frozen, then add each frozen bundle as its own group.

    Bundle b gets group id ``max(engine ids) + 1 + b`` and its region; the Partition's counts are
    the engine's plus the bundles.
    """
    frozen = pl.read_parquet(frozen_path)
    if frozen.height == 0:
        return run(cases)
    partition = run(cases.join(frozen.select("caseid"), on="caseid", how="anti"))
    base = int(partition.frame.get_column("group_id").max() or 0) + 1  # type: ignore[arg-type]
    rows = frozen.with_columns((pl.col("bundle") - pl.col("bundle").min() + base).alias("group_id"))
    rows = rows.select(list(PARTITION_SCHEMA)).cast(dict(PARTITION_SCHEMA))  # type: ignore[arg-type]
    frame = pl.concat([partition.frame, rows.select(partition.frame.columns)], how="vertical_relaxed")
    return replace(partition, frame=frame, groups=partition.groups + rows.get_column("group_id").n_unique())


def publish_with_ledger(step: SeriesStep, built: Path, out: Path, key: AgencyKey,
                        publish: Callable[[], None]) -> None:  # fmt: skip
    """Stage the ledger, ``publish`` the release, commit the ledger: both or neither.

    Raises:
        InputError: the ledger cannot be written (nothing is published), or committed (the release
            just published is removed again).
    """
    staged = stage(step.ledger, built, out, step.quarters, key, withheld=step.plan.counts["withheld"],
                   ingested=step.ingested, series=step.plan.counts, pending=step.pending,
                   ids=step.ids, cases=step.cases, republish=step.republish)  # fmt: skip
    try:
        publish()
    except BaseException:
        staged.abort()
        raise
    try:
        staged.commit()
    except OSError as exc:
        staged.abort()
        shutil.rmtree(out, ignore_errors=True)
        raise InputError(f"ledger cannot be updated ({exc.strerror or exc}); the release was removed "
                         "again (both or neither)", path=step.ledger.path) from exc  # fmt: skip
