"""The reporter's kernel written for Mosaic GPU (jaxperf_study.jax20909.mosaic_gpu_kernel): it computes
the float64 reference in Mosaic GPU's interpreter, lowers for CUDA without a GPU where the
whole-input port is refused, and refuses bad input before anything is traced. Plus Mosaic GPU's
compile worker and SASS reader (jaxperf.compilers.mosaic_gpu): every compiled form's SASS is
counted, and a dump with no instruction is never a count of zero."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from jaxperf.compilers.lowering import export_variant
from jaxperf.compilers.mosaic_gpu import compile as mgpu_compile
from jaxperf.compilers.mosaic_gpu import sass as mgpu_sass
from jaxperf.compilers.mosaic_gpu import toolchain
from jaxperf.compilers.triton import sass as triton_sass
from jaxperf_study.jax20909 import inputs, kernels, mosaic_gpu_kernel, reference, sweep
from jaxperf_study.jax20909.variant import KernelVariant


def port(loop_form, unroll=1, **sizes):
    """The reporter's kernel in ``loop_form`` at the port's default sizes (one batch element)."""
    return KernelVariant(
        "seed", loop_form, unroll, **{"T": 256, "D": 64, "batch": 1, "dtype": "float16", **sizes}
    )


@pytest.mark.parametrize(
    "form, unroll",
    [("python", 1), ("fori", 2), ("pl_loop", 4), ("hoisted", 1), ("scalar_carry", 1), ("hand_unrolled", 3)],
)
def test_the_port_computes_the_float64_reference_in_mosaic_gpus_interpreter(form, unroll):
    variant = port(form, unroll)
    fn, (spec,) = mosaic_gpu_kernel.build(variant, interpret=True)
    assert spec.shape == (1, 256, 64)
    x = inputs.make_inputs(variant, 0)
    out = np.asarray(fn(*x))
    assert out.shape == (1, 256, 64) and out.dtype == np.float32
    assert reference.check_close(variant, out, tuple(np.asarray(a) for a in x)) <= 1.0
    # a program's 128 rows all hold its own block's answer, and the two blocks differ
    assert np.all(out[0, :128] == out[0, 0, 0]) and out[0, 0, 0] != out[0, 128, 0]


def test_the_port_lowers_where_the_whole_input_port_is_refused():
    export_variant(*mosaic_gpu_kernel.build(port("fori", T=1024, batch=2)), "mosaic_gpu")
    fn, args = kernels.build(port("fori", T=1024, batch=2), interpret=False, lowering="mosaic_gpu")
    with pytest.raises(ValueError, match="exceeds available shared memory"):
        export_variant(fn, args, "mosaic_gpu")


def test_mosaic_gpus_own_unroll_rule_is_recorded_and_pre_empted_on_request():
    fn, args = mosaic_gpu_kernel.build(port("fori", 8), check_unroll=False)  # 4 steps
    with pytest.raises(
        NotImplementedError, match="``unroll`` must divide ``length``, got unroll=8 and length=4"
    ):
        export_variant(fn, args, "mosaic_gpu")
    with pytest.raises(
        ValueError,
        match=r"unroll=8 is not allowed: expected a divisor of the trip count T/64=4 .*\[1, 2, 4\]",
    ):
        mosaic_gpu_kernel.build(port("fori", 8))
    mosaic_gpu_kernel.build(port("hand_unrolled", 8))  # the hand-unrolled loop takes any unroll


@pytest.mark.parametrize(
    "variant, options, match",
    [
        (
            KernelVariant("streaming", "fori", T=256, D=64, batch=1, dtype="float16"),
            {},
            "kernel='streaming' is not allowed: expected one of 'seed', 'data_carry'",
        ),
        (port("fori", T=256, block_rows=32), {}, "block_rows=32 is not allowed: expected 64"),
        (port("fori", T=512, out_rows=256), {}, "out_rows=256 is not allowed: expected 128"),
        (port("fori"), dict(interpret="yes"), "interpret='yes' is not allowed"),
    ],
)
def test_a_variant_the_port_cannot_build_is_refused_before_anything_is_traced(variant, options, match):
    with pytest.raises(ValueError, match=match):
        mosaic_gpu_kernel.build(variant, **options)


def test_a_gpu_without_mosaic_gpu_is_refused_by_name(monkeypatch):
    """notebook 02 on a GPU plans the port; before Hopper it says why, before any compile."""
    import jax

    from jaxperf_study.jax20909 import runs

    class Device:
        def __init__(self, kind, capability):
            self.device_kind, self.compute_capability = kind, capability

    port = [sweep.SweepConfig(mode="mosaic_gpu", Ts=(128,), kernels=("seed",), lowering="mosaic_gpu")]
    monkeypatch.setattr(jax, "devices", lambda: [Device("NVIDIA H200", "9.0")])
    assert runs._no_mosaic_gpu(port) == []
    monkeypatch.setattr(jax, "devices", lambda: [Device("NVIDIA RTX A6000", "8.6")])
    (why,) = runs._no_mosaic_gpu(port)
    assert "NVIDIA RTX A6000 (compute capability 8.6): Mosaic GPU needs 9.0" in why
    assert runs._no_mosaic_gpu([]) == []  # not planned: no device asked


def test_the_loop_sweep_takes_the_port_only_where_it_exists():
    cfg = sweep.SweepConfig(
        mode="pallas_interpret", Ts=(128,), kernels=("seed",), lowering="mosaic_gpu", batch=1
    )
    assert sweep.build(cfg, cfg.variant("seed", "fori", 1, 128))[1][0].shape == (1, 128, 64)
    with pytest.raises(ValueError, match="lowering='mosaic_gpu' is not allowed"):
        sweep.SweepConfig(mode="pallas", Ts=(128,), kernels=("attention",), lowering="mosaic_gpu")
    with pytest.raises(ValueError, match="lowering='mosaic_gpu' is not allowed"):
        sweep.SweepConfig(mode="xla", Ts=(128,), kernels=("seed",), lowering="mosaic_gpu")


def test_the_settings_check_imports_no_jax():
    import subprocess

    code = "import sys; from jaxperf_study.gpu.settings import GpuSettings; GpuSettings(); print('jax' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
    )


NVDISASM = """
.text.k:
   -:-:-:Y:01        /*0000*/                   MOV R3, RZ
.L_x_1:
   -:-:1:Y:02        /*0010*/                   SHFL.BFLY PT, R5, R6, 0x1, 0x1f
   -:-:-:Y:06        /*0020*/                   BAR.SYNC.DEFER_BLOCKING 0x1, 0x80
   -:-:-:Y:02        /*0030*/                   IADD3 R3, R3, 0x1, RZ
   -:-:-:Y:01        /*0040*/                   ISETP.NE.U32.AND P0, PT, R3, 0x10, PT
   -:-:-:Y:05        /*0050*/               @P0 BRA `(.L_x_1)
   -:-:-:Y:05        /*0060*/              @!P1 BRA `(.L_x_0)
.L_x_2:
   1:-:-:Y:05        /*0070*/                   EXIT
.L_x_0:
   -:-:1:Y:02        /*0080*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R4+URZ+0xc800], R3
   -:-:-:Y:05        /*0090*/              @!P0 BRA `(.L_x_0)
   -:-:-:Y:05        /*00a0*/                   BRA `(.L_x_2)
"""


def test_mosaic_gpus_sass_reads_as_the_kernels_loop_plus_a_wait():
    text = mgpu_sass.to_cuobjdump(NVDISASM)
    code = triton_sass.parse(text)
    assert [i.opcode for i in code][:2] == ["MOV", "SHFL.BFLY"] and "BRA 0x0010" in text
    loops = mgpu_sass.loops(code)
    assert [(lp.head, lp.trips) for lp in loops] == [
        (0x10, 16),
        (0x80, 1),
    ]  # the kernel's loop, the wait once
    counts = mgpu_sass.dynamic_counts(text)
    assert counts.loops == 1 and counts.loop_trips == (16,)
    assert counts.by_category["shuffle"] == 16 and counts.by_category["barrier"] == 16 + 1
    assert counts.per_program == 1 + 5 * 16 + 1 + 1 + 3  # outside + body x 16 + branch + exit + the wait once


FACTORY = "jaxperf_study.jax20909.factories:seed"


def test_a_compiled_point_with_no_instruction_in_its_sass_is_failed_not_zero(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "sass.txt").write_text("")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "sass.txt").write_text(NVDISASM)
    rows = [
        dict(form="python", status="ok", error="", dump_dir="empty"),
        dict(form="fori", status="ok", error="", dump_dir="full"),
        dict(form="fori u=4", status="ok", error=""),  # no dump at all
        dict(form="attention", status="does not lower", error="NotImplementedError: dot_general"),
    ]
    got = mgpu_compile.counted(rows, tmp_path)
    assert [r["status"] for r in got] == ["failed", "ok", "failed", "does not lower"]
    assert got[0]["error"] == mgpu_compile.NO_INSTRUCTIONS and "no instruction" in got[0]["error"]
    assert mgpu_compile.read_dump(tmp_path, got[1])["sass"].count("/*") == 11


def test_a_worker_that_dies_leaves_its_points_failed_with_its_last_line(tmp_path, monkeypatch):
    worker = tmp_path / "python"
    worker.write_text(
        "#!/bin/sh\necho 'Traceback (most recent call last):'\necho 'RuntimeError: boom'\nexit 3\n"
    )
    worker.chmod(0o755)
    monkeypatch.setenv(toolchain.PYTHON_ENV, str(worker))
    rows = mgpu_compile.compile_points(
        [dict(factory=FACTORY, form=f, T=256) for f in ("python", "fori")], tmp_path
    )
    assert [r["status"] for r in rows] == ["failed", "failed"]  # the tool failed: not "over budget"
    assert rows[0]["error"] == "the worker stopped (exit status 3): RuntimeError: boom"


@pytest.mark.skipif(not toolchain.status().available, reason=toolchain.status().reason)
def test_the_worker_counts_the_sass_of_every_form_the_python_loop_first(tmp_path):
    """The Python loop comes first at every T (the engine's order): its SASS must be dumped and
    counted, not served from Mosaic GPU's compile cache by a warm-up of the same kernel."""
    points = [dict(factory=FACTORY, form=f, T=256) for f in ("python", "fori", "python")]
    points.append(dict(factory="jaxperf_study.jax20909.factories:attention", form="python", T=256))
    rows = mgpu_compile.compile_points(points, tmp_path, budget_s=300)
    assert [r["status"] for r in rows] == ["ok", "ok", "ok", "does not lower"], rows
    counts = [mgpu_sass.dynamic_counts(mgpu_compile.read_dump(tmp_path, r)["sass"]) for r in rows[:3]]
    assert all(c.per_program > 100 for c in counts), [c.per_program for c in counts]
    assert counts[1].per_program != counts[0].per_program  # each form's own SASS
    assert counts[2].per_program == counts[0].per_program  # compiled again: the first compile's SASS
    assert rows[3]["error"].startswith("NotImplementedError: Unimplemented primitive")


@pytest.mark.skipif(not toolchain.status().available, reason=toolchain.status().reason)
def test_points_past_the_workers_budget_are_not_reached(tmp_path):
    rows = mgpu_compile.compile_points([dict(factory=FACTORY, form="fori", T=256)], tmp_path, budget_s=1e-3)
    assert rows[0]["status"] == "not reached" and "budget_s=0.001" in rows[0]["error"]
