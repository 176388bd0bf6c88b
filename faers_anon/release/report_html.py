"""report.html for a release reviewer: the verdict and the guarantee first, then the figures, each defined.

Layout (issue 15): the first screen holds the verdict and what is guaranteed, in one sentence; the
figures that matter, each with its definition beside it; what an attacker who knows more than the
guarantee assumes can learn (``risk``) (before it, for a release of a series, its place in the series:
what was republished and withheld, and that the raw side is the raw data of the released cases);
what changed from the raw data. Then the signals
(:mod:`faers_anon.release.report_signals`): survival per stratum and the worst stratum, survival per
criterion, the reference panel (rules absent from the raw quarter are listed as "not in this
quarter", never plotted); rejects in words with counts; and a
collapsed "all parameters" section, the only place internal option names appear. Tables are fixed
width and wrap, so the page fits a 1400 px window.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faers_anon.anonymize.partition import QID_COLUMNS
from faers_anon.io.rules import REASON_WORDS
from faers_anon.release.report_markup import e as _e
from faers_anon.release.report_markup import num as _num
from faers_anon.release.report_markup import pct as _pct
from faers_anon.release.report_markup import table as _table
from faers_anon.release.report_signals import (
    criteria_section,
    panel_section,
    signals_section,
    stratum_words,
    worst_stratum,
)

__all__ = ["render_page", "FIELD_WORDS", "knowledge_words", "stratum_words", "worst_stratum"]

FIELD_WORDS: dict[str, str] = {
    "caseversion": "the case's version number", "i_f_code": "whether the report is initial or a follow-up",
    "init_fda_dt": "the date FDA first received the case", "fda_dt": "the date FDA received this version",
    "rept_cod": "the report type", "mfr_sndr": "the sending company",
    "e_sub": "whether it was sent electronically",
    "to_mfr": "whether it was also sent to the manufacturer", "occp_cod": "the reporter's occupation",
    "quarter": "the release quarter", "reporter_country": "the reporter's country",
    "occr_country": "the country where the event occurred",
    "outc_cod": "the outcomes (death, hospitalization, …)",
    "reports": "the number of the case's reports (versions)",
}  # fmt: skip
_QIDS = QID_COLUMNS  # the released QID columns (one definition: anonymize.partition)

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:1240px;margin:1.5em auto;padding:0 1em;color:#222;
line-height:1.4}
h1{font-size:1.5em;margin-bottom:.2em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
.verdict{font-size:1.15em;padding:.8em 1em;border-radius:6px;margin:.6em 0}
.ok{background:#e8f5ec;border:1px solid #0a6b2f} .bad{background:#fdecea;border:1px solid #a00}
.warn{background:#fff6e0;border:1px solid #c88a00;padding:.6em 1em;border-radius:6px}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em;table-layout:fixed;width:100%}
td,th{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top;
overflow-wrap:anywhere}
th{background:#f6f6f6} td.n{text-align:right;font-variant-numeric:tabular-nums}
dl.fig{display:grid;grid-template-columns:16em 1fr;gap:.3em 1em} dl.fig dt{font-weight:bold}
dl.fig dd{margin:0} img{max-width:100%;display:block;margin:.5em 0}
.low{color:#a00;font-weight:bold} .small{font-size:.85em;color:#555}
"""


def knowledge_words(record: Mapping[str, Any]) -> str:
    """An attacker knowledge set of risk.json in words, e.g. "age band, sex, weight band + 2 drugs"."""
    knows = list(record.get("knows", []))
    parts = ["age band, sex, weight band"] if any(q in knows for q in _QIDS) else []
    parts += [FIELD_WORDS.get(f, f) for f in knows if f not in _QIDS]
    text = ", ".join(parts) if len(parts) < 4 else f"{parts[0]} and every other released field"
    items = record.get("items") or {}
    for kind, count in items.items():
        single = kind[:-1] if kind.endswith("s") else kind
        extra = f"the whole {single} list" if count == "all" else f"{count} {kind if count != 1 else single}"
        text = f"{text} + {extra}" if text else extra
    return text or "nothing"


def _qid_words(report: Mapping[str, Any]) -> str:
    """The release's QIDs in words: "age band, sex, weight band" plus any generalized field."""
    qids = (report.get("risk") or {}).get("qids") or list(_QIDS)
    words = ["age band", "sex", "weight band"] + [FIELD_WORDS.get(f, f) for f in qids if f not in _QIDS]
    return ", ".join(words[:-1]) + " and " + words[-1]


def _guarantee(report: Mapping[str, Any]) -> str:
    privacy, params = report.get("privacy", {}), report.get("parameters", {})
    k, theta = privacy.get("k", params.get("k")), params.get("theta")
    ok = bool(report.get("verification", {}).get("ok"))
    head = "Verification PASSED" if ok else "Verification FAILED"
    if privacy.get("model") == "ms-k-theta":
        values = " or ".join(v for v in ("indication", "reaction") if f"{v}s" in params.get("sensitive", []))
        return (
            f"<b>{head}:</b> every combination of {_qid_words(report)} in this release is shared "
            f"by at least <b>{k}</b> patients, and within each combination no {values or 'sensitive value'} "
            f"and no disease implied by the patients' drugs (knowledge.csv) is held by more than a share "
            f"<b>θ = {theta}</b> of them (per-value θ in thresholds.csv). An independent re-check of the "
            f"written files {'confirmed' if ok else 'did not confirm'} both."
        )
    label = privacy.get("method") or privacy.get("model")
    return f"<b>{head}:</b> the release satisfies {_e(label)} with k = {k} (independently re-checked)."


def _figures(report: Mapping[str, Any]) -> str:
    privacy, utility, counts = report.get("privacy", {}), report.get("utility", {}), report.get("counts", {})
    groups, engine = privacy.get("groups"), privacy.get("engine_groups")
    merged = (
        f" (the anonymizer formed {engine:,} clusters; clusters that ended with the same released values "
        f"are one group to an attacker, so {groups:,} is the count that matters)"
        if engine and groups and engine != groups else ""
    )  # fmt: skip
    series = report.get("series") or {}
    carried = "" if not series else (
        f", {series.get('republished_reports', 0):,} reports of earlier cases published again and "
        f"{series.get('withheld_reports', 0):,} withheld: see This release in a series"
    )  # fmt: skip
    items = [
        ("Patients (cases)", f"{counts.get('cases', 0):,} cases in {counts.get('reports_out', 0):,} "
         f"reports (of {counts.get('reports_read', 0):,} read{carried}; every report of a case carries the "
         "same released values)"),
        ("Groups", f"{_num(groups)}: a group is the set of patients sharing one released combination of age "
         f"band, sex, weight band and the other fields named above{merged}."),
        ("Smallest group", f"{_num(privacy.get('k_achieved'))} patients (the guarantee asks for "
         f"{privacy.get('k')})."),
        ("Dangerous groups (DR)", f"{_num(privacy.get('dangerous_groups'))} of {_num(groups)} groups (DR = "
         f"{_num(privacy.get('dr'), 4)}): a group is dangerous when some value exceeds its θ there."),
        ("Information loss (NIL)", f"{_num(utility.get('nil'), 4)} — 0 means every combination field is "
         "released exactly, "
         f"1 that every value is replaced by 'any'; age {_num(utility.get('nil_age'))}, sex "
         f"{_num(utility.get('nil_sex'))}, weight {_num(utility.get('nil_weight'))}."),
    ]  # fmt: skip
    items.append(("Changed from the raw data", _changes(report)))
    return "<dl class='fig'>" + "".join(f"<dt>{a}</dt><dd>{b}</dd>" for a, b in items) + "</dl>"


def _changes(report: Mapping[str, Any]) -> str:
    """What a reader of the raw quarter would find different, in one sentence."""
    counts = report.get("counts", {})
    extra = [f for f in (report.get("risk") or {}).get("qids", []) if f not in _QIDS]
    others = ", the other combination fields by their group's common value (* = any)" if extra else ""
    dropped = (counts.get("reports_quarantined") or 0) + (counts.get("reports_deleted") or 0)
    link = (report.get("risk") or {}).get("linkage") or {}
    outcomes = (
        "the outcome is released as its group's common value (e.g. serious / non-serious), and OUTC holds "
        "only the codes that value makes certain"
        if "outcome" in extra
        else "outcomes are released as reported"
    )
    ids = (
        "report and case ids are replaced by keyed pseudonyms (no released id equals a raw one)"
        if link and link.get("by_ids") == 0
        else "report and case ids are FDA's own"
    )
    return (
        f"exact ages and weights are replaced by ranges{others}; {ids}; identifying free text (lot and "
        f"manufacturer numbers, countries, event dates) is dropped (column policy in manifest.json); "
        f"{dropped:,} reports were not released (see Rows set aside). Drugs, reactions and indications are "
        f"released as reported; {outcomes}."
    )


def _between(record: Mapping[str, Any], key: str, show: Any) -> str:
    """A figure, or "low–high" when it is only bounded (a whole list over a small vocabulary)."""
    bounds = record.get("bounds") or {}
    if key in bounds and bounds[key] != record[key]:
        return f"{show(bounds[key])}–{show(record[key])}"
    return str(show(record[key]))


def _risk(report: Mapping[str, Any]) -> str:
    risk = report.get("risk")
    if not risk:
        return "<p><em>Not measured for this release.</em></p>"
    k = risk.get("k")
    rows = [
        [_e(knowledge_words(r)), _between(r, "unique", _pct), _between(r, "below_k", _pct),
         _num(r["prosecutor_max"]), _between(r, "prosecutor_mean", _num), _num(r.get("journalist_mean"))]
        for r in risk.get("reidentification", [])
    ]  # fmt: skip
    # the warning names the worst *single* addition to the QIDs (every field at once is extreme anyway)
    single = [r for r in risk.get("reidentification", []) if len(r["knows"]) <= len(_QIDS) + 1]
    worst = max(single, key=lambda r: r["below_k"], default=None)
    parts = [
        "<p>The guarantee assumes an attacker who knows at most the fields of its combinations (above). A "
        "real attacker may know more. Each row is one attacker: what they know, then what it gives them. "
        "<b>Singled out</b>: share of patients whose released record matches no other patient's on what "
        f"the attacker knows. <b>Below k</b>: share matching fewer than {k} patients. <b>Risk</b> "
        "(prosecutor) = 1 / number of matching patients, highest and average over patients; <b>raw-data "
        "risk</b> (journalist) counts the matching patients in the raw quarter (– where a released value "
        "cannot be matched to raw values one for one, such as a date released as a month). A known drug or "
        "reaction matches patients whose list holds it. A range a–b: the whole list over a small vocabulary "
        "is bounded, not counted exactly.</p>",
    ]
    if worst and worst["below_k"] > 0:
        parts.append(
            "<p class='warn'>Not covered by the guarantee: an attacker who knows "
            f"{_e(knowledge_words(worst))} "
            f"finds {_pct(worst['below_k'])} of patients in fewer than {k} matches "
            f"({_pct(worst['unique'])} singled out).</p>"
        )
    head = ["the attacker knows", "singled out", f"below k = {k}", "highest risk", "average risk",
            "average raw-data risk"]  # fmt: skip
    parts.append(_table(head, rows, [40, 11, 11, 12, 12, 14]))
    link = risk.get("linkage")
    if link:
        parts.append(
            "<p><b>Linkage to the raw data</b> (released reports that match exactly one raw report): by "
            f"report id {_pct(link['by_ids'])}; by the {len(link.get('fields', []))} other fields both share "
            f"{_pct(link['by_fields'])}.</p>"
        )
    inference = risk.get("inference", {})
    lines = []
    kinds = (("protected_values", "a protected value"), ("classes", "a class of values (class file)"),
             ("outcomes", "an outcome code"))  # fmt: skip
    for key, what in kinds:
        item = inference.get(key)
        if item:
            name = item.get("value") or item.get("class") or item.get("code")
            lines.append(
                f"<li>{what}: highest confidence {_num(item['max_conf'])} ({_e(name)}, "
                f"θ {_num(item.get('theta_there'))}); "
                f"{item['groups_above_theta']} groups above θ</li>"
            )
    if lines:
        parts.append(
            "<p><b>Inference</b> — confidence = share of a group's patients holding the value (a drug counts "
            "through knowledge.csv, on any released drug name):</p><ul>" + "".join(lines) + "</ul>"
        )
    return "\n".join(parts)


def _series(report: Mapping[str, Any]) -> str:
    """A ledgered release's place in its series (report.json ``series``), and what its raw side is."""
    c = report["series"]
    kept = "" if not c.get("left_out_links") else (
        f" {c['left_out_links']:,} drug–indication pairs ({c['left_out_indi_rows']:,} INDI rows) are left "
        "out: their links would have raised what an earlier release lets a reader infer from a drug."
    )  # fmt: skip
    retried = "" if not c.get("retried") else (
        f" {c['retried']:,} cases ({c['retried_reports']:,} reports) withheld by the release before were "
        "offered again."
    )  # fmt: skip
    if c.get("pending_waiting"):
        retried += (f" {c['pending_waiting']:,} withheld cases wait for a follow-up of their own group "
                    "(not offered this quarter).")  # fmt: skip
    if c.get("republish"):
        companions = (
            f"beside {c.get('republished', 0):,} earlier cases ({c.get('republished_reports', 0):,} reports) "
            "published again in their groups, under the same pseudonyms. A reader who knows when a patient's "
            "reports came in can tell a follow-up from the cases published again beside it (the series was "
            "made with <code>republish</code>; docs/series.md §4)"
        )
    else:
        companions = (
            "each beside at least k − 1 other follow-ups of its group, so that every case a reader could "
            "confuse it with also shows a new report here; no earlier case is published again"
        )
    raw_side = "with the earlier cases published again" if c.get("republish") else (
        "with the follow-ups of earlier quarters published now")  # fmt: skip
    again = "with the next quarter" if c.get("republish") else (
        "with a later quarter that brings a follow-up of their group")  # fmt: skip
    return (
        f"<p>This is release {c.get('release', '?')} of a series published with a private ledger (the "
        "agency's, never published). So that no combination of the releases singles a patient out, a case "
        f"published before travels with its earlier group: of this quarter's {c.get('returning', 0):,} "
        f"returning cases (follow-ups of cases already published), {c.get('published_returning', 0):,} are "
        f"published in the groups they had, {companions}; {c.get('withheld', 0):,} cases "
        f"({c.get('withheld_reports', 0):,} reports) are withheld and offered again {again} (a withheld "
        f"follow-up's earlier version stays in the earlier release).{retried}{kept}</p>"
        "<p>The figures, the plots and the signals below compare the release with the raw data of the cases "
        f"it publishes: this quarter's reports less the withheld ones, {raw_side}. For signals over the "
        "series, count each case once at its latest version "
        "(<code>faers-anon signals</code> with every release of the series).</p>"
    )


def _rejects(report: Mapping[str, Any]) -> str:
    rows = report.get("rejects", [])
    if not rows:
        return "<p>No row was set aside.</p>"
    totals: dict[str, int] = {}
    for row in rows:
        words = "; ".join(REASON_WORDS.get(n, n.replace("_", " ")) for n in str(row["reason"]).split(";"))
        totals[words] = totals.get(words, 0) + int(row["rows"])
    items = "".join(f"<li>{n:,} rows: {_e(w)}</li>" for w, n in sorted(totals.items(), key=lambda x: -x[1]))
    return (
        f"<p>{sum(totals.values()):,} input rows were not released, for these reasons:</p><ul>{items}</ul>"
        "<p>Each one, with its file, line and reason, is listed in <code>rejects/rejects.csv</code>.</p>"
    )


def _parameters(params: Mapping[str, Any]) -> str:
    def flat(prefix: str, value: Any) -> list[list[str]]:
        if isinstance(value, Mapping):
            return [row for k, v in value.items() for row in flat(f"{prefix}{k} › ", v)]
        return [[_e(prefix.removesuffix(" › ").replace("_", " ")), _e(value)]]

    return (
        "<details><summary>All parameters of this run</summary>"
        + _table(["parameter", "value"], flat("", params), [35, 65])
        + "</details>"
    )


def render_page(report: Mapping[str, Any], figures: Mapping[str, str], img: Any) -> str:
    """The whole page (module docstring); ``img(figures, name, alt)`` inlines one plot."""
    ok = bool(report.get("verification", {}).get("ok"))
    signals = report.get("signals", {})
    quarters = ", ".join(report.get("counts", {}).get("quarters", []))
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>Release report {_e(quarters)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>Release report — FAERS {_e(quarters)}</h1>",
        f"<div class='verdict {'ok' if ok else 'bad'}'>{_guarantee(report)}</div>",
        _figures(report),
        *(["<h2>This release in a series</h2>", _series(report)] if report.get("series") else []),
        "<h2>What an attacker who knows more can learn</h2>",
        _risk(report),
        "<h2>What changed from the raw data</h2>",
        "<p>Ages and weights are released as ranges; the plots spread each released range evenly over its "
        "width and compare with the raw values.</p>",
        img(figures, "age", "age distribution raw vs released"),
        img(figures, "weight", "weight distribution raw vs released"),
        img(figures, "group_sizes", "group size histogram"),
        "<h2>Do the drug–event signals survive?</h2>",
        signals_section(signals, figures, img),
        criteria_section(signals),
        "<h3>Reference rules</h3>",
        panel_section(signals, figures, img),
        "<h2>Rows set aside</h2>",
        _rejects(report),
        "<h2>Details</h2>",
        _parameters(report.get("parameters", {})),
        f"<p class='small'>faers-anon {_e(report.get('tool', {}).get('version', ''))}; every figure is also "
        "in report.json.</p>",
        "</body></html>",
    ]
    return "\n".join(parts)
