"""Row softmax over long rows in two passes: the first carries a running maximum and a running sum
per row (two per-row scalars, rescaled at every block, as online softmax does), the second writes
exp(x - max) / sum block by block."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import jaxperf

from ._rows import LANES, row_call


def softmax_kernel(x_ref, o_ref, *, form):
    steps = x_ref.shape[1] // LANES
    rows = x_ref.shape[0]

    def stats(k, carry):
        m, s = carry
        x = x_ref[:, pl.ds(k * LANES, LANES)]
        m_new = jnp.maximum(m, jnp.max(x, axis=1, keepdims=True))
        return m_new, s * jnp.exp(m - m_new) + jnp.sum(jnp.exp(x - m_new), axis=1, keepdims=True)

    start = (jnp.full((rows, 1), -jnp.inf, jnp.float32), jnp.zeros((rows, 1), jnp.float32))
    m, s = jaxperf.kernel_loop(0, steps, stats, start, form=form)

    def write(k, carry):
        o_ref[:, pl.ds(k * LANES, LANES)] = jnp.exp(x_ref[:, pl.ds(k * LANES, LANES)] - m) / s
        return carry

    jaxperf.kernel_loop(0, steps, write, 0, form=form)


make = row_call(softmax_kernel, lambda T: T)
make.reference = lambda x: jax.nn.softmax(x, axis=1)
