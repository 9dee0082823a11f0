"""Inputs of the jax#20909 kernels: shapes, ShapeDtypeStructs (to lower or export), random arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxperf.errors import check_choice

from .vocab import DTYPES, KERNELS, ROW_BLOCK_KERNELS, SEED_OUT_ROWS


def check_dtype(dtype: Any) -> np.dtype:
    """``dtype`` as a NumPy dtype; raise ValueError unless it is one of :data:`DTYPES`."""
    import jax.numpy as jnp

    try:
        name = jnp.dtype(dtype).name
    except TypeError:
        name = str(dtype)
    check_choice("dtype", name, DTYPES)
    return jnp.dtype(name)


def input_shapes(
    kernel: str, *, T: int, D: int, batch: int, out_rows: int = SEED_OUT_ROWS
) -> tuple[tuple[int, ...], ...]:
    """Shapes of the kernel's inputs: ``x [batch, T, D]``, or ``q, k, v`` for attention."""
    check_choice("kernel", kernel, KERNELS)
    if kernel == "attention":
        return ((batch, out_rows, D), (batch, T, D), (batch, T, D))
    return ((batch, T, D),)


def output_shape(
    kernel: str, *, T: int, D: int, batch: int, out_rows: int = SEED_OUT_ROWS
) -> tuple[int, int, int]:
    """``[batch, T, D]`` for seed and data_carry (block i written by program i), else ``[batch, out_rows, D]``."""
    check_choice("kernel", kernel, KERNELS)
    return (batch, T, D) if kernel in ROW_BLOCK_KERNELS else (batch, out_rows, D)


def example_args(
    kernel: str, *, T: int, D: int, batch: int, dtype: Any, out_rows: int = SEED_OUT_ROWS
) -> tuple[Any, ...]:
    """``jax.ShapeDtypeStruct`` for each input (enough to lower or export)."""
    import jax

    dtype = check_dtype(dtype)
    return tuple(
        jax.ShapeDtypeStruct(s, dtype) for s in input_shapes(kernel, T=T, D=D, batch=batch, out_rows=out_rows)
    )


def make_inputs(
    kernel: str, rng_seed: int = 0, *, T: int, D: int, batch: int, dtype: Any, out_rows: int = SEED_OUT_ROWS
) -> tuple[Any, ...]:
    """Standard-normal inputs in ``dtype``, made on the default device with ``jax.random``."""
    import jax

    dtype = check_dtype(dtype)
    keys = jax.random.split(jax.random.key(rng_seed), 3)
    shapes = input_shapes(kernel, T=T, D=D, batch=batch, out_rows=out_rows)
    return tuple(jax.random.normal(k, s, dtype) for k, s in zip(keys, shapes))
