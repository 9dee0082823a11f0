"""jaxperf_study.goals: a goal is met only when the whole interquartile range clears it, not resolved
when the range holds it, and the README's `:goal>=X` format states the same verdicts."""

import importlib.util
from pathlib import Path

import pytest

from jaxperf_study import goals

ROOT = Path(__file__).resolve().parents[1]


def _readme_tool():
    spec = importlib.util.spec_from_file_location("readme_tool", ROOT / "tools" / "readme.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "stats,goal,expected",
    [
        ({"median": 1.2, "q25": 1.0, "q75": 1.3}, 1.0, "met"),  # inclusive at the lower quartile
        ({"median": 1.2, "q25": 0.99, "q75": 1.3}, 1.0, "tie"),  # the median clears it, the range holds it
        ({"median": 0.9, "q25": 0.8, "q75": 1.0}, 1.0, "tie"),  # the median misses it, the range reaches it
        ({"median": 0.9, "q25": 0.8, "q75": 0.99}, 1.0, "not met"),
        ({"median": 2.0}, 2.0, "met"),  # no quartiles: the median decides
        ({"median": 2.0, "q25": None, "q75": float("nan")}, 2.5, "not met"),
        ({"median": float("nan"), "q25": 1, "q75": 2}, 1.0, None),
        (None, 1.0, None),
    ],
)
def test_judge_at_least(stats, goal, expected):
    assert goals.judge(stats, goal) == expected


@pytest.mark.parametrize(
    "stats,expected",
    [
        ({"median": 1.0, "q25": 0.9, "q75": 1.05}, "met"),  # within 1.05x, inclusive
        ({"median": 1.0, "q25": 0.9, "q75": 1.06}, "tie"),
        ({"median": 1.1, "q25": 1.06, "q75": 1.2}, "not met"),
    ],
)
def test_judge_at_most(stats, expected):
    assert goals.judge(stats, 1.05, at_least=False) == expected


def test_quartiles_out_of_order_with_the_median_still_bracket_it():
    # a median outside its own quartiles (rounded inputs) must not turn a tie into a verdict
    assert goals.judge({"median": 0.95, "q25": 1.1, "q75": 1.2}, 1.0) == "tie"


@pytest.mark.parametrize(
    "cells,expected",
    [
        (["met", "met"], "met"),
        (["met", "tie"], "tie"),
        (["tie", "not met", "met"], "not met"),
        (["met", None], "met"),  # unjudged cells are left out
        ([None], None),
        ([], None),
    ],
)
def test_every(cells, expected):
    assert goals.every(cells) == expected


def test_count_and_text():
    assert goals.count(["met", "tie", None, "met", "not met"]) == {"met": 2, "tie": 1, "not met": 1}
    assert goals.text("tie", False, tie_text="held") == "held"
    # a spread that holds the goal is never stated as a tie (a rerun could land on either side)
    assert goals.text("tie", False) == "not resolved (its spread holds the goal)"
    assert goals.text("met", True) == "not judged (smoke run)"
    assert goals.text(None, False) == "n/a (not measured)"
    with pytest.raises(ValueError, match=r"verdict=True: expected one of"):
        goals.text(True, False)  # a bare boolean is not a verdict


@pytest.mark.parametrize("q25", [0.5, 0.9, 0.99, 1.0, 1.5])
@pytest.mark.parametrize("q75", [0.95, 1.0, 1.01, 2.0])
@pytest.mark.parametrize("median", [0.9, 1.0, 1.2])  # inside, at and outside the quartiles
def test_the_readme_format_states_the_same_verdict(q25, q75, median):
    stat = {"median": median, "q25": min(q25, q75), "q75": max(q25, q75)}
    words = _readme_tool().goal_verdict(stat, 1.0)
    expected = goals.judge(stat, 1.0)
    assert words == expected or (expected == "tie" and words.startswith("not resolved")), (
        stat,
        words,
        expected,
    )


def test_the_readme_states_a_verdict_in_words():
    tool = _readme_tool()
    assert [tool.fmt(v, "verdict") for v in ("met", "tie", "not met")] == ["met", "not resolved", "not met"]
    with pytest.raises(tool.RenderError, match=r"format :verdict needs one of"):
        tool.fmt(True, "verdict")
