"""The multi-process study: settings, the Equinox fix, the analysis, the pod model,
and one small real launch (2 processes x 2 devices) that checks the behaviour the
summary claims: filter_pmap fails across processes, every other method agrees."""

from __future__ import annotations

import pandas as pd
import pytest

from jaxperf.multiprocess import analysis, bug, scaling
from jaxperf.multiprocess.settings import MultiprocessSettings

# --------------------------------------------------------------- settings


def test_quick_preset_is_visible_and_applied():
    presets = MultiprocessSettings.presets()
    assert set(presets["parameter"]) == set(MultiprocessSettings.QUICK)
    settings = MultiprocessSettings.from_parameters({"quick": True, "processes": 4})
    assert settings.scaling_processes == (1, 2) and settings.process_counts == (1, 2, 4)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"processes": 3}, "processes=3 .*a divisor of global_devices=8"),
        ({"scaling_processes": [1, 5]}, "scaling_processes=5"),
        ({"methods": ["jit_shard_map"]}, "methods=.*baseline 'pmap_params'"),
        ({"methods": ["pmap_params", "nope"]}, r"methods\[...\]='nope'"),
        ({"steps": ["train", "sleep"]}, r"steps\[...\]='sleep'"),
        (
            {"transformer_layers": -1},
            r"transformer_layers=-1 is not allowed: .*>= 0 \(0 skips the transformer\)",
        ),
        ({"transformer_layers": "2"}, r"transformer_layers='2' is not allowed"),
        ({"transformer_layers": True}, r"transformer_layers=True is not allowed"),
        ({"transformer_repeats": 0}, r"transformer_repeats=0 is not allowed: expected an integer >= 1"),
    ],
)
def test_bad_settings_are_named(values, message):
    with pytest.raises(ValueError, match=message):
        MultiprocessSettings.from_parameters(values)


def test_worker_config_carries_the_timing_and_both_models_the_transformer_with_its_own_repeats():
    config = MultiprocessSettings(
        mlp_depth=3, repeats=4, transformer_layers=2, transformer_repeats=1
    ).worker_config()
    assert config["models"] == [
        {"kind": "mlp", "size": 3, "repeats": 4},
        {"kind": "transformer", "size": 2, "repeats": 1},
    ]
    assert config["repeats"] == 4


def test_transformer_layers_0_skips_the_transformer_and_the_quick_preset_keeps_it():
    assert MultiprocessSettings(transformer_layers=0).model_names == ["mlp_depth4"]
    quick = MultiprocessSettings.from_parameters({"quick": True})
    assert quick.model_names == ["mlp_depth2", "transformer_1layers"]
    assert [m["kind"] for m in quick.worker_config()["models"]] == ["mlp", "transformer"]


# --------------------------------------------------------------- the fix


def test_fix_diff_changes_exactly_the_two_list_lines():
    diff = bug.fix_diff()
    removed = [line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert [line[1:].strip() for line in removed] == [old for old, _ in bug.FIX]
    assert [line[1:].strip() for line in added] == [new for _, new in bug.FIX]


def test_fixed_filter_pmap_gives_equinox_results_in_one_process_and_restores_equinox():
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxperf import private_api

    original = private_api.equinox_pmap_cache()

    def f(x, tag):
        return {"double": x * 2, "tag": tag}, x.sum()

    x = jnp.arange(3.0)[None].repeat(jax.local_device_count(), 0)
    want = eqx.filter_pmap(f)(x, "t")
    got = bug.fixed(eqx.filter_pmap(f))(x, "t")
    assert jax.tree.structure(got) == jax.tree.structure(want)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)))
    assert private_api.equinox_pmap_cache() is original


# --------------------------------------------------------------- the one-device check


@pytest.mark.parametrize("layers", [1, 2])
def test_one_device_check_passes_the_transformer_train_step_and_fails_it_without_its_all_reduce(layers):
    """The tolerance the study checks with (settings.RTOL/ATOL) holds for the transformer's train
    step on 8 devices, and catches the same step with its all-reduce left out (train_local)."""
    import jax

    from jaxperf import timing
    from jaxperf.dispatch.models import ModelSpec
    from jaxperf.multiprocess import methods, settings, study_worker

    spec = ModelSpec("transformer", layers)
    model, opt_state = spec.build()
    x = spec.batch(jax.device_count())
    ref = methods.reference("train", spec)

    def close(step: str) -> bool:
        runner = methods.build("pmap_params", step, model, opt_state, x)
        got = runner.canonical(timing.block(runner.call()))
        return study_worker.matches(got, ref, rtol=settings.RTOL, atol=settings.ATOL)

    assert close("train")
    assert not close("train_local")
    assert not study_worker.matches((ref[0], ref[1][:-1]), ref, rtol=1.0, atol=1.0)  # a leaf missing


# --------------------------------------------------------------- analysis


def _check(processes, pid, step, method, *, ran=True, digest="a", matches=True, error=""):
    return {
        "processes": processes,
        "process_id": pid,
        "model": "m",
        "step": step,
        "method": method,
        "ran": ran,
        "error": error,
        "digest": digest if ran else None,
        "max_abs_diff_vs_one_device": 0.0 if ran else None,
        "matches_one_device": matches if ran else None,
    }


def test_correctness_needs_every_process_to_agree_and_skips_the_unreduced_step():
    checks = pd.DataFrame(
        [
            _check(2, 0, "train", "pmap_params"),
            _check(2, 1, "train", "pmap_params"),
            _check(2, 0, "train", "jit_shard_map", digest="a"),
            _check(2, 1, "train", "jit_shard_map", digest="b"),
            _check(2, 0, "train", "filter_pmap", ran=False, error="TypeError: unhashable type: 'list'"),
            _check(2, 1, "train", "filter_pmap", ran=False, error="TypeError: unhashable type: 'list'"),
            _check(2, 0, "train_local", "pmap_params", digest="a", matches=None),
            _check(2, 1, "train_local", "pmap_params", digest="b", matches=None),
        ]
    )
    verdicts = analysis.correctness(checks).set_index(["step", "method"])["correct"]
    assert verdicts[("train", "pmap_params")] is True
    assert verdicts[("train", "jit_shard_map")] is False  # processes disagree
    assert verdicts[("train", "filter_pmap")] is False
    assert verdicts[("train_local", "pmap_params")] is None


def test_collective_split_reads_the_three_split_steps():
    table = pd.DataFrame(
        [
            {"processes": 2, "model": "m", "method": "pmap_params", "step": s, "wall_ms_per_call": ms}
            for s, ms in (("train", 10.0), ("train_local", 2.0), ("allreduce", 7.0))
        ]
    )
    split = analysis.collective_split(table).iloc[0]
    assert split["step_without_collective_ms"] == 2.0 and split["allreduce_alone_ms"] == 7.0
    assert split["collective_share"] == pytest.approx(0.8)


# --------------------------------------------------------------- pod model


def test_pod_model_fits_multiprocess_runs_only_and_predicts_per_host_cost():
    rows = [  # host_ms = 0.5 + 0.25 * k at N >= 2; the one-process point lies off the line
        {
            "processes": n,
            "model": "m",
            "step": "train",
            "method": "pmap_params",
            "cpu_ms_per_call": ms,
            "slow": ms,
        }
        for n, ms in ((1, 0.1), (2, 1.5), (4, 1.0))
    ]
    table = pd.DataFrame(rows).rename(columns={"slow": "cpu_ms_per_call_slowest_process"})
    fits = scaling.fit_host_cost(table, global_devices=8)
    assert fits.iloc[0]["host_ms_fixed"] == pytest.approx(0.5)
    assert fits.iloc[0]["host_ms_per_local_device"] == pytest.approx(0.25)
    pod = scaling.predict_pod(fits, hosts=64, local_devices=4).iloc[0]
    assert pod["global_devices"] == 256 and pod["host_ms_per_call"] == pytest.approx(1.5)
    assert pod["host_bound_it_per_s"] == pytest.approx(1000 / 1.5)


# --------------------------------------------------------------- one real launch


def test_two_processes_filter_pmap_fails_and_every_other_method_agrees(tmp_path):
    from jaxperf.multiprocess import run as mp_run

    settings = MultiprocessSettings(
        processes=2,
        scaling_processes=(2,),
        global_devices=4,
        mlp_depth=1,
        transformer_layers=1,
        transformer_repeats=1,
        methods=(
            "pmap_params",
            "filter_pmap",
            "filter_pmap_fixed",
            "cached_filter_pmap",
            "jit_named_sharding",
        ),
        steps=("noop", "train"),
        warmup=0,
        repeats=1,
        calls_per_repeat=1,
        launch_timeout_s=180,
    )
    run = mp_run.run_study(settings, tmp_path)
    # Both models ran, in every process, every step and method (the transformer's blocks live in a list).
    for records in (run.checks, run.timings):
        assert list(dict.fromkeys(records["model"])) == ["mlp_depth1", "transformer_1layers"]
    tf = run.checks[run.checks["model"] == "transformer_1layers"]
    assert len(tf) == 2 * len(settings.steps) * len(settings.methods)  # processes x steps x methods
    assert set(run.timings[run.timings["model"] == "transformer_1layers"]["method"]) == set(
        settings.methods
    ) - {"filter_pmap"}
    verdicts = analysis.correctness(run.checks).set_index(["step", "method"])
    broken = verdicts.xs("filter_pmap", level="method")
    assert not broken["ran_everywhere"].any()
    assert broken["error"].str.contains("unhashable type: 'list'").all()
    others = verdicts.drop(index="filter_pmap", level="method")
    assert others["correct"].all() and set(others["model"]) == {"mlp_depth1", "transformer_1layers"}
    repro = run.repro.set_index(["process_id", "case"])["ok"]
    assert not repro[(0, "jax.pmap(out_axes=[0])")] and repro[(0, "jax.pmap(out_axes=(0,))")]
    assert not repro[(1, "eqx.filter_pmap")] and repro[(1, "eqx.filter_pmap, fixed")]
    assert set(run.timings["method"]) == set(settings.methods) - {"filter_pmap"}

    # The summary built from it: the verdicts, and an issue-ready report with this run's traceback.
    from jaxperf.multiprocess import report

    table = analysis.medians(run.timings)
    pod = scaling.predict_pod(scaling.fit_host_cost(table, settings.global_devices), settings.pod_hosts)
    summary, text = report.build(
        run,
        settings,
        analysis.correctness(run.checks),
        table,
        analysis.ratios(run.timings),
        analysis.collective_split(table),
        pod,
    )
    assert summary["all_but_the_broken_method_correct"] and summary["filter_pmap_fails_across_processes"]
    assert summary["filter_pmap_fixed_correct"]
    assert summary["by_model"]["transformer_1layers"]["could_not_run"] == []
    assert "### transformer, 1 layer (`transformer_1layers`" in text
    assert "TypeError: unhashable type: 'list'" in text and "+    out_axes = (tuple(range(" in text
    assert "global_array_to_host_local_array" in text and "/work/" not in text


def test_the_bug_reports_repro_script_prints_what_it_claims(tmp_path):
    import sys

    from jaxperf.multiprocess import bug, launch

    wrapper = (
        "import os, sys\n"
        "sys.argv = ['repro.py', os.environ['JAXPERF_PROCESS_ID'], os.environ['JAXPERF_COORDINATOR'].split(':')[1]]\n"
        f"exec({bug.REPRO_SCRIPT!r})\n"
    )
    result = launch.run([sys.executable, "-c", wrapper], processes=2, out_dir=tmp_path, timeout_s=120)
    for log in result.logs:
        text = log.read_text()
        assert "jax.pmap, out_axes=(0,): works" in text
        assert "jax.pmap, out_axes=[0]: TypeError: unhashable type: 'list'" in text
        assert "eqx.filter_pmap: TypeError: unhashable type: 'list'" in text


def test_a_recorded_traceback_starts_outside_jaxperf_and_names_no_machine_path():
    import equinox as eqx

    def bad(x):
        raise TypeError("unhashable type: 'list'")

    record = bug.attempt(lambda: eqx.filter_pmap(bad)(__import__("jax.numpy").numpy.ones((1, 2))))
    assert record["ok"] is False and record["error"] == "unhashable type: 'list'"
    assert "multiprocess/bug.py" not in record["traceback"]
    assert 'File "site-packages/equinox/' in record["traceback"]
    assert "/work/" not in record["traceback"].replace('File "site-packages/', "")
