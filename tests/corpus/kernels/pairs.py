"""A row sum weighted per program with integer division (``pl.program_id(0) // 2``), the way a
kernel maps a program to a pair of row blocks: Mosaic TPU's ``//`` lowering asks for the TPU's
device kind, so the tool must compile it under a TPU (not this CPU)."""

from __future__ import annotations

import jax.numpy as jnp
from jax.experimental import pallas as pl

import jaxperf

from ._rows import LANES, ROWS, row_call


def pairs_kernel(x_ref, o_ref, *, form):
    weight = (pl.program_id(0) // 2 + 1).astype(jnp.float32)

    def body(k, acc):
        return acc + x_ref[:, pl.ds(k * LANES, LANES)].sum(axis=1, keepdims=True)

    total = jaxperf.kernel_loop(0, x_ref.shape[1] // LANES, body, jnp.zeros((x_ref.shape[0], 1)), form=form)
    o_ref[...] = jnp.broadcast_to(total * weight, o_ref.shape)


def _reference(x):
    weight = (jnp.arange(x.shape[0]) // ROWS // 2 + 1).astype(x.dtype)[:, None]
    return jnp.broadcast_to(x.sum(1, keepdims=True) * weight, (x.shape[0], LANES))


make = row_call(pairs_kernel, lambda T: LANES)
make.reference = _reference
