"""The kernel arrays' helpers (issue 18 item 6): dense ids, CSR links, lexsort, tree codes, by hand."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from faers_anon.algorithms._encode import _dense, _distinct, csr_links, lexsort
from faers_anon.algorithms._frame import tree_codes
from hierarchies import HierarchyError, sex_tree


def test_dense_ids_follow_the_sorted_keys_by_presence_or_by_sorting() -> None:
    small = np.array([7, 3, 7, 5, 3], np.int64)  # span 5 <= 8 * 5: the presence table
    assert _dense(small)[0].tolist() == [2, 0, 2, 1, 0] and _dense(small)[1] == 3
    wide = np.array([10**12, -4, 10**12, 0], np.int64)  # span 1e12: sorted (np.unique)
    assert _dense(wide)[0].tolist() == [2, 0, 2, 1] and _dense(wide)[1] == 3
    assert _distinct(small) == 3 and _distinct(wide) == 3
    assert _dense(np.zeros(0, np.int64))[1] == 0 and _distinct(np.zeros(0, np.int64)) == 0


def test_csr_links_sort_only_when_needed() -> None:
    # cases 0 and 2 hold values; case 1 none. Unsorted input: (2, 4), (0, 1), (0, 0)
    ptr, vid, p = csr_links(np.array([2, 0, 0]), np.array([4, 1, 0]), np.array([0.5, 1.0, 0.25]), 3)
    assert ptr.tolist() == [0, 2, 2, 3] and vid.tolist() == [0, 1, 4] and p.tolist() == [0.25, 1.0, 0.5]
    assert vid.dtype == np.int32
    ptr, vid, p = csr_links(np.array([0, 0, 2]), np.array([0, 1, 4]), np.array([0.25, 1.0, 0.5]), 3)
    assert ptr.tolist() == [0, 2, 2, 3] and vid.tolist() == [0, 1, 4]


def test_lexsort_is_numpys_last_key_first_ties_in_index_order() -> None:
    primary = np.array([1, 0, 1, 0, 1])
    second = np.array([0.5, 2.0, -0.0, 2.0, 0.0])  # -0.0 and 0.0 tie, as in numpy
    assert lexsort([second, primary]).tolist() == [1, 3, 2, 4, 0]
    assert lexsort([second, primary]).tolist() == np.lexsort([second, primary]).tolist()


def test_tree_codes_once_per_name_with_missing() -> None:
    tree = sex_tree()
    codes = tree_codes(tree, pl.Series(["F", None, "M", "F"]))
    assert codes.tolist() == [tree.code("F"), tree.missing, tree.code("M"), tree.code("F")]
    with pytest.raises(HierarchyError, match="'X'"):
        tree_codes(tree, pl.Series(["F", "X", "Y"]))
