"""A flash-attention forward pass, as Pallas' attention op (``jax.experimental.pallas.ops``) writes
one: a grid over (batch, heads, query blocks); each program keeps its ``[block_q, d]`` queries and
walks the keys and values in ``block_k`` blocks with an online softmax (running max ``m``,
normaliser ``l``, accumulator ``o``): real work per step. ``T`` is the key sequence's length."""

from __future__ import annotations

import functools
import math
from typing import Any

import jaxperf
from jaxperf.errors import bad_value, check_int

BLOCK_Q, BLOCK_K, HEAD_DIM = 128, 64, 64
BATCH, HEADS = 2, 4  # when compiled; one (batch, head, query block) program when checked
SEQ_Q = 256


def flash_attention_kernel(
    q_ref: Any, k_ref: Any, v_ref: Any, o_ref: Any, *, block_k: int, form: str
) -> None:
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    q = q_ref[...] * (1.0 / math.sqrt(q_ref.shape[-1]))
    rows = q.shape[0]

    def body(j: Any, carry: Any) -> Any:
        m, l, o = carry
        k = k_ref[pl.ds(j * block_k, block_k), :]
        v = v_ref[pl.ds(j * block_k, block_k), :]
        s = jnp.dot(q, k.T, preferred_element_type=jnp.float32)
        m_new = jnp.maximum(m, s.max(axis=1, keepdims=True))
        alpha = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new)
        l = l * alpha + p.sum(axis=1, keepdims=True)
        o = o * alpha + jnp.dot(p.astype(v.dtype), v, preferred_element_type=jnp.float32)
        return m_new, l, o

    init = (
        jnp.full((rows, 1), -jnp.inf, jnp.float32),
        jnp.zeros((rows, 1), jnp.float32),
        jnp.zeros((rows, q.shape[1]), jnp.float32),
    )
    _, l, o = jaxperf.kernel_loop(0, k_ref.shape[0] // block_k, body, init, form=form)
    o_ref[...] = (o / l).astype(o_ref.dtype)


def flash_attention(
    q: Any,
    k: Any,
    v: Any,
    *,
    form: str = "fori",
    block_q: int = BLOCK_Q,
    block_k: int = BLOCK_K,
    interpret: bool = False,
) -> Any:
    """``softmax(q k^T / sqrt(d)) v`` for ``q [batch, heads, seq_q, d]``, ``k, v [batch, heads, seq_k, d]``."""
    import jax
    from jax.experimental import pallas as pl

    batch, heads, seq_q, d = q.shape
    seq_k = k.shape[2]
    kv_spec = pl.BlockSpec((None, None, seq_k, d), lambda b, h, i: (b, h, 0, 0))
    return pl.pallas_call(
        functools.partial(flash_attention_kernel, block_k=block_k, form=form),
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(batch, heads, seq_q // block_q),
        in_specs=[pl.BlockSpec((None, None, block_q, d), lambda b, h, i: (b, h, i, 0)), kv_spec, kv_spec],
        out_specs=pl.BlockSpec((None, None, block_q, d), lambda b, h, i: (b, h, i, 0)),
        interpret=interpret,
    )(q, k, v)


def make(form: str, T: int, *, interpret: bool = False) -> tuple[Any, tuple[Any, ...]]:
    """Flash attention over ``T`` keys (``T / 64`` loop steps) in loop ``form``; inputs as
    bfloat16 ShapeDtypeStructs. ``interpret=True``: one program's worth, for checking.
    ValueError for a T the 64-row key blocks cannot tile."""
    import jax
    import jax.numpy as jnp

    check_int("T", T, minimum=BLOCK_K)
    if T % BLOCK_K:
        raise bad_value("T", T, f"a multiple of the key block, {BLOCK_K}")
    batch, heads, seq_q = (1, 1, BLOCK_Q) if interpret else (BATCH, HEADS, SEQ_Q)
    q = jax.ShapeDtypeStruct((batch, heads, seq_q, HEAD_DIM), jnp.bfloat16)
    kv = jax.ShapeDtypeStruct((batch, heads, T, HEAD_DIM), jnp.bfloat16)
    return jax.jit(functools.partial(flash_attention, form=form, interpret=interpret)), (q, kv, kv)
