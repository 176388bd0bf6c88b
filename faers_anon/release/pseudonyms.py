"""Keyed pseudonymous ids: no released row carries FDA's caseid or primaryid (SPEC §11, linkage (a)).

Case pseudonym (an integer of exactly 16 decimal digits):

    h(c)      = HMAC-SHA256(K_p, "case:" + decimal caseid)          K_p from the agency key (faers_anon.keys)
    pseudo(c) = 2^52 + (first 8 bytes of h(c) as big-endian integer >> 12)  ∈ [2^52, 2^53)

so it depends on the key and the caseid only: the same case gets the same pseudonym in every release
made with the same key (a follow-up in a later quarter keeps its case pseudonym), another key gives
unrelated pseudonyms, and without the key a pseudonym cannot be checked against a guessed caseid.
The range [2^52, 2^53) (4.5e15–9.0e15) is disjoint from FAERS ids (caseid ≤ 8 digits, primaryid ≤ 12)
and below 2^53, so JSON readers keep case pseudonyms exact.

Width and collisions: 52 random bits. Two of n cases share a pseudonym with probability about
n² / 2^53: 1.8e-5 for a 400k-case quarter, 0.044 for the whole corpus (20 M cases). A collision is
detected (two caseids, one pseudonym) and resolved deterministically, never merged: the case whose
full 256-bit h(c) is smallest keeps the pseudonym, every other one takes the first free value of
HMAC(K_p, "case:<caseid>#<i>"), i = 1, 2, …. The manifest records how many were resolved (no ids).
The resolution depends on which cases a release holds, so a re-derived pseudonym may differ in a
release without the other case; at 52 bits that is expected once in about 25 corpus-sized series.

Report pseudonym = case pseudonym · 1000 + slot (19 digits, < 2^63: Int64 in Parquet, digits in ascii),
so the reports of a case sort in version order. slot = off(c) + v, with v = caseversion when it is in
0..499, else 0 (legacy AERS reports have none), and a keyed per-case offset

    off(c) = (first 8 bytes of HMAC-SHA256(K_p, "slot:" + decimal caseid)) mod 500      ∈ [0, 500)

Within a case the reports are taken in (v, fda_dt, HMAC(K_p, "report:" + primaryid)) order and a
report whose slot is taken moves to the next free one (slot_i = max(slot_i, slot_{i-1} + 1)), counted
as a slot conflict. Decisions: the slot is a function of (case, version) only, so a report keeps its
pseudonym in every release and two reports never share one; the offset hides the raw caseversion,
a field of FDA's public data that the column policy may drop (an exact v37 would single a case out
and link it back): the slot reveals the order of a case's versions and the gaps between them, never
the raw primaryid (whose FAERS form, caseid followed by the version, would give the caseid back). A
slot past 999 (a case with hundreds of reports near the top) is an InputError.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from faers_anon.errors import InputError

log = logging.getLogger(__name__)

__all__ = [
    "CASE_BITS",
    "OFFSETS",
    "SLOTS",
    "IdMap",
    "case_pseudonyms",
    "case_table",
    "distinct_id_pairs",
    "pseudonymize_ids",
    "release_id_map",
]

CASE_BITS = 52
"""Random bits of a case pseudonym (module docstring)."""
SLOTS = 1000
"""Report slots per case: report pseudonym = case pseudonym · SLOTS + slot."""
OFFSETS = 500
"""Keyed per-case slot offsets are in [0, OFFSETS); versions 0..OFFSETS-1 keep their own slot."""


def _digest(key: bytes, text: str) -> bytes:
    return hmac.digest(key, text.encode("ascii"), "sha256")


def hmac_words(key: bytes, prefix: bytes, numbers: Sequence[int]) -> NDArray[np.uint64]:
    """The first 8 bytes, as a big-endian integer, of HMAC-SHA256(key, prefix + decimal n) for each n.

    RFC 2104: HMAC(K, m) = H((K0 ⊕ opad) ‖ H((K0 ⊕ ipad) ‖ m)), K0 the key zero-padded to the block
    (64 bytes; a longer key is hashed first). The two padded-key blocks are hashed once and their
    states copied per message, which saves hmac.digest's per-call key schedule (same digests); the
    messages are hashed by ``map`` over bound methods (no per-message attribute look-ups or list
    appends: 0.72 -> 0.44 CPU-s for 400k numbers).
    """
    block = 64
    k0 = (hashlib.sha256(key).digest() if len(key) > block else key).ljust(block, b"\0")
    inner = hashlib.sha256(bytes(b ^ 0x36 for b in k0))
    outer = hashlib.sha256(bytes(b ^ 0x5C for b in k0))

    def first8(
        number: int, inner_copy: Callable[[], Any] = inner.copy, outer_copy: Callable[[], Any] = outer.copy
    ) -> bytes:
        h = inner_copy()
        h.update(b"%s%d" % (prefix, number))
        o = outer_copy()
        o.update(h.digest())
        return o.digest()[:8]  # type: ignore[no-any-return]

    return np.frombuffer(b"".join(map(first8, numbers)), dtype=">u8").astype(np.uint64)


def _value(digest: bytes, bits: int) -> int:
    return (1 << bits) + (int.from_bytes(digest[:8], "big") >> (64 - bits))


def case_pseudonyms(
    caseids: Iterable[int], key: bytes, *, bits: int = CASE_BITS
) -> tuple[dict[int, int], int]:
    """Case pseudonyms of distinct caseids, collisions resolved (module docstring).

    Args:
        caseids: the release's raw caseids (duplicates are ignored).
        key: the pseudonym key (:attr:`faers_anon.keys.AgencyKey.pseudonym_key`).
        bits: random bits per pseudonym (tests use a tiny width to force collisions).

    Returns:
        (raw caseid → pseudonym, number of cases whose pseudonym was re-derived after a collision).
    """
    ids = sorted(set(caseids))
    if len(ids) > (1 << bits):
        raise InputError(f"{len(ids)} cases do not fit in {bits}-bit pseudonyms")
    words = hmac_words(key, b"case:", ids)
    values = ((words >> np.uint64(64 - bits)) + np.uint64(1 << bits)).astype(np.int64).tolist()
    if np.unique(words >> np.uint64(64 - bits)).shape[0] == len(ids):  # no collision: the usual case
        return dict(zip(ids, values, strict=True)), 0
    digests = {c: _digest(key, f"case:{c}") for c in ids}
    by_value: dict[int, list[int]] = {}
    for c, v in zip(ids, values, strict=True):
        by_value.setdefault(v, []).append(c)
    mapping: dict[int, int] = {}
    losers: list[int] = []
    for value, owners in by_value.items():
        owners.sort(key=digests.__getitem__)
        mapping[owners[0]] = value
        losers.extend(owners[1:])
    taken = set(mapping.values())
    for c in sorted(losers, key=digests.__getitem__):
        attempt = 1
        value = _value(_digest(key, f"case:{c}#{attempt}"), bits)
        while value in taken:
            attempt += 1
            value = _value(_digest(key, f"case:{c}#{attempt}"), bits)
        mapping[c] = value
        taken.add(value)
    return mapping, len(losers)


def case_table(caseids: pl.Series, key: bytes, *, bits: int = CASE_BITS) -> tuple[pl.DataFrame, int]:
    """:func:`case_pseudonyms` as a frame: (``caseid``, ``case_pseudo``) Int64, one row per distinct
    caseid in increasing order, and the number of collisions resolved.

    Without a collision (the usual case) the pseudonyms are taken from the HMAC words as an array,
    never through a dict of Python ints; otherwise :func:`case_pseudonyms` resolves them.
    """
    ids = caseids.cast(pl.Int64).unique().sort()
    schema = {"caseid": pl.Int64, "case_pseudo": pl.Int64}
    if ids.null_count() == 0 and 0 < ids.len() <= 1 << bits:
        top = hmac_words(key, b"case:", ids.to_list()) >> np.uint64(64 - bits)
        if np.unique(top).shape[0] == ids.len():
            values = (top + np.uint64(1 << bits)).astype(np.int64)
            return pl.DataFrame({"caseid": ids, "case_pseudo": values}, schema=schema), 0
    mapping, collisions = case_pseudonyms(ids.to_list(), key, bits=bits)
    table = pl.DataFrame({"caseid": list(mapping), "case_pseudo": list(mapping.values())}, schema=schema)
    return table, collisions


@dataclass(frozen=True, slots=True)
class IdMap:
    """Raw ids → pseudonyms of one release. Held in memory only: never written, logged or returned
    to a user (it is the link the release removes).

    Attributes:
        reports: ``primaryid``, ``caseid`` (raw, Int64) → ``report_pseudo``, ``case_pseudo`` (Int64).
        collisions: case pseudonyms re-derived after a collision.
        slot_conflicts: reports moved to the next free slot of their case.
    """

    reports: pl.DataFrame
    collisions: int
    slot_conflicts: int

    def cases(self) -> pl.DataFrame:
        """``caseid`` → ``case_pseudo``, one row per case."""
        return self.reports.select("caseid", "case_pseudo").unique("caseid").sort("caseid")

    def apply(self, frame: pl.DataFrame) -> pl.DataFrame:
        """``frame`` with ``primaryid`` and ``caseid`` (whichever it has) replaced by their pseudonyms.

        Raises:
            InputError: an id of ``frame`` the map does not know (never left raw).
        """
        has_report = "primaryid" in frame.columns
        key = ["primaryid", "caseid"] if has_report and "caseid" in frame.columns else None
        if key is not None:
            lookup = self.reports.select(*key, "report_pseudo", "case_pseudo")
        elif has_report:
            lookup = self.reports.select("primaryid", "report_pseudo").unique("primaryid")
            key = ["primaryid"]
        elif "caseid" in frame.columns:
            lookup, key = self.cases(), ["caseid"]
        else:
            return frame
        typed = frame.with_columns(pl.col(c).cast(pl.Int64) for c in key)
        mapped = typed.join(lookup, on=key, how="left", maintain_order="left")
        unknown = mapped.filter(pl.any_horizontal(pl.col(c).is_null() for c in lookup.columns[len(key):]))
        if unknown.height:
            raise InputError(f"{unknown.height} row(s) with an id that no report of the release has")
        renames = {"report_pseudo": "primaryid", "case_pseudo": "caseid"}
        new = {renames[c]: pl.col(c) for c in lookup.columns[len(key):]}
        return mapped.with_columns(**new).select(frame.columns)

    def describe(self) -> dict[str, object]:
        """The scheme and its counts for ``manifest.json`` (no id, no key)."""
        return {
            "scheme": "hmac-sha256",
            "case_bits": CASE_BITS,
            "report": f"case pseudonym * {SLOTS} + keyed offset in [0, {OFFSETS}) + version",
            "cases": self.reports["caseid"].n_unique(),
            "reports": self.reports.height,
            "collisions_resolved": self.collisions,
            "slot_conflicts": self.slot_conflicts,
        }


def pseudonymize_ids(reports: pl.DataFrame, key: bytes, *, bits: int = CASE_BITS) -> IdMap:
    """Pseudonyms of every (primaryid, caseid) of a release (module docstring).

    Args:
        reports: ``primaryid``, ``caseid`` and, where known, ``caseversion`` and ``fda_dt``: one row per
            distinct (primaryid, caseid) of any released table.
        key: the pseudonym key.
        bits: random bits of a case pseudonym.
    """
    cases, collisions = case_table(reports["caseid"], key, bits=bits)
    frame = reports.with_columns(
        pl.col("caseversion").cast(pl.Int64, strict=False).alias("caseversion")
        if "caseversion" in reports.columns
        else pl.lit(None, pl.Int64).alias("caseversion"),
        pl.col("fda_dt") if "fda_dt" in reports.columns else pl.lit(None, pl.Date).alias("fda_dt"),
    )
    offsets = pl.DataFrame(
        {
            "caseid": cases["caseid"],
            "_off": hmac_words(key, b"slot:", cases["caseid"].to_list()) % np.uint64(OFFSETS),
        },
        schema={"caseid": pl.Int64, "_off": pl.Int64},
    )
    version = pl.when(pl.col("caseversion").is_between(0, OFFSETS - 1)).then("caseversion").otherwise(0)
    frame = frame.with_columns(pl.col("caseid").cast(pl.Int64)).join(offsets, on="caseid", how="left")
    frame = frame.with_columns((pl.col("_off") + version).alias("want"))
    frame = frame.sort("caseid", "want", "fda_dt", nulls_last=False).with_row_index("_row")
    same = [pl.col(c).eq_missing(pl.col(c).shift(1)) for c in ("caseid", "want", "fda_dt")]
    frame = frame.with_columns(pl.all_horizontal(same).fill_null(False).alias("_dup"))
    frame = frame.with_columns((pl.col("_dup") | pl.col("_dup").shift(-1).fill_null(False)).alias("_tied"))
    tied = frame.filter("_tied")
    digests = [_digest(key, f"report:{p}").hex() for p in tied["primaryid"]]
    ties = tied.select("_row", pl.Series("tie", digests, dtype=pl.String))
    frame = frame.join(ties, on="_row", how="left").sort("caseid", "want", "fda_dt", "tie", nulls_last=False)
    # slot_i = max(want_i, slot_{i-1} + 1) within a case = i + max_{j<=i}(want_j - j), i the index in the
    # case; one global cum_max, kept inside each case by adding rank(case) * 2^32 (want - i > -2^32).
    row = pl.int_range(pl.len(), dtype=pl.Int64)
    first = pl.col("caseid") != pl.col("caseid").shift(1)
    frame = frame.with_columns(
        first.fill_null(True).cum_sum().cast(pl.Int64).alias("_case"),
        pl.when(first.fill_null(True)).then(row).forward_fill().alias("_start"),
    ).with_columns((row - pl.col("_start")).alias("_i"))
    lift = pl.col("_case") * (1 << 32)
    frame = frame.with_columns(
        ((pl.col("want") - pl.col("_i") + lift).cum_max() - lift + pl.col("_i")).alias("slot")
    )
    if frame.height and frame["slot"].max() >= SLOTS:  # type: ignore[operator]
        raise InputError(f"a case has more than {SLOTS} reports (its report pseudonyms would overflow)")
    conflicts = frame.filter(pl.col("slot") != pl.col("want")).height
    out = frame.join(cases, on="caseid").select(
        pl.col("primaryid").cast(pl.Int64),
        pl.col("caseid").cast(pl.Int64),
        (pl.col("case_pseudo") * SLOTS + pl.col("slot")).alias("report_pseudo"),
        "case_pseudo",
    )
    return IdMap(reports=out, collisions=collisions, slot_conflicts=conflicts)


def distinct_id_pairs(frames: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """The distinct (``primaryid``, ``caseid``) rows of ``frames`` (Int64 columns), in no set order.

    When every id is non-null and non-negative and b = bits(max caseid) leaves room, that is
    max primaryid < 2^(63 - b), each pair is packed into one Int64, key = primaryid · 2^b + caseid,
    and the keys are made unique (one integer hash instead of a two-column row encoding: 0.77 -> 0.35
    CPU-s over the 5 M id pairs of a 400k-case quarter); otherwise the pairs are made unique as they are.
    """
    both = pl.concat(frames)
    stats = both.select(
        pl.sum_horizontal(pl.all().null_count()).alias("nulls"),
        pl.min_horizontal(pl.all().min()).alias("low"),
        pl.col("primaryid").max().alias("top_p"),
        pl.col("caseid").max().alias("top_c"),
    ).row(0)
    nulls, low, top_p, top_c = stats
    if both.height == 0 or nulls or low < 0 or top_p >= 1 << (63 - int(top_c).bit_length()):
        return both.unique()
    shift = 1 << int(top_c).bit_length()
    keys = both.select((pl.col("primaryid") * shift + pl.col("caseid")).alias("key")).unique()
    return keys.select((pl.col("key") // shift).alias("primaryid"), (pl.col("key") % shift).alias("caseid"))


def release_id_map(tables: Mapping[str, pl.DataFrame], key: bytes) -> IdMap:
    """Pseudonyms of every (primaryid, caseid) of any table, versions and dates from DEMO."""
    ids = [pl.col("primaryid").cast(pl.Int64), pl.col("caseid").cast(pl.Int64)]
    pairs = distinct_id_pairs([f.select(ids) for f in tables.values()])
    demo = tables["demo"]
    extra = [c for c in ("caseversion", "fda_dt") if c in demo.columns]
    known = demo.select(
        pl.col("primaryid").cast(pl.Int64), pl.col("caseid").cast(pl.Int64), *extra
    ).unique(["primaryid", "caseid"])
    mapped = pseudonymize_ids(pairs.join(known, on=["primaryid", "caseid"], how="left"), key)
    if mapped.collisions:
        log.warning("%d case pseudonym collision(s) resolved (manifest: pseudonyms)", mapped.collisions)
    return mapped
