"""One definition of "the QIDs and their hierarchies" (issue 13): models, methods and metrics share it."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import faers_anon.methods as methods
from faers_anon.algorithms.types import QIDS, QidHierarchies
from faers_anon.anonymize import config, metrics
from faers_anon.errors import ConfigError
from faers_anon.methods import METHODS
from faers_anon.methods.random_anonymization import QIDS as RA_QIDS
from hierarchies import mesh_age_tree, sex_tree


def test_one_qid_names_tuple() -> None:
    assert QIDS == ("age", "sex", "weight")
    assert config.QIDS is QIDS and RA_QIDS is QIDS
    assert config.AnonymizeConfig().qids == QIDS


def test_the_methods_type_is_gone() -> None:
    assert not hasattr(methods, "QidTrees")
    assert not hasattr(methods.base, "QidTrees")


def test_trees_of_a_reader_that_needs_them() -> None:
    h = QidHierarchies.default()
    assert h.age_tree is h.age and h.sex_tree is h.sex and h.count == 3
    no_age = QidHierarchies(age=None, sex=sex_tree())
    with pytest.raises(ConfigError, match="age tree"):
        _ = no_age.age_tree
    with pytest.raises(ConfigError, match="sex tree"):
        _ = QidHierarchies(age=mesh_age_tree(), sex=None).sex_tree


def test_nil_by_qid_names_every_qid() -> None:
    losses = pl.DataFrame(
        {"group_id": [0], "cases": [2], "il_age": [1.0], "il_sex": [0.5], "il_weight": [0.0], "il": [1.5]}
    )
    assert metrics.nil_by_qid(losses) == {"age": 0.5, "sex": 0.25, "weight": 0.0}


def test_a_method_takes_the_engine_hierarchies() -> None:
    """A method is called with the engine's type; a hierarchy without the sex tree is refused."""
    cases = pl.DataFrame(
        {
            "caseid": [1, 2, 3, 4],
            "age_min": [30.0, 31.0, 70.0, None],
            "age_max": [30.0, 31.0, 70.0, None],
            "sex": ["F", "M", "F", None],
            "wt_min": [60.0, None, 80.0, 90.0],
            "wt_max": [60.0, None, 80.0, 90.0],
        }
    )
    mews = METHODS["mews"]
    one = mews(cases, rng=np.random.default_rng(0), trees=QidHierarchies.default())
    two = mews(cases, rng=np.random.default_rng(0))
    assert one.release.equals(two.release)
    with pytest.raises(ConfigError, match="sex tree"):
        mews(cases, rng=np.random.default_rng(0), trees=QidHierarchies(age=mesh_age_tree(), sex=None))
