"""Pins the lowering matrix of jax 0.12.0.1: a JAX upgrade that changes which
loop forms lower on Triton, Mosaic GPU or Mosaic TPU fails here, on purpose.

T=256 with 64-row steps: 4 steps, so unroll 2 divides the trip count and
unroll 8 exceeds it. The seed kernel is the reporter's (a grid of T/128
programs); streaming is the study's first port; attention is online softmax."""

from __future__ import annotations

import pytest

from jaxperf.loops import lowering

SHAPE = dict(D=64, batch=2, dtype="float16", block_rows=64)


@pytest.fixture(scope="module")
def matrix():
    return lowering.matrix(("seed", "streaming", "attention"), Ts=(256,), unrolls=(1, 2, 8), **SHAPE)


def _row(matrix, kernel, form, unroll, compiler):
    rows = matrix[
        (matrix.kernel == kernel)
        & (matrix.loop_form == form)
        & (matrix.unroll == unroll)
        & (matrix.compiler == compiler)
    ]
    assert len(rows) == 1
    return rows.iloc[0]


# (loop form, unroll) -> verdict per compiler, jax 0.12.0.1.
# Mosaic GPU: the seed kernel is the port with each program's block in shared memory
# (jaxperf.jax20909.mosaic_gpu_kernel), the others go through JAX's Mosaic GPU pallas_call
# shim; it unrolls only when unroll divides the trip count (8 does not divide 4).
EXPECTED = {
    ("python", 1): dict(triton=True, mosaic_gpu=True, mosaic_tpu=True),
    ("fori", 1): dict(triton=True, mosaic_gpu=True, mosaic_tpu=True),
    ("fori", 2): dict(triton=False, mosaic_gpu=True, mosaic_tpu=True),
    ("fori", 8): dict(triton=False, mosaic_gpu=False, mosaic_tpu=True),
    ("pl_loop", 1): dict(triton=True, mosaic_gpu=True, mosaic_tpu=True),
    ("pl_loop", 2): dict(triton=False, mosaic_gpu=True, mosaic_tpu=True),
    ("pl_loop", 8): dict(triton=False, mosaic_gpu=False, mosaic_tpu=True),
    ("hand_unrolled", 1): dict(triton=True, mosaic_gpu=True, mosaic_tpu=True),
    ("hand_unrolled", 2): dict(triton=True, mosaic_gpu=True, mosaic_tpu=True),
    ("hand_unrolled", 8): dict(triton=True, mosaic_gpu=True, mosaic_tpu=True),
    ("hoisted", 1): dict(triton=True, mosaic_gpu=True, mosaic_tpu=True),
    ("hoisted", 2): dict(triton=True, mosaic_gpu=True, mosaic_tpu=True),
    ("hoisted", 8): dict(triton=True, mosaic_gpu=True, mosaic_tpu=True),
    ("scalar_carry", 1): dict(triton=True, mosaic_gpu=True, mosaic_tpu=True),
    ("scalar_carry", 2): dict(triton=True, mosaic_gpu=True, mosaic_tpu=True),
    ("scalar_carry", 8): dict(triton=True, mosaic_gpu=True, mosaic_tpu=True),
}
# Triton kernel IR lines of the seed at T=256 (deterministic; compare before/after a reshape).
PINNED_SEED_TRITON_LINES = {
    ("python", 1): 174,
    ("fori", 1): 118,
    ("pl_loop", 1): 122,
    ("hand_unrolled", 1): 118,
    ("hand_unrolled", 2): 147,
    ("hand_unrolled", 8): 174,
    ("hoisted", 1): 118,
    ("hoisted", 2): 130,
    ("hoisted", 8): 123,
    ("scalar_carry", 1): 117,
    ("scalar_carry", 2): 128,
    ("scalar_carry", 8): 119,
}
KERNEL_VARIANTS = [
    (k, v)
    for k in ("seed", "streaming", "attention")
    for v in EXPECTED
    if k == "seed" or v[0] not in ("hoisted", "scalar_carry")
]


def _expected(kernel, variant, compiler):
    if kernel == "attention" and compiler == "mosaic_gpu":
        return False  # no dot_general lowering in Mosaic GPU's warpgroup semantics
    return EXPECTED[variant][compiler]


def test_matrix_covers_every_variant(matrix):
    assert len(matrix) == len(KERNEL_VARIANTS) * 3
    assert set(matrix.compiler) == set(lowering.COMPILERS)


@pytest.mark.parametrize("kernel, variant", KERNEL_VARIANTS)
def test_which_variants_lower(matrix, kernel, variant):
    for compiler in lowering.COMPILERS:
        row = _row(matrix, kernel, *variant, compiler)
        assert bool(row.lowers) is _expected(kernel, variant, compiler), (
            kernel,
            variant,
            compiler,
            row.error,
        )


def test_triton_rejects_unroll_in_fori_loop(matrix):
    for form in ("fori", "pl_loop"):
        row = _row(matrix, "attention", form, 2, "triton")
        assert row.error_type == "NotImplementedError"
        assert (
            "triton/lowering.py" in row.error
            and "_scan_lowering_rule" in row.error
            and "unroll != 1" in row.error
        )


def test_mosaic_gpu_errors(matrix):
    row = _row(matrix, "seed", "fori", 8, "mosaic_gpu")
    assert row.error_type == "NotImplementedError"
    assert row.error == "``unroll`` must divide ``length``, got unroll=8 and length=4"
    row = _row(matrix, "attention", "fori", 1, "mosaic_gpu")
    assert row.error_type == "NotImplementedError"
    assert row.error.startswith("Unimplemented primitive in Pallas Mosaic GPU lowering: dot_general")


def test_plain_pallas_call_has_no_mosaic_gpu_rule():
    # Without the shim, pl.pallas_call with Mosaic GPU parameters hits a bare assert.
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import mosaic_gpu as plgpu

    def copy(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    x = jax.ShapeDtypeStruct((128, 64), jnp.float32)
    call = pl.pallas_call(copy, out_shape=x, compiler_params=plgpu.CompilerParams())
    with pytest.raises(AssertionError):
        lowering.export_variant(jax.jit(call), (x,), "mosaic_gpu")


@pytest.mark.parametrize("compiler", ["triton", "mosaic_tpu", "mosaic_gpu"])
def test_loop_ops_and_ir_size(matrix, compiler):
    for kernel in ("seed", "streaming", "attention") if compiler != "mosaic_gpu" else ("seed", "streaming"):
        python = _row(matrix, kernel, "python", 1, compiler)
        hand1 = _row(matrix, kernel, "hand_unrolled", 1, compiler)
        hand2 = _row(matrix, kernel, "hand_unrolled", 2, compiler)
        hand8 = _row(matrix, kernel, "hand_unrolled", 8, compiler)
        fori1 = _row(matrix, kernel, "fori", 1, compiler)
        assert python.loop_ops == 0 and fori1.loop_ops == 1 and hand1.loop_ops == 1 and hand2.loop_ops == 1
        # unroll 8 > 4 steps: no outer loop, all 4 bodies inline, like the Python loop (their index is a
        # JAX int32 constant, not a Python int: slices by it stay dynamic, so streaming's IR is larger)
        assert hand8.loop_ops == 0 and hand8.ir_lines >= python.ir_lines
        assert fori1.ir_lines < hand2.ir_lines < python.ir_lines


def test_mosaic_tpu_unrolls_fori_itself(matrix):
    # Exported (forward-compatible) Mosaic TPU unrolls in the IR: 2 bodies in one loop; 8 >= 4 steps: no loop.
    fori1, fori2, fori8 = (_row(matrix, "attention", "fori", u, "mosaic_tpu") for u in (1, 2, 8))
    assert fori2.loop_ops == 1 and fori2.ir_lines > fori1.ir_lines
    assert fori8.loop_ops == 0 and fori8.late_unroll == 0


def test_unknown_compiler():
    with pytest.raises(ValueError, match="compiler='rocm' is not allowed: expected one of 'triton'"):
        lowering.lower_one("seed", "fori", 1, "rocm", T=256)


def test_verdicts_table(matrix):
    table = lowering.verdicts(matrix)
    assert list(table.columns) == ["loop_form", "unroll", "triton", "mosaic_gpu", "mosaic_tpu"]
    fori2 = table[(table.loop_form == "fori") & (table.unroll == 2)].iloc[0]
    assert fori2["triton"] == "fails (NotImplementedError)" and fori2["mosaic_tpu"] == "lowers"
    assert (
        fori2["mosaic_gpu"] == "2/3 lower (NotImplementedError)"
    )  # seed and streaming lower, attention does not
    assert "triton, fori unroll=2" in lowering.error_lines(matrix)


def test_triton_backend_is_deprecated(matrix):
    # jax 0.12 warns that Pallas' Triton backend will be removed: the study must say so.
    row = _row(matrix, "seed", "fori", 1, "triton")
    assert (
        row.warning.startswith("DeprecationWarning") and "Pallas Triton backend is deprecated" in row.warning
    )


def test_lowering_answer_for_the_summary(matrix):
    lines = lowering.lowering_answer(matrix)
    assert lines[0].startswith(
        "- triton: `fori_loop`/`pl.loop` fail with unroll in {2, 8} (NotImplementedError)"
    )
    assert "the portable loops (hand-unrolled, hoisted, scalar carry) lower in 15 of the 15 cases" in lines[0]
    assert "fail with unroll in {8}" in lines[1] and "lower in 12 of the 12 cases" in lines[1]
    assert lines[2] == "- mosaic_tpu: every unroll of `fori_loop`/`pl.loop` lowers where unroll=1 does."


def test_mosaic_gpu_holds_whole_arrays_in_shared_memory():
    # The reporter's kernel as written has no BlockSpecs: Mosaic GPU stages each program's whole
    # [T, D] input and output in shared memory, which overflows beyond small T. The matrix lowers
    # the port whose programs copy their own 128-row block (jaxperf.jax20909.mosaic_gpu_kernel).
    row = lowering.lower_one("seed", "fori", 1, "mosaic_gpu", T=1024, **SHAPE)
    assert row.lowers and row.loop_ops == 1
    from jaxperf.jax20909 import kernels

    fn, args = kernels.build("seed", "fori", 1, T=1024, interpret=False, lowering="mosaic_gpu", **SHAPE)
    with pytest.raises(ValueError, match="^Mosaic GPU kernel exceeds available shared memory"):
        lowering.export_variant(fn, args, "mosaic_gpu")
    with pytest.raises(ValueError, match="block_rows/out_rows"):
        lowering.lower_one("seed", "fori", 1, "mosaic_gpu", T=1024, **(SHAPE | {"block_rows": 32}))
    # The streaming kernel's BlockSpecs give each program one batch element: its async copy takes
    # at most 256 elements per dimension.
    row = lowering.lower_one("streaming", "fori", 1, "mosaic_gpu", T=1024, **SHAPE)
    assert not row.lowers and row.error_type == "ValueError"
    assert (
        row.error
        == "Async copies only support copying <=256 elements along each dimension, got (1, 1024, 64)"
    )


def test_seed_ir_sizes_are_pinned(matrix):
    # The deterministic part of the lowering matrix (kernel IR lines), jax 0.12.0.1, T=256.
    sizes = {
        (f, u): int(_row(matrix, "seed", f, u, "triton").ir_lines)
        for f, u in EXPECTED
        if _row(matrix, "seed", f, u, "triton").lowers
    }
    assert sizes == PINNED_SEED_TRITON_LINES
