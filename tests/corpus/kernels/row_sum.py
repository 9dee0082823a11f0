"""A plain row sum: one per-row scalar carry, one add per column block."""

from __future__ import annotations

import jax.numpy as jnp
from jax.experimental import pallas as pl

import jaxperf

from ._rows import LANES, row_call


def row_sum_kernel(x_ref, o_ref, *, form):
    def body(k, acc):
        return acc + x_ref[:, pl.ds(k * LANES, LANES)].sum(axis=1, keepdims=True)

    total = jaxperf.kernel_loop(0, x_ref.shape[1] // LANES, body, jnp.zeros((x_ref.shape[0], 1)), form=form)
    o_ref[...] = jnp.broadcast_to(total, o_ref.shape)


make = row_call(row_sum_kernel, lambda T: LANES)
make.reference = lambda x: jnp.broadcast_to(x.sum(1, keepdims=True), (x.shape[0], LANES))
