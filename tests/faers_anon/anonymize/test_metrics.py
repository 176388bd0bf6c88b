"""NIL, per-QID NIL, DR and group sizes on a hand-worked partition (SPEC §8)."""

from __future__ import annotations

import polars as pl
import pytest

from faers_anon.algorithms import QidHierarchies
from faers_anon.anonymize import metrics

CASES = pl.DataFrame(
    {
        "caseid": [1, 2, 3, 4, 5],
        "age_min": [30.0, 40.0, 35.0, None, None],
        "age_max": [30.0, 40.0, 35.0, None, None],
        "sex": ["F", "F", "M", "M", None],
        "wt_min": [60.0, 80.0, None, None, None],
        "wt_max": [60.0, 80.0, None, None, None],
    }
)
# group 0 = {1, 2}: one MeSH leaf, F, weight [60, 80] = the whole data range -> IL = 2 * (0 + 0 + 1) = 2
# group 1 = {3, 4, 5}: age known + missing -> root (1), sex M + missing -> * (1), weight all missing (0)
#           -> IL = 3 * (1 + 1 + 0) = 6
PARTITION = pl.DataFrame(
    {
        "caseid": [1, 2, 3, 4, 5],
        "group_id": [0, 0, 1, 1, 1],
        "age_group": ["Adult, 25-44 years"] * 2 + ["*"] * 3,
        "age_min": [25.0, 25.0, 0.0, 0.0, 0.0],
        "age_max": [45.0, 45.0, None, None, None],
        "sex": ["F", "F", "*", "*", "*"],
        "wt_min": [60.0, 60.0, None, None, None],
        "wt_max": [80.0, 80.0, None, None, None],
    }
)
PROBS = pl.DataFrame({"caseid": [1, 2, 3, 4], "value": ["A", "A", "B", "C"], "p": [1.0, 1.0, 0.5, 1.0]})
THETAS = pl.DataFrame({"value": ["A", "B"], "theta": [0.5, 0.5]})


def test_information_loss_and_nil() -> None:
    losses = metrics.information_loss(PARTITION, CASES, hierarchies=QidHierarchies.default())
    assert losses.get_column("il").to_list() == pytest.approx([2.0, 6.0])
    assert losses.get_column("il_weight").to_list() == pytest.approx([2.0, 0.0])
    assert metrics.nil(losses, qids=3) == pytest.approx(8 / 15)
    assert metrics.nil_by_qid(losses) == pytest.approx({"age": 0.6, "sex": 0.6, "weight": 0.4})


def test_mixed_weight_is_full_loss_and_domain_override() -> None:
    part = PARTITION.with_columns(pl.Series("group_id", [0, 1, 1, 1, 1]))
    hier = QidHierarchies(age=None, sex=None, weight=True, weight_domain=(0.0, 100.0))
    losses = metrics.information_loss(part, CASES, hierarchies=hier)
    assert losses.get_column("il").to_list() == pytest.approx([0.0, 4.0])  # group 0 a point; group 1 mixed
    assert metrics.nil(losses, qids=1) == pytest.approx(4 / 5)


def test_confidence_and_dangerous_ratio() -> None:
    conf = metrics.group_confidence(PARTITION, PROBS)
    assert conf.rows() == [(0, "A", 1.0), (1, "B", pytest.approx(1 / 6)), (1, "C", pytest.approx(1 / 3))]
    assert metrics.dangerous_ratio(PARTITION, PROBS, THETAS) == 0.5  # C is unprotected
    assert metrics.dangerous_ratio(PARTITION.head(0), PROBS, THETAS) == 0.0


def test_group_sizes_and_share_k() -> None:
    sizes = metrics.group_sizes(PARTITION)
    assert sizes.rows() == [(2, 1, 2), (3, 1, 3)]
    assert metrics.share_exactly_k(PARTITION, k=2) == pytest.approx(0.4)
    assert metrics.share_exactly_k(PARTITION.head(0), k=2) == 0.0
    empty = metrics.information_loss(PARTITION.head(0), CASES, hierarchies=QidHierarchies.default())
    assert metrics.nil(empty, qids=3) == 0.0


def test_field_nil_added_after_is_the_mean_over_every_qid() -> None:
    sizes = pl.DataFrame(schema={"size": pl.UInt32, "groups": pl.Int64, "cases": pl.Int64})
    base = metrics.Measures(
        nil=0.5, nil_by_qid={"age": 0.25, "sex": 0.5, "weight": 0.75}, dr=0.0, dangerous_groups=0, groups=2,
        k_achieved=3, n_units=6, group_sizes=sizes, share_k=1.0,
    )  # fmt: skip
    # NIL = (0.5 * 3 + 0.2 + 0.8) / (3 + 2) = 2.5 / 5
    both = metrics.with_field_nil(base, {"occr_country": 0.2, "fda_dt": 0.8})
    assert both.nil == 0.5 and list(both.nil_by_qid) == ["age", "sex", "weight", "occr_country", "fda_dt"]
    assert metrics.with_field_nil(base, {"fda_dt": 1.0}).nil == 0.625  # (1.5 + 1) / 4
    assert metrics.with_field_nil(base, {}) is base and both.groups == 2 and both.k_achieved == 3


def test_dangerous_groups_take_a_values_smaller_theta_and_ignore_unlisted_values() -> None:
    # conf(1 -> B) = 0.5 / 3 = 1/6, conf(1 -> C) = 1/3, conf(0 -> A) = 1. B listed twice (0.5 and 0.1): 0.1
    # counts, so group 1 is dangerous through B; C unlisted (theta 1); D listed but reached by no case
    thetas = pl.DataFrame({"value": ["B", "A", "B", "D"], "theta": [0.5, 1.0, 0.1, 0.0]})
    assert metrics.dangerous_groups(PARTITION, PROBS, thetas) == 1
    assert metrics.dangerous_groups(PARTITION, PROBS, thetas.head(2)) == 0  # 1/6 <= 0.5, 1 <= 1
    # a case in two groups counts in both: group 0 = {1, 2, 3} now holds B at 0.5 / 3 > 0.1 too
    split = pl.concat(
        [PARTITION.select("caseid", "group_id"), pl.DataFrame({"caseid": [3], "group_id": [0]})]
    )
    assert metrics.dangerous_groups(split, PROBS, thetas) == 2
    assert metrics.dangerous_groups(PARTITION, PROBS, thetas.head(0)) == 0
