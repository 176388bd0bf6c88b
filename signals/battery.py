"""The rest of the field's signal battery on a signal table: EBGM/MGPS, Fisher + FDR, Mantel–Haenszel.

``measures="all"`` (:class:`signals.table.SignalConfig`) adds, to every row of a signal table:

* ``ebgm``, ``eb05``, ``eb95`` (:mod:`signals.ebgm`; without the bounds when only the criterion is
  wanted, ``bounds=False``) with E = (a+b)(a+c)/N of the row's own table
  (E = 0 when N = 0), and the criterion ``signal_eb`` = EB05 ≥ 2. **One prior per table**, fitted on
  the rows of the stratum ``all`` (every pair reported at least N* = ⌈min_a⌉ times in the whole
  quarter: DuMouchel's pair set, truncated at N*), or — when the table has no stratum ``all`` — on
  the rows read ``exact`` or ``certain`` (whole counts), pooled over the strata; the same prior
  scores every stratum and reading, since it describes how relative reporting ratios spread over
  pairs, not one stratum's counts. A prior given in the configuration is used as is.
* ``fisher_p``, ``fisher_q`` (:mod:`signals.fisher`); one Benjamini–Hochberg family per stratum and
  reading (the pairs tested together in that table).
* with ``stratify``: ``ror_mh``, ``ror_mh_lo``, ``ror_mh_hi``, ``ror_mh_corrected``,
  ``breslow_day_p`` (:mod:`signals.mantel_haenszel`) across the age × sex strata of each pair, on the
  rows of the stratum ``all`` (null on the other rows, which are single strata). Every stratum of
  the pair counts, those where it has a = 0 included. On released ranges the strata are read
  ``expected`` (a case's weights sum to 1 over the strata, so the strata still partition the
  cases; ``certain`` would drop the uncertain ones, ``possible`` count them several times).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from signals.counts import CoReports, Prepared, weight_sum
from signals.ebgm import GammaMixture, ebgm_scores, fit_prior
from signals.errors import SignalsError
from signals.fisher import with_fisher
from signals.mantel_haenszel import MH_COLUMNS, mh_arrays
from signals.measures import CRITERION_RULES
from signals.strata import OVERALL, Stratum

__all__ = [
    "MEASURE_SETS",
    "EBGM_COLUMNS",
    "expected_count",
    "table_prior",
    "add_ebgm",
    "add_fisher",
    "adjusted_ror",
    "intersect",
]

MEASURE_SETS = ("basic", "all")
EBGM_COLUMNS = ("ebgm", "eb05", "eb95")
_CHUNK = 200_000


def expected_count() -> pl.Expr:
    """E = (a + b)(a + c)/N, the count expected under independence; 0 for an empty table."""
    n = pl.col("a") + pl.col("b") + pl.col("c") + pl.col("d")
    return pl.when(n > 0).then((pl.col("a") + pl.col("b")) * (pl.col("a") + pl.col("c")) / n).otherwise(0.0)


def table_prior(frame: pl.DataFrame, /, *, min_a: float) -> GammaMixture:
    """The maximum-marginal-likelihood prior of a signal table's pair set (module docstring)."""
    if "stratum" in frame.columns and (frame.get_column("stratum") == OVERALL.label).any():
        chosen = frame.filter(pl.col("stratum") == OVERALL.label)
    elif "reading" in frame.columns:
        chosen = frame.filter(pl.col("reading").is_in(["exact", "certain"]))
    else:
        chosen = frame
    n_star = max(1, math.ceil(min_a))
    chosen = chosen.filter((pl.col("a") == pl.col("a").round()) & (pl.col("a") >= n_star))
    fit = chosen.select(pl.col("a"), expected_count().alias("e"))
    return fit_prior(fit.get_column("a").to_numpy(), fit.get_column("e").to_numpy(), n_star=n_star)


def add_ebgm(frame: pl.DataFrame, /, *, prior: GammaMixture, bounds: bool = True) -> pl.DataFrame:
    """Append ``ebgm``, ``eb05``, ``eb95`` and ``signal_eb`` (EB05 ≥ 2, a ≥ its floor).

    ``bounds=False`` leaves out ``eb05`` and ``eb95`` (``signal_eb`` is the same:
    :func:`signals.ebgm.ebgm_scores`).
    """
    e = frame.select(expected_count()).to_series().to_numpy()
    scores = ebgm_scores(frame.get_column("a").cast(pl.Float64).to_numpy(), e, prior=prior, bounds=bounds)
    rule = CRITERION_RULES["eb"]
    if not bounds:
        return frame.with_columns(
            pl.Series("ebgm", scores["ebgm"]),
            (pl.Series(scores["eb05_at_least_2"]) & (pl.col("a") >= rule.min_a)).alias(rule.column),
        )
    return frame.with_columns(
        *(pl.Series(name, scores[name]) for name in EBGM_COLUMNS),
    ).with_columns(((pl.col("eb05") >= 2.0) & (pl.col("a") >= rule.min_a)).alias(rule.column))


def add_fisher(frame: pl.DataFrame, /) -> pl.DataFrame:
    """Append ``fisher_p`` and ``fisher_q``, one BH family per stratum and reading when present."""
    by: list[str] = [c for c in ("stratum", "reading") if c in frame.columns]
    return with_fisher(frame, by=by)


def intersect(condition: Stratum, band: Stratum) -> Stratum:
    """The conjunction of two strata (a condition and an age × sex band)."""
    if not condition.predicates:
        return band
    return Stratum(
        label=f"{condition.label}&{band.label}",
        predicates=condition.predicates + band.predicates,
        columns=band.columns,
    )


def _margins(incidence: pl.DataFrame, code: str, members: pl.DataFrame, size: int, k: int) -> np.ndarray:
    """Dense (codes × strata) sums of case weights: cases with each drug (or event) per stratum."""
    sums = incidence.join(members, on="caseid").group_by(code, "stratum_id").agg(weight_sum())
    out = np.zeros((max(size, 1), k))
    out[sums.get_column(code).to_numpy(), sums.get_column("stratum_id").to_numpy()] = sums.get_column("w")
    return out


def adjusted_ror(
    co: CoReports,
    side: Prepared,
    bands: Sequence[Stratum],
    pairs: pl.DataFrame,
    /,
    *,
    reading: str,
    caps: dict[str, float],
) -> pl.DataFrame:
    """MH ROR, its RGB CI and Breslow–Day across ``bands`` for each (``drug``, ``event``) of ``pairs``.

    ``side`` is the prepared side ``co`` was made from (its cases' memberships in ``bands``). Every
    stratum counts, those where the pair has a = 0 included: their cells come from the stratum's
    margins. Computed on dense (pairs × strata) arrays, :data:`_CHUNK` pairs at a time.

    Returns:
        ``drug``, ``event``, ``n_strata`` and :data:`signals.mantel_haenszel.MH_COLUMNS`.
    """
    k = len(bands)
    members = side.members(bands, reading=reading, caps=caps)
    wanted = (
        pairs.select("drug", "event")
        .join(co.drug_names, on="drug", how="left")
        .join(co.event_names, on="event", how="left")
        .with_row_index("_pair")
    )
    if wanted.get_column("drug_id").null_count() or wanted.get_column("event_id").null_count():
        raise SignalsError("adjusted_ror: a pair names a drug or an event absent from the data")
    n_events = co.event_names.height
    key = (pl.col("drug_id").cast(pl.UInt64) * n_events + pl.col("event_id")).alias("key")
    counted = (
        co.pairs.lazy()
        .join(members.lazy(), on="caseid")
        .group_by(key, "stratum_id")
        .agg(weight_sum().alias("a"))
        .join(wanted.lazy().select(key, "_pair"), on="key")
        .collect()
    )
    drug_margin = _margins(co.drugs, "drug_id", members, co.drug_names.height, k)
    event_margin = _margins(co.events, "event_id", members, n_events, k)
    total = np.zeros(k)
    totals = members.group_by("stratum_id").agg(weight_sum())
    total[totals.get_column("stratum_id").to_numpy()] = totals.get_column("w").to_numpy()
    a_all = np.zeros((wanted.height, k))
    a_all[counted.get_column("_pair").to_numpy(), counted.get_column("stratum_id").to_numpy()] = (
        counted.get_column("a")
    )
    drug_ids, event_ids = wanted.get_column("drug_id").to_numpy(), wanted.get_column("event_id").to_numpy()
    parts: dict[str, list[np.ndarray]] = {}
    for start in range(0, wanted.height, _CHUNK):  # chunks of pairs bound the memory
        rows = slice(start, start + _CHUNK)
        a = a_all[rows]
        nd, ne = drug_margin[drug_ids[rows]], event_margin[event_ids[rows]]
        cells = (a, np.maximum(nd - a, 0.0), np.maximum(ne - a, 0.0), np.maximum(total - nd - ne + a, 0.0))
        for name, values in mh_arrays(*cells).items():
            parts.setdefault(name, []).append(values)
    columns = {name: np.concatenate(values) for name, values in parts.items()}
    result = wanted.select("drug", "event").with_columns(pl.Series(name, v) for name, v in columns.items())
    return result if wanted.height else _empty_adjusted()


def _empty_adjusted() -> pl.DataFrame:
    schema = {"drug": pl.Utf8, "event": pl.Utf8, "n_strata": pl.UInt32, **{c: pl.Float64 for c in MH_COLUMNS}}
    return pl.DataFrame(schema={**schema, "ror_mh_corrected": pl.Boolean})
