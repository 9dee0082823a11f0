"""Notebook 10 (your step): the diagnosis engine on a factory the reader names, its settings'
errors, and what the notebook writes."""

import json

import pytest
from notebook_support import assert_clean_source, run_notebook

from jaxperf_study.dispatch.your_step_settings import SEED_FACTORY, YourStepSettings

NB = "10_your_step"


def test_the_default_is_the_seeds_step():
    from pathlib import Path

    from jaxperf.diagnosis import factory

    nb = json.loads((Path(__file__).parents[1] / "notebooks" / f"{NB}.ipynb").read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    found = {}
    exec("".join(cell["source"]), {}, found)  # the notebook's parameters cell: plain assignments
    assert found["step_factory"] == SEED_FACTORY == YourStepSettings().step_factory
    made = factory.build(SEED_FACTORY)
    assert {"step", "args"} <= set(made)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"step_factory": "mypkg.train"}, "step_factory='mypkg.train' is not allowed"),
        ({"step_kwargs": [1, 2]}, "step_kwargs="),
        ({"precision": 1.5}, "precision=1.5"),
        ({"max_seconds": 0}, "max_seconds=0"),
    ],
)
def test_bad_parameters_are_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        YourStepSettings.from_parameters(kwargs)


def test_source_notebook_is_clean():
    assert_clean_source(NB)


@pytest.mark.notebook
def test_the_notebook_diagnoses_the_factory_it_is_given(tmp_path):
    run_notebook(
        NB,
        tmp_path,
        quick=True,
        step_factory="jaxperf_study.dispatch.examples:equinox_train",
        step_kwargs={"depth": 1, "width": 8, "batch": 8},
    )
    study = tmp_path / "results" / "cpu" / "your_step"
    summary = json.loads((study / "summary.json").read_text())
    assert summary["kind"] == "eqx.filter_jit" and summary["step_factory"].endswith(":equinox_train")
    assert summary["loader"] is True and summary["differs"] == {}
    timed = {r["variant"] for r in summary["per_call_ms"]}
    assert {
        "eqx.filter_jit (yours)",
        "jaxperf.cached_filter_jit",
        "jax.jit on the partitioned state",
    } <= timed
    assert (tmp_path / "figures" / "cpu" / "your_step_diagnosis.png").stat().st_size > 0
    text = (study / "summary.md").read_text()
    assert text.startswith("**eqx.filter_jit step") and "Environment" in text
