"""Keyed pseudonymous ids (issue 17): hand-built reports with answers worked out from the formula."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac

import polars as pl
import pytest

from faers_anon.errors import InputError
from faers_anon.keys import AgencyKey
from faers_anon.release.pseudonyms import (
    SLOTS,
    case_pseudonyms,
    case_table,
    distinct_id_pairs,
    hmac_words,
    pseudonymize_ids,
)

KEY = AgencyKey.from_secret(bytes(range(32))).pseudonym_key
OTHER = AgencyKey.from_secret(bytes(range(1, 33))).pseudonym_key
D = dt.date


def _by_hand(caseid: int, key: bytes = KEY, label: str = "") -> int:
    """2^52 + top 52 bits of the first 8 bytes of HMAC-SHA256(key, "case:<caseid><label>")."""
    digest = hmac.new(key, f"case:{caseid}{label}".encode(), hashlib.sha256).digest()
    return 2**52 + (int.from_bytes(digest[:8], "big") >> 12)


def _off(caseid: int, key: bytes = KEY) -> int:
    """The keyed slot offset: first 8 bytes of HMAC-SHA256(key, "slot:<caseid>") mod 500."""
    digest = hmac.new(key, f"slot:{caseid}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") % 500


def _reports(rows: list[tuple[int, int, int | None, dt.date | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={"primaryid": pl.Int64, "caseid": pl.Int64, "caseversion": pl.Int64, "fda_dt": pl.Date},
        orient="row",
    )


def test_case_pseudonym_is_the_keyed_hmac_in_a_16_digit_range() -> None:
    mapping, collisions = case_pseudonyms([10003554, 10004120], KEY)
    assert mapping == {10003554: _by_hand(10003554), 10004120: _by_hand(10004120)} and collisions == 0
    assert all(2**52 <= p < 2**53 and len(str(p)) == 16 for p in mapping.values())


def test_report_pseudonym_is_case_times_1000_plus_offset_plus_version() -> None:
    # FAERS primaryid = caseid followed by the version: 100035548 is case 10003554, version 8
    ids = pseudonymize_ids(_reports([(100035548, 10003554, 8, D(2015, 5, 1)),
                                     (100035549, 10003554, 9, D(2015, 10, 30))]), KEY)  # fmt: skip
    case, off = _by_hand(10003554), _off(10003554)
    assert ids.reports.sort("primaryid")["report_pseudo"].to_list() == [
        case * SLOTS + off + 8, case * SLOTS + off + 9
    ]  # fmt: skip
    other = pseudonymize_ids(_reports([(100035549, 10003554, 9, D(2015, 10, 30))]), KEY)
    assert other.reports["report_pseudo"].item() == case * SLOTS + off + 9  # the same report, alone
    assert (ids.collisions, ids.slot_conflicts) == (0, 0)
    released = {*ids.reports["report_pseudo"], *ids.reports["case_pseudo"]}
    assert not released & {100035548, 100035549, 10003554}


def test_stable_across_runs_and_quarters_and_different_under_another_key() -> None:
    q1 = pseudonymize_ids(_reports([(11, 1, 1, D(2024, 1, 5)), (21, 2, 1, D(2024, 2, 1))]), KEY)
    q1_again = pseudonymize_ids(_reports([(11, 1, 1, D(2024, 1, 5)), (21, 2, 1, D(2024, 2, 1))]), KEY)
    q2 = pseudonymize_ids(_reports([(12, 1, 2, D(2024, 4, 9)), (31, 3, 1, D(2024, 5, 1))]), KEY)
    assert q1.reports.equals(q1_again.reports)
    case_1 = q1.reports.filter(pl.col("caseid") == 1)["case_pseudo"].item()
    follow_up = q2.reports.filter(pl.col("primaryid") == 12)
    assert follow_up["case_pseudo"].item() == case_1  # the follow-up keeps its case pseudonym
    assert follow_up["report_pseudo"].item() == case_1 * SLOTS + _off(1) + 2
    first = q1.reports.filter(pl.col("primaryid") == 11)["report_pseudo"].item()
    assert first == case_1 * SLOTS + _off(1) + 1 < follow_up["report_pseudo"].item()  # version order
    other = pseudonymize_ids(_reports([(11, 1, 1, D(2024, 1, 5)), (21, 2, 1, D(2024, 2, 1))]), OTHER)
    assert not set(other.reports["case_pseudo"]) & set(q1.reports["case_pseudo"])


def test_legacy_and_duplicate_versions_take_the_next_free_slot_in_order() -> None:
    # legacy AERS: no caseversion → version 0, 1, 2 by fda_dt; a modern version 1 then moves up to 3
    ids = pseudonymize_ids(
        _reports([(7003, 7, None, D(2010, 3, 1)), (7001, 7, None, D(2010, 1, 1)),
                  (7002, 7, None, D(2010, 2, 1)), (70001, 7, 1, D(2013, 1, 1))]),
        KEY,
    )  # fmt: skip
    slots = dict(zip(ids.reports["primaryid"], ids.reports["report_pseudo"] % SLOTS - _off(7), strict=True))
    assert slots == {7001: 0, 7002: 1, 7003: 2, 70001: 3}
    assert ids.slot_conflicts == 3  # 7002 (wanted 0), 7003 (wanted 0), 70001 (wanted 1)


def test_a_forced_collision_is_resolved_deterministically_and_reported() -> None:
    caseids = list(range(5000, 5012))  # 12 cases in 4-bit pseudonyms (16 values): collisions certain
    first, collisions = case_pseudonyms(caseids, KEY, bits=4)
    again, _ = case_pseudonyms(list(reversed(caseids)), KEY, bits=4)
    assert first == again  # the same resolution whatever the input order
    assert len(set(first.values())) == len(caseids) and all(16 <= p < 32 for p in first.values())
    naive = [_by_hand(c) for c in caseids]  # at 52 bits the same ids do not collide
    assert len(set(naive)) == len(caseids)
    plain = {c: 16 + (int.from_bytes(hmac.new(KEY, f"case:{c}".encode(), hashlib.sha256).digest()[:8],
                                          "big") >> 60) for c in caseids}  # fmt: skip
    assert collisions == len(caseids) - len(set(plain.values())) > 0
    kept = [c for c in caseids if first[c] == plain[c]]
    assert len(kept) == len(set(plain.values()))  # one case per colliding value keeps it
    ids = pseudonymize_ids(_reports([(c * 10 + 1, c, 1, None) for c in caseids]), KEY, bits=4)
    assert ids.collisions == collisions and ids.reports["report_pseudo"].n_unique() == len(caseids)
    assert ids.describe()["collisions_resolved"] == collisions


def test_too_many_cases_for_the_width_is_an_input_error() -> None:
    with pytest.raises(InputError, match="17 cases do not fit in 4-bit pseudonyms"):
        case_pseudonyms(range(17), KEY, bits=4)


def test_apply_replaces_ids_and_refuses_unknown_ones() -> None:
    ids = pseudonymize_ids(_reports([(11, 1, 1, None), (21, 2, 1, None)]), KEY)
    frame = pl.DataFrame({"primaryid": [21, 11], "caseid": [2, 1], "pt": ["A", "B"]})
    out = ids.apply(frame)
    assert out.columns == frame.columns and out["pt"].to_list() == ["A", "B"]
    assert out["caseid"].to_list() == [_by_hand(2), _by_hand(1)]
    reports = [_by_hand(c) * SLOTS + _off(c) + 1 for c in (2, 1)]
    assert out["primaryid"].to_list() == reports
    assert ids.apply(pl.DataFrame({"caseid": [1]}))["caseid"].to_list() == [_by_hand(1)]
    with pytest.raises(InputError, match="1 row"):
        ids.apply(pl.DataFrame({"primaryid": [99], "caseid": [9]}))


def test_hmac_words_are_the_leading_bytes_of_the_rfc_2104_hmac() -> None:
    """The padded-key states hashed once give hmac's digests: a 32-byte key, a 100-byte key (hashed
    first, RFC 2104), and ids of different lengths."""
    for key in (KEY, bytes(range(100))):
        numbers = [0, 7, 10003554, 123456789012]
        words = hmac_words(key, b"slot:", numbers)
        expected = [
            int.from_bytes(hmac.new(key, f"slot:{n}".encode(), hashlib.sha256).digest()[:8], "big")
            for n in numbers
        ]
        assert [int(w) for w in words] == expected
    assert hmac_words(KEY, b"case:", []).shape == (0,)


def _pairs(rows: list[tuple[int | None, int | None]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"primaryid": pl.Int64, "caseid": pl.Int64}, orient="row")


def _rows(frame: pl.DataFrame) -> list[tuple[int | None, int | None]]:
    return sorted(frame.rows(), key=lambda r: (r[0] is None, r[0] or 0, r[1] or 0))


def test_distinct_id_pairs_packed_and_as_they_are() -> None:
    """Packed: max caseid 2 has 2 bits, keys 10*4+1 = 41, 11*4+1 = 45, 20*4+2 = 82, three distinct
    pairs unpacked by // 4 and % 4. As they are: a primaryid of 2^61 leaves no room beside 2 bits of
    caseid (2^61 >= 2^(63-2)), a negative id, a null id (two null pairs of case 5 are one pair)."""
    got = distinct_id_pairs([_pairs([(10, 1), (10, 1), (11, 1)]), _pairs([(11, 1), (20, 2)])])
    assert _rows(got) == [(10, 1), (11, 1), (20, 2)]
    assert got.schema == pl.Schema({"primaryid": pl.Int64, "caseid": pl.Int64})
    assert _rows(distinct_id_pairs([_pairs([(7, 0), (7, 0), (8, 0)])])) == [(7, 0), (8, 0)]
    wide = distinct_id_pairs([_pairs([(2**61, 3), (2**61, 3), (2**61, 2)])])
    assert _rows(wide) == [(2**61, 2), (2**61, 3)]
    assert _rows(distinct_id_pairs([_pairs([(-1, 5), (-1, 5), (3, 5)])])) == [(-1, 5), (3, 5)]
    nulls = distinct_id_pairs([_pairs([(None, 5), (None, 5), (None, 6), (4, 5)])])
    assert _rows(nulls) == [(4, 5), (None, 5), (None, 6)]
    assert distinct_id_pairs([_pairs([])]).height == 0


def test_case_table_is_the_pseudonym_map_as_a_frame() -> None:
    """Distinct caseids in increasing order with the formula's pseudonym (duplicates once); at 4 bits the
    17 caseids below cannot fit, and 0..9 collide: the same map and count as case_pseudonyms."""
    table, collisions = case_table(pl.Series([30, 10, 30, 20]), KEY)
    assert table.rows() == [(10, _by_hand(10)), (20, _by_hand(20)), (30, _by_hand(30))]
    assert table.schema == pl.Schema({"caseid": pl.Int64, "case_pseudo": pl.Int64}) and collisions == 0
    small, collided = case_table(pl.Series(range(10)), KEY, bits=4)
    mapping, count = case_pseudonyms(range(10), KEY, bits=4)
    assert dict(small.iter_rows()) == mapping and collided == count > 0
    with pytest.raises(InputError, match="17 cases"):
        case_table(pl.Series(range(17)), KEY, bits=4)
    empty, none = case_table(pl.Series([], dtype=pl.Int64), KEY)
    assert empty.height == 0 and empty.schema == table.schema and none == 0
