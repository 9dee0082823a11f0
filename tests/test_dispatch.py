"""The dispatch study: every method computes the same pytree, bad parameters
are clear errors, and the notebook writes what it promises."""

import json

import pytest
from conftest import assert_clean_source, run_notebook

from jaxperf import backend, dispatch, timing
from jaxperf.models import ModelSpec, count_leaves

NB = "01_filter_pmap_dispatch"


@pytest.mark.parametrize("step", dispatch.STEPS)
def test_every_method_computes_the_same_pytree(step):
    spec = ModelSpec("mlp", 2)
    model, opt_state = spec.build()
    x = spec.batch(8)
    runners = {m: dispatch.build_runner(m, step, model, opt_state, x, 8) for m in dispatch.METHODS}
    dispatch.check_runners(runners, reference=dispatch.BASELINE)  # raises on any mismatch


def test_check_runners_catches_a_wrong_method():
    spec = ModelSpec("mlp", 1)
    model, opt_state = spec.build()
    x = spec.batch(8)
    good = dispatch.build_runner("pmap_params", "train", model, opt_state, x, 8)
    wrong = dispatch.build_runner("filter_pmap", "noop", model, opt_state, x, 8)  # no update applied
    with pytest.raises(AssertionError, match="'filter_pmap'"):
        dispatch.check_runners({"pmap_params": good, "filter_pmap": wrong}, reference="pmap_params")


def test_transformer_static_argnums_is_reported_not_raised():
    cfg = timing.TimingConfig(warmup=0, repeats=1, number=1)
    result = dispatch.sweep(
        [ModelSpec("transformer", 1)], ["pmap_params", "pmap_static_argnums"], ["noop"], 8, cfg
    )
    assert list(result.failures["method"]) == ["pmap_static_argnums"]
    assert "Non-hashable static arguments" in result.failures["error"].iloc[0]
    assert set(result.timings["method"]) == {"pmap_params"}


def test_leaf_counts_grow_with_depth():
    counts = [count_leaves(*ModelSpec("mlp", d).build()) for d in (1, 2, 4)]
    assert counts == [13, 19, 31]  # (depth+1) Linear layers x (w, b) x (param, mu, nu) + count


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"methods": ["filter_pmap", "pmap_params", "warp_drive"]}, "methods\\[...\\]='warp_drive'"),
        ({"methods": ["filter_pmap"]}, "baseline 'pmap_params'"),
        ({"steps": ["noop", "sleep"]}, "steps\\[...\\]='sleep'"),
        ({"repeats": 0}, "repeats=0"),
        ({"mlp_depths": [4, 0]}, "mlp_depths"),
        ({"quick": "yes"}, "quick='yes'"),
    ],
)
def test_bad_parameters_are_clear_errors(kwargs, match):
    params = dict(
        quick=False,
        mlp_depths=[1],
        transformer_layers=[],
        steps=["noop"],
        methods=["filter_pmap", "pmap_params"],
        warmup=0,
        repeats=1,
        calls_per_repeat=1,
        breakdown_calls=1,
    )
    params.update(kwargs)
    with pytest.raises(ValueError, match=match):
        dispatch.plan(**params)


def test_bad_backend_and_device_counts():
    with pytest.raises(ValueError, match="backend='quantum'.*'auto', 'cpu', 'gpu', 'tpu'"):
        backend.configure("quantum")
    spec = ModelSpec("mlp", 1)
    model, opt_state = spec.build()
    with pytest.raises(ValueError, match="n_devices=64.*at most 8"):
        dispatch.build_runner("pmap_params", "noop", model, opt_state, spec.batch(64), 64)
    info = backend.configure("cpu", 8)
    with pytest.raises(ValueError, match="devices=9 .*at most 8"):
        backend.require_devices(9, info)
    with pytest.raises(RuntimeError, match="host_devices=4"):
        backend.configure("cpu", 4)  # JAX already started with 8


def test_backend_cli_names_a_bad_device_count(capsys):
    assert backend._main(["cpu", "eight"]) == 1
    assert "host_devices='eight'" in capsys.readouterr().err


def test_source_notebook_is_clean():
    assert_clean_source(NB)


@pytest.mark.notebook
def test_quick_notebook_run_writes_its_outputs(tmp_path):
    run_notebook(NB, tmp_path, quick=True)
    study_dir = tmp_path / "results" / "cpu" / "dispatch"
    for name in ("timings", "unsupported", "breakdown_stages", "breakdown_cprofile", "fix_ratios"):
        assert (study_dir / f"{name}.csv").is_file()
        sidecar = json.loads((study_dir / f"{name}.json").read_text())
        assert sidecar["provenance"]["device_count"] == 8
        assert sidecar["provenance"]["packages"]["equinox"] == "0.13.8"
    figures = tmp_path / "figures" / "cpu"
    for fig in ("it_per_s_vs_leaves", "host_overhead_vs_leaves", "breakdown", "fix_speedup"):
        for ext in ("png", "svg", "csv"):
            assert (figures / f"dispatch_{fig}.{ext}").stat().st_size > 0
    summary = json.loads((study_dir / "summary.json").read_text())
    assert summary["provenance"]["parameters"]["quick"] is True
    methods = {(r["step"], r["method"]) for r in summary["results"]}
    assert {("noop", "filter_pmap"), ("train", "cached_filter_pmap")} <= methods
    pmap_rows = [r for r in summary["results"] if r["method"] == "pmap_params"]
    assert all(r["ratio_to_pmap_params"]["median"] == 1.0 for r in pmap_rows)
    assert all(r["it_per_s"]["median"] > 0 and r["leaves"] > 0 for r in summary["results"])
    assert {g["model"] for g in summary["fix"]} == {"mlp_depth16", "transformer_1layers"}
    text = (study_dir / "summary.md").read_text()
    assert "equinox#192" in text and "jax.print_environment_info" not in text and "jaxlib" in text
