"""The reporter's kernel written for Mosaic GPU (jaxperf.jax20909.mosaic_gpu_kernel): it computes
the float64 reference in Mosaic GPU's interpreter, lowers for CUDA without a GPU where the
whole-input port is refused, and refuses bad input before anything is traced. Plus the readers
of Mosaic GPU's output (jaxperf.compilers.mosaic_gpu.ir/.sass) on small texts."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from jaxperf.compilers.mosaic_gpu import ir, toolchain
from jaxperf.compilers.mosaic_gpu import lower as mgpu_lower
from jaxperf.compilers.mosaic_gpu import sass as mgpu_sass
from jaxperf.compilers.triton import sass as triton_sass
from jaxperf.jax20909 import inputs, kernels, mosaic_gpu_kernel, reference, sweep


@pytest.mark.parametrize(
    "form, unroll",
    [("python", 1), ("fori", 2), ("pl_loop", 4), ("hoisted", 1), ("scalar_carry", 1), ("hand_unrolled", 3)],
)
def test_the_port_computes_the_float64_reference_in_mosaic_gpus_interpreter(form, unroll):
    shape = dict(T=256, D=64, batch=1, dtype="float16")
    fn, (spec,) = mosaic_gpu_kernel.build(form, unroll, interpret=True, **shape)
    assert spec.shape == (1, 256, 64)
    x = inputs.make_inputs("seed", 0, **shape)
    out = np.asarray(fn(*x))
    assert out.shape == (1, 256, 64) and out.dtype == np.float32
    assert reference.check_close("seed", out, tuple(np.asarray(a) for a in x)) <= 1.0
    # a program's 128 rows all hold its own block's answer, and the two blocks differ
    assert np.all(out[0, :128] == out[0, 0, 0]) and out[0, 0, 0] != out[0, 128, 0]


def test_the_port_lowers_where_the_whole_input_port_is_refused():
    ported = mgpu_lower.lower("fori", 1, T=1024, batch=2)
    assert ported["lowers"] and ported["loop_ops"] == 1 and ported["loop_carries"] == "f32"
    fn, args = kernels.build(
        "seed", "fori", 1, T=1024, D=64, batch=2, dtype="float16", interpret=False, lowering="mosaic_gpu"
    )
    from jaxperf.compilers.lowering import export_variant

    with pytest.raises(ValueError, match="exceeds available shared memory"):
        export_variant(fn, args, "mosaic_gpu")


def test_mosaic_gpus_own_unroll_rule_is_recorded_and_pre_empted_on_request():
    row = mgpu_lower.lower("fori", 8, T=256)  # 4 steps
    assert not row["lowers"] and row["error_type"] == "NotImplementedError"
    assert row["error"] == "``unroll`` must divide ``length``, got unroll=8 and length=4"
    with pytest.raises(
        ValueError,
        match=r"unroll=8 is not allowed: expected a divisor of the trip count T/64=4 .*\[1, 2, 4\]",
    ):
        mosaic_gpu_kernel.build("fori", 8, T=256)
    mosaic_gpu_kernel.build("hand_unrolled", 8, T=256)  # the hand-unrolled loop takes any unroll


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(T=200), "T=200 is not allowed: expected a multiple of block_rows=64"),
        (dict(T=192), "a multiple of out_rows=128"),
        (dict(T=256, dtype="int8"), "dtype"),
        (dict(T=256, carry_dtype="float64"), "carry_dtype"),
        (dict(T=256, interpret="yes"), "interpret='yes' is not allowed"),
    ],
)
def test_bad_input_is_refused_before_anything_is_traced(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mosaic_gpu_kernel.build("fori", 1, **kwargs)


def test_a_device_without_mosaic_gpu_is_refused_by_name():
    class Device:
        def __init__(self, platform, kind, capability):
            self.platform, self.device_kind, self.compute_capability = platform, kind, capability

    assert toolchain.check_device(Device("gpu", "NVIDIA H200", "9.0")) == (9, 0)
    with pytest.raises(ValueError, match=r"backend='NVIDIA RTX A6000 \(compute capability 8.6\)'.*Triton"):
        toolchain.check_device(Device("gpu", "NVIDIA RTX A6000", "8.6"))
    with pytest.raises(ValueError, match="backend='cpu .*Hopper or newer"):
        toolchain.check_device(Device("cpu", "cpu", None))


def test_the_loop_sweep_takes_the_port_only_where_it_exists():
    cfg = sweep.SweepConfig(
        mode="pallas_interpret", Ts=(128,), kernels=("seed",), lowering="mosaic_gpu", batch=1
    )
    assert sweep.build(cfg, "seed", "fori", 1, 128)[1][0].shape == (1, 128, 64)
    with pytest.raises(ValueError, match="lowering='mosaic_gpu' is not allowed"):
        sweep.SweepConfig(mode="pallas", Ts=(128,), kernels=("attention",), lowering="mosaic_gpu")
    with pytest.raises(ValueError, match="lowering='mosaic_gpu' is not allowed"):
        sweep.SweepConfig(mode="xla", Ts=(128,), kernels=("seed",), lowering="mosaic_gpu")


def test_the_settings_check_imports_no_jax():
    import subprocess

    code = (
        "import sys; from jaxperf.gpu.settings import GpuSettings; GpuSettings(); print('jax' in sys.modules)"
    )
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


MOSAIC = """
%240 = scf.for %arg14 = %c0 to %c16 step %c1 iter_args(%arg15 = %cst) -> (f32)  : i32 {
  %3 = arith.addf %1, %2 : vector<4xf32>
  %4 = nvvm.shfl.sync bfly %a, %b, %c, %d : i32 -> i32
  %5 = llvm.inline_asm has_side_effects "bar.sync $0, 128;", "r" %x : (i32) -> !llvm.void
  %6 = vector.load %m[%i] : memref<8192xf16, #gpu.address_space<workgroup>>, vector<4xf16>
  scf.yield %7 : f32
}
%9 = arith.addf %8, %8 : f32
"""
LLVM = """
  llvm.br ^bb1(%7 : i32)
^bb1(%s: i32):
  llvm.cond_br %c, ^bb2, ^bb3
^bb2:
  %r = nvvm.shfl.sync bfly %6, %x, %13, %8 : i32 -> i32
  %f = llvm.fadd %a, %b : vector<4xf32>
  llvm.br ^bb1(%n : i32)
^bb3:
  %g = llvm.fadd %a, %b : f32
"""
PTX = """
$L__BB0_1:
	shfl.sync.bfly.b32 	%r1, %r2, 1, 31, -1;
	bar.sync %r3, 128;
	add.f32 	%r4, %r5, %r6;
	@%p1 bra 	$L__BB0_1;
	LAB_WAIT:
	mbarrier.try_wait.parity.shared.b64 P1, [%r4], %r1, %r7;
	bra.uni     LAB_WAIT;
	add.rn.f32 	%r8, %r9, %r10;
"""


def test_the_ir_readers_count_inside_and_outside_loops():
    inside, outside, loops = ir.mosaic_counts(MOSAIC)
    assert loops == 1 and dict(inside) == {"fp arithmetic": 4, "shuffle": 1, "barrier": 1, "shared load": 1}
    assert dict(outside) == {"fp arithmetic": 1}
    assert ir.carried(MOSAIC) == ["f32"] and ir.carried_elements("f32, vector<2x4xf32>") == 9
    inside, outside, loops = ir.llvm_counts(LLVM)
    assert (
        loops == 1
        and dict(inside) == {"shuffle": 1, "fp arithmetic": 4}
        and dict(outside) == {"fp arithmetic": 1}
    )
    inside, outside, loops = ir.ptx_counts(PTX)
    assert loops == 1  # the barrier wait's LAB_WAIT spin is not a loop of the kernel
    assert dict(inside) == {"shuffle": 1, "barrier": 1, "fp arithmetic": 1} and dict(outside) == {
        "fp arithmetic": 1
    }
