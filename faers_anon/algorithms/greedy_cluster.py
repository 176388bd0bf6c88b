"""Greedy clustering of case super-records into QID-groups (Lin, Yang & Wang 2016, Algorithms 1–2; SPEC §6).

:func:`greedy_cluster` turns the cases frame (cases.parquet contract) and P(s | c) into the partition
frame of docs/architecture.md: :mod:`._frame` encodes the frames into arrays (and decodes the groups'
generalized QIDs), the numba kernel (:mod:`._kernel`) runs both stages, :mod:`.repair` fixes what they
leave invalid. What the algorithm computes is the paper's: every candidate considered gets the exact
ΔIL' = ΔIL·PR; stage 1 starts from a seeded random case, adds the least-ΔIL' case until the group is
valid and seeds the next group with the remaining case farthest from the previous seed; stage 2 puts
each leftover in the least-ΔIL' group that stays valid. The design below decides only which candidates
are considered and when a search gives up.

Candidate order (:mod:`._streams`). Cases are compressed into QID patterns (identical QIDs) and classes
(identical categorical nodes and weight-missing flag); per class a stream yields patterns in
nondecreasing order of an exact lower bound on ΔIL, and a heap merges the streams, so candidates come
nearest-first. A class is positioned in its patterns only when its bound reaches the top of the heap.

Ties (:mod:`._encode`, :mod:`._pool`). All cases of a pattern share ΔIL, and in a group's own pattern
ΔIL = 0 makes every finite ΔIL' equal, so ties are the rule; the paper leaves them open. Inside a
pattern the cases are ordered by descending *signature* — which of the 15 most pressing values
(largest Σp/θ_s) they hold and at what level of P(s | c) — so the tie goes to the case holding the
most pressing values while the group can still absorb it, and the next seed is the most pressing case
of the farthest pattern. This matters: taking easy cases first leaves the hard ones to the end, where
no group can be completed (easiest-first gave ~10× the failed groups of the old arbitrary order;
hardest-first at 400k cases, k = 5, θ = 0.4: no failed group and 1 leftover instead of 713 and 1,496,
NIL 0.028 instead of 0.043).

Stage-1 skip (:mod:`._search`). From σ_s(g) and η_s the group's *blocked bits* say which signatures
give PR = ∞ (:func:`._group.blocked_bits`); a pattern's slots are sorted by signature, so a run of
blocked cases is passed with one binary search, and a pattern whose cases all hold a blocked bit is
passed at once. Skipped cases have ΔIL' = ∞ and can never be chosen: the skip changes nothing the search
computes, it only keeps ruled-out cases from using the budget — before, 98% of the evaluations at 400k
cases were such cases and their number per search grew with N. A search stops (1) when the next bound
≥ the best ΔIL' (exact), (2) after M = ``candidates`` evaluations once one is finite, (3) after
``scan_limit`` evaluations or ``scan_limit`` patterns and jumps; (2) and (3) can miss only a farther
candidate whose smaller PR would have won. A group with no finite candidate within the budget is
dissolved and its cases become leftovers. Cases whose infeasibility the signature cannot see (values
outside the 15, or p between two level bounds) are evaluated and count against the budget.

Stage-2 index (:mod:`._groups`). Each group keeps ``pmask`` (signature bits that give PR = ∞) and
``cmask`` (bits that break a cap) and the σ of the 32 most pressing values, so a group is ruled on in
O(1) and rebuilt from its members only when it could be the answer. The walk reaches groups through
their stage-1 members nearest-first; each pattern's members are sorted by their group's ``cmask``, so
runs of groups the leftover would make invalid are jumped over; a group that took a leftover leaves the
sorted order for a per-pattern list walked member by member. Per leftover at most ``scan_limit // 4``
groups are considered and as many patterns and jumps visited — a budget that does not grow with N (it
was 16·``scan_limit`` groups, and the groups walked past grew with N). A valid group is preferred to
any invalid one; among valid groups with PR = ∞ the least ΔIL wins; a leftover that finds no valid
group in budget goes where the excess is least among its 4·M nearest groups (forced) and
:mod:`.repair` merges that group with the partner that makes it valid at least ΔIL.

Stage-2 budget (decision, measured on the synthetic 100k-case quarter, raise-theta). In tight settings
(θ close to the shares of several values) most leftovers fit no group, and each such leftover used the
whole budget twice: with ``scan_limit`` = 4096 groups for the search and again for the forced ranking,
stage 2 took 11 of the 15 s at k = 10, θ = 0.1. A valid group found beyond the ~1,000 nearest is far
in QID space and costs about what repair's merge costs, so the budget is ``scan_limit // 4`` (1,024)
and the forced ranking 4·M (256): k = 10, θ = 0.1 went from 5,603 forced, NIL 0.564, 15 s to 6,193
forced, NIL 0.562, 8 s; k = 3, θ = 0.1 from NIL 0.543, 10.6 s to 0.541, 6.3 s; k = 5, θ = 0.2 is
unchanged (0 forced, NIL 0.134, 2 s). A budget of 512 forced 4 leftovers at k = 5, θ = 0.2 and gave
NIL 0.578 at k = 10, θ = 0.1. The default (k = 5, θ = 0.4) leaves one leftover: it does not notice.

Cost. A search costs O(classes·C + (patterns popped + jumps + evaluations)·log N), bounded by
``scan_limit`` whatever N, so a quarter costs O(N) searches of bounded cost plus O(N log N) sorting.
Deterministic: cases are ordered by caseid, every order and tie above is fixed, and the only random
draw is the first seed.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from faers_anon._numba_cache import sized_by
from faers_anon.algorithms import _kernel as kernel
from faers_anon.algorithms._frame import (
    PARTITION_SCHEMA,
    Encoded,
    QidCodes,
    decode,
    encode,
    encode_qids,
    with_links,
)
from faers_anon.algorithms._group import loss_per_case, new_group, risk
from faers_anon.algorithms._groups import Store, new_store, order_by_caps
from faers_anon.algorithms._pool import Pool
from faers_anon.algorithms._search import add_pooled
from faers_anon.algorithms._streams import new_streams
from faers_anon.algorithms.repair import repair_partition
from faers_anon.algorithms.types import Partition, QidHierarchies
from faers_anon.errors import ConfigError
from faers_anon.models.base import GroupModel

__all__ = [
    "PARTITION_SCHEMA",
    "Partition",
    "QidCodes",
    "QidHierarchies",
    "encode_qids",
    "greedy_cluster",
    "score_candidates",
    "with_links",
]


def _run(enc: Encoded, first: int, candidates: int, scan_limit: int) -> tuple[Store, int, int, int, int, int]:
    """Both stages and the final check; returns (store, groups, leftovers, forced, failed, invalid)."""
    n = enc.caseid.shape[0]
    n_cat = enc.tab.lca.shape[0]
    n_fields = enc.tab.f_height.shape[0]
    store = new_store(n, n_cat, enc.cases.freq_val.shape[0], n_fields)
    full = Pool._make(a.copy() for a in enc.pool)  # stage 2 walks the grouped cases; stage 1 empties its pool
    g = new_group(n_cat, enc.n_values, n_fields)
    single = new_group(n_cat, enc.n_values, n_fields)
    leftovers = np.empty(n, np.int64)
    args = (enc.tab, enc.cases, enc.req, g)
    n_groups, n_left, filled, failed = kernel.stage1(
        enc.pool, *args, new_streams(enc.pool, enc.tab), store, first, candidates, scan_limit, leftovers
    )
    order_by_caps(full, store)
    n_groups, forced = kernel.stage2(
        full,
        *args,
        single,
        new_streams(full, enc.tab),
        store,
        n_groups,
        filled,
        leftovers,
        n_left,
        candidates,
        scan_limit,
    )
    invalid = kernel.count_invalid(full, *args, store, n_groups)
    return store, int(n_groups), int(n_left), int(forced), int(failed), int(invalid)


def _work(cases: pl.DataFrame, /, **options: object) -> int:
    """The size the engine declares to faers_anon._numba_cache: cases, times (1 + field QIDs · 4).

    With field QIDs a search visits up to one class per distinct (age, sex, weight-missing, coarse
    field) value: interpreted, the demo (2,998 cases, 10 field QIDs) took 200 CPU-s instead of 1, so
    a run with field QIDs compiles from ~1,100 cases (once; then cached).
    """
    h = options.get("hierarchies")
    fields = len(h.fields) if isinstance(h, QidHierarchies) else 0
    return int(cases.height * (1 + 4 * fields))


@sized_by(_work)  # interpreted when small (faers_anon._numba_cache)
def greedy_cluster(
    cases: pl.DataFrame,
    /,
    *,
    probabilities: pl.DataFrame,
    model: GroupModel,
    hierarchies: QidHierarchies,
    rng: np.random.Generator,
    candidates: int = 64,
    scan_limit: int = 4096,
    qids: QidCodes | None = None,
) -> Partition:
    """Partition the cases into QID-groups that satisfy ``model`` (stage 1 + stage 2 of Lin et al. 2016).

    Args:
        cases: one row per caseid: ``caseid``, ``age_min``/``age_max`` (or ``age_group``), ``sex``,
            ``wt_min``/``wt_max``, optionally ``n_reports`` (rows per case, default 1).
        probabilities: P(s | c) as (caseid, value, p); values the model does not protect are ignored.
        model: the privacy model; the engine reads only ``model.requirements()``.
        hierarchies: the QIDs and their trees.
        rng: the run's generator; draws the first seed.
        candidates: M, exact ΔIL' evaluations per search once a feasible candidate is known (≥ 1).
        scan_limit: per stage-1 search at most this many evaluations and this many patterns and jumps
            visited; per leftover at most a quarter of this many groups considered and patterns and
            jumps visited (≥ M; module docstring).
        qids: :func:`encode_qids` of ``cases`` and ``hierarchies`` when made ahead (e.g. beside P(s | c)),
            or of a frame ``cases`` is a part of (a stratum; then with :func:`with_links` of that frame
            and ``probabilities``, the part's arrays are taken from them: the same arrays).

    Returns:
        The :class:`Partition`; every case is in exactly one group.

    Raises:
        ConfigError: candidates < 1 or scan_limit < candidates.
        InputError: a missing column or duplicate caseids.
    """
    if candidates < 1 or scan_limit < candidates:
        raise ConfigError(
            f"candidates must be >= 1 and scan_limit >= candidates; got {candidates}, {scan_limit}"
        )
    enc = encode(cases, probabilities, model.requirements(), hierarchies, qids=qids)
    n = enc.caseid.shape[0]
    if n == 0:
        return Partition(
            frame=pl.DataFrame(schema=PARTITION_SCHEMA),
            groups=0,
            leftovers=0,
            forced=0,
            failed_groups=0,
            invalid_groups=0,
            first_seed=-1,
        )
    first = int(rng.integers(n))
    store, n_groups, n_left, forced, failed, invalid = _run(enc, first, candidates, scan_limit)
    frame = decode(enc, store, n_groups, hierarchies)
    merged = 0
    if invalid:
        frame, merged, invalid = repair_partition(
            frame,
            cases,
            probabilities,
            requirements=model.requirements(),
            age=hierarchies.age,
            sex=hierarchies.sex,
            weight=hierarchies.weight,
            weight_domain=hierarchies.weight_domain,
        )
        n_groups -= merged
    return Partition(
        frame=frame,
        merged_groups=merged,
        groups=n_groups,
        leftovers=n_left,
        forced=forced,
        failed_groups=failed,
        invalid_groups=invalid,
        first_seed=int(enc.caseid[first]),
    )


@sized_by(lambda cases, /, **_: cases.height)  # interpreted when small (faers_anon._numba_cache)
def score_candidates(
    cases: pl.DataFrame,
    /,
    *,
    group: list[int],
    candidates: list[int],
    probabilities: pl.DataFrame,
    model: GroupModel,
    hierarchies: QidHierarchies,
) -> pl.DataFrame:
    """ΔIL, PR and ΔIL' of adding each candidate case to a group, computed by the kernel's own functions.

    For inspection and for the paper's Example 2 test. IL(g) and IL(g ∪ {r}) are reported too.

    Returns:
        (caseid, il_group, il_with, delta_il, pr, delta_il_prime), one row per candidate, in order.
    """
    enc = encode(cases, probabilities, model.requirements(), hierarchies)
    pos = {int(c): i for i, c in enumerate(enc.caseid)}
    g = new_group(enc.tab.lca.shape[0], enc.n_values, enc.tab.f_height.shape[0])
    for c in group:
        add_pooled(g, enc.pool, enc.tab, enc.cases, pos[c])
    il_group = g.size[0] * loss_per_case(enc.tab, g.cat, g.w, g.fs)
    rows: list[tuple[int, float, float, float, float, float]] = []
    for c in candidates:
        dil = float(kernel.delta_il(g, enc.pool, enc.tab, pos[c]))
        pr = float(risk(g, enc.cases, enc.req, pos[c]))
        prime = float("inf") if pr == float("inf") else dil * pr
        rows.append((c, il_group, il_group + dil, dil, pr, prime))
    return pl.DataFrame(
        rows, schema=["caseid", "il_group", "il_with", "delta_il", "pr", "delta_il_prime"], orient="row"
    )
