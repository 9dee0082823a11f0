"""The two kernels in every loop form match the float64 reference, in Pallas
interpret mode and in plain jit; bad parameters raise clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from jaxperf import pallas_kernels as pk

# Tiny: interpret mode is slow. 5 steps, so unroll 2 and 4 leave a remainder
# and unroll 8 exceeds the trip count.
SHAPE = dict(T=80, D=16, batch=2, block_rows=16, out_rows=16)
VARIANTS = [("python", 1)] + [(f, u) for f in ("fori", "pl_loop", "hand_unrolled") for u in (1, 2, 8)]


def _inputs(kernel, dtype="float32", seed=0):
    arrays = pk.make_inputs(
        kernel,
        seed,
        T=SHAPE["T"],
        D=SHAPE["D"],
        batch=SHAPE["batch"],
        dtype=dtype,
        out_rows=SHAPE["out_rows"],
    )
    return tuple(np.asarray(a) for a in arrays)


@pytest.mark.parametrize("kernel", pk.KERNELS)
@pytest.mark.parametrize("loop_form, unroll", VARIANTS)
def test_interpret_mode_matches_reference(kernel, loop_form, unroll):
    fn, args = pk.build(kernel, loop_form, unroll, dtype="float32", interpret=True, **SHAPE)
    inputs = _inputs(kernel)
    assert [a.shape for a in args] == [a.shape for a in inputs]
    out = fn(*inputs)
    assert out.shape == (SHAPE["batch"], SHAPE["out_rows"], SHAPE["D"]) and out.dtype == np.float32
    pk.check_close(kernel, out, inputs, block_rows=SHAPE["block_rows"], out_rows=SHAPE["out_rows"])


@pytest.mark.parametrize("kernel", pk.KERNELS)
@pytest.mark.parametrize(
    "loop_form, unroll", [("python", 1), ("fori", 4), ("pl_loop", 2), ("hand_unrolled", 3)]
)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_plain_jit_matches_reference(kernel, loop_form, unroll, dtype):
    fn, _ = pk.build_xla(kernel, loop_form, unroll, dtype=dtype, **SHAPE)
    inputs = _inputs(kernel, dtype)
    pk.check_close(kernel, fn(*inputs), inputs, block_rows=SHAPE["block_rows"], out_rows=SHAPE["out_rows"])


def test_the_kernels_depend_on_every_step():
    # Changing only the last key/row block must change the answer (no step is skipped).
    for kernel in pk.KERNELS:
        fn, _ = pk.build(kernel, "hand_unrolled", 2, dtype="float32", interpret=True, **SHAPE)
        inputs = _inputs(kernel)
        changed = tuple(np.array(a) for a in inputs)
        changed[-1][:, -SHAPE["block_rows"] :, :] += 1.0
        assert not np.allclose(fn(*inputs), fn(*changed)), kernel


@pytest.mark.parametrize("kernel", pk.KERNELS)
def test_check_close_catches_a_wrong_answer(kernel):
    inputs = _inputs(kernel)
    want = pk.reference(kernel, inputs, block_rows=SHAPE["block_rows"], out_rows=SHAPE["out_rows"])
    tol = pk.tolerance(kernel, inputs, block_rows=SHAPE["block_rows"], out_rows=SHAPE["out_rows"])
    assert (
        pk.check_close(kernel, want, inputs, block_rows=SHAPE["block_rows"], out_rows=SHAPE["out_rows"])
        == 0.0
    )
    wrong = want.copy()
    wrong[1, 3, 5] += 3 * tol[1, 3, 5]
    with pytest.raises(AssertionError, match="differs from the float64 reference"):
        pk.check_close(kernel, wrong, inputs, block_rows=SHAPE["block_rows"], out_rows=SHAPE["out_rows"])


def test_seed_reference_counts_one_step_too_many_as_wrong():
    # An off-by-one trip count (one extra j) must exceed the tolerance.
    inputs = _inputs("seed")
    want = pk.reference("seed", inputs, block_rows=16, out_rows=16)
    with pytest.raises(AssertionError):
        pk.check_close("seed", want + 5.0, inputs, block_rows=16, out_rows=16)


def test_check_close_on_a_batch_subset():
    inputs = _inputs("attention")
    want = pk.reference("attention", inputs, block_rows=16, out_rows=16)
    wrong = want.copy()
    wrong[1] += 1.0  # only the second batch element is wrong
    assert pk.check_close("attention", wrong, inputs, block_rows=16, out_rows=16, max_batch=1) == 0.0
    with pytest.raises(AssertionError):
        pk.check_close("attention", wrong, inputs, block_rows=16, out_rows=16, max_batch=2)


def test_example_args_are_shape_structs():
    args = pk.example_args("attention", T=256, D=64, batch=3, dtype="float16", block_rows=64)
    assert [(a.shape, str(a.dtype)) for a in args] == [
        ((3, 128, 64), "float16"),
        ((3, 256, 64), "float16"),
        ((3, 256, 64), "float16"),
    ]


GOOD = dict(
    kernel="seed",
    loop_form="fori",
    unroll=1,
    T=256,
    D=64,
    batch=2,
    dtype="float32",
    block_rows=64,
    interpret=True,
)


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(T=100), "T=100 is not allowed: expected a multiple of block_rows=64"),
        (dict(unroll=0), "unroll=0 is not allowed: expected an integer >= 1"),
        (dict(kernel="matmul"), "kernel='matmul' is not allowed: expected one of 'seed', 'attention'"),
        (dict(loop_form="scan"), "loop_form='scan' is not allowed: expected one of 'python'"),
        (dict(dtype="int8"), "dtype='int8' is not allowed: expected one of 'float16'"),
        (dict(lowering="cuda"), "lowering='cuda' is not allowed: expected one of 'default', 'triton'"),
        (dict(loop_form="python", unroll=4), "unroll=4 is not allowed: expected 1 for loop_form='python'"),
        (dict(block_rows=0), "block_rows=0 is not allowed"),
        (dict(interpret="yes"), "interpret='yes' is not allowed: expected True or False"),
    ],
)
def test_bad_parameters_raise_clear_errors(change, match):
    kw = GOOD | change
    with pytest.raises(ValueError, match=match):
        pk.build(kw.pop("kernel"), kw.pop("loop_form"), kw.pop("unroll"), **kw)


def test_interface_for_the_triton_compile_study():
    assert pk.KERNELS == ("seed", "attention")
    assert pk.LOOP_FORMS == ("python", "fori", "pl_loop", "hand_unrolled")
    fn, args = pk.build(
        "seed", "fori", 1, T=128, D=16, batch=1, dtype="float16", block_rows=64, interpret=False
    )
    assert callable(fn.lower) and all(hasattr(a, "shape") for a in args)
