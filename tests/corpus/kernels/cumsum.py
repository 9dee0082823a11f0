"""A scan: the running sum along each row, block by block (carry: the per-row total so far)."""

from __future__ import annotations

import jax.numpy as jnp
from jax.experimental import pallas as pl

import jaxperf

from ._rows import LANES, row_call


def cumsum_kernel(x_ref, o_ref, *, form):
    def body(k, total):
        x = x_ref[:, pl.ds(k * LANES, LANES)]
        o_ref[:, pl.ds(k * LANES, LANES)] = jnp.cumsum(x, axis=1) + total
        return total + x.sum(axis=1, keepdims=True)

    jaxperf.kernel_loop(0, x_ref.shape[1] // LANES, body, jnp.zeros((x_ref.shape[0], 1)), form=form)


make = row_call(cumsum_kernel, lambda T: T)
make.reference = lambda x: jnp.cumsum(x, axis=1)
