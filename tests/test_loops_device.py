"""jax#20909 on a lent TPU (issue 49), tried on this CPU: the harness that spreads a call's fixed cost
over a scan, the kernel each target is given (its dtype, its tiling, its batch), a form a device
cannot run as a result line, the libtpu dump set before JAX opens a TPU, compiles the persistent
cache cannot serve, the budgets, and the reports of a device's numbers. No timing is asserted."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from jaxperf import timing
from jaxperf.loops import engine, report_kernel
from jaxperf.loops import targets as tg
from jaxperf.loops.factory import load
from jaxperf.paths import PROJECT_ROOT
from jaxperf_study.jax20909 import analysis, factories, harness, runs, sweep, vocab
from jaxperf_study.jax20909.settings import LoopSettings


def _called_in_loop_body(hlo: str, op: str) -> bool:
    """Whether ``op`` runs inside the body of the compiled program's while loop (fusions followed)."""
    computations = {c.split(" ", 1)[0].lstrip("%"): c for c in re.split(r"\n(?=\S)", hlo)}
    stack, seen, found = [re.search(r"body=%?([\w.\-]+)", hlo)[1]], set(), False
    while stack:
        name = stack.pop()
        if name in seen or name not in computations:
            continue
        seen.add(name)
        found |= op in computations[name]
        stack += re.findall(r"(?:calls|to_apply|body|condition)=%?([\w.\-]+)", computations[name])
    return found


def test_the_amortised_harness_computes_each_calls_mean_and_runs_the_call_every_step():
    def f(x, y):
        return jnp.sin(x) * 2.0, y + 1.0

    x, y = jnp.linspace(0.0, 3.0, 4096), jnp.ones(8)
    scanned = timing.amortised(f, 5)
    got = np.asarray(scanned(x, y))
    want = float(jnp.mean(jnp.sin(x) * 2.0) + jnp.mean(y + 1.0))
    assert got.shape == (5,) and np.allclose(got, want, rtol=1e-6)
    # the call's inputs never change: without the barrier XLA hoists it out of the loop
    assert _called_in_loop_body(scanned.lower(x, y).compile().as_text(), "sine(")


def test_the_amortised_harness_keeps_a_pallas_kernel_in_the_loop_on_a_v5e():
    from jaxperf.compilers.mosaic_tpu import compile as tpu_compile
    from jaxperf.compilers.mosaic_tpu import topology

    if not topology.status().available:
        pytest.skip(topology.status().reason)
    fn, args = factories.make("seed", "fori", 1024, compiler="mosaic_tpu")
    compiled, _ = tpu_compile.lower_compile(lambda: (timing.amortised(fn, 4), args), topology.mesh("v5e"))
    assert _called_in_loop_body(compiled.as_text(), "tpu_custom_call")


def test_each_target_gets_a_kernel_it_compiles():
    fn, args = factories.make("seed", "fori", 65536, compiler="mosaic_tpu")
    (x,) = args
    assert x.dtype == jnp.float32 and x.shape == (vocab.tpu_batch(65536), 65536, 64)
    assert "block_shape" in str(jax.make_jaxpr(fn)(*args))  # a BlockSpec per program
    _, (half,) = factories.make("seed", "fori", 65536)
    assert half.dtype == jnp.float16 and half.shape[0] == factories.BATCH  # the reporter's, elsewhere
    _, (interp,) = factories.make("streaming", "fori", 1024, interpret=True, compiler="mosaic_tpu")
    assert interp.dtype == jnp.float32 and interp.shape[0] == factories.CHECK_BATCH
    # his B where it fits; then fori_loop's work of T=2048 at >= 1024 programs (a TPU runs them one by one)
    assert [vocab.tpu_batch(T) for T in (256, 2048, 4096, 65536)] == [512, 512, 128, 2]
    assert all(vocab.tpu_batch(T) * T // 128 >= 1024 for T in (256, 8192, 65536))


def test_blocks_compute_what_the_reporters_whole_refs_do():
    from jaxperf_study.jax20909 import inputs, kernels, reference
    from jaxperf_study.jax20909.variant import KernelVariant

    for kernel in ("seed", "data_carry"):
        v = KernelVariant(kernel, "fori", 3, T=512, D=64, batch=2, dtype="float32", tiling="blocks")
        arrays = tuple(np.asarray(a) for a in inputs.make_inputs(v))
        out = kernels.build(v, interpret=True)[0](*arrays)
        reference.check_close(v, np.asarray(out), arrays)
    with pytest.raises(
        ValueError, match="tiling='blocks' is not allowed: expected 'whole' for kernel='attention'"
    ):
        KernelVariant("attention", "fori", T=512, D=64, batch=2, dtype="float32", tiling="blocks")


@pytest.fixture
def on_a_device(monkeypatch):
    """This CPU taken for a device whose compiler is ``compiler`` (the engine asks JAX's backend)."""

    def as_device(compiler):
        monkeypatch.setitem(engine.DEVICE_COMPILER, "cpu", compiler)

    return as_device


def test_a_form_the_device_cannot_run_is_its_result_line_not_a_traceback(on_a_device):
    on_a_device("mosaic_tpu")  # a compiled Pallas kernel cannot run on a CPU: every form fails
    kernel = load("jaxperf_study.jax20909.factories:seed")
    rows = engine.time_results(kernel, ["python", "fori"], [256])
    assert sorted(rows.form) == ["fori", "python"] and rows.ms_per_call.isna().all()
    assert set(rows.status) == {tg.NO_LOWER} and rows.error.str.contains("Only interpret mode").all()
    points = pd.DataFrame(columns=[*engine.KEYS, "target", "status", "error"])
    text = report_kernel.markdown(engine.Results("seed", pd.DataFrame(columns=engine.KEYS), points, rows, {}))
    assert "| python | 256 | 16 | does not lower: ValueError: Only interpret mode" in text


def _plain(form, T, *, interpret=False, compiler=None):
    """A factory whose kernel runs anywhere (plain jit around kernel_loop): its forms agree."""
    import jaxperf

    def fn(x):
        return jaxperf.kernel_loop(0, T // 64, lambda j, c: c + x[j], jnp.zeros(8), form=form)

    return jax.jit(fn), (jax.ShapeDtypeStruct((T // 64, 8), jnp.float32),)


def test_every_form_that_runs_is_checked_then_timed_in_the_scan(on_a_device, monkeypatch):
    on_a_device("triton")  # any compiler: the factory takes the keyword and ignores it
    kernel = load(f"{__name__}:_plain")
    rows = engine.time_results(kernel, ["python", "fori", "fori u=4"], [256, 512], repeats=2)
    timed = rows.dropna(subset=["ms_per_call"])
    assert set(timed.status) == {tg.OK} and (timed.ms_per_call > 0).all()
    assert sorted(timed.groupby(["form", "T", "scan"]).size().unique()) == [2]  # both rounds of each point


def test_the_timing_stops_at_the_budget(on_a_device):
    on_a_device("triton")
    spent = engine.Progress(0.0)
    rows = engine.time_results(load(f"{__name__}:_plain"), ["python", "fori"], [256], clock=spent)
    assert set(rows.status) == {tg.NOT_REACHED} and rows.ms_per_call.isna().all()


def test_a_tpus_memory_limits_are_limits():
    vmem = "CompileTimeScopedVmemOom: Ran out of memory in memory space vmem while allocating on stack for %x. Scoped allocation with size 16.04M and limit 16.00M exceeded scoped vmem limit by 44.0K."
    hbm = "RESOURCE_EXHAUSTED: Ran out of memory on HBM, the total memory required for HLO temporaries (24.00G) exceeds available HBM (15.75G)."
    assert (
        tg.failure("mosaic_tpu", vmem)["status"]
        == "exceeds mosaic_tpu's vmem limit (needs 16.04M, limit 16.00M)"
    )
    assert (
        tg.failure("mosaic_tpu", hbm)["status"]
        == "exceeds mosaic_tpu's HBM limit (needs 24.00G, limit 15.75G)"
    )


def _python(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "LIBTPU_INIT_ARGS"}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=clean | env,
        timeout=300,
        cwd=PROJECT_ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()[-1]


def test_a_measuring_process_keeps_the_dump_folder_its_parent_set(tmp_path):
    code = "from jaxperf.compilers.mosaic_tpu import topology; print(topology.prepare('/elsewhere').dump_dir)"
    flags = f"--xla_tpu_use_enhanced_launch_barrier=true --xla_jf_dump_to={tmp_path}"
    assert _python(code, LIBTPU_INIT_ARGS=flags) == str(tmp_path)
    assert _python(code) == "/elsewhere"  # nothing inherited: its own


def test_the_loops_command_sets_the_dump_before_jax_starts():
    """libtpu reads its flags once, when JAX opens a TPU: the command sets the folder before that."""
    code = (
        "import os, sys\n"
        "from jaxperf import backend\n"
        "from jaxperf.loops import cli, engine\n"
        "seen = []\n"
        "backend.configure = lambda *a: seen.append(os.environ.get('LIBTPU_INIT_ARGS', '')) or (_ for _ in ()).throw(RuntimeError())\n"
        "engine.run = lambda *a, **k: (_ for _ in ()).throw(ValueError('stop'))\n"
        "cli.main(['jaxperf.loops.examples.matmul:make', '--T', '256,512', '--quiet'])\n"
        "print(seen)\n"
    )
    from jaxperf.compilers.mosaic_tpu import topology

    if not topology.status().available:
        pytest.skip(topology.status().reason)
    assert "--xla_jf_dump_to=" in _python(code)


def test_a_timed_compile_is_never_served_by_the_persistent_cache(tmp_path):
    code = (
        "import jax, jax.numpy as jnp\n"
        "from jax import monitoring\n"
        "from jaxperf_study.jax20909 import sweep\n"
        "hits = []\n"
        "monitoring.register_event_listener(lambda e, **k: hits.append(e) if 'cache_hits' in e else None)\n"
        "make = lambda: (jax.jit(lambda x: jnp.sin(x) * 2), (jax.ShapeDtypeStruct((512,), jnp.float32),))\n"
        "sweep.compile_fresh(make, 1, 10.0)\n"
        "jax.jit(lambda x: jnp.sin(x) * 2).lower(*make()[1]).compile()\n"
        "print(len(hits))\n"
    )
    cache = dict(JAX_COMPILATION_CACHE_DIR=str(tmp_path), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    _python(code, **cache)  # fills the cache
    assert _python(code, **cache) == "1"  # the same program unnamed is served; the timed one is not


def test_a_compile_the_cache_served_is_no_compile_time(monkeypatch):
    hits = iter(range(0, 100, 1))  # every reading one more: each first call saw a hit
    monkeypatch.setattr(harness.CacheHits, "now", classmethod(lambda cls: next(hits)))
    from jaxperf_study.jax20909.variant import KernelVariant

    kernel = KernelVariant("seed", "python", T=256, D=8, batch=2, dtype="float32")
    rows = harness.measure(["python", "fori u=1"], kernel, n=2, repeats=1)
    assert (
        rows.compile_ms.isna().all() and rows.compile_note.str.contains("persistent compilation cache").all()
    )


def test_the_sweep_times_through_the_scan_at_each_Ts_batch():
    cfg = sweep.SweepConfig(
        mode="xla", Ts=(256, 512), kernels=("seed",), listed=("python", "fori u=1"), D=8, batch=2,
        batches={512: 1}, repeats=2, compile_repeats=1, scan=3,
    )  # fmt: skip
    variants, timings = sweep.run([cfg])
    assert list(variants.variant) == ["python", "fori u=1"] * 2 and list(variants.batch) == [2, 2, 1, 1]
    assert (variants.error_vs_tolerance <= 1).all() and (timings.ms_per_call > 0).all()


def test_a_point_predicted_past_the_budget_is_not_reached(monkeypatch):
    class Clock:  # every reading 10 s later: the first point takes 10 s, the next is predicted at 40
        now = 0.0

        def perf_counter(self):
            self.now += 10.0
            return self.now

    ran = []
    monkeypatch.setattr(sweep, "time", Clock())
    monkeypatch.setattr(
        sweep, "measure_group", lambda cfg, k, T, progress=None: ran.append(T) or (pd.DataFrame([{}]),) * 2
    )
    cfg = sweep.SweepConfig(mode="xla", Ts=(256, 1024), kernels=("seed",), listed=("python",), D=8)
    missing: list[pd.DataFrame] = []
    sweep.run([cfg], budget_s=45.0, missing=missing)
    assert ran == [256] and list(missing[0]["T"]) == [1024]
    assert missing[0].reason.iloc[0].startswith("not reached: predicted 40 s")
    monkeypatch.setattr(sweep, "measure_group", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("x")))
    with pytest.raises(RuntimeError):  # without a list for them, a failure is raised, not hidden
        sweep.run([cfg])


def test_the_device_presets_fit_their_settings_and_split_the_quoted_from_the_rest():
    for name, preset in LoopSettings.DEVICE_PRESETS.items():
        settings = dataclasses.replace(LoopSettings(), **preset)
        dataclasses.replace(settings, **LoopSettings.QUICK)  # the dry run's
        quoted, _ = runs._split(settings, name, "quoted")
        rest, _ = runs._split(settings, name, "rest")
        seed = [v for c in quoted + rest if c.mode == "pallas" for v in c.listed]
        assert sorted(seed) == sorted(settings.device_variants), name  # each variant once
        # quoted: the sweep's quoted variants, or (on a GPU) his harness alone, the whole sweep after it
        assert [c.listed for c in quoted] == (
            [] if settings.quoted_in == "harness" else [settings.quoted_variants]
        )
    tpu = dataclasses.replace(LoopSettings(), **LoopSettings.DEVICE_PRESETS["tpu"])
    for T in tpu.device_Ts:  # his float32 input and output fit a v5e's 16 GiB, at least 1024 programs
        B = tpu.batch_at(T)
        assert B * T * tpu.D * 4 * 2 <= 16 * 2**30 and B * T // vocab.SEED_PROGRAM_ROWS >= 1024, (T, B)
    with pytest.raises(ValueError, match="device_batches\\[256\\]=0 is not allowed"):
        LoopSettings(device_batches={256: 0})


def _measured() -> tuple[pd.DataFrame, list[engine.Results]]:
    """The sweep's rows of the reporter's kernel on a TPU, and the engine's static counts of it."""
    rows = [
        dict(kernel="seed", T=T, variant=v, batch=8, ms_per_call=ms, compile_ms=100.0)
        for T, v, ms in [(256, "python", 1.0), (256, "fori u=1", 2.0),
                         (1024, "python", 2.0), (1024, "fori u=1", 8.0), (1024, "scalar_carry u=1", 3.0)]
    ]  # fmt: skip
    points = pd.DataFrame(
        [
            dict(
                kernel="seed", target="mosaic_tpu v5e", form=f, T=T, work_per_program=w, programs=8 * T // 128
            )
            for T, f, w in [
                (256, "python", 100.0),
                (256, "fori", 300.0),
                (1024, "python", 110.0),
                (1024, "fori", 700.0),
            ]
        ]
    )  # the engine names fori_loop(unroll=1) "fori", the sweep "fori u=1"
    run = engine.Results(
        "seed", pd.DataFrame(), points, pd.DataFrame(columns=[*engine.KEYS, "ms_per_call"]), {}
    )
    return pd.DataFrame(rows).assign(mode="pallas"), [run]


def test_static_counts_stand_beside_the_measured_ms_they_describe():
    table = analysis.static_vs_measured(*_measured()).set_index(["T", "form"])
    fori = table.loc[(1024, "fori u=1")]
    assert fori.programs == 8 * 1024 // 128
    assert fori.ns_per_cycle == pytest.approx(8.0 * 1e6 / (700.0 * 64))
    assert (fori.ms_vs_python, fori.static_vs_python) == (4.0, pytest.approx(700 / 110))
    assert (1024, "scalar_carry u=1") not in table.index  # timed, but not counted: no row


def test_the_form_to_write_is_the_fastest_measured_at_the_largest_T():
    (best,) = analysis.best_forms(*_measured())
    assert (best["T"], best["form"], best["vs_python"], best["fori_vs_python"]) == (1024, "python", 1.0, 4.0)
    json.dumps(best)  # summary.json holds it


def test_his_float16_carry_overflows_from_T_32768_and_the_check_takes_only_those_infinities():
    from jaxperf_study.jax20909 import inputs, kernels, reference
    from jaxperf_study.jax20909.variant import KernelVariant

    for T, overflows in ((16384, False), (32768, True)):
        v = KernelVariant("seed", "fori", T=T, D=8, batch=1, dtype="float16", carry_dtype="input")
        x = tuple(np.asarray(a) for a in inputs.make_inputs(v))
        out = np.asarray(kernels.build_xla(v)[0](*x))
        assert out.dtype == np.float16 and np.isinf(out).all() == overflows
        reference.check_close(v, out, x)  # his answer, infinities and all
        bad = out.copy()
        bad.flat[0] = -np.inf if overflows else np.inf  # the wrong sign; an overflow where it fits
        with pytest.raises(AssertionError, match="differs from the float64 reference"):
            reference.check_close(v, bad, x)


def test_his_harness_makes_his_two_calls_in_his_carry_and_stops_at_its_budget(monkeypatch):
    settings = dataclasses.replace(
        LoopSettings(),
        harness_Ts=(256, 1024),
        harness_variants=("python", "fori u=1"),
        harness_repeats=0,
        harness_batch=2,
        D=8,
        carry_dtype="input",
    )
    took = iter([0.0, 0.0, 0.0, 30.0])  # T=256 takes 30 s: T=1024 is predicted at 120 s, 70 s left
    monkeypatch.setattr(harness.time, "perf_counter", lambda: next(took, 30.0))
    monkeypatch.setattr(
        harness, "measure", lambda variants, kernel, **k: pd.DataFrame([k | {"carry": kernel.carry}])
    )
    missing: list[pd.DataFrame] = []
    rows = harness.run(settings, "cpu", budget_s=100, missing=missing)
    assert rows.to_dict("records") == [dict(n=16, mode="xla", repeats=0, carry="float16")]
    assert list(missing[0]["T"]) == [1024, 1024] and missing[0].reason[0].startswith(
        "not reached: predicted 120 s"
    )
