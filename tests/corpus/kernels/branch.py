"""A data-dependent branch per step: a block whose maximum is positive is added, any other is
subtracted (``lax.cond`` on loaded data inside the loop)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import jaxperf

from ._rows import LANES, row_call


def branch_kernel(x_ref, o_ref, *, form):
    def body(k, acc):
        x = x_ref[:, pl.ds(k * LANES, LANES)]
        return jax.lax.cond(jnp.max(x) > 0, lambda: acc + x, lambda: acc - x)

    o_ref[...] = jaxperf.kernel_loop(0, x_ref.shape[1] // LANES, body, jnp.zeros(o_ref.shape), form=form)


def _reference(x):
    blocks = x.reshape(x.shape[0] // 8, 8, -1, LANES)  # [programs, rows, steps, lanes]
    sign = jnp.where(blocks.max(axis=(1, 3), keepdims=True) > 0, 1.0, -1.0)
    return (sign * blocks).sum(axis=2).reshape(x.shape[0], LANES)


make = row_call(branch_kernel, lambda T: LANES)
make.reference = _reference
