"""Independent re-check of a written release against its privacy model (SPEC §5, §7, §8, §10).

The verifier reads only the release's files (``parquet/<table>.parquet``, or the ``ascii/`` files when
a parquet table is absent; ``knowledge.csv``; ``thresholds.csv``; ``manifest.json``;
``certificate.json``) and recomputes everything itself, importing nothing of the anonymizer, the
engine or the writer (only :mod:`faers_anon.errors`, and :mod:`faers_anon.keys` for the agency's own
trusted key; ``tests/faers_anon/verify/test_independence.py`` enforces it), so a bug there cannot
hide here. What the agency states separately (``k``, ``thresholds``, ``knowledge``, ``policy``)
overrides what the release says about itself, and each difference is a violation
(:mod:`faers_anon.verify.stated`). Rules checked:

* ``k``: every QID-group, a distinct released tuple (``age_group``, ``age_min``, ``age_max``, ``sex``,
  ``wt_min``, ``wt_max`` and any extra QID columns), holds at least k distinct caseids (SPEC §4: k
  counts cases, never rows). A missing value is a value of its own (SPEC §5).
* ``case_split``: all reports of a case carry one QID tuple (SPEC §4).
* ``theta``: conf(q → s, E) ≤ θ_s + tolerance for every group q and every value s in ``thresholds.csv``,
  with conf(q → s, E) = Σ_{distinct cases c in q} P(s | c) / (distinct cases in q) and P(s | c) = 1 if
  s is among the case's indications (``indi_pt``) or reactions (``pt``), as far as the manifest's
  ``parameters.sensitive`` makes them sensitive (default both), else max over the case's drugs d
  (``drug_key``, and ``drugname``/``prod_ai`` when released)
  of w(d, s) from ``knowledge.csv``, 0 if none (SPEC §5). The case's values are the union
  over all its released reports (its super-record). A value of a sensitive attribute missing from
  ``thresholds.csv`` is a violation of its own (``unlisted``): its decision must be stated. Terms,
  diseases, drug keys and threshold values are compared by the canonical key
  upper(strip(collapse whitespace(term))); a value listed twice keeps its smallest θ.
* ``unlisted``, ``policy``, ``stated``: :mod:`faers_anon.verify.stated`.
* ``demo_fields``, ``class_theta``, ``outcome_theta`` (:mod:`faers_anon.verify.classes`), ``outcome_set``,
  ``outcome_versions`` (:mod:`faers_anon.verify.outcomes`), ``report_count`` (the number of a case's DEMO
  rows is a field of its class, :mod:`faers_anon.verify.versions`): issue 18's classes over every
  released field.
* ``items_km``: the drug and reaction sets are k^m-anonymous in every group when the manifest states
  ``parameters.items_m`` (:mod:`faers_anon.verify.items`).
* ``manifest``, ``certificate``, ``integrity``, ``counts``, ``ascii``: the release is the one the
  agency signed, whole, its counts as the manifest says and its ascii copy equal to its Parquet copy
  (:mod:`faers_anon.verify.integrity`; skipped with ``check_hashes=False``).

These are the rules of MS(k, θ*)-bounding, the default. Another model (``parameters.model``) has its
own (:mod:`faers_anon.verify.models`): k in rows for k-anonymity and (α,k)-anonymity, no ``case_split``
when reports are the units, ``l``, ``alpha``; ``theta`` fails only MS(k, θ*). Methods: ``_verify_methods``.

DR = dangerous groups / groups, a group being dangerous when some s has conf > θ_s + tolerance
(SPEC §8); a release with no group has DR 0.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path

import polars as pl

from faers_anon.errors import ConfigError, InputError
from faers_anon.keys import default_public_key
from faers_anon.verify.classes import release_class_rules, released_demo
from faers_anon.verify.conf import confidences, release_rows, release_table
from faers_anon.verify.integrity import integrity_violations, read_manifest_json
from faers_anon.verify.items import release_item_rules
from faers_anon.verify.methods import check_for_release, release_violations
from faers_anon.verify.outcomes import outcome_rules
from faers_anon.verify.stated import checked_inputs, policy_violations
from faers_anon.verify.versions import version_rules

__all__ = ["VerifyConfig", "Verdict", "verify_release", "STANDARD_QIDS"]

STANDARD_QIDS: tuple[str, ...] = ("age_group", "age_min", "age_max", "sex", "wt_min", "wt_max")
_QID_ALIASES = {"age": ("age_group", "age_min", "age_max"), "sex": ("sex",), "weight": ("wt_min", "wt_max"),
                "wt": ("wt_min", "wt_max")}  # fmt: skip
_SENSITIVE = {"indications": "indi", "indication": "indi", "indi": "indi", "indi_pt": "indi",
              "reactions": "reac", "reaction": "reac", "reac": "reac", "pt": "reac"}  # fmt: skip
_VIOLATIONS = {"group": pl.Int64, "qid": pl.String, "rule": pl.String, "detail": pl.String}


@dataclass(frozen=True, kw_only=True, slots=True)
class VerifyConfig:
    """Overrides for what the manifest says; None means "read it from ``manifest.json``".

    Args:
        k: minimum distinct cases per QID-group (manifest ``parameters.k``).
        sensitive: sensitive case attributes, among ``indications``/``indi_pt`` and ``reactions``/``pt``
            (manifest ``parameters.sensitive``; default both).
        qids: extra QID columns beyond the six standard ones (default: manifest ``parameters.qids`` plus
            the ``columns.demo.qid`` list the release writer records; the names ``age``, ``sex``,
            ``weight`` stand for the standard columns).
        tolerance: slack when comparing conf with θ (floating-point sums).
        check_hashes: check the integrity rules (certificate, SHA-256, counts, ascii = parquet).
        public_key: the trusted raw Ed25519 public key (default: that of ``$FAERS_ANON_KEY_FILE``
            when the file exists; the key the release names is never trusted).
        thresholds, knowledge, policy: the agency's own thresholds.csv, E (knowledge.csv) and column
            policy (JSON) to check against instead of the release's copies.
    """

    k: int | None = None
    sensitive: tuple[str, ...] | None = None
    qids: tuple[str, ...] | None = None
    tolerance: float = 1e-9
    check_hashes: bool = True
    public_key: bytes | None = None
    thresholds: Path | None = None
    knowledge: Path | None = None
    policy: Path | None = None

    def __post_init__(self) -> None:
        if self.k is not None and (isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1):
            raise ConfigError(f"k must be an integer >= 1; got {self.k!r}")
        if not 0 <= self.tolerance < 1e-3:
            raise ConfigError(f"tolerance must be in [0, 0.001); got {self.tolerance!r}")
        if self.sensitive is not None:
            _sensitive_tables(self.sensitive)


@dataclass(frozen=True, kw_only=True, slots=True)
class Verdict:
    """The verifier's answer.

    Attributes:
        release: the folder checked.
        ok: no violation of any rule.
        model: the model checked (manifest ``parameters.model``; ``ms-k-theta`` when absent).
        k: the k checked.
        n_cases: distinct caseids; n_reports: DEMO rows; n_groups: distinct QID tuples.
        n_dangerous: groups with some conf > θ_s; dr: n_dangerous / n_groups (0 when no group).
        group_sizes: ``size`` (distinct cases) → ``groups`` (how many groups have that size), by size.
        violations: ``group`` (Int64; null for release-wide rules), ``qid`` (the group's tuple as
            text), ``rule`` (k, case_split, theta, integrity), ``detail``.
    """

    release: Path
    ok: bool
    k: int
    n_cases: int
    n_reports: int
    n_groups: int
    n_dangerous: int
    dr: float
    group_sizes: pl.DataFrame
    violations: pl.DataFrame
    model: str = "ms-k-theta"
    label: str = "MS(k, θ*)-bounding"  # the model and its k as text, e.g. "MS(k=5, θ*)-bounding"
    integrity: str = "integrity not checked"  # what the integrity rules were checked against

    def summary(self, *, limit: int = 20) -> str:
        """DR, the group-size distribution and the first ``limit`` violations, as text."""
        state = "OK" if self.ok else "FAILS"
        lines = [
            f"release {self.release}: {state} {self.label}",
            f"cases {self.n_cases}, reports {self.n_reports}, QID-groups {self.n_groups}",
            f"DR = {self.dr:.4f} ({self.n_dangerous} dangerous of {self.n_groups} groups)",
            self.integrity,
        ]
        sizes = [f"{s}: {g}" for s, g in self.group_sizes.iter_rows()]
        shown = ", ".join(sizes[:15]) + (f", … ({len(sizes) - 15} more sizes)" if len(sizes) > 15 else "")
        lines.append(f"group sizes (cases: groups): {shown or 'none'}")
        if self.violations.height:
            lines.append(f"violations ({self.violations.height}):")
            for group, qid, rule, detail in self.violations.head(limit).iter_rows():
                where = f"group {group} [{qid}]" if group is not None else "release"
                lines.append(f"  {where}: {rule}: {detail}")
            if self.violations.height > limit:
                lines.append(f"  … and {self.violations.height - limit} more")
        return "\n".join(lines)


def verify_release(
    release: Path,
    *,
    k: int | None = None,
    sensitive: Sequence[str] | None = None,
    qids: Sequence[str] | None = None,
    tolerance: float = 1e-9,
    check_hashes: bool = True,
    public_key: bytes | None = None,
    thresholds: Path | None = None,
    knowledge: Path | None = None,
    policy: Path | None = None,
) -> Verdict:
    """Re-check a release from its files alone (rules in the module docstring).

    Args:
        release: the release folder.
        k, sensitive, qids, tolerance, check_hashes, public_key, thresholds, knowledge, policy: see
            :class:`VerifyConfig`; given values override the manifest and the release's own files.

    Returns:
        The verdict; ``ok`` is False when any rule fails (the function does not raise for that).

    Raises:
        InputError: not a folder, a missing or malformed table, knowledge.csv, thresholds.csv or manifest.
        ConfigError: no k given and none in the manifest; unknown sensitive attribute names.
    """
    config = VerifyConfig(
        k=k,
        sensitive=tuple(sensitive) if sensitive is not None else None,
        qids=tuple(qids) if qids is not None else None,
        tolerance=tolerance,
        check_hashes=check_hashes,
        public_key=public_key,
        thresholds=thresholds,
        knowledge=knowledge,
        policy=policy,
    )
    if not release.is_dir():
        raise InputError("not a release folder", path=release)
    manifest = read_manifest_json(release)
    if not isinstance(manifest.get("parameters", {}), dict):
        raise InputError("parameters: expected a JSON object", path=release / "manifest.json")
    params = manifest.get("parameters") or {}
    if config.k is None and params.get("k") is None and params.get("method") is None:
        raise ConfigError(f"{release}: no k given and manifest.json has no parameters.k")
    k_used: int = config.k if config.k is not None else VerifyConfig(k=params.get("k") or 1).k  # type: ignore[assignment]
    attrs = (
        config.sensitive
        if config.sensitive is not None
        else params.get("sensitive", ("indications", "reactions"))
    )
    tables = _sensitive_tables((attrs,) if isinstance(attrs, str) else tuple(attrs))
    written = (manifest.get("columns") or {}).get("demo", {}).get("qid") or []
    extra = config.qids if config.qids is not None else (*(params.get("qids") or ()), *written)
    qid_cols = [*STANDARD_QIDS, *(c for c in _expand_qids(extra) if c not in STANDARD_QIDS)]
    check = check_for_release(params)

    read = partial(release_table, release)
    demo = read("demo", ["caseid", "primaryid", *qid_cols]).collect()
    groups = demo.select(qid_cols).unique().sort(qid_cols, nulls_last=True).with_row_index("group")
    groups = groups.with_columns(pl.col("group").cast(pl.Int64), _label(qid_cols))
    reports = demo.join(groups, on=qid_cols, how="left", nulls_equal=True)
    members = reports.select("caseid", "group").unique()
    sizes = members.group_by("group").agg(pl.len().alias("cases"))

    thetas, know, stated = checked_inputs(
        release, params, k=config.k, thresholds=config.thresholds, knowledge=config.knowledge
    )
    found = release_violations(
        check, read, reports=reports, members=members, tables=sorted(tables), k=k_used,
        thresholds=lambda: thetas, tolerance=config.tolerance, params=params, release=release,
    )  # fmt: skip
    found += [stated, policy_violations(release, manifest, config.policy)]
    roles = "roles" in (manifest.get("policy") or {})  # issue 18: DEMO fields, classes, OUTC codes
    demo_view = cache(partial(released_demo, release, read))  # read and grouped once for both hooks
    found += release_class_rules(
        release, read, members, k=k_used, tables=sorted(tables), tolerance=config.tolerance,
        case_groups=check.case_split, theta=check.theta, policy_roles=roles, demo=demo_view,
        rows=partial(release_rows, release),
    )  # fmt: skip
    found += outcome_rules(release, read, members, k=k_used, manifest=manifest,
                           case_groups=check.case_split, demo=demo_view)  # fmt: skip
    found += version_rules(release, read, members, k=k_used, case_groups=check.case_split,
                           policy_roles=roles, demo=demo_view)  # fmt: skip
    if check.case_split:
        found.append(_splits(members))
        found += release_item_rules(release, read, members, k=k_used, params=params)
    conf, unlisted = confidences(release, members, sizes, tables, thetas, know)
    found.append(unlisted)
    dangerous = conf.filter(pl.col("conf") > pl.col("theta") + config.tolerance)
    if check.theta:
        found.append(
            dangerous.sort("group", "value").select(
                "group",
                pl.lit("theta").alias("rule"),
                pl.format("conf({}) = {} > theta {}", "value", pl.col("conf").round(6), "theta").alias(
                    "detail"
                ),  # fmt: skip
            )
        )
    n_cases = members.select(pl.col("caseid").n_unique()).item()
    integrity = "integrity not checked (check_hashes off): certificate, SHA-256, counts, ascii = parquet"
    if config.check_hashes:
        trusted = config.public_key if config.public_key is not None else default_public_key()
        found.append(integrity_violations(release, trusted=trusted, n_cases=n_cases))
        integrity = (
            "integrity checked: certificate under "
            + (f"the trusted key {hashlib.sha256(trusted).hexdigest()[:16]}" if trusted else "no trusted key")
            + ", SHA-256 of every file, counts, ascii = parquet"
        )
    violations = (
        pl.concat(found)
        .join(groups.select("group", "qid"), on="group", how="left")
        .select("group", "qid", "rule", "detail")
    )
    violations = violations.cast(_VIOLATIONS).sort("group", "rule", "detail", nulls_last=True)  # type: ignore[arg-type]
    n_groups = groups.height
    n_dangerous = dangerous.select(pl.col("group").n_unique()).item()
    return Verdict(
        release=release,
        ok=violations.height == 0,
        k=k_used,
        n_cases=n_cases,
        n_reports=demo.height,
        n_groups=n_groups,
        n_dangerous=n_dangerous,
        dr=n_dangerous / n_groups if n_groups else 0.0,
        group_sizes=sizes.group_by(pl.col("cases").alias("size")).agg(pl.len().alias("groups")).sort("size"),
        violations=violations,
        model=str(params.get("model") or "ms-k-theta"),
        label=check.label.format(k=k_used),
        integrity=integrity,
    )


def _sensitive_tables(names: Sequence[str]) -> frozenset[str]:
    unknown = [n for n in names if str(n).lower() not in _SENSITIVE]
    if unknown:
        raise ConfigError(
            f"sensitive: unknown attribute(s) {unknown} (expected indications and/or reactions)"
        )
    return frozenset(_SENSITIVE[str(n).lower()] for n in names)


def _expand_qids(names: Sequence[str]) -> list[str]:
    columns: list[str] = []
    for name in names:
        for column in _QID_ALIASES.get(str(name).lower(), (str(name),)):
            if column not in columns:
                columns.append(column)
    return columns


def _label(qid_cols: Sequence[str]) -> pl.Expr:
    parts = [pl.format(f"{c}={{}}", pl.col(c).cast(pl.String).fill_null("null")) for c in qid_cols]
    return pl.concat_str(parts, separator=", ").alias("qid")


def _splits(members: pl.DataFrame) -> pl.DataFrame:
    """One row per case whose reports carry more than one QID tuple, blamed on its first group."""
    if members.height == members.get_column("caseid").n_unique():  # (caseid, group) distinct: no split
        return pl.DataFrame(schema={"group": pl.Int64, "rule": pl.String, "detail": pl.String})
    return (
        members.group_by("caseid")
        .agg(pl.col("group").sort())
        .filter(pl.col("group").list.len() > 1)
        .sort("caseid")
        .select(
            pl.col("group").list.first().alias("group"),
            pl.lit("case_split").alias("rule"),
            pl.format(
                "caseid {} has reports in groups {}",
                "caseid",
                pl.col("group").cast(pl.List(pl.String)).list.join(", "),
            ).alias("detail"),
        )
    )
