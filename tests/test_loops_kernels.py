"""The jax#20909 kernels in every loop form match the float64 reference, in Pallas
interpret mode and in plain jit; the seed kernel is the reporter's program; a bad variant
is refused where it is made, with an error naming the field (issue 47: one type,
:class:`~jaxperf_study.jax20909.variant.KernelVariant`)."""

from __future__ import annotations

import numpy as np
import pytest

from jaxperf_study.jax20909 import inputs, kernels, reference, vocab
from jaxperf_study.jax20909.variant import KernelVariant

# Tiny: interpret mode is slow. 5 steps, so unroll 2 and 4 leave a remainder
# and unroll 8 exceeds the trip count.
SHAPE = dict(T=80, D=16, batch=2, block_rows=16, out_rows=16)
VARIANTS = vocab.variants(vocab.LOOP_FORMS, (1, 2, 8))


def _applies(kernel, loop_form):
    if not vocab.applies(kernel, loop_form):
        pytest.skip(f"{loop_form} does not apply to {kernel}")


def _variant(kernel, loop_form="fori", unroll=1, dtype="float32"):
    return KernelVariant(kernel, loop_form, unroll, dtype=dtype, **SHAPE)


def _inputs(kernel, dtype="float32", seed=0):
    return tuple(np.asarray(a) for a in inputs.make_inputs(_variant(kernel, dtype=dtype), seed))


# data_carry shares seed's loop forms and grid (kernels.row_block): a few forms suffice for it.
CASES = [
    (k, f, u)
    for k in vocab.KERNELS
    for f, u in VARIANTS
    if k != "data_carry" or (f, u) in {("python", 1), ("fori", 2), ("hand_unrolled", 8)}
]


@pytest.mark.parametrize("kernel, loop_form, unroll", CASES)
def test_interpret_mode_matches_reference(kernel, loop_form, unroll):
    _applies(kernel, loop_form)
    variant = _variant(kernel, loop_form, unroll)
    fn, args = kernels.build(variant, interpret=True)
    arrays = _inputs(kernel)
    assert [a.shape for a in args] == [a.shape for a in arrays]
    out = fn(*arrays)
    assert out.shape == inputs.output_shape(variant) and out.dtype == np.float32
    reference.check_close(variant, out, arrays)


@pytest.mark.parametrize("kernel", vocab.KERNELS)
@pytest.mark.parametrize(
    "loop_form, unroll", [("python", 1), ("fori", 4), ("pl_loop", 2), ("hand_unrolled", 3), ("hoisted", 2)]
)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_plain_jit_matches_reference(kernel, loop_form, unroll, dtype):
    _applies(kernel, loop_form)
    variant = _variant(kernel, loop_form, unroll, dtype)
    fn, _ = kernels.build_xla(variant)
    arrays = _inputs(kernel, dtype)
    reference.check_close(variant, fn(*arrays), arrays)


def test_the_kernels_depend_on_every_step():
    # Changing only the last key/row block must change the answer (no step is skipped).
    for kernel in vocab.KERNELS:
        fn, _ = kernels.build(_variant(kernel, "hand_unrolled", 2), interpret=True)
        arrays = _inputs(kernel)
        changed = tuple(np.array(a) for a in arrays)
        changed[-1][:, -SHAPE["block_rows"] :, :] += 1.0
        assert not np.allclose(fn(*arrays), fn(*changed)), kernel


@pytest.mark.parametrize("kernel", vocab.KERNELS)
def test_check_close_catches_a_wrong_answer(kernel):
    arrays, variant = _inputs(kernel), _variant(kernel)
    want = reference.reference(variant, arrays)
    tol = reference.tolerance(variant, arrays)
    assert reference.check_close(variant, want, arrays) == 0.0
    wrong = want.copy()
    wrong[1, 3, 5] += 3 * tol[1, 3, 5]
    with pytest.raises(AssertionError, match="differs from the float64 reference"):
        reference.check_close(variant, wrong, arrays)


def test_seed_reference_counts_one_step_too_many_as_wrong():
    # An off-by-one trip count (one extra j) must exceed the tolerance.
    arrays = _inputs("seed")
    want = reference.reference(_variant("seed"), arrays)
    with pytest.raises(AssertionError):
        reference.check_close(_variant("seed"), want + 5.0, arrays)


def test_example_args_are_shape_structs():
    args = inputs.example_args(KernelVariant("attention", "fori", T=256, D=64, batch=3, dtype="float16"))
    assert [(a.shape, str(a.dtype)) for a in args] == [
        ((3, 128, 64), "float16"),
        ((3, 256, 64), "float16"),
        ((3, 256, 64), "float16"),
    ]


GOOD = dict(kernel="seed", loop_form="fori", unroll=1, T=256, D=64, batch=2, dtype="float32", block_rows=64)


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(T=100), "T=100 is not allowed: expected a multiple of block_rows=64"),
        (dict(unroll=0), "unroll=0 is not allowed: expected an integer >= 1"),
        (
            dict(kernel="matmul"),
            "kernel='matmul' is not allowed: expected one of 'seed', 'data_carry', 'streaming', 'attention'",
        ),
        (dict(T=192), "T=192 is not allowed: expected a multiple of out_rows=128"),
        (
            dict(kernel="attention", loop_form="hoisted"),
            "loop_form='hoisted' is not allowed: expected not a hoisting form for kernel='attention'",
        ),
        (
            dict(carry_dtype="float64"),
            "carry_dtype='float64' is not allowed: expected one of 'float32', 'input'",
        ),
        (
            dict(kernel="attention", carry_dtype="input"),
            "carry_dtype='input' is not allowed: expected 'float32'",
        ),
        (dict(loop_form="scan"), "loop_form='scan' is not allowed: expected one of 'python'"),
        (dict(dtype="int8"), "dtype='int8' is not allowed: expected one of 'float16'"),
        (dict(loop_form="python", unroll=4), "unroll=4 is not allowed: expected 1 for loop_form='python'"),
        (dict(block_rows=0), "block_rows=0 is not allowed"),
        (dict(batch=True), "batch=True is not allowed: expected an integer >= 1"),
    ],
)
def test_a_bad_variant_is_refused_where_it_is_made(change, match):
    kw = GOOD | change
    with pytest.raises(ValueError, match=match):
        KernelVariant(kw.pop("kernel"), kw.pop("loop_form"), kw.pop("unroll"), **kw)
    good = KernelVariant(
        GOOD["kernel"],
        GOOD["loop_form"],
        **{k: v for k, v in GOOD.items() if k not in ("kernel", "loop_form")},
    )
    with pytest.raises(ValueError, match=match):  # a changed copy is checked again
        good.replace(**change)


@pytest.mark.parametrize(
    "options, match",
    [
        (dict(lowering="cuda"), "lowering='cuda' is not allowed: expected one of 'default', 'triton'"),
        (dict(interpret="yes"), "interpret='yes' is not allowed: expected True or False"),
    ],
)
def test_bad_build_options_raise_clear_errors(options, match):
    with pytest.raises(ValueError, match=match):
        kernels.build(_variant("seed"), **{"interpret": True, **options})


def test_a_variant_is_one_frozen_value_with_its_dtype_by_name():
    import dataclasses

    import jax.numpy as jnp

    v = KernelVariant("seed", "fori", np.int64(4), T=256, D=64, batch=2, dtype=jnp.float16)
    assert (v.dtype, v.unroll, type(v.unroll)) == ("float16", 4, int)  # a NumPy int, as fori_loop takes
    assert v == KernelVariant("seed", "fori", 4, T=256, D=64, batch=2, dtype="float16") and hash(v)
    assert (v.name, v.steps, v.row_block, v.carry) == ("fori u=4", 4, True, "float32")
    assert v.replace(carry_dtype="input").carry == "float16"
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.T = 512  # type: ignore[misc]


def test_vocabulary_for_the_other_loop_studies():
    assert vocab.KERNELS == ("seed", "data_carry", "streaming", "attention")
    assert vocab.LOOP_FORMS == ("python", "fori", "pl_loop", "hand_unrolled", "hoisted", "scalar_carry")
    assert vocab.variant_order([("hoisted", 1), ("fori", 8), ("python", 1), ("fori", 2)]) == [
        "python",
        "fori u=2",
        "fori u=8",
        "hoisted u=1",
    ]
    assert vocab.parse_variant("hand_unrolled u=4") == ("hand_unrolled", 4)
    assert vocab.variants(vocab.LOOP_FORMS, (1, 4), kernel="attention")[-1] == ("hand_unrolled", 4)
    fn, args = kernels.build(
        KernelVariant("seed", "fori", T=128, D=16, batch=1, dtype="float16"), interpret=False
    )
    assert callable(fn.lower) and all(hasattr(a, "shape") for a in args)


def test_seed_table_is_the_reporters():
    rows = vocab.seed_records()
    assert [r["T"] for r in rows] == [256, 2048, 8192, 16384, 32768, 65536]
    assert rows[-1]["python_ms"] == 71.313 and rows[-1]["fori_ms"] == 172.925
    assert round(rows[0]["ratio"], 2) == 1.0 and round(rows[-1]["ratio"], 2) == 2.42
    table = vocab.seed_issue_table()
    assert table.iloc[-1]["fori_loop compile / exec"] == "195 ms / 172.925 ms"
    assert "RTX A6000" in vocab.SEED_SETUP and "N=16" in vocab.SEED_SETUP


def test_scalar_carry_is_bitwise_the_fori_loop():
    # The same scalar additions in the same order for every carry element, so the same bits.
    variant = KernelVariant("seed", "fori", T=512, D=16, batch=2, dtype="float16")
    arrays = tuple(inputs.make_inputs(variant, 3))
    fori = kernels.build_xla(variant)[0](*arrays)
    for unroll in (1, 3):
        sc = kernels.build_xla(variant.replace(loop_form="scalar_carry", unroll=unroll))[0](*arrays)
        np.testing.assert_array_equal(np.asarray(sc), np.asarray(fori))


def test_seed_is_the_reporters_program():
    # Program i writes block i: steps * sum(X_i) + sum(j); blocks differ (the old port wrote one [128, D] tile).
    x = np.zeros((1, 256, 4), np.float32)
    x[0, :128] = 1.0
    fn, _ = kernels.build(KernelVariant("seed", "fori", T=256, D=4, batch=1, dtype="float32"), interpret=True)
    out = np.asarray(fn(x))
    steps = 256 // 64
    assert out.shape == (1, 256, 4)
    np.testing.assert_allclose(out[0, :128], steps * 512.0 + 6.0)
    np.testing.assert_allclose(out[0, 128:], 6.0)


def test_reporters_fp16_carry_is_available():
    variant = KernelVariant("seed", "fori", T=256, D=4, batch=1, dtype="float16", carry_dtype="input")
    fn, _ = kernels.build_xla(variant)
    arrays = tuple(np.asarray(a) for a in inputs.make_inputs(variant))
    out = fn(*arrays)
    assert out.dtype == np.float16
    reference.check_close(variant, out, arrays)
