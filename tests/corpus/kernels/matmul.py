"""Blocked matmuls with a k-loop, as Pallas' matmul guide writes one, at several block shapes and
dtypes: float32 with 128-wide blocks, bfloat16 inputs with a float32 accumulator (128 and
64-deep k blocks). ``T`` is K; the loop runs ``K / bk`` steps."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import jaxperf
from jaxperf.errors import bad_value

N = 256  # output [N, N]: a 2 x 2 grid at bm = bn = 128


def matmul_kernel(x_ref, y_ref, z_ref, *, bk, form):
    def body(k, acc):
        x = x_ref[:, pl.ds(k * bk, bk)]
        y = y_ref[pl.ds(k * bk, bk), :]
        return acc + jnp.dot(x, y, preferred_element_type=jnp.float32)

    acc = jaxperf.kernel_loop(0, x_ref.shape[1] // bk, body, jnp.zeros(z_ref.shape, jnp.float32), form=form)
    z_ref[...] = acc.astype(z_ref.dtype)


def _factory(dtype, bm, bk):
    def make(form, T, *, interpret=False):
        if not isinstance(T, int) or T < bk or T % bk:
            raise bad_value("T", T, f"a multiple of the k block, {bk}")
        n = bm if interpret else N

        def fn(x, y):
            return pl.pallas_call(
                functools.partial(matmul_kernel, bk=bk, form=form),
                out_shape=jax.ShapeDtypeStruct((n, n), jnp.float32),
                grid=(n // bm, n // bm),
                in_specs=[
                    pl.BlockSpec((bm, T), lambda i, j: (i, 0)),
                    pl.BlockSpec((T, bm), lambda i, j: (0, j)),
                ],
                out_specs=pl.BlockSpec((bm, bm), lambda i, j: (i, j)),
                interpret=interpret,
            )(x, y)

        return jax.jit(fn), (jax.ShapeDtypeStruct((n, T), dtype), jax.ShapeDtypeStruct((T, n), dtype))

    make.reference = lambda x, y: jnp.dot(x, y, preferred_element_type=jnp.float32)
    return make


f32_128 = _factory(jnp.float32, 128, 128)
bf16_128 = _factory(jnp.bfloat16, 128, 128)
bf16_k64 = _factory(jnp.bfloat16, 128, 64)
make = bf16_128
