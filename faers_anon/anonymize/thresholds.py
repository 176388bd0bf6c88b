"""θ* settings of MS(k, θ*)-bounding: uniform, level-wise and frequency-based (SPEC §5; Lin et al. 2016).

Every sensitive value s that some case reaches gets a threshold θ_s and its share of cases

    P(s) = Σ_c P(s | c) / N        (N = number of cases; the expected share under E, SPEC §5)

Rules:

* ``uniform``: θ_s = θ for every value (the paper's 0.2 / 0.4 runs).
* ``level``: a CSV file maps values, or classes of values, to θ (format below); unlisted values get the
  file's default row, else the configured θ.
* ``frequency``: θ_s = min(1, θ + slope · P(s)), slope ≥ 0 (default 1). Monotone: the more frequent a
  value, the higher its threshold ("the more frequently the symptom occurs, the less sensitive it
  is", Lin et al. 2016, Results). With slope ≥ 1 the rule is feasible by construction (θ_s ≥ P(s)).

A value with θ_s ≥ 1 is unprotected (conf ≤ 1 always) and is not passed to the model.

OUTC codes (pseudo-values ``outc:<o>``, :mod:`.value_classes`) follow the run's rule (``same``), or with
``outcome_rule = "frequency"`` get θ_o = min(1, θ + P(o)) whatever the rule: the attacker's gain over the
base rate, conf(q → o) − P(o), is at most θ for every code (docs/outcomes.md; feasible by construction).

Every value of every sensitive attribute is listed (:func:`with_declared_values`), so that a verifier
sees each decision instead of inferring it from an absence: values that no case reaches through
P(s | c) get θ 1 and action ``not-sensitive`` (filler terms such as "Product used for unknown
indication", which name no condition: :data:`knowledge.FILLER_TERMS`) or ``unreached`` (an E disease
that no case's drug reaches). Column ``reason`` says why for every action but ``protected``.

Feasibility. After any generalization the share of s over all groups is P(s), so some group has
conf ≥ P(s): θ_s < P(s) cannot be met (Lin et al. 2016, after Definition 3). ``on_infeasible``:

* ``error`` (default): raise :class:`~faers_anon.errors.InfeasibleThetaError` naming the values, θ and P(s).
* ``raise-theta``: θ_s := min(1, P(s) + 1/k) with a logged warning (action ``raised``). Departure from
  SPEC §5 ("raise θ_s to P(s)"), because a bound of exactly P(s) is met only when *every* group sits
  at the average: measured on a 20k-case quarter (θ 0.3, one value raised to P(s)) greedy groups left
  DR 0.50 with 1,426 forced placements, and a release that fails verification is not published. One
  case of slack per group of k (η_s = ⌊k·P(s) + 1⌋ ≥ ⌊k·P(s)⌋ + 1 for a group of k) is the smallest
  margin that lets k-groups absorb the value; without ``k`` the margin is 0.
* ``suppress``: s is removed from the protected set S (action ``suppressed``, θ recorded as 1): the
  release keeps the value in INDI/REAC and E as it is, but no bound on conf(q → s) is claimed for it.
  The thresholds frame and thresholds.csv list it so that readers know it is not protected.

Level-wise file format (CSV, UTF-8, header required, ``#`` starts a comment line)::

    value,class,theta
    *,high,0.2            # class thresholds: value "*" with a class name and θ
    *,low,0.4
    *,non-sensitive,1
    *,,0.5                # optional default for values the file does not list (else --theta)
    HIV INFECTION,high,   # a value in a class
    HEADACHE,non-sensitive,
    NAUSEA,,0.3           # a value with its own θ

Values are matched case-insensitively (canonical key: upper-case, whitespace collapsed). A value row
names a class or a θ, not both; every class used must be defined; θ in (0, 1]; no value twice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import polars as pl

from faers_anon.anonymize.value_classes import OUTC_PREFIX
from faers_anon.errors import ConfigError, InfeasibleThetaError, InputError
from knowledge import FILLER_TERMS, value_key_expr

__all__ = [
    "THETA_RULES",
    "OUTCOME_RULES",
    "ON_INFEASIBLE",
    "Thresholds",
    "build_thresholds",
    "frequency_thetas",
    "level_thetas",
    "outcome_thetas",
    "load_level_file",
    "uniform_thetas",
    "value_shares",
    "with_declared_values",
]

log = logging.getLogger(__name__)

THETA_RULES = ("uniform", "level", "frequency")
OUTCOME_RULES = ("same", "frequency")
ON_INFEASIBLE = ("error", "raise-theta", "suppress")
ThetaRule = Literal["uniform", "level", "frequency"]
OnInfeasible = Literal["error", "raise-theta", "suppress"]
_FEASIBLE_SLACK = 1e-12
_SCHEMA = {"value": pl.Utf8, "theta": pl.Float64, "share": pl.Float64, "action": pl.Utf8, "reason": pl.Utf8}
_FILLER_KEYS = sorted({" ".join(t.upper().split()) for t in FILLER_TERMS})
_OWN_LISTS = {"indications": "indications", "reactions": "reactions"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Thresholds:
    """θ* for one run.

    Attributes:
        frame: (value, theta, share, action, reason) for every value some case reaches; action is
            ``protected`` (θ < 1), ``unprotected`` (θ = 1), ``raised`` or ``suppressed``; after
            :func:`with_declared_values` also ``not-sensitive`` and ``unreached``.
        rule: the rule used.
        on_infeasible: what was done with infeasible values.
    """

    frame: pl.DataFrame
    rule: str
    on_infeasible: str

    @property
    def thetas(self) -> dict[str, float]:
        """The protected set S with θ_s < 1 (raised values included, suppressed excluded)."""
        kept = self.frame.filter((pl.col("theta") < 1.0) & (pl.col("action") != "suppressed"))
        return dict(zip(kept.get_column("value").to_list(), kept.get_column("theta").to_list(), strict=True))

    def count(self, action: str) -> int:
        """Number of values with the given action."""
        return int(self.frame.filter(pl.col("action") == action).height)


def value_shares(probabilities: pl.DataFrame, n_cases: int) -> pl.DataFrame:
    """P(s) = Σ_c P(s | c) / N per value, as (value, share), sorted by value; empty when N = 0."""
    if n_cases <= 0:
        return pl.DataFrame(schema={"value": pl.Utf8, "share": pl.Float64})
    return (
        probabilities.group_by("value")
        .agg((pl.col("p").sum() / n_cases).alias("share"))
        .with_columns(pl.col("share").clip(upper_bound=1.0))
        .sort("value")
    )


def _check_theta(theta: float, name: str = "theta") -> float:
    if not 0.0 < float(theta) <= 1.0:
        raise ConfigError(f"{name} must be in (0, 1]; got {theta!r}")
    return float(theta)


def uniform_thetas(shares: pl.DataFrame, *, theta: float) -> pl.DataFrame:
    """θ_s = θ for every value: (value, theta, share)."""
    return shares.with_columns(pl.lit(_check_theta(theta)).alias("theta")).select("value", "theta", "share")


def frequency_thetas(shares: pl.DataFrame, *, theta: float, slope: float = 1.0) -> pl.DataFrame:
    """θ_s = min(1, θ + slope · P(s)) (module docstring): (value, theta, share)."""
    if not slope >= 0.0:
        raise ConfigError(f"frequency slope must be >= 0; got {slope!r}")
    base = _check_theta(theta)
    return shares.with_columns((base + slope * pl.col("share")).clip(upper_bound=1.0).alias("theta")).select(
        "value", "theta", "share"
    )


def outcome_thetas(table: pl.DataFrame, *, theta: float) -> pl.DataFrame:
    """θ_o = min(1, θ + P(o)) for the OUTC codes (``outc:`` values) of ``table`` (module docstring).

    The bound on the attacker's gain over the base rate: conf(q → o) ≤ θ_o gives
    conf(q → o) − P(o) ≤ θ. Other rows keep their θ. Example: P(OT) = 0.34, θ = 0.4 → θ_OT = 0.74.
    """
    base = _check_theta(theta)
    code = pl.col("value").str.starts_with(OUTC_PREFIX)
    raised = (base + pl.col("share")).clip(upper_bound=1.0)
    return table.with_columns(pl.when(code).then(raised).otherwise(pl.col("theta")).alias("theta"))


def load_level_file(path: Path) -> pl.DataFrame:
    """Read and check a level-wise θ file; returns (value, theta) with value ``*`` for the default.

    Raises:
        InputError: unreadable file, missing header columns, or a bad row (named by its line).
    """
    try:
        raw = pl.read_csv(path, infer_schema=False, comment_prefix="#", truncate_ragged_lines=False)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise InputError(f"unreadable theta file ({str(exc).splitlines()[0]})", path=path) from exc
    cols = {c.strip().lower(): c for c in raw.columns}
    if "value" not in cols or not ({"class", "theta"} & cols.keys()):
        raise InputError("header must have 'value' and 'class' and/or 'theta'", path=path, line=1)
    text = raw.select(
        pl.col(cols["value"]).str.strip_chars().alias("raw_value"),
        (pl.col(cols["class"]).str.strip_chars() if "class" in cols else pl.lit(None, pl.Utf8)).alias("cls"),
        (pl.col(cols["theta"]).str.strip_chars() if "theta" in cols else pl.lit(None, pl.Utf8)).alias("t"),
    ).with_columns(pl.col("cls", "t").replace("", None))
    # Physical lines are not known after comment stripping; rows are numbered among data rows.
    rows = text.with_row_index("row", offset=2).with_columns(
        pl.col("t").cast(pl.Float64, strict=False).alias("theta"),
        pl.when(pl.col("raw_value") == "*")
        .then(pl.lit("*"))
        .otherwise(value_key_expr(pl.col("raw_value")))
        .alias("value"),
    )
    problems = rows.with_columns(
        pl.when(pl.col("value").is_null() | (pl.col("raw_value") == ""))
        .then(pl.lit("empty value"))
        .when(
            pl.col("t").is_not_null()
            & (pl.col("theta").is_null() | ~pl.col("theta").is_between(0, 1) | (pl.col("theta") == 0))
        )
        .then(pl.format("theta {} not in (0, 1]", "t"))
        .when((pl.col("value") == "*") & pl.col("theta").is_null())
        .then(pl.lit("a '*' row needs a theta"))
        .when((pl.col("value") != "*") & pl.col("cls").is_not_null() & pl.col("theta").is_not_null())
        .then(pl.lit("a value row names a class or a theta, not both"))
        .when((pl.col("value") != "*") & pl.col("cls").is_null() & pl.col("theta").is_null())
        .then(pl.lit("a value row needs a class or a theta"))
        .otherwise(None)
        .alias("problem")
    ).filter(pl.col("problem").is_not_null())
    if problems.height:
        first = problems.row(0, named=True)
        raise InputError(f"{first['problem']} (data row {first['row']})", path=path, field="theta")
    keys = rows.with_columns(pl.col("cls").fill_null(""))
    dup = keys.filter(
        pl.struct("value", "cls").is_duplicated() & (pl.col("value") == "*")
        | pl.col("value").is_duplicated() & (pl.col("value") != "*")
    )
    if dup.height:
        raise InputError(f"{dup['raw_value'][0]!r} listed twice (data row {dup['row'][0]})", path=path)
    classes = keys.filter((pl.col("value") == "*") & (pl.col("cls") != "")).select(
        "cls", pl.col("theta").alias("ct")
    )
    members = keys.filter(pl.col("value") != "*").join(classes, on="cls", how="left")
    undefined = members.filter((pl.col("cls") != "") & pl.col("ct").is_null())
    if undefined.height:
        raise InputError(
            f"class {undefined['cls'][0]!r} has no '*,{undefined['cls'][0]},theta' row "
            f"(data row {undefined['row'][0]})",
            path=path,
        )
    default = keys.filter((pl.col("value") == "*") & (pl.col("cls") == "")).select("value", "theta")
    values = members.select("value", pl.coalesce("theta", "ct").alias("theta"))
    return pl.concat([values, default]).sort("value")


def level_thetas(shares: pl.DataFrame, table: pl.DataFrame, *, theta: float) -> pl.DataFrame:
    """θ_s from a level table (:func:`load_level_file`); unlisted values get its ``*`` row, else θ."""
    listed = table.filter(pl.col("value") != "*")
    star = table.filter(pl.col("value") == "*").get_column("theta")
    default = float(star[0]) if star.len() else _check_theta(theta)
    return (
        shares.join(listed.rename({"theta": "listed"}), on="value", how="left")
        .with_columns(pl.col("listed").fill_null(default).alias("theta"))
        .select("value", "theta", "share")
    )


def build_thresholds(
    probabilities: pl.DataFrame,
    n_cases: int,
    *,
    rule: ThetaRule = "uniform",
    theta: float = 0.6,
    theta_file: Path | None = None,
    slope: float = 1.0,
    on_infeasible: OnInfeasible = "error",
    k: int | None = None,
    outcome_rule: str = "same",
) -> Thresholds:
    """θ* for the values of ``probabilities`` under a rule, with the infeasible values handled.

    ``k`` sets the margin of ``raise-theta``: a raised θ_s is min(1, P(s) + 1/k) (see the module
    docstring); None raises to P(s) exactly. ``outcome_rule`` ``frequency`` gives the OUTC codes
    θ_o = min(1, θ + P(o)) before feasibility is checked (:func:`outcome_thetas`).

    Raises:
        ConfigError: unknown rule or option, θ out of range, ``level`` without a file.
        InputError: a bad level file.
        InfeasibleThetaError: some θ_s < P(s) and ``on_infeasible`` is ``error``.
    """
    if rule not in THETA_RULES:
        raise ConfigError(f"theta rule: unknown {rule!r} (expected one of {', '.join(THETA_RULES)})")
    if on_infeasible not in ON_INFEASIBLE:
        raise ConfigError(
            f"on_infeasible: unknown {on_infeasible!r} (expected one of {', '.join(ON_INFEASIBLE)})"
        )
    shares = value_shares(probabilities, n_cases)
    if rule == "uniform":
        table = uniform_thetas(shares, theta=theta)
    elif rule == "frequency":
        table = frequency_thetas(shares, theta=theta, slope=slope)
    else:
        if theta_file is None:
            raise ConfigError("theta rule 'level' needs a theta file (--theta-file)")
        table = level_thetas(shares, load_level_file(theta_file), theta=theta)
    if outcome_rule not in OUTCOME_RULES:
        raise ConfigError(
            f"outcome theta: unknown {outcome_rule!r} (expected one of {', '.join(OUTCOME_RULES)})"
        )
    if outcome_rule == "frequency":
        table = outcome_thetas(table, theta=theta)
    infeasible = pl.col("theta") < pl.col("share") - _FEASIBLE_SLACK
    bad = table.filter(infeasible)
    if bad.height and on_infeasible == "error":
        raise InfeasibleThetaError(
            {v: (t, s) for v, t, s in bad.select("value", "theta", "share").iter_rows()}
        )
    if bad.height:
        shown = ", ".join(
            f"{v} ({s:.3f})"
            for v, s in bad.sort("share", descending=True).head(5).select("value", "share").iter_rows()
        )
        verb = "raised to their share + 1/k" if on_infeasible == "raise-theta" else "suppressed from S"
        log.warning("%d infeasible thresholds %s: %s", bad.height, verb, shown)
    action = (
        pl.when(infeasible)
        .then(pl.lit("raised" if on_infeasible == "raise-theta" else "suppressed"))
        .when(pl.col("theta") >= 1.0)
        .then(pl.lit("unprotected"))
        .otherwise(pl.lit("protected"))
    )
    new_theta = (
        pl.when(infeasible)
        .then(pl.col("share") + (1.0 / k if k else 0.0) if on_infeasible == "raise-theta" else pl.lit(1.0))
        .otherwise(pl.col("theta"))
        .clip(upper_bound=1.0)
    )
    reason = (
        pl.when(pl.col("action") == "raised")
        .then(pl.lit("theta below the share P(s): raised to P(s) + 1/k"))
        .when(pl.col("action") == "suppressed")
        .then(pl.lit("theta below the share P(s): suppressed, no bound claimed"))
        .when(pl.col("action") == "unprotected")
        .then(pl.format("theta 1 under the {} rule", pl.lit(rule)))
    )
    frame = (
        table.with_columns(action.alias("action"))
        .with_columns(new_theta.alias("theta"))
        .with_columns(reason.alias("reason"))
    )
    return Thresholds(frame=frame.select(list(_SCHEMA)).cast(_SCHEMA), rule=rule, on_infeasible=on_infeasible)  # type: ignore[arg-type]


def with_declared_values(
    thresholds: Thresholds, cases: pl.DataFrame, knowledge: pl.DataFrame, *, sensitive: Sequence[str]
) -> Thresholds:
    """θ* plus every other value of the sensitive attributes, with θ 1 and the reason (module docstring).

    Args:
        thresholds: θ* of the values some case reaches.
        cases: the cases frame (list columns ``indications``, ``reactions`` of canonical keys).
        knowledge: E (``disease`` column), read when ``diseases`` is sensitive.
        sensitive: the sensitive attributes (``indications``, ``reactions``, ``diseases``).

    Returns:
        The same rule and frame with rows added, sorted by value; ``share`` of an added value is the
        share of cases listing it among their own values (0 for an E disease).
    """
    lists = [_OWN_LISTS[a] for a in sensitive if a in _OWN_LISTS and _OWN_LISTS[a] in cases.columns]
    n_cases = max(cases.height, 1)
    own = [
        cases.select(pl.int_range(pl.len()).alias("case"), pl.col(c).alias("value")).explode("value")
        for c in lists
    ]
    parts = [
        pl.concat(own)
        .drop_nulls("value")
        .group_by("value")
        .agg((pl.col("case").n_unique() / n_cases).alias("share"))
        if own
        else pl.DataFrame(schema={"value": pl.Utf8, "share": pl.Float64})
    ]
    if "diseases" in sensitive and "disease" in knowledge.columns:
        diseases = knowledge.select(value_key_expr(pl.col("disease")).alias("value")).drop_nulls()
        parts.append(diseases.unique().with_columns(pl.lit(0.0).alias("share")))
    values = pl.concat(parts).group_by("value").agg(pl.col("share").max())
    added = values.join(thresholds.frame, on="value", how="anti").select(
        "value",
        pl.lit(1.0).alias("theta"),
        "share",
        pl.when(pl.col("value").is_in(_FILLER_KEYS))
        .then(pl.lit("not-sensitive"))
        .otherwise(pl.lit("unreached"))
        .alias("action"),
        pl.when(pl.col("value").is_in(_FILLER_KEYS))
        .then(pl.lit("filler term: names no condition"))
        .otherwise(pl.lit("no case reaches it (P(s) = 0)"))
        .alias("reason"),
    )
    frame = pl.concat([thresholds.frame, added.cast(_SCHEMA)]).sort("value")  # type: ignore[arg-type]
    return Thresholds(frame=frame, rule=thresholds.rule, on_infeasible=thresholds.on_infeasible)
