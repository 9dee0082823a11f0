"""The time model's inputs read from real machine code: the reporter's kernel and the harness's
random numbers compiled on this CPU for sm_86 and sm_90 (needs the triton extra), and one quick
run of notebook 08."""

from __future__ import annotations

import json

import pytest
from notebook_support import assert_clean_source, run_notebook

from jaxperf.compilers.triton import estimate, toolchain
from jaxperf.gpu_model import compiled, devices, harness, model, predict

TRITON = toolchain.status()
needs_triton = pytest.mark.skipif(not TRITON.available, reason=TRITON.reason or "triton unavailable")


@needs_triton
def test_the_reporters_fori_loop_read_from_sm_86_sass():
    point = compiled.seed_point("fori u=1", 8192, target="sm_86", carry_dtype="input")
    assert point.status == "ok" and point.compiled is not None
    work = point.compiled.work
    # his grid: B=512 x T/128 programs of 4 warps; his fp16 input read once, his fp16 output written once
    assert (work.programs, work.warps_per_program) == (512 * 64, 4)
    assert work.bytes_read == work.bytes_written == 512 * 8192 * 64 * 2
    counts = work.counts
    assert counts.resolved and counts.loop_trips == (32,)  # 128 steps, unrolled by 4 by ptxas
    # the same dynamic count as notebook 04's estimate, now split by unit
    assert counts.total == estimate.dynamic_counts(point.compiled.sass).per_program
    assert counts.per_class is not None
    assert max(counts.per_class, key=lambda k: counts.per_class[k]) == "fp16x2"  # the carry's HADD2s
    dev = devices.RTX_A6000
    fast, slow = (dict(devices.point(dev).rates, fp16x2=r) for r in (256, 128))
    cycles = [model.sm_cycles_per_warp(counts, dev, devices.Setting(1.8, 1.0, r)) for r in (fast, slow)]
    assert cycles[0] is not None and cycles[1] is not None
    assert cycles[1]["fma"] > cycles[0]["fma"] and cycles[1]["fma"] > cycles[1]["issue"]


@needs_triton
def test_the_python_loop_is_memory_bound_and_the_fori_loop_costs_more():
    points = [
        compiled.seed_point(v, 16384, target="sm_86", carry_dtype="input") for v in ("python", "fori u=1")
    ]
    rows = predict.kernel_rows(points, devices.RTX_A6000)
    point = rows[rows["setting"] == 0].set_index("variant")
    assert point.loc["python", "kernel_bound"] == "memory"
    assert point.loc["fori u=1", "ms_per_call"] > point.loc["python", "ms_per_call"]
    assert set(rows["setting"]) == set(range(len(devices.settings(devices.RTX_A6000))))


@needs_triton
def test_a_form_that_does_not_lower_is_a_result_not_a_crash():
    point = compiled.seed_point("fori u=2", 256, target="sm_90", carry_dtype="float32")
    assert point.status.startswith("does not lower") and point.work is None
    rows = predict.kernel_rows([point], devices.H200)
    assert rows.iloc[0]["ms_per_call"] is None and rows.iloc[0]["status"].startswith("does not lower")


@needs_triton
def test_the_harness_random_numbers_compile_to_integer_bound_sass():
    work = harness.harness_work(512 * 256 * 64, target="sm_90", out_dtype="float32", partitionable=True)
    rng, mean = work["rng"], work["mean"]
    assert rng.counts.resolved and rng.bytes_written == 2 * 512 * 256 * 64
    assert rng.programs == 512 * 256 * 64 // harness.RNG_BLOCK
    per_number = rng.counts.total * rng.warps_per_program / harness.RNG_BLOCK
    assert 2 < per_number < 10  # warp instructions per random number: threefry's 20 rounds, erf_inv
    t = model.kernel_time(rng, devices.H200, devices.point(devices.H200))
    assert t.bound == "alu"  # adds, rotates and xors outrun the FMA pipes
    assert mean.bytes_read == 4 * 512 * 256 * 64
    assert model.kernel_time(mean, devices.H200, devices.point(devices.H200)).bound == "memory"


def test_notebook_source_is_clean():
    assert_clean_source("08_gpu_time_model")


@pytest.mark.notebook
def test_notebook_quick_run(tmp_path):
    run_notebook("08_gpu_time_model", tmp_path, quick=True)
    summary = json.loads((tmp_path / "results" / "cpu" / "gpu_model" / "summary.json").read_text())
    assert summary["label"] == "predicted (not measured)" and summary["quick"] is True
    assert [row["T"] for row in summary["reporter_table"]] == [2048, 16384]
    assert summary["registered_problems"] == []
