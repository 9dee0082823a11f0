"""Row-wise logsumexp with an online maximum: the carry is two per-row scalars (max, sum)."""

from __future__ import annotations

import jax.numpy as jnp
from jax.experimental import pallas as pl

import jaxperf

from ._rows import LANES, row_call


def logsumexp_kernel(x_ref, o_ref, *, form):
    rows = x_ref.shape[0]

    def body(k, carry):
        m, s = carry
        x = x_ref[:, pl.ds(k * LANES, LANES)]
        m_new = jnp.maximum(m, x.max(axis=1, keepdims=True))
        return m_new, s * jnp.exp(m - m_new) + jnp.exp(x - m_new).sum(axis=1, keepdims=True)

    init = (jnp.full((rows, 1), -jnp.inf, jnp.float32), jnp.zeros((rows, 1), jnp.float32))
    m, s = jaxperf.kernel_loop(0, x_ref.shape[1] // LANES, body, init, form=form)
    o_ref[...] = jnp.broadcast_to(m + jnp.log(s), o_ref.shape)


make = row_call(logsumexp_kernel, lambda T: LANES)
make.reference = lambda x: jnp.broadcast_to(
    jnp.log(jnp.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)) + x.max(1, keepdims=True),
    (x.shape[0], LANES),
)
