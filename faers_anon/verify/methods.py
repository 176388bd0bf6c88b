"""The verifier's rules for releases made with a comparison method (manifest ``parameters.method``; SPEC §7).

Like :mod:`.verifier`, this module recomputes from the release's own files and imports nothing
from the methods. What each method guarantees, and so what is checked:

* every method: ``case_split`` (all reports of a case carry one released QID tuple).
* ``kl-anonymity``: ``k``, ≥ k distinct cases per released QID-group; ``kl``, ≥ l *completely
  different* cases per group (``parameters.method_parameters.l``). After the method's own definition
  (``faers_anon/methods/kl_anonymity.py``): a case's sensitive set is the union, over its released
  reports, of the canonical keys (upper case, whitespace collapsed) of the lists named in
  ``method_parameters.sensitive`` (``indi_pt``, ``pt``, ``drug_key``), in one namespace; two cases are
  completely different when their sets share no value (an empty set shares nothing). A group passes
  when l pairwise completely different cases are found: a fewest-values-first greedy set, then, if it
  falls short, an exhaustive search (bounded to ``SEARCH_LIMIT`` steps per group; a group whose search
  is cut short fails, so the check never passes a group it has not proven).
* ``ra``, ``enhanced-ra``, ``meds``, ``mews``: no group-size guarantee; the verdict's label carries the
  recorded privacy figure (``method_privacy``: probabilistic anonymity Pa, swap disclosure), and DR is
  reported as for every release; the structure rules (``case_split``, ``integrity``) decide.
* ``disassociation``: ``km`` and ``disassociated`` on the released form, read and checked by the
  verifier's own code (:mod:`faers_anon.verify.disassociation`), no QID group size; DR on each
  case's possible items.

Models (``parameters.model``) are dispatched to :mod:`faers_anon.verify.models` unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from faers_anon.errors import ConfigError, InputError
from faers_anon.verify.disassociation import KM_LABEL, km_m, km_violations, with_possible_items
from faers_anon.verify.models import ModelCheck, Reader, check_for, model_violations

__all__ = ["METHOD_CHECKS", "SEARCH_LIMIT", "check_for_release", "kl_violations", "release_violations",
           "with_possible_items"]  # fmt: skip

SEARCH_LIMIT = 200_000
"""Steps of the exhaustive search for l completely different cases, per group."""

_LABELS: Mapping[str, tuple[str, str | None, str]] = {
    "kl-anonymity": ("(k={k}, l={l})-anonymity", None, ""),
    "ra": ("random anonymization RA", "probabilistic_anonymity", "Pa"),
    "enhanced-ra": ("enhanced random anonymization", "probabilistic_anonymity", "Pa"),
    "meds": ("MEDS swapping", "swap_disclosure", "swap disclosure"),
    "mews": ("MEWS swapping", "swap_disclosure", "swap disclosure"),
    "disassociation": (KM_LABEL, None, ""),
}
METHOD_CHECKS: Mapping[str, ModelCheck] = {
    name: ModelCheck(label, "cases", case_split=True, theta=False) for name, (label, _, _) in _LABELS.items()
}
"""The checks of each method before its label is filled from the manifest."""

_LISTS: Mapping[str, tuple[str, str]] = {
    "indications": ("indi", "indi_pt"),
    "reactions": ("reac", "pt"),
    "drug_keys": ("drug", "drug_key"),
}


def _method_parameters(params: Mapping[str, Any]) -> Mapping[str, Any]:
    value = params.get("method_parameters") or {}
    if not isinstance(value, Mapping):
        raise InputError("parameters.method_parameters: expected a JSON object", path="manifest.json")
    return value


def check_for_release(params: Mapping[str, Any]) -> ModelCheck:
    """The checks of a manifest's ``method`` (label filled with l or the recorded figure), else its model.

    Raises:
        ConfigError: a method this verifier does not know.
    """
    method = params.get("method")
    if method is None:
        return check_for(params.get("model"))
    if method not in METHOD_CHECKS:
        raise ConfigError(
            f"manifest method {method!r}: unknown to the verifier "
            f"(expected one of {', '.join(METHOD_CHECKS)})"
        )
    check = METHOD_CHECKS[str(method)]
    _, figure, name = _LABELS[str(method)]
    if method == "disassociation":
        return replace(check, label=check.label.replace("{m}", str(km_m(params))))
    if figure is None:
        l_value = _method_parameters(params).get("l", 2)
        return replace(check, label=check.label.replace("{l}", str(l_value)))
    value = (params.get("method_privacy") or {}).get(figure)
    shown = f"{value:.4g}" if isinstance(value, int | float) else "not recorded"
    return replace(check, label=f"{check.label} (recorded {name} {shown}; no group-size guarantee)")


def _case_sets(read: Reader, members: pl.DataFrame, lists: Sequence[str]) -> pl.DataFrame:
    """(group, caseid, codes): each member's sensitive values as sorted integer codes."""
    parts = []
    for name in lists:
        if name not in _LISTS:
            raise InputError(
                f"parameters.method_parameters.sensitive: unknown list {name!r}", path="manifest.json"
            )
        table, column = _LISTS[name]
        key = pl.col(column).cast(pl.String).str.replace_all(r"\s+", " ").str.strip_chars().str.to_uppercase()
        parts.append(read(table, ["caseid", column]).select("caseid", key.alias("value")))
    values = (
        pl.concat(parts)
        .filter(pl.col("value").str.len_chars() > 0)
        .unique()
        .collect()
        .with_columns((pl.col("value").rank("dense") - 1).cast(pl.Int64).alias("code"))
    )
    return (
        members.select("group", pl.col("caseid").cast(pl.String))
        .join(values.select("caseid", "code"), on="caseid", how="left")
        .group_by("group", "caseid")
        .agg(pl.col("code").drop_nulls().unique().sort())
        .sort("group", "caseid")
    )


def _exhaustive(masks: Sequence[int], need: int, limit: int) -> bool | None:
    """Whether ``need`` pairwise disjoint masks exist (None when the search passed ``limit`` steps)."""
    steps = 0

    def extend(start: int, used: int, found: int) -> bool | None:
        nonlocal steps
        if found >= need:
            return True
        for i in range(start, len(masks)):
            steps += 1
            if steps > limit:
                return None
            if masks[i] & used == 0:
                result = extend(i + 1, used | masks[i], found + 1)
                if result is not False:
                    return result
        return False

    return extend(0, 0, 0)


def diverse_at_least(sets: Sequence[Sequence[int]], need: int, *, limit: int = SEARCH_LIMIT) -> bool | None:
    """True when ``need`` pairwise disjoint sets are among ``sets``; None when undecided within ``limit``."""
    order = sorted(range(len(sets)), key=lambda i: len(sets[i]))
    masks = [sum(1 << c for c in set(sets[i])) for i in order]
    used, found = 0, 0
    for mask in masks:  # fewest values first: a lower bound, usually enough
        if mask & used == 0:
            used, found = used | mask, found + 1
    if found >= need:
        return True
    return _exhaustive(masks, need, limit)


def kl_violations(read: Reader, members: pl.DataFrame, *, l_value: int, lists: Sequence[str]) -> pl.DataFrame:
    """Rule ``kl``: groups without l pairwise completely different cases (module docstring).

    Returns:
        (group, rule, detail), one row per failing group.
    """
    rows: list[tuple[int, str]] = []
    for group, codes in (
        _case_sets(read, members, lists).group_by("group", maintain_order=True).agg("code").iter_rows()
    ):
        verdict = diverse_at_least(codes, l_value)
        if verdict is not True:
            why = "search cut short" if verdict is None else f"fewer than l = {l_value}"
            rows.append((int(group), f"{why}: no {l_value} completely different cases among {len(codes)}"))
    return pl.DataFrame(
        {"group": [g for g, _ in rows], "rule": ["kl"] * len(rows), "detail": [d for _, d in rows]},
        schema={"group": pl.Int64, "rule": pl.String, "detail": pl.String},
    )


def release_violations(
    check: ModelCheck,
    read: Reader,
    /,
    *,
    params: Mapping[str, Any],
    reports: pl.DataFrame,
    members: pl.DataFrame,
    tables: Sequence[str],
    k: int,
    thresholds: Callable[[], pl.DataFrame],
    tolerance: float,
    release: Path | None = None,
) -> list[pl.DataFrame]:
    """The model's rules (:func:`faers_anon.verify.models.model_violations`) plus a method's own rules.

    Methods without a group-size guarantee are checked with k = 1 (every group passes the size rule);
    disassociation's k is the k of k^m (checked on ``release``'s ``disassociated/`` form).
    """
    method = params.get("method")
    found = model_violations(
        check, read, reports=reports, members=members, tables=tables,
        k=1 if method == "disassociation" else k, thresholds=thresholds, tolerance=tolerance,
    )  # fmt: skip
    if method == "disassociation":
        if release is None:
            raise InputError("disassociation: the verifier needs the release folder", path="manifest.json")
        found.append(km_violations(release, members, k=k, m=km_m(params)))
    if method == "kl-anonymity":
        mp = _method_parameters(params)
        l_value = mp.get("l", 2)
        if isinstance(l_value, bool) or not isinstance(l_value, int) or l_value < 1:
            raise InputError(f"parameters.method_parameters.l: got {l_value!r} (expected an integer >= 1)",
                             path="manifest.json")  # fmt: skip
        lists = mp.get("sensitive") or ["indications", "reactions"]
        found.append(kl_violations(read, members, l_value=l_value, lists=[str(x) for x in lists]))
    return found
