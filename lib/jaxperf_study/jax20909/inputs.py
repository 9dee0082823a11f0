"""Inputs of the jax#20909 kernels: shapes, ShapeDtypeStructs (to lower or export), random arrays."""

from __future__ import annotations

from typing import Any

from .variant import KernelVariant


def input_shapes(variant: KernelVariant) -> tuple[tuple[int, ...], ...]:
    """Shapes of the kernel's inputs: ``x [batch, T, D]``, or ``q, k, v`` for attention."""
    v = variant
    if v.kernel == "attention":
        return ((v.batch, v.out_rows, v.D), (v.batch, v.T, v.D), (v.batch, v.T, v.D))
    return ((v.batch, v.T, v.D),)


def output_shape(variant: KernelVariant) -> tuple[int, int, int]:
    """``[batch, T, D]`` for seed and data_carry (block i written by program i), else ``[batch, out_rows, D]``."""
    v = variant
    return (v.batch, v.T, v.D) if v.row_block else (v.batch, v.out_rows, v.D)


def example_args(variant: KernelVariant) -> tuple[Any, ...]:
    """``jax.ShapeDtypeStruct`` for each input (enough to lower or export)."""
    import jax
    import jax.numpy as jnp

    dtype = jnp.dtype(variant.dtype)
    return tuple(jax.ShapeDtypeStruct(s, dtype) for s in input_shapes(variant))


def make_inputs(variant: KernelVariant, rng_seed: int = 0) -> tuple[Any, ...]:
    """Standard-normal inputs in the variant's dtype, made with ``jax.random``; on a TPU by NumPy
    on the host (XLA:TPU compiles a random-number program for seconds per shape)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    dtype = jnp.dtype(variant.dtype)
    if jax.default_backend() == "tpu":
        rng = np.random.default_rng(rng_seed)
        return tuple(jnp.asarray(rng.standard_normal(s, np.float32), dtype) for s in input_shapes(variant))
    keys = jax.random.split(jax.random.key(rng_seed), 3)
    return tuple(jax.random.normal(k, s, dtype) for k, s in zip(keys, input_shapes(variant)))
