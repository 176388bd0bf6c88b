"""The signal sections of report.html: survival per stratum, survival per criterion, the reference panel.

Read from report.json's ``signals`` (:mod:`faers_anon.release.report_figures`). Survival per stratum
is for the headline criterion; the table per criterion gives every criterion the release computed
(Evans, ROR025 > 1, IC025 > 0, EB05 ≥ 2) with its rule, minimum case count and source in words,
overall, pooled over the strata and in its worst stratum; the panel shows each MedWatch rule's PRR
and its Mantel–Haenszel ROR across the age × sex bands within the rule's patients. Rules absent from
the raw quarter are listed as "not in this quarter", never plotted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from faers_anon.release.report_markup import e, num, pct, table

__all__ = ["signals_section", "criteria_section", "panel_section", "stratum_words", "worst_stratum"]

_HEADLINE = {
    "evans": "Evans' criterion: PRR ≥ 2, χ² ≥ 4 and at least 3 cases",
    "ror": "criterion: the ROR's 95% lower bound above 1 and at least 3 cases",
    "ic": "criterion: the IC's 95% lower bound above 0",
    "eb": "criterion: EB05, the MGPS posterior's 5% bound, at least 2",
}
_CRITERION_WORDS = {  # name: (a pair is a signal when …, source)
    "evans": ("PRR ≥ 2 and χ² ≥ 4", "Evans, Waller & Davis 2001"),
    "ror": ("the ROR's 95% lower bound is above 1", "EMA's EudraVigilance screening (EMA/849944/2016)"),
    "ic": ("the IC's 95% lower bound is above 0", "Norén et al. 2013 (BCPNN)"),
    "eb": ("EB05, the MGPS posterior's 5% bound, is at least 2", "Szarfman et al. 2002 (FDA's MGPS screen)"),
}


def stratum_words(stratum: str) -> str:
    """``age=[18,45)&sex=F`` → ``age 18–44, women``; ``age>=60`` → ``age ≥ 60``."""
    words = []
    for part in str(stratum).split("&"):
        match = re.fullmatch(r"age=\[(\d+),(\d+|inf)\)", part)
        if match:
            lo, hi = match.groups()
            words.append(f"age {lo}+" if hi == "inf" else f"age {lo}–{int(hi) - 1}")
            continue
        words.append(
            {
                "sex=F": "women",
                "sex=M": "men",
                "age=missing": "age unknown",
                "sex=missing": "sex unknown",
            }.get(part, part.replace(">=", " ≥ ").replace("<", " < "))
        )
    return ", ".join(words)


def worst_stratum(per_stratum: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The stratum with raw signals whose survival share is lowest (more raw signals break ties)."""
    rows = [r for r in per_stratum if (r.get("n_raw") or 0) > 0]
    if not rows:
        return None
    return min(rows, key=lambda r: (r["n_survived"] / r["n_raw"], -r["n_raw"], str(r.get("stratum"))))


def signals_section(signals: Mapping[str, Any], figures: Mapping[str, str], img: Any) -> str:
    """The headline criterion: survival overall, the worst stratum, the table per stratum, its plot."""
    per = [r for r in signals.get("per_stratum", []) if r.get("stratum") not in ("overall", "all")]
    worst = worst_stratum(per)
    n_raw, n_surv = signals.get("n_raw_overall", 0), signals.get("n_survived_overall", 0)
    head = (
        "<p>A <b>signal</b> is a drug–event pair reported disproportionately often "
        f"({e(_HEADLINE.get(str(signals.get('criterion')), signals.get('criterion')))}). "
        f"Overall, {n_surv} of {n_raw} raw signals still signal on the release; "
        f"{signals.get('n_new_overall', 0)} appear only on the release. Within age and sex strata (a "
        "released age range counts by the share of it inside the stratum):</p>"
    )
    if worst is not None:
        style = "warn" if worst["n_survived"] < worst["n_raw"] else ""
        head += (
            f"<p class='{style}'>Worst stratum: <b>{e(stratum_words(worst['stratum']))}</b>, "
            f"{worst['n_survived']} of {worst['n_raw']} raw signals survive "
            f"({pct(worst['n_survived'] / worst['n_raw'])}).</p>"
        )

    def share(r: Mapping[str, Any]) -> str:
        low = "low" if r["n_survived"] < r["n_raw"] else ""
        return f"<span class='{low}'>{pct(r['n_survived'] / r['n_raw'])}</span>"

    rows = [
        [e(stratum_words(r["stratum"])), str(r["n_raw"]), str(r["n_survived"]), share(r),
         str(r.get("n_new", 0))]
        for r in sorted(per, key=lambda r: str(r["stratum"])) if r.get("n_raw")
    ]  # fmt: skip
    survival = table(["stratum", "raw signals", "still signal", "survival", "only on the release"], rows)
    return head + survival + img(figures, "survival", "signal survival per stratum")


def _survived(row: Mapping[str, Any] | None, *, new: bool = False) -> str:
    """``58 of 59 (98.3%)`` in red when a raw signal is lost; ``–`` when there was none to lose."""
    if not row or not row.get("n_raw"):
        return "– (no raw signal)" if row is not None else "–"
    low = "low" if row["n_survived"] < row["n_raw"] else ""
    share = pct(row["n_survived"] / row["n_raw"])
    text = f"<span class='{low}'>{row['n_survived']:,} of {row['n_raw']:,} ({share})</span>"
    return text + (f"; {row.get('n_new', 0):,} new" if new else "")


def criteria_section(signals: Mapping[str, Any]) -> str:
    """Survival per criterion (report.json ``signals.by_criterion``): one row per criterion."""
    criteria = signals.get("by_criterion") or {}
    if not criteria:
        return ""
    order = [*_CRITERION_WORDS, *sorted(set(criteria) - set(_CRITERION_WORDS))]  # report.json sorts keys
    rows = []
    for name in (n for n in order if n in criteria):
        c = criteria[name]
        what, source = _CRITERION_WORDS.get(name, (c.get("rule", name), c.get("source", "")))
        floor = f"{c['min_a']} patients reporting both" if (c.get("min_a") or 0) > 1 else "none"
        worst = c.get("worst_stratum")
        where = "–" if worst is None else f"{e(stratum_words(worst['stratum']))}: {_survived(worst)}"
        panel = c.get("panel") or {}
        rules = panel.get("yes", 0) + panel.get("no", 0)
        ref = f"{panel.get('yes', 0)} of {rules}" if rules else "–"
        overall, strata = _survived(c.get("overall"), new=True), _survived(c.get("strata"))
        rows.append([e(what), e(floor), e(source), overall, strata, where, ref])
    intro = (
        "<h3>Signals that survive, per criterion</h3><p>The field decides in several ways that a pair is "
        "a signal; each row is one of them, with the fewest patients reporting both that it asks for and "
        "where it comes from. A cell reads <i>raw signals that still signal on the release, of the raw "
        "signals</i>; <b>within strata</b> pools the age and sex strata and the conditions (a released "
        "age range counts by the share of it inside the stratum); the <b>worst stratum</b> is the one "
        "whose raw signals survive least; <b>reference rules</b> counts the MedWatch rules below.</p>"
    )
    head = ["a pair is a signal when", "minimum count", "source", "overall", "within strata",
            "worst stratum", "reference rules"]  # fmt: skip
    return intro + table(head, rows, [19, 10, 18, 15, 12, 16, 10])


def _interval(r: Mapping[str, Any], measure: str, side: str) -> str:
    return (
        f"{num(r.get(f'{measure}_{side}'))} [{num(r.get(f'{measure}_lo_{side}'))}, "
        f"{num(r.get(f'{measure}_hi_{side}'))}]"
    )


def panel_section(signals: Mapping[str, Any], figures: Mapping[str, str], img: Any) -> str:
    """The reference rules in the strata's reading: counts, PRR and the adjusted ROR on both sides."""
    panel = [
        r
        for r in signals.get("panel", [])
        if r.get("reading") == signals.get("reading_of_strata", "expected")
    ]
    present = [r for r in panel if (r.get("a_raw") or 0) > 0]
    absent = sorted(
        {f"{r['drug']} / {r['event']} ({r['condition']})" for r in panel if not (r.get("a_raw") or 0)}
    )
    adjusted = any("ror_mh_raw" in r for r in present)
    intro = (
        "<p>Known drug–event rules (MedWatch). PRR = proportional reporting ratio with its 95% interval; "
        "cases = patients reporting both."
        + (
            " Adjusted ROR = the Mantel–Haenszel odds ratio across the age and sex bands within the rule's "
            "patients, with its Robins–Breslow–Greenland 95% interval (released ranges counted by share)."
            if adjusted
            else ""
        )
        + "</p>"
    )
    if not present:
        return (
            intro
            + "<p>None of the rules' drug–event pairs is reported in this quarter: "
            + "; ".join(e(a) for a in absent)
            + " (not plotted).</p>"
        )
    head = ["rule", "patients", "cases raw", "cases release", "PRR raw [95% CI]", "PRR release [95% CI]"]
    widths = [24, 10, 9, 9, 18, 18]
    if adjusted:
        head += ["adjusted ROR raw [95% CI]", "adjusted ROR release [95% CI]"]
        widths = [17, 8, 6, 7, 13, 13, 13, 13]
    rows = [
        [e(f"{r['drug']} / {r['event']}"), e(r["condition"]), num(int(r["a_raw"])),
         num(int(r.get("a_release") or 0)), _interval(r, "prr", "raw"), _interval(r, "prr", "release")]
        + ([_interval(r, "ror_mh", "raw"), _interval(r, "ror_mh", "release")] if adjusted else [])
        + [e(r.get("survived"))]
        for r in present
    ]  # fmt: skip
    text = (
        intro
        + table([*head, "still a signal"], rows, [*widths, 100 - sum(widths)])
        + img(figures, "panel_prr", "forest plot of PRR")
    )
    if absent:
        text += (
            "<p><b>Not in this quarter</b> (no raw report holds the pair; not plotted): "
            + "; ".join(e(a) for a in absent)
            + ".</p>"
        )
    return text
