"""The dispatch study: every method (with and without donation) computes the same
pytree, bad parameters are clear errors, and the notebook writes what it promises."""

import json

import pytest
from notebook_support import assert_clean_source, run_notebook

from jaxperf.dispatch import (
    BASELINE,
    METHODS,
    STEPS,
    DispatchSettings,
    ModelSpec,
    build_runner,
    check_runners,
    count_leaves,
    inner_call,
    variant_name,
)
from jaxperf.dispatch import sweep as dispatch_sweep

NB = "01_filter_pmap_dispatch"


@pytest.mark.parametrize("step", STEPS)
def test_every_method_computes_the_same_pytree_with_and_without_donation(step):
    spec = ModelSpec("mlp", 2)
    model, opt_state = spec.build()
    x = spec.batch(8)
    runners = {
        variant_name(m, d): build_runner(m, step, model, opt_state, x, 8, donate=d)
        for d in (False, True)
        for m in METHODS
    }
    check_runners(runners, reference=BASELINE)  # raises on any mismatch
    for runner in runners.values():  # a donated runner keeps running on its own outputs
        runner.call()
        runner.call()


def test_donated_runner_leaves_the_callers_inputs_alive():
    spec = ModelSpec("mlp", 1)
    model, opt_state = spec.build()
    runner = build_runner("jit_single_device", "train", model, opt_state, spec.batch(8), 8, donate=True)
    runner.call()
    runner.call()
    assert not model.layers[0].weight.is_deleted()


def test_check_runners_catches_a_wrong_method():
    spec = ModelSpec("mlp", 1)
    model, opt_state = spec.build()
    x = spec.batch(8)
    good = build_runner("pmap_params", "train", model, opt_state, x, 8)
    wrong = build_runner("filter_pmap", "noop", model, opt_state, x, 8)  # no update applied
    with pytest.raises(AssertionError, match="'filter_pmap'"):
        check_runners({"pmap_params": good, "filter_pmap": wrong}, reference="pmap_params")


def test_transformer_static_argnums_is_reported_not_raised():
    settings = DispatchSettings(
        mlp_depths=(1,),
        transformer_layers=(1,),
        steps=("noop",),
        methods=("pmap_params", "pmap_static_argnums"),
        donate=(False,),
        warmup=0,
        repeats=1,
        calls_per_repeat=1,
    )
    result = dispatch_sweep.run(settings, 8)
    failures = result.failures[result.failures["model"] == "transformer_1layers"]
    assert list(failures["method"]) == ["pmap_static_argnums"]
    assert "Non-hashable static arguments" in failures["error"].iloc[0]
    timed = result.timings[result.timings["model"] == "transformer_1layers"]
    assert set(timed["variant"]) == {"pmap_params"}
    assert {"method", "donated", "variant"} <= set(result.timings.columns)


def test_leaf_counts_grow_with_depth():
    counts = [count_leaves(*ModelSpec("mlp", d).build()) for d in (1, 2, 4)]
    assert counts == [13, 19, 31]  # (depth+1) Linear layers x (w, b) x (param, mu, nu) + count


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"methods": ["filter_pmap", "pmap_params", "warp_drive"]}, "methods\\[...\\]='warp_drive'"),
        ({"methods": ["filter_pmap"]}, "baseline 'pmap_params'"),
        ({"steps": ["noop", "sleep"]}, "steps\\[...\\]='sleep'"),
        ({"steps": []}, "steps=()"),
        ({"repeats": 0}, "repeats=0"),
        ({"mlp_depths": [4, 0]}, "mlp_depths"),
        ({"quick": "yes"}, "quick='yes'"),
        ({"donate": ["yes"]}, "donate="),
        ({"breakdown_calls": 0}, "breakdown_calls=0"),
    ],
)
def test_bad_parameters_are_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DispatchSettings.from_parameters(kwargs)


def test_quick_preset_replaces_the_sizes_and_is_visible():
    settings = DispatchSettings.from_parameters({"quick": True, "mlp_depths": [1, 2]})
    assert settings.mlp_depths == (16,) and settings.repeats == 3
    assert settings.as_dict()["mlp_depths"] == [16]  # what ran, not what was asked
    presets = DispatchSettings.presets()
    assert set(presets["parameter"]) == set(DispatchSettings.QUICK)
    assert [s.name for s in settings.specs] == ["mlp_depth16", "transformer_1layers"]


def test_bad_device_counts():
    spec = ModelSpec("mlp", 1)
    model, opt_state = spec.build()
    with pytest.raises(ValueError, match="n_devices=64.*at most 8"):
        build_runner("pmap_params", "noop", model, opt_state, spec.batch(64), 64)
    with pytest.raises(ValueError, match="method='warp'"):
        build_runner("warp", "noop", model, opt_state, spec.batch(8), 8)


def test_source_notebook_is_clean():
    assert_clean_source(NB)


#: The methods the quick run's checks below read: the seed's two, the fix and the packed path
#: (every method is run and checked against the reference in the unit tests above; the full
#: twelve would more than double this run, the suite's longest).
QUICK_METHODS = ["filter_pmap", "pmap_params", "cached_filter_pmap", "packed_pmap", "packed_jit"]


@pytest.mark.notebook
def test_quick_notebook_run_writes_its_outputs(tmp_path):
    run_notebook(NB, tmp_path, quick=True, methods=QUICK_METHODS)
    study_dir = tmp_path / "results" / "cpu" / "dispatch"
    for name in (
        "timings",
        "unsupported",
        "breakdown_stages",
        "breakdown_cprofile",
        "inner_call_ladder",
        "fix_ratios",
    ):
        assert (study_dir / f"{name}.csv").is_file()
        sidecar = json.loads((study_dir / f"{name}.json").read_text())
        assert sidecar["provenance"]["device_count"] == 8
        assert sidecar["provenance"]["packages"]["equinox"] == "0.13.8"
    figures = tmp_path / "figures" / "cpu"
    for fig in (
        "it_per_s_vs_leaves",
        "methods_it_per_s_vs_leaves",
        "donation",
        "host_overhead_vs_leaves",
        "breakdown",
        "inner_call",
        "fix_speedup",
    ):
        for ext in ("png", "svg", "csv"):
            assert (figures / f"dispatch_{fig}.{ext}").stat().st_size > 0
    summary = json.loads((study_dir / "summary.json").read_text())
    assert summary["provenance"]["parameters"]["quick"] is True
    assert summary["provenance"]["parameters"]["mlp_depths"] == [16]
    assert summary["judged"] is False
    methods = {(r["step"], r["method"], r["donated"]) for r in summary["results"]}
    assert {("noop", "filter_pmap", False), ("train", "cached_filter_pmap", True)} <= methods
    assert {("noop", "packed_pmap", True), ("train", "packed_jit", False)} <= methods
    pmap_rows = [r for r in summary["results"] if r["method"] == "pmap_params"]
    assert all(r["ratio_to_pmap_params"]["median"] == 1.0 for r in pmap_rows)
    assert all(r["it_per_s"]["median"] > 0 and r["leaves"] > 0 for r in summary["results"])
    assert {g["model"] for g in summary["fix"]} == {"mlp_depth16", "transformer_1layers"}
    fast = {(r["method"], r["donated"]) for r in summary["fast_path"]}
    assert fast == {(m, d) for m in ("packed_pmap", "packed_jit") for d in (False, True)}
    text = (study_dir / "summary.md").read_text()
    assert "equinox#192" in text and "Smoke run" in text and "jaxlib" in text
    # the inner call's ladder and the stage totals reach summary.json, per model that was split
    breakdown = summary["breakdown"]
    assert set(breakdown) == {"mlp_depth16", "transformer_1layers"}
    for b in breakdown.values():
        assert b["whole_call_ms"]["median"] > 0 and b["pmap_params_call_ms"]["median"] > 0
        assert set(b["inner_call"]["cpu_ms"]) == set(inner_call.RUNGS)
        assert b["inner_call"]["sizes"]["output_copies"] >= 2
