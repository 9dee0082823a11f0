"""The log-sum-exp of attention scores over the keys, as a flash-attention backward pass needs it:
each program holds a block of queries and walks the keys in ``BLOCK_K`` blocks, carrying a running
maximum and a running sum per query (written for this test, the way a reader of Pallas' attention
op would; not one the tool was tuned on). ``T`` is the number of keys: ``T / BLOCK_K`` steps."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import jaxperf
from jaxperf.errors import bad_value

BLOCK_Q, BLOCK_K, D, SEQ_Q = 128, 128, 64, 512


def lse_kernel(q_ref, k_ref, o_ref, *, form):
    q = q_ref[...]

    def body(j, carry):
        m, s = carry
        k = k_ref[pl.ds(j * BLOCK_K, BLOCK_K), :]
        scores = jnp.dot(q, k.T, preferred_element_type=jnp.float32)
        m_new = jnp.maximum(m, scores.max(axis=1, keepdims=True))
        return m_new, s * jnp.exp(m - m_new) + jnp.exp(scores - m_new).sum(axis=1, keepdims=True)

    init = (jnp.full((q.shape[0], 1), -jnp.inf, jnp.float32), jnp.zeros((q.shape[0], 1), jnp.float32))
    m, s = jaxperf.kernel_loop(0, k_ref.shape[0] // BLOCK_K, body, init, form=form)
    o_ref[...] = jnp.broadcast_to(m + jnp.log(s), o_ref.shape)


def make(form, T, *, interpret=False):
    if not isinstance(T, int) or T < BLOCK_K or T % BLOCK_K:
        raise bad_value("T", T, f"a multiple of the key block, {BLOCK_K}")
    seq_q = BLOCK_Q if interpret else SEQ_Q

    def fn(q, k):
        return pl.pallas_call(
            functools.partial(lse_kernel, form=form),
            out_shape=jax.ShapeDtypeStruct((seq_q, 128), jnp.float32),
            grid=(seq_q // BLOCK_Q,),
            in_specs=[pl.BlockSpec((BLOCK_Q, D), lambda i: (i, 0)), pl.BlockSpec((T, D), lambda i: (0, 0))],
            out_specs=pl.BlockSpec((BLOCK_Q, 128), lambda i: (i, 0)),
            interpret=interpret,
        )(q, k)

    return jax.jit(fn), (
        jax.ShapeDtypeStruct((seq_q, D), jnp.float32),
        jax.ShapeDtypeStruct((T, D), jnp.float32),
    )


make.reference = lambda q, k: jnp.broadcast_to(
    jax.nn.logsumexp(q @ k.T, axis=1, keepdims=True), (q.shape[0], 128)
)
