"""Pins the Mosaic GPU half of jax#20909's mechanism, from Mosaic GPU's own output compiled for
sm_90a on this CPU (JAX's CUDA plugin, deviceless; never executed), so that a JAX upgrade that
changes it fails here:

- the [128, D] carry is one float per thread in every looping form (Mosaic GPU keeps it a splat);
- in fori_loop the reduction's warp shuffles and cross-warp barriers stay inside the loop at every
  level, down to SASS, so each extra step costs tens of instructions (the Python loop: about two,
  it reduces once and adds one scalar per step);
- hoisting the sum takes the reduction out of the loop (at most 8 scalar instructions per step);
- so the static estimate puts fori_loop over twice the Python loop at T=4096, and growing with T.

Skipped where the compile environment is not built (tools/make_mosaic_gpu_env.sh)."""

from __future__ import annotations

import pytest

from jaxperf.compilers.mosaic_gpu import compile as mgpu_compile
from jaxperf.compilers.mosaic_gpu import toolchain
from jaxperf.mosaic_gpu import MosaicGpuSettings, analysis, mechanism, sweep

STATUS = toolchain.status()
pytestmark = pytest.mark.skipif(
    not STATUS.available, reason=STATUS.reason or "no Mosaic GPU compile environment"
)
SIZES = (2048, 4096)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    settings = MosaicGpuSettings(
        sizes=SIZES, mechanism_sizes=SIZES, compile_variants=("python", "fori u=1", "hoisted u=1"), repeats=1
    )
    out = tmp_path_factory.mktemp("mosaic_gpu_dumps")
    frame = sweep.compile_sweep(settings, out)
    return frame, out


def test_every_point_compiles_for_sm_90a_on_this_cpu(compiled):
    frame, out = compiled
    assert list(frame.status) == ["ok"] * 6, frame[["variant", "T", "status", "error"]]
    assert (frame.compile_total_ms > frame.compile_ms).all() and (frame.registers > 0).all()
    texts = mgpu_compile.read_dump(out, frame.iloc[0].to_dict())
    assert ".target sm_90a" in texts["ptx"] and "Compiling entry function" in texts["ptxas"]
    assert mgpu_compile.worker_toolchain(out)["jax"] == "0.12.0.1"


def test_the_carry_is_one_float_per_thread(compiled):
    frame, _ = compiled
    looping = frame[frame.variant != "python"]
    assert set(looping.loop_carries) == {"f32"} and set(looping.carried_elements_per_thread) == {1}
    assert set(frame[frame.variant == "python"].mosaic_loops) == {0}


def test_fori_loops_reduction_runs_every_step_down_to_sass(compiled):
    frame, out = compiled
    red = mechanism.reduction_table(mechanism.counts(frame, out, SIZES)).set_index(["variant", "level"])
    for level in ("mosaic (JAX)", "llvm", "ptx", "sass"):
        assert red.loc[("fori u=1", level), "shuffle in loop"] >= 5, level  # a warp's 5 butterfly steps
        assert red.loc[("fori u=1", level), "barrier in loop"] >= 1, level  # the cross-warp step
        assert red.loc[("hoisted u=1", level), "shuffle in loop"] == 0, level
    assert red.loc[("python", "sass"), "loops"] == 0


def test_each_extra_fori_step_costs_the_reduction(compiled):
    frame, out = compiled
    steps = mechanism.per_step(frame, out, SIZES).set_index("variant")
    assert steps.loc["fori u=1", "shuffle"] >= 5 and steps.loc["fori u=1", "barrier"] >= 1
    assert steps.loc["fori u=1", "per_step_total"] > 15
    assert steps.loc["python", "per_step_total"] <= 3
    assert steps.loc["hoisted u=1", "per_step_total"] <= 8 and steps.loc["hoisted u=1", "shuffle"] == 0
    verdict = mechanism.verdict(
        mechanism.counts(frame, out, SIZES), mechanism.per_step(frame, out, SIZES), frame
    )
    assert "stay inside the loop down to SASS" in verdict["line"] and "`f32`" in verdict["line"]


def test_the_estimate_puts_fori_several_times_over_the_python_loop(compiled):
    frame, _ = compiled
    ratios = analysis.estimate_ratios(frame).set_index("T")
    assert ratios.loc[4096, "fori u=1 / python"] > 2 > ratios.loc[4096, "hoisted u=1 / python"]
    assert ratios.loc[4096, "fori u=1 / python"] > ratios.loc[2048, "fori u=1 / python"]  # grows with T
