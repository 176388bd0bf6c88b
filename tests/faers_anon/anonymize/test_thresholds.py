"""θ* settings: uniform, level-wise file, frequency rule, infeasible values (SPEC §5)."""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl
import pytest

from faers_anon.anonymize.thresholds import (
    build_thresholds,
    frequency_thetas,
    load_level_file,
    value_shares,
    with_declared_values,
)
from faers_anon.errors import ConfigError, InfeasibleThetaError, InputError

# 4 cases: A in 3 of them (share 0.75), B with p 0.5 in 2 (share 0.25), C in 1 (0.25)
PROBS = pl.DataFrame(
    {
        "caseid": [1, 2, 3, 1, 2, 4],
        "value": ["A", "A", "A", "B", "B", "C"],
        "p": [1.0, 1.0, 1.0, 0.5, 0.5, 1.0],
    }
)


def _theta(t: pl.DataFrame) -> dict[str, tuple[float, str]]:
    return {v: (th, a) for v, th, a in t.select("value", "theta", "action").iter_rows()}


def test_shares() -> None:
    shares = dict(value_shares(PROBS, 4).iter_rows())
    assert shares == pytest.approx({"A": 0.75, "B": 0.25, "C": 0.25})
    assert value_shares(PROBS, 0).height == 0


def test_uniform_error_names_values_and_shares() -> None:
    with pytest.raises(InfeasibleThetaError, match=r"'A' \(theta 0.5 < share 0.750\)") as err:
        build_thresholds(PROBS, 4, rule="uniform", theta=0.5)
    assert set(err.value.shares) == {"A"}


def test_raise_theta_and_suppress(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        raised = build_thresholds(PROBS, 4, theta=0.5, on_infeasible="raise-theta")
    assert "1 infeasible thresholds raised to their share" in caplog.text
    assert _theta(raised.frame) == {"A": (0.75, "raised"), "B": (0.5, "protected"), "C": (0.5, "protected")}
    assert raised.thetas == {"A": 0.75, "B": 0.5, "C": 0.5}
    # with k, one case of slack per group of k: θ_A = 0.75 + 1/5
    margin = build_thresholds(PROBS, 4, theta=0.5, on_infeasible="raise-theta", k=5)
    assert margin.thetas["A"] == pytest.approx(0.95)
    capped = build_thresholds(PROBS, 4, theta=0.5, on_infeasible="raise-theta", k=2)
    assert capped.thetas == {"B": 0.5, "C": 0.5}  # 0.75 + 1/2 caps at 1: A is no longer protected
    suppressed = build_thresholds(PROBS, 4, theta=0.5, on_infeasible="suppress")
    assert _theta(suppressed.frame)["A"] == (1.0, "suppressed")
    assert suppressed.thetas == {"B": 0.5, "C": 0.5} and suppressed.count("suppressed") == 1


def test_frequency_rule_is_monotone_and_feasible() -> None:
    t = build_thresholds(PROBS, 4, rule="frequency", theta=0.2, slope=1.0)
    got = _theta(t.frame)
    assert got["A"] == (pytest.approx(0.95), "protected") and got["B"][0] == pytest.approx(0.45)
    capped = frequency_thetas(value_shares(PROBS, 4), theta=0.5, slope=2.0)
    assert dict(capped.select("value", "theta").iter_rows())["A"] == 1.0
    with pytest.raises(ConfigError, match="slope"):
        frequency_thetas(value_shares(PROBS, 4), theta=0.5, slope=-1.0)


def test_level_file(tmp_path: Path) -> None:
    path = tmp_path / "levels.csv"
    path.write_text(
        "# classes first\nvalue,class,theta\n*,high,0.8\n*,non-sensitive,1\n*,,0.9\n"
        "a,high,\nc ,non-sensitive,\nb,,0.3\n",
        encoding="utf-8",
    )
    table = load_level_file(path)
    assert dict(table.iter_rows()) == {"*": 0.9, "A": 0.8, "B": 0.3, "C": 1.0}
    t = build_thresholds(PROBS, 4, rule="level", theta=0.5, theta_file=path)
    assert _theta(t.frame) == {"A": (0.8, "protected"), "B": (0.3, "protected"), "C": (1.0, "unprotected")}
    assert t.thetas == {"A": 0.8, "B": 0.3}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("value,theta\nA,1.5\n", r"theta 1.5 not in \(0, 1\]"),
        ("value,class,theta\nA,high,\n", "class 'high' has no"),
        ("value,class,theta\nA,high,0.2\n*,high,0.3\n", "a value row names a class or a theta, not both"),
        ("value,class,theta\nA,,\n", "a value row needs a class or a theta"),
        ("value,theta\nA,0.2\na,0.3\n", "listed twice"),
        ("name,theta\nA,0.2\n", "header must have"),
        ("value,class\n*,high\n", "a '\\*' row needs a theta"),
    ],
)
def test_level_file_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        load_level_file(path)


def test_bad_options() -> None:
    with pytest.raises(ConfigError, match="unknown 'median'"):
        build_thresholds(PROBS, 4, rule="median")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="needs a theta file"):
        build_thresholds(PROBS, 4, rule="level")
    with pytest.raises(ConfigError, match="on_infeasible"):
        build_thresholds(PROBS, 4, on_infeasible="ignore")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"theta must be in \(0, 1\]"):
        build_thresholds(PROBS, 4, theta=0.0)


def test_every_value_of_the_sensitive_attributes_is_listed_with_its_decision() -> None:
    # 4 cases; P(s | c) reached only HEADACHE (case 1's indication) and FEVER (E through case 2's drug)
    probabilities = pl.DataFrame({"caseid": [1, 2], "value": ["HEADACHE", "FEVER"], "p": [1.0, 0.5]})
    thresholds = build_thresholds(probabilities, 4, theta=0.6)
    cases = pl.DataFrame(
        {
            "caseid": [1, 2, 3, 4],
            "indications": [["HEADACHE", "PRODUCT USED FOR UNKNOWN INDICATION"], [], None,
                            ["PRODUCT USED FOR UNKNOWN INDICATION"]],
            "reactions": [["OFF LABEL USE"], [], [], []],
        }
    )  # fmt: skip
    knowledge = pl.DataFrame({"drug": ["D", "D"], "disease": ["Fever", "Rare disease"], "weight": [0.5, 0.5]})
    listed = with_declared_values(thresholds, cases, knowledge, sensitive=("indications", "diseases"))
    assert listed.frame.rows() == [
        ("FEVER", 0.6, 0.125, "protected", None),
        ("HEADACHE", 0.6, 0.25, "protected", None),
        ("PRODUCT USED FOR UNKNOWN INDICATION", 1.0, 0.5, "not-sensitive", "filler term: names no condition"),
        ("RARE DISEASE", 1.0, 0.0, "unreached", "no case reaches it (P(s) = 0)"),
    ]  # reactions are not sensitive here: OFF LABEL USE is not a value of a sensitive attribute
    assert listed.thetas == thresholds.thetas == {"FEVER": 0.6, "HEADACHE": 0.6}
    both = ("indications", "reactions")
    with_reactions = with_declared_values(thresholds, cases, knowledge, sensitive=both)
    assert ("OFF LABEL USE", 1.0, 0.25, "not-sensitive", "filler term: names no condition") in (
        with_reactions.frame.rows()
    )
    assert "RARE DISEASE" not in with_reactions.frame["value"].to_list()
