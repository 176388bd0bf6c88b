"""Rule 6's raise check written out case by case, history by history: the reference the array check
(:mod:`faers_anon.series.raised_arrays`) is compared with (docs/series.md §4 rule 6; the definitions of
:mod:`faers_anon.series.raised`'s docstring, nothing shared with the arrays but E's reading
(:func:`faers_anon.series.renew.as_read`, :func:`~faers_anon.series.raised.raised_rows`) and the class file).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import polars as pl

from faers_anon.anonymize.config import AnonymizeConfig
from faers_anon.anonymize.value_classes import CLASS_PREFIX, read_classes
from faers_anon.series.raised import raised_rows
from faers_anon.series.renew import as_read
from knowledge.values import value_key_expr

_EPS = 1e-12
_OWN = ("indications", "reactions")


def _weights(table: pl.DataFrame) -> dict[tuple[str, str], float]:
    return {(d, v): w for d, v, w in as_read(table).select("drug_key", "value", "weight").iter_rows()}


def _lists(row: dict[str, Any], config: AnonymizeConfig) -> tuple[set[str], set[str]]:
    """(own values, drugs) of a row: its sensitive terms' keys, its drug keys (read for P when the
    diseases are sensitive)."""
    terms = [t for n in _OWN if n in config.sensitive for t in (row.get(n) or []) if t is not None]
    keys = pl.DataFrame({"t": terms}, schema={"t": pl.Utf8}).select(value_key_expr(pl.col("t")))
    drugs = {d for d in (row.get("drug_keys") or []) if d is not None}
    return {k for k in keys.to_series().to_list() if k is not None}, drugs


def _p(own: set[str], drugs: set[str], e: dict[tuple[str, str], float], reads: list[str]) -> float:
    """P of a value read through ``reads`` (itself, or a class's members): 1 if own, else the largest
    weight."""
    return max([1.0 if s in own else max([e.get((d, s), 0.0) for d in drugs], default=0.0) for s in reads],
               default=0.0)  # fmt: skip


def _contains(outer: str, inner: str) -> bool:
    return set(inner.split("|")) <= set(outer.split("|"))


def reference(
    published: pl.DataFrame, past: pl.DataFrame, state: pl.DataFrame, earlier: pl.DataFrame,
    current: pl.DataFrame, thetas: dict[str, float], config: AnonymizeConfig,
) -> tuple[list[tuple[str, str]], set[tuple[str, str]]]:  # fmt: skip
    """(the pairs to leave out, sorted; the failing (history, value) pairs) of rule 6's check."""
    rows = raised_rows(earlier, current)
    if rows.is_empty() or not thetas or config.knowledge is not None:
        return [], set()
    before_e = _weights(earlier)
    star = dict(before_e)
    for key, w in _weights(current).items():
        star[key] = max(star.get(key, 0.0), w)
    classes: dict[str, list[str]] = defaultdict(list)
    for value, name in read_classes(config.classes).members.iter_rows():
        classes[CLASS_PREFIX + name].append(value)
    changed = {v for (d, v) in set(star) | set(before_e) if star.get((d, v)) != before_e.get((d, v))}
    values = changed | {c for c, inside in classes.items() if changed & set(inside)}
    wanted = sorted(v for v in values if v in thetas)
    reads = {v: classes.get(v, [v]) for v in wanted}
    ledger = {r["caseid"]: _lists(r, config) for r in state.iter_rows(named=True)}
    now_lists: dict[int, tuple[set[str], set[str]]] = {}
    if "pseudonym" in published.columns:
        for r in published.iter_rows(named=True):
            now_lists.setdefault(r["pseudonym"], _lists(r, config))
    side: dict[tuple[int, str], tuple[float, float, float]] = {}
    read_drugs = "diseases" in config.sensitive
    for case, (own, drugs) in ledger.items():
        more_own, more_drugs = now_lists.get(case, (set(), set()))
        drugs, more_drugs = (drugs, more_drugs) if read_drugs else (set(), set())
        for v in wanted:
            side[case, v] = (_p(own, drugs, before_e, reads[v]),
                             _p(own | more_own, drugs | more_drugs, before_e, reads[v]),
                             _p(own | more_own, drugs | more_drugs, star, reads[v]))  # fmt: skip
    history = dict(past.select("pseudonym", "history").iter_rows())
    sizes = Counter(history.values())
    out = Counter(published.get_column("history").to_list()) if "history" in published.columns else Counter()
    kept = (
        sorted(h for h, n in sizes.items() if n > out[h]) if "history" in published.columns else sorted(sizes)
    )
    failing, lifted = set(), set()
    for h in kept:
        members = [c for c, hc in history.items() if _contains(hc, h)]
        for v in wanted:
            up = [c for c in members if side[c, v][2] > side[c, v][1] + _EPS]
            now = sum(side[c, v][2] for c in members)
            before = sum(side[c, v][0] for c in members)
            if up and now / len(members) > thetas[v] + _EPS and now > before + _EPS:
                failing.add((h, v))
                lifted |= {(c, v, side[c, v][1]) for c in up}
    found = set()
    for case, v, p_mid in lifted:
        drugs = ledger[case][1] | now_lists.get(case, (set(), set()))[1]
        for drug_key, disease, read_drug, value, weight in rows.select(
            "drug_key", "disease", "read_drug", "value", "weight"
        ).iter_rows():
            if read_drug in drugs and value in reads[v] + [v] and weight > p_mid + _EPS:
                found.add((drug_key, disease))
    return sorted(found), failing
