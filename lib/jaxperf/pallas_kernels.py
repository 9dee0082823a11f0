"""The two kernels of the Pallas loop study (jax-ml/jax#20909), in every loop form.

``seed``
    The issue's kernel, ported to today's Pallas (``pl.load`` is gone: refs
    are indexed with ``pl.ds``). One program per batch element walks its
    ``[T, D]`` input in ``T // block_rows`` steps (the seed: 64-row steps),
    adding ``X_j.sum() + j`` to an ``[out_rows, D]`` carry (the seed: 128
    rows). The step never reads the carry, so a compiler may turn the loop
    into one reduction and hoist the broadcast: it reproduces the issue, but
    cannot by itself say which loop form runs faster.
``attention``
    An online-softmax attention accumulation: ``out_rows`` queries against
    ``T`` keys/values, one ``block_rows`` key block per step, carrying the
    running max, the normaliser and the ``[out_rows, D]`` accumulator. Each
    step depends on the step's keys and on the carry, so nothing hoists.

Inputs are ``dtype`` (the seed: float16); the carry and the output are
float32 (the seed's sum of ``j`` alone overflows float16 at large ``T``).

:func:`build` wraps a ``pallas_call``; :func:`build_xla` is the same math in
plain ``jax.jit`` (the loop question on XLA:CPU, cf. jax-ml/jax#402);
:func:`reference` is the float64 NumPy answer both are checked against.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import bad_value, check_choice, check_int
from .loops import LOOP_FORMS, check_unroll, run_loop

KERNELS = ("seed", "attention")
LOOP_FORMS = LOOP_FORMS  # re-exported: the interface other studies import from here
# How the pallas_call is compiled: "default" lets Pallas pick for the platform
# (Triton on GPU, Mosaic on TPU); the others force a compiler's parameters.
LOWERINGS = ("default", "triton", "mosaic_gpu", "mosaic_tpu")
DTYPES = ("float16", "bfloat16", "float32")
SEED_OUT_ROWS = 128  # the seed's [128, D] carry
SEED_BLOCK_ROWS = 64  # the seed's 64-row steps: T / 64 of them


def _check_dtype(dtype: Any) -> np.dtype:
    import jax.numpy as jnp

    try:
        name = jnp.dtype(dtype).name
    except TypeError:
        name = str(dtype)
    check_choice("dtype", name, DTYPES)
    return jnp.dtype(name)


def check_params(
    kernel: str,
    loop_form: str,
    unroll: int,
    *,
    T: int,
    D: int,
    batch: int,
    dtype: Any,
    block_rows: int,
    out_rows: int = SEED_OUT_ROWS,
) -> np.dtype:
    """Validate a variant; raise ValueError naming the parameter, value and what is allowed."""
    check_choice("kernel", kernel, KERNELS)
    check_choice("loop_form", loop_form, LOOP_FORMS)
    check_unroll(unroll)
    if loop_form == "python" and unroll != 1:
        raise bad_value("unroll", unroll, "1 for loop_form='python' (a Python loop is fully unrolled)")
    for name, value in (
        ("T", T),
        ("D", D),
        ("batch", batch),
        ("block_rows", block_rows),
        ("out_rows", out_rows),
    ):
        check_int(name, value, minimum=1)
    if T % block_rows:
        raise bad_value("T", T, f"a multiple of block_rows={block_rows}")
    return _check_dtype(dtype)


def trip_count(T: int, block_rows: int) -> int:
    return T // block_rows


def input_shapes(
    kernel: str, *, T: int, D: int, batch: int, out_rows: int = SEED_OUT_ROWS
) -> tuple[tuple[int, ...], ...]:
    check_choice("kernel", kernel, KERNELS)
    if kernel == "seed":
        return ((batch, T, D),)
    return ((batch, out_rows, D), (batch, T, D), (batch, T, D))  # q, k, v


def example_args(
    kernel: str,
    *,
    T: int,
    D: int,
    batch: int,
    dtype: Any,
    block_rows: int,
    out_rows: int = SEED_OUT_ROWS,
) -> tuple[Any, ...]:
    """``jax.ShapeDtypeStruct`` for each input (enough to lower or export)."""
    import jax

    dtype = check_params(
        kernel, "fori", 1, T=T, D=D, batch=batch, dtype=dtype, block_rows=block_rows, out_rows=out_rows
    )
    return tuple(
        jax.ShapeDtypeStruct(s, dtype) for s in input_shapes(kernel, T=T, D=D, batch=batch, out_rows=out_rows)
    )


def make_inputs(
    kernel: str,
    seed: int = 0,
    *,
    T: int,
    D: int,
    batch: int,
    dtype: Any,
    out_rows: int = SEED_OUT_ROWS,
) -> tuple[Any, ...]:
    """Standard-normal inputs in ``dtype``, made on the default device with
    ``jax.random`` (at the seed's sizes, B=512 x T=65536 x D=64, they would
    not fit a host-side float32 copy comfortably)."""
    import jax

    dtype = _check_dtype(dtype)
    keys = jax.random.split(jax.random.key(seed), 3)
    shapes = input_shapes(kernel, T=T, D=D, batch=batch, out_rows=out_rows)
    return tuple(jax.random.normal(k, s, dtype) for k, s in zip(keys, shapes))


# --- the loop bodies, written once for refs (Pallas) and arrays (plain jit) ---


def _seed(load: Callable, x, *, T: int, D: int, block_rows: int, out_rows: int, loop_form: str, unroll: int):
    import jax.numpy as jnp
    from jax import lax

    def body(j, acc):
        x_j = load(x, j * block_rows, block_rows).astype(jnp.float32)
        return acc + (jnp.sum(x_j) + lax.convert_element_type(j, jnp.float32))

    init = jnp.zeros((out_rows, D), jnp.float32)
    return run_loop(loop_form, 0, trip_count(T, block_rows), body, init, unroll)


def _attention(
    load: Callable, q, k, v, *, T: int, D: int, block_rows: int, out_rows: int, loop_form: str, unroll: int
):
    import jax.numpy as jnp
    from jax import lax

    precision = "highest" if q.dtype == jnp.float32 else None
    q = q * jnp.asarray(1.0 / math.sqrt(D), q.dtype)

    def body(j, carry):
        m, l, acc = carry
        k_j = load(k, j * block_rows, block_rows)
        v_j = load(v, j * block_rows, block_rows)
        # q @ k_j.T as one dot_general: Mosaic GPU has no lowering for a transpose.
        s = lax.dot_general(
            q, k_j, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32, precision=precision
        )
        m_new = jnp.maximum(m, jnp.max(s, axis=1, keepdims=True))
        alpha = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new)
        l = l * alpha + jnp.sum(p, axis=1, keepdims=True)
        pv = jnp.dot(p.astype(v_j.dtype), v_j, preferred_element_type=jnp.float32, precision=precision)
        return m_new, l, acc * alpha + pv

    init = (
        jnp.full((out_rows, 1), -jnp.inf, jnp.float32),
        jnp.zeros((out_rows, 1), jnp.float32),
        jnp.zeros((out_rows, D), jnp.float32),
    )
    _, l, acc = run_loop(loop_form, 0, trip_count(T, block_rows), body, init, unroll)
    return acc / l


_BODIES = {"seed": _seed, "attention": _attention}


def _load_ref(ref, start, size):
    from jax.experimental import pallas as pl

    return ref[pl.ds(start, size), :]


def _load_array(array, start, size):
    from jax import lax

    return lax.dynamic_slice_in_dim(array, start, size, axis=0)


def _compiler_params(lowering: str):
    if lowering == "triton":
        from jax.experimental.pallas import triton as pltriton

        return pltriton.CompilerParams()
    if lowering == "mosaic_gpu":
        from jax.experimental.pallas import mosaic_gpu as plgpu

        return plgpu.CompilerParams()
    if lowering == "mosaic_tpu":
        from jax.experimental.pallas import tpu as pltpu

        return pltpu.CompilerParams()
    return None


def build(
    kernel: str,
    loop_form: str,
    unroll: int,
    *,
    T: int,
    D: int,
    batch: int,
    dtype: Any,
    block_rows: int,
    interpret: bool,
    out_rows: int = SEED_OUT_ROWS,
    lowering: str = "default",
) -> tuple[Callable, tuple]:
    """A jitted function wrapping the ``pallas_call``, and ShapeDtypeStructs of its inputs.

    The grid has one program per batch element; each holds its whole ``[T, D]``
    rows and loops ``T // block_rows`` times in ``loop_form`` (``unroll``
    copies per iteration; must be 1 for ``python``). ``interpret=True`` runs
    Pallas' interpreter (any machine, interpreter timings); ``lowering``
    forces a compiler (see LOWERINGS). Output: float32 ``[batch, out_rows, D]``.
    Raises ValueError for an unknown kernel, loop form, dtype or lowering,
    ``unroll < 1``, or ``T`` not a multiple of ``block_rows``.
    """
    import jax
    from jax.experimental import pallas as pl

    check_params(
        kernel,
        loop_form,
        unroll,
        T=T,
        D=D,
        batch=batch,
        dtype=dtype,
        block_rows=block_rows,
        out_rows=out_rows,
    )
    check_choice("lowering", lowering, LOWERINGS)
    if not isinstance(interpret, bool):
        raise bad_value("interpret", interpret, "True or False")
    args = example_args(kernel, T=T, D=D, batch=batch, dtype=dtype, block_rows=block_rows, out_rows=out_rows)
    body = _BODIES[kernel]
    static = dict(T=T, D=D, block_rows=block_rows, out_rows=out_rows, loop_form=loop_form, unroll=unroll)

    def kernel_fn(*refs):
        *in_refs, o_ref = refs
        if kernel == "attention":
            q_ref, k_ref, v_ref = in_refs
            o_ref[...] = body(_load_ref, q_ref[...], k_ref, v_ref, **static)
        else:
            o_ref[...] = body(_load_ref, in_refs[0], **static)

    in_specs = [pl.BlockSpec((None, *a.shape[1:]), lambda b: (b, 0, 0)) for a in args]
    out_shape = jax.ShapeDtypeStruct((batch, out_rows, D), jax.numpy.float32)
    out_specs = pl.BlockSpec((None, out_rows, D), lambda b: (b, 0, 0))
    if lowering == "mosaic_gpu" and not interpret:
        # jax 0.12's pl.pallas_call has no Mosaic GPU lowering rule (a bare
        # AssertionError); JAX's own pallas_call shim for Mosaic GPU (a private
        # module, built on plgpu.kernel and emit_pipeline) runs the same kernel body.
        from jax._src.pallas.mosaic_gpu.pallas_call import pallas_call as mosaic_gpu_pallas_call

        call = mosaic_gpu_pallas_call(
            kernel_fn,
            out_shape,
            grid=(batch,),
            in_specs=in_specs,
            out_specs=out_specs,
            compiler_params=_compiler_params(lowering),
        )
    else:
        call = pl.pallas_call(
            kernel_fn,
            out_shape=out_shape,
            grid=(batch,),
            in_specs=in_specs,
            out_specs=out_specs,
            interpret=interpret,
            compiler_params=_compiler_params(lowering),
            name=f"{kernel}_{loop_form}_u{unroll}",
        )
    return jax.jit(call), args


def build_xla(
    kernel: str,
    loop_form: str,
    unroll: int,
    *,
    T: int,
    D: int,
    batch: int,
    dtype: Any,
    block_rows: int,
    out_rows: int = SEED_OUT_ROWS,
) -> tuple[Callable, tuple]:
    """The same kernel math and loop form in plain ``jax.jit`` (vmapped over batch)."""
    import jax

    check_params(
        kernel,
        loop_form,
        unroll,
        T=T,
        D=D,
        batch=batch,
        dtype=dtype,
        block_rows=block_rows,
        out_rows=out_rows,
    )
    args = example_args(kernel, T=T, D=D, batch=batch, dtype=dtype, block_rows=block_rows, out_rows=out_rows)
    body = _BODIES[kernel]
    static = dict(T=T, D=D, block_rows=block_rows, out_rows=out_rows, loop_form=loop_form, unroll=unroll)

    def one(*inputs):
        if kernel == "attention":
            q, k, v = inputs
            return body(_load_array, q, k, v, **static)
        return body(_load_array, inputs[0], **static)

    return jax.jit(jax.vmap(one)), args


def reference(
    kernel: str, inputs: tuple[Any, ...], *, block_rows: int, out_rows: int = SEED_OUT_ROWS
) -> np.ndarray:
    """The kernel's answer in float64 NumPy, from the (dtype-rounded) inputs."""
    check_choice("kernel", kernel, KERNELS)
    if kernel == "seed":
        (x,) = inputs
        x = np.asarray(x, np.float64)
        batch, T, D = x.shape
        steps = trip_count(T, block_rows)
        total = x.reshape(batch, -1).sum(axis=1) + steps * (steps - 1) / 2.0
        return np.broadcast_to(total[:, None, None], (batch, out_rows, D)).copy()
    q, k, v = (np.asarray(a, np.float64) for a in inputs)
    s = np.einsum("bqd,bkd->bqk", q, k) / math.sqrt(q.shape[-1])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.einsum("bqk,bkd->bqd", p / p.sum(axis=-1, keepdims=True), v)


def tolerance(
    kernel: str, inputs: tuple[np.ndarray, ...], *, block_rows: int, out_rows: int = SEED_OUT_ROWS
) -> np.ndarray:
    """Elementwise absolute tolerance that allows for any summation order.

    seed: float32 recursive summation of n terms errs by at most about
    ``n * eps * sum|terms|``; with ``T // block_rows`` sequential adds of
    block sums (each a tree of ``block_rows * D`` terms) that gives
    ``(steps + log2(block) + 4) * eps32 * (sum|x| + sum j)``.
    attention: the probabilities are rounded to the input dtype before
    ``p @ v`` (as in flash attention), so the bound is relative to that
    dtype: ``16 * eps(dtype) * max|v|`` plus the float32 part.
    """
    eps32 = float(np.finfo(np.float32).eps)
    if kernel == "seed":
        (x,) = inputs
        x = np.asarray(x, np.float64)
        batch, T, D = x.shape
        steps = trip_count(T, block_rows)
        scale = np.abs(x).reshape(batch, -1).sum(axis=1) + steps * (steps - 1) / 2.0
        factor = (steps + math.log2(block_rows * D) + 4) * eps32
        return np.broadcast_to((factor * scale + 1e-6)[:, None, None], (batch, out_rows, D)).copy()
    check_choice("kernel", kernel, KERNELS)
    q, k, v = inputs
    eps = 2.0**-8 if str(v.dtype) == "bfloat16" else float(np.finfo(v.dtype).eps)  # np.finfo lacks bfloat16
    vmax = np.abs(np.asarray(v, np.float64)).max(axis=(1, 2))[:, None, None]
    steps = trip_count(k.shape[1], block_rows)
    bound = (16 * eps + (steps + 64) * eps32) * vmax
    return np.broadcast_to(bound, (q.shape[0], out_rows, q.shape[2])).copy()


def check_close(
    kernel: str,
    out: Any,
    inputs: tuple[Any, ...],
    *,
    block_rows: int,
    out_rows: int = SEED_OUT_ROWS,
    max_batch: int | None = None,
) -> float:
    """Raise AssertionError unless ``out`` matches the float64 reference; return the worst error/tolerance.

    ``max_batch`` checks only the first batch elements (the attention
    reference holds a float64 [batch, out_rows, T] score array).
    """
    if max_batch is not None:
        out, inputs = out[:max_batch], tuple(a[:max_batch] for a in inputs)
    inputs = tuple(np.asarray(a) for a in inputs)
    want = reference(kernel, inputs, block_rows=block_rows, out_rows=out_rows)
    tol = tolerance(kernel, inputs, block_rows=block_rows, out_rows=out_rows)
    got = np.asarray(out, np.float64)
    if got.shape != want.shape:
        raise AssertionError(f"{kernel}: output shape {got.shape}, expected {want.shape}")
    err = np.abs(got - want)
    ratio = float(np.max(err / tol)) if err.size else 0.0
    if not np.all(np.isfinite(got)) or not ratio <= 1.0:
        worst = np.unravel_index(int(np.nanargmax(err / tol)), err.shape) if err.size else ()
        raise AssertionError(
            f"{kernel}: output differs from the float64 reference by {ratio:.3g}x the tolerance "
            f"(worst at {worst}: got {got[worst]!r}, want {want[worst]!r}, tol {tol[worst]!r})"
        )
    return ratio
