"""The reporter's kernel written for Mosaic GPU (jaxperf_study.jax20909.mosaic_gpu_kernel): it computes
the float64 reference in Mosaic GPU's interpreter, lowers for CUDA without a GPU where the
whole-input port is refused, and refuses bad input before anything is traced. Plus Mosaic GPU's
compile worker and SASS reader (jaxperf.compilers.mosaic_gpu): every compiled form's SASS is
counted, and a dump with no instruction is never a count of zero."""

from __future__ import annotations

import numpy as np
import pytest

from jaxperf.compilers.lowering import export_variant
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
