"""The runs-ahead study (notebook 07, issue 21): the verdict rule on synthetic timings, the
loader's cost parameter and bad inputs, the seed's loop proving every method equal to
jax.jit, the proposed Equinox change (never blocking a function without a check, still
raising Equinox's error for one with a check), the analysis and the summary, and one
quick run of the notebook. No test asserts a timing."""

from __future__ import annotations

import json

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from notebook_support import assert_clean_source, run_notebook

from jaxperf import markdown, records
from jaxperf import runs_ahead as verdict
from jaxperf.dispatch import METHODS, ModelSpec, build_runner
from jaxperf.dispatch.runahead import (
    eqx_fix,
    loader,
    loop_analysis,
    report,
    repro,
    seed_loop,
    setups,
    summary_md,
)
from jaxperf.dispatch.runahead.settings import RunaheadSettings
from jaxperf.dispatch.sweep import same_result

NB = "07_filter_jit_runahead"


# ---------------------------------------------------------------- the verdict rule


@pytest.mark.parametrize(
    "ratios, expected",
    [
        ([0.01, 0.02, 0.05, 0.3], verdict.RUNS_AHEAD),
        ([0.9, 1.0, 1.1, 0.4], verdict.WAITS),  # one low pair does not move the lower quartile past 0.5
        ([0.2, 0.4, 0.6, 0.9], verdict.UNCLEAR),
    ],
)
def test_the_rule_reads_the_quartiles_against_one_boundary(ratios, expected):
    label, margin = verdict.judge(ratios, reference_q75=0.05)
    assert label == expected
    q25, _, q75 = verdict.quartiles(ratios)
    if expected == verdict.RUNS_AHEAD:
        assert margin == pytest.approx(verdict.BOUNDARY - q75)
    elif expected == verdict.WAITS:
        assert margin == pytest.approx(q25 - verdict.BOUNDARY)
    else:
        assert np.isnan(margin)


def test_a_step_too_light_for_the_reference_is_not_judged():
    assert verdict.judge([1.0, 1.0, 1.0], reference_q75=0.3)[0] == verdict.NOT_JUDGED
    assert verdict.judge([1.0, 1.0, 1.0], reference_q75=float("nan"))[0] == verdict.NOT_JUDGED
    assert verdict.judge([1.0, 1.0, 1.0], reference_q75=0.2)[0] == verdict.WAITS


def test_the_rule_rejects_what_is_not_a_ratio_of_durations():
    with pytest.raises(ValueError, match="ratios="):
        verdict.judge([])
    with pytest.raises(ValueError, match="ratios="):
        verdict.judge([0.1, -0.2])
    with pytest.raises(ValueError, match="df="):
        verdict.with_ratio(pd.DataFrame({"wall_s_per_call": [1.0]}))


def _timings(
    ratios: dict[str, list[float]], wall: float = 0.02, drift: list[float] | None = None
) -> pd.DataFrame:
    rows = []
    for name, values in ratios.items():
        for repeat, r in enumerate(values):
            scale = drift[repeat] if drift else 1.0  # a shared machine slows both loops of a pair alike
            rows.append(
                dict(
                    variant=name,
                    repeat=repeat,
                    wall_s_per_call=wall * scale,
                    dispatch_s_per_call=r * wall * scale,
                )
            )
    return pd.DataFrame(rows)


def test_verdicts_per_variant_and_the_same_under_drift_that_hits_both_loops_of_a_pair():
    ratios = {"jax.jit": [0.01, 0.02, 0.01, 0.03], "eqx.filter_jit": [1.0, 0.97, 1.02, 0.99]}
    calm = verdict.verdicts(_timings(ratios), reference="jax.jit")
    noisy = verdict.verdicts(_timings(ratios, drift=[1.0, 1.4, 0.7, 1.9]), reference="jax.jit")
    for table in (calm, noisy):
        got = dict(zip(table["variant"], table["verdict"]))
        assert got == {"jax.jit": verdict.RUNS_AHEAD, "eqx.filter_jit": verdict.WAITS}
    assert calm["ratio_median"].round(6).tolist() == noisy["ratio_median"].round(6).tolist()
    alone = verdict.verdicts(_timings({"eqx.filter_jit": [1.0, 1.0]}), reference="jax.jit")
    assert alone["verdict"].tolist() == [verdict.NOT_JUDGED]  # no reference in its group


# ---------------------------------------------------------------- the loader and the loop's inputs


@pytest.mark.parametrize("bad", [-1, -0.5, float("nan"), float("inf"), "5", None, True, [1]])
def test_a_loader_cost_that_is_negative_or_not_a_number_is_a_clear_error(bad):
    with pytest.raises(ValueError, match=r"cost_fractions\[1\]="):
        loader.check_costs("cost_fractions", [0.0, bad])
    with pytest.raises(ValueError, match="loader_cost_fractions"):
        RunaheadSettings(loader_cost_fractions=(0.0, bad))
    with pytest.raises(ValueError, match="cost_s="):
        loader.passes_for(bad, 1e-4)


def test_the_loaders_cost_parameter_sets_its_work_and_not_its_batches():
    assert loader.passes_for(0.0, 1e-4) == 0
    assert loader.passes_for(5e-3, 1e-4) == 50
    with pytest.raises(ValueError, match="pass_s="):
        loader.passes_for(1e-3, 0.0)
    pool = loader.make_pool((4, 3), size=2)
    idle, busy = loader.Loader(pool, 0, 5), loader.Loader(pool, 40, 5)
    idle_batches, busy_batches = list(idle), list(busy)
    assert len(idle_batches) == len(busy_batches) == 5
    for a, b, expected in zip(idle_batches, busy_batches, [pool[0], pool[1]] * 3):
        assert np.array_equal(a, expected) and np.array_equal(b, expected)
        assert a is not expected  # a fresh batch each time, as a loader makes one
    untouched = loader.scratch()
    assert np.array_equal(idle._buffer, untouched) and not np.array_equal(busy._buffer, untouched)
    with pytest.raises(ValueError, match="batches="):
        loader.Loader(pool, 1, 0)


def test_unknown_methods_steps_and_setups_are_clear_errors():
    with pytest.raises(ValueError, match=r"loop_methods\[...\]='nope'"):
        RunaheadSettings(loop_methods=("jit_single_device", "nope"))
    with pytest.raises(ValueError, match="loop_methods=.*includes the reference"):
        RunaheadSettings(loop_methods=("filter_jit",))
    with pytest.raises(ValueError, match=r"verdict_methods\[...\]='bad'"):
        RunaheadSettings(verdict_methods=("jit_params", "bad"))
    with pytest.raises(ValueError, match=r"loop_steps\[...\]"):
        RunaheadSettings(loop_steps=("eval",))
    with pytest.raises(ValueError, match="setups="):
        RunaheadSettings(setups=("fast",))
    with pytest.raises(ValueError, match="method="):
        build_runner("nope", "noop", *ModelSpec("mlp", 1).build(), ModelSpec("mlp", 1).batch(1), 1)
    assert setups.xla_flags("xla_single_thread").split() == [
        "--xla_force_host_platform_device_count=1",
        "--xla_cpu_multi_thread_eigen=false",
    ]


# ---------------------------------------------------------------- equality before timing


#: one method per way a batch is placed and state carried: mapped with the batch third, over a mesh
#: with the batch first, packed, one device donated (eqx.filter_jit), the drop-in, and the reference
LOOP_METHODS = (
    "pmap_static_argnums",
    "filter_jit_shard",
    "packed_pmap",
    "filter_jit",
    "cached_filter_jit",
    "jit_single_device",
)


def test_dispatch_methods_run_the_seeds_loop_and_compute_what_jax_jit_does():
    """place_batch (shard_over_devices) then step_on, on three fresh batches: each way of
    placing the batch and carrying the state ends with jax.jit's loss, params and opt_state."""
    spec = ModelSpec("mlp", 1, width=8, batch_per_device=2)
    model, opt = spec.build()
    x = spec.batch(8)
    batches = loader.make_pool(x.shape, size=3)
    results = {}
    assert set(LOOP_METHODS) <= set(METHODS)
    for method in LOOP_METHODS:
        runner = build_runner(method, "train", model, opt, x, 8, donate=method == "filter_jit")
        for batch in batches:
            out = runner.step_on(runner.place_batch(batch))
        results[method] = runner.canonical(out)
    reference = results["jit_single_device"]
    for method, got in results.items():
        assert same_result(reference, got, atol=1e-5), method
    changed = results["jit_single_device"][1]
    assert not same_result(reference[1], jax.tree.map(lambda a: a + 1e-3, changed))  # the check can fail


def test_the_loop_refuses_a_method_that_computes_something_else(monkeypatch):
    config = seed_loop.LoopConfig(steps=("train",), depth=1, width=8, batch=4, batches=2, repeats=1)
    runners, checks = seed_loop.build_step(config, "train")
    assert list(runners) == ["jit_single_device", "filter_jit"]  # the reference first
    assert checks and all(row["same_result"] for row in checks)
    original = seed_loop.study_methods.build

    def wrong(method, *args, **kwargs):
        runner = original(method, *args, **kwargs)
        if method == "filter_jit":
            fn = runner.fn
            runner.fn = lambda *a: jax.tree.map(lambda v: v * 1.01 if eqx.is_inexact_array(v) else v, fn(*a))
        return runner

    monkeypatch.setattr(seed_loop.study_methods, "build", wrong)
    with pytest.raises(AssertionError, match="'filter_jit' does not compute the same pytree"):
        seed_loop.build_step(config, "train")


# ---------------------------------------------------------------- the proposed change


def _returns_before_its_step_has_run(wrap) -> bool:
    """Chain four calls of ``wrap(step)``, a step of four 512x512 products, and ask the last
    output at once whether it is ready: a call that waits for its computation always leaves
    it ready; calls that return when enqueued leave the fourth step still to run (it has
    three queued before it). A state read, not a timing."""

    def step(w, x):
        for _ in range(4):
            x = jnp.tanh(x @ w)
        return x

    fn = wrap(step)
    w, x = jnp.eye(512) * 0.5, jnp.ones((512, 512))
    jax.block_until_ready(fn(w, x))  # compiled
    for _ in range(4):
        x = fn(w, x)
    ready = x.is_ready()
    jax.block_until_ready(x)
    return not ready


def test_the_changed_filter_jit_runs_ahead_where_the_shipped_one_waits():
    assert _returns_before_its_step_has_run(jax.jit)
    assert not _returns_before_its_step_has_run(eqx.filter_jit)
    assert _returns_before_its_step_has_run(eqx_fix.fixed_filter_jit)
    from jaxperf import cached_filter_jit

    assert _returns_before_its_step_has_run(cached_filter_jit)  # the drop-in timed beside them
    assert _returns_before_its_step_has_run(eqx.filter_jit) is False  # the shipped one is left as it was


def test_the_changed_filter_jit_still_raises_equinoxs_error_at_the_call():
    rows = repro.error_checks().set_index("variant")
    for variant in ("eqx.filter_jit", "eqx.filter_jit, changed"):
        assert rows.loc[variant, "raised"] == "at the call"
        assert rows.loc[variant, "error"] == "EquinoxRuntimeError"
        assert rows.loc[variant, "message"] == "equinox.EquinoxRuntimeError: x is positive"
        assert rows.loc[variant, "value_when_passing"] == -2.0

    def check(x):
        return eqx.error_if(x, x > 0, "positive")

    # A second function with the same check and shapes: JAX's trace of error_if's own filter_jit
    # is cached, so only the nested marker tells the outer function that it has a check.
    first, second = eqx_fix.fixed_filter_jit(check), eqx_fix.fixed_filter_jit(lambda x: check(x) * 3)
    for fn in (first, second):
        with pytest.raises(eqx.EquinoxRuntimeError, match="positive"):
            fn(jnp.ones(()))
    assert float(second(-jnp.ones(()))) == -3.0


def test_the_changed_filter_jit_keeps_results_donation_methods_and_lower():
    w, x = jnp.eye(4) * 0.5, jnp.arange(8.0).reshape(2, 4)

    def step(w, x):
        return jnp.tanh(x @ w), {"n": 3}

    expected = jax.jit(lambda w, x: jnp.tanh(x @ w))(w, x)
    got, static = eqx_fix.fixed_filter_jit(step)(w, x)
    assert np.allclose(got, expected) and static == {"n": 3}
    donated = eqx_fix.fixed_filter_jit(donate="all")(lambda w, x: (w * 2, x + 1))
    out = donated(jnp.ones(3), jnp.zeros(3))
    assert np.allclose(out[0], 2.0) and np.allclose(out[1], 1.0)
    compiled = eqx_fix.fixed_filter_jit(step).lower(w, x).compile()
    assert np.allclose(compiled(w, x)[0], expected)
    with pytest.raises(TypeError):
        eqx_fix.fixed_filter_jit(step)(w)  # a bad call fails as eqx.filter_jit's does
    with pytest.raises(TypeError):
        eqx.filter_jit(step)(w)


def test_the_diff_is_the_patchs_filter_jit_part():
    diff = eqx_fix.fix_diff()
    assert diff.startswith("diff --git a/equinox/_jit.py b/equinox/_jit.py")
    assert "+            if _contains_error_check(jaxpr.jaxpr, set()):" in diff
    assert "-        marker = jnp.array(0)" in diff and "+            marker = None" in diff
    assert diff.count("diff --git") == 1  # equinox/_jit.py, nothing else


def test_the_repro_output_is_parsed():
    text = "jax.jit: 0.1 ms per call enqueued, 22.3 ms per call done\nnoise\neqx.filter_jit: 22.8 ms per call enqueued, 22.9 ms per call done\n"
    assert repro.parse(text) == [
        {"variant": "jax.jit", "enqueue_ms": 0.1, "done_ms": 22.3},
        {"variant": "eqx.filter_jit", "enqueue_ms": 22.8, "done_ms": 22.9},
    ]


# ---------------------------------------------------------------- analysis and summary


def _loop_timings(
    per_method_ms: dict[str, float], H: float, D: float, repeats: int = 3, fraction: float = 0.6
) -> pd.DataFrame:
    rows = []
    for repeat in range(repeats):
        rows.append(
            dict(
                step="train",
                repeat=repeat,
                cost_fraction=np.nan,
                variant=seed_loop.STEP_ALONE,
                s_per_batch=D / 1e3,
            )
        )
        rows.append(
            dict(
                step="train",
                repeat=repeat,
                cost_fraction=fraction,
                variant=seed_loop.LOADER_ALONE,
                s_per_batch=H / 1e3,
            )
        )
        for method, ms in per_method_ms.items():
            rows.append(
                dict(
                    step="train",
                    repeat=repeat,
                    cost_fraction=fraction,
                    variant=method,
                    s_per_batch=ms * (1 + 0.01 * repeat) / 1e3,
                )
            )
    out = pd.DataFrame(rows)
    out["it_per_s"] = 1 / out["s_per_batch"]
    return out


def test_bounds_overlap_and_the_goals_from_synthetic_loops():
    # H = 6 ms, D = 10 ms: overlapped 10 ms per batch, one after the other 16 ms.
    timings = _loop_timings(
        {"jit_single_device": 10.0, "filter_jit": 16.0, "cached_filter_jit": 10.0}, H=6.0, D=10.0
    )
    table = loop_analysis.table(loop_analysis.cells(timings)).set_index("method")
    assert table.loc["jit_single_device", "overlap_bound_it_per_s"] == pytest.approx(100.0)
    assert table.loc["jit_single_device", "serial_bound_it_per_s"] == pytest.approx(1e3 / 16)
    assert table.loc["jit_single_device", "overlap_median"] == pytest.approx(1.0, abs=0.05)
    assert table.loc["filter_jit", "overlap_median"] == pytest.approx(0.0, abs=0.05)
    assert table.loc["filter_jit", "ratio_to_jit_median"] == pytest.approx(10 / 16)
    goals = loop_analysis.goals(table.reset_index())
    assert goals["ties_or_beats_jit_everywhere"] and goals["at_least_1_3x_filter_jit_in_band"] == "met"
    assert goals["cells_in_band"] == 1
    slow = loop_analysis.goals(table.reset_index(), fix="filter_jit")
    assert not slow["ties_or_beats_jit_everywhere"] and slow["at_least_1_3x_filter_jit_in_band"] == "not met"
    assert loop_analysis.goals(table.reset_index(), fix="not_timed")["measured"] is False
    # no train cell in the band: nothing judged there, not a miss
    outside = table.reset_index().assign(H_over_D=5.0)
    none_in_band = loop_analysis.goals(outside)
    assert none_in_band["cells_in_band"] == 0 and none_in_band["at_least_1_3x_filter_jit_in_band"] is None
    cost = report.waiting_cost(table.reset_index())
    assert cost["measured"] and cost["median"] == pytest.approx(10 / 16) and not cost["tie"]
    # nothing to overlap at a loader cost of 0: no overlap number
    tiny = loop_analysis.cells(_loop_timings({"jit_single_device": 10.0}, H=0.2, D=10.0))
    assert tiny["overlap"].isna().all()


def test_the_best_setup_is_where_jax_jit_overlaps_most():
    good = loop_analysis.table(
        loop_analysis.cells(_loop_timings({"jit_single_device": 11.0}, H=10.0, D=10.0, fraction=1.0))
    )
    bad = loop_analysis.table(
        loop_analysis.cells(_loop_timings({"jit_single_device": 19.0}, H=10.0, D=10.0, fraction=1.0))
    )
    assert report.best_setup({"a": bad, "b": good}) == "b"


def test_the_summary_leads_with_the_answer_and_fits_an_issue():
    timings = _loop_timings({"jit_single_device": 10.0, "filter_jit": 16.0}, H=6.0, D=10.0)
    tables = {"xla_single_thread": loop_analysis.table(loop_analysis.cells(timings))}
    verdicts = pd.DataFrame(
        [
            dict(
                method=m,
                donated=False,
                enqueue_ms_per_call=e,
                blocked_ms_per_call=20.0,
                host_cpu_ms_per_call=0.5,
                ratio_median=e / 20,
                ratio_q25=e / 21,
                ratio_q75=e / 19,
                reference_ratio_q75=0.01,
                pairs=5,
                verdict=v,
                margin=0.4,
            )
            for m, e, v in (
                ("jit_params", 0.1, verdict.RUNS_AHEAD),
                ("filter_jit", 20.5, verdict.WAITS),
                ("filter_jit_patched", 0.2, verdict.RUNS_AHEAD),
            )
        ]
    )
    about = pd.DataFrame([{"setup": "xla_single_thread", "base_step_ms": 10.0}])
    release = {
        "release": "0.11.8",
        "previous": "0.11.7",
        "jax": "0.4.35",
        "source": "results/cpu/versions/summary.json",
    }
    summary = report.headline(verdicts, tables, about, release, backend="cpu", quick=False)
    assert (
        "waits for each call" in summary["answer"]
        and "0.11.8" in summary["answer"]
        and "0.62×" in summary["answer"]
    )
    rows = pd.DataFrame(
        [
            {"equinox": e, "variant": v, "enqueue_ms": 1.0, "done_ms": 20.0}
            for e in ("as shipped", "changed")
            for v in ("jax.jit", "eqx.filter_jit")
        ]
    )
    checks = pd.DataFrame(
        [
            {
                "variant": "eqx.filter_jit",
                "raised": "at the call",
                "error": "EquinoxRuntimeError",
                "message": "m",
            }
        ]
    )
    from jaxperf.dispatch.runahead import issue

    text = issue.section(summary, verdicts, rows, checks, {"equinox": "0.13.8"}, "cpu")
    page = summary_md.render(
        summary, verdicts, tables, about, pd.DataFrame(columns=["method", "error"]), text
    )
    assert markdown.visible_lines(page) <= markdown.MAX_VISIBLE_LINES
    assert "commit 141c18d" in page and "```diff" in page and "is slower than" in page
    assert "notebook 03" not in page and "{{" not in text and "ms step here" in text
    smoke = report.headline(verdicts, tables, about, None, backend="cpu", quick=True)
    assert (
        smoke["answer"].startswith("Smoke run") and smoke["goals"]["cached_filter_jit"]["measured"] is False
    )


def test_the_goal_in_the_band_reads_n_a_when_no_cell_falls_in_it():
    # H = 20 ms, D = 10 ms: H/D = 2, outside the goal's 0.3-1 band
    timings = _loop_timings(
        {"jit_single_device": 20.0, "filter_jit": 30.0, "cached_filter_jit": 20.0}, H=20.0, D=10.0
    )
    tables = {"xla_single_thread": loop_analysis.table(loop_analysis.cells(timings))}
    verdicts = pd.DataFrame(
        [
            dict(method=m, donated=False, enqueue_ms_per_call=e, blocked_ms_per_call=20.0,
                 host_cpu_ms_per_call=0.5, ratio_median=e / 20, ratio_q25=e / 21, ratio_q75=e / 19,
                 reference_ratio_q75=0.01, pairs=5, verdict=v, margin=0.4)
            for m, e, v in (
                ("jit_single_device", 0.1, verdict.RUNS_AHEAD),
                ("filter_jit", 20.5, verdict.WAITS),
                ("filter_jit_patched", 0.2, verdict.RUNS_AHEAD),
            )
        ]
    )  # fmt: skip
    about = pd.DataFrame([{"setup": "xla_single_thread", "base_step_ms": 10.0}])
    summary = report.headline(verdicts, tables, about, None, backend="cpu", quick=False)
    goal = summary["goals"]["cached_filter_jit"]
    assert goal["measured"] and goal["cells_in_band"] == 0
    assert goal["at_least_1_3x_filter_jit_in_band"] is None
    page = "\n".join(summary_md._bullets(summary, verdicts))
    assert "`eqx.filter_jit` in the band: n/a (no train cell with 0.3 <= H/D <= 1 in this run)" in page
    assert "in the band: not met" not in page


# ---------------------------------------------------------------- the notebook


def test_notebook_source_is_clean():
    assert_clean_source(NB)


@pytest.mark.notebook
def test_notebook_quick_run_records_verdicts_loop_and_report(tmp_path):
    run_notebook(
        NB,
        tmp_path,
        quick=True,  # the preset (shown in the notebook) sets the methods, repeats and costs
        verdict_width=256,
        loop_steps=["train"],
        loop_width=256,
        loop_batch=32,
    )
    folder = tmp_path / "results" / "cpu" / "runahead"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["smoke_run"] is True and summary["answer"].startswith("Smoke run")
    assert {row["method"] for row in summary["verdicts"]} == set(RunaheadSettings.QUICK["verdict_methods"])
    assert summary["loop"]["chosen_setup"] == "xla_single_thread"
    checks, _ = records.read_records(folder / "loop_checks.csv")
    assert checks["same_result"].all()
    assert set(checks["method"]) == set(RunaheadSettings().loop_methods)
    repro_rows, _ = records.read_records(folder / "repro.csv")
    assert set(repro_rows["equinox"]) == {"as shipped", "as shipped, EQX_ON_ERROR=off", "changed"}
    text = (folder / "summary.md").read_text()
    assert "Issue-ready report for Equinox" in text and markdown.SMOKE_NOTICE in text
    for figure in ("runahead_verdicts.png", "runahead_seed_loop.png"):
        assert (tmp_path / "figures" / "cpu" / figure).exists()


def test_the_device_run_times_the_seed_loop_inside_the_dispatch_budget():
    from jaxperf.gpu.settings import GpuSettings

    full, dry = GpuSettings(), GpuSettings.from_parameters({"quick": True})
    assert {"jit_single_device", "filter_jit"} <= set(full.seed_loop.methods)
    assert full.seed_loop.steps == ("train",) and all(0.3 <= f <= 1.0 for f in full.seed_loop.cost_fractions)
    assert (
        full.seed_loop_max_s + 8 < full.budgets["dispatch"]
    )  # the sweep keeps the rest (8 s: Budget's margin)
    assert dry.seed_loop.width < full.seed_loop.width and dry.seed_loop.repeats == 1
    with pytest.raises(ValueError, match=r"seed_loop_cost_fractions\[0\]=-0.3"):
        GpuSettings(seed_loop_cost_fractions=(-0.3,))


def test_where_jax_jit_itself_does_not_overlap_the_answer_says_the_loop_cannot_show_the_cost():
    timings = _loop_timings({"jit_single_device": 16.0, "filter_jit": 16.0}, H=6.0, D=10.0)
    table = loop_analysis.table(loop_analysis.cells(timings))
    jit = loop_analysis.jit_overlap(table)
    assert jit["measured"] and not jit["shows_overlap"]
    verdicts = pd.DataFrame(
        [
            dict(
                method="jit_single_device",
                donated=False,
                enqueue_ms_per_call=0.1,
                blocked_ms_per_call=20.0,
                verdict=verdict.RUNS_AHEAD,
            ),
            dict(
                method="filter_jit",
                donated=False,
                enqueue_ms_per_call=20.0,
                blocked_ms_per_call=20.0,
                verdict=verdict.WAITS,
            ),
        ]
    )
    text = report.answer(verdicts, report.waiting_cost(table), None, quick=False, jit=jit)
    assert "cannot show what waiting costs on this CPU" in text and "ties with" in text
