"""A dynamic trip count: the loop runs as many column blocks as a scalar input says (read
from scalar memory at run time), so no compiler can know its steps. ``python`` cannot run it
(its bounds are traced), so the factory offers only looping forms."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

import jaxperf

from ._rows import CHECK_M, LANES, ROWS, M, check_T


def dynamic_kernel(n_ref, x_ref, o_ref, *, form):
    def body(k, acc):
        return acc + x_ref[:, pl.ds(k * LANES, LANES)]

    o_ref[...] = jaxperf.kernel_loop(0, n_ref[0], body, jnp.zeros(o_ref.shape), form=form)


def make(form, T, *, interpret=False):
    check_T(T)
    m = CHECK_M if interpret else M

    def fn(x):
        n = jnp.full((1,), T // LANES, jnp.int32)
        return pl.pallas_call(
            functools.partial(dynamic_kernel, form=form),
            out_shape=jax.ShapeDtypeStruct((m, LANES), x.dtype),
            grid=(m // ROWS,),
            in_specs=[
                pl.BlockSpec(memory_space=pltpu.SMEM),
                pl.BlockSpec((ROWS, T), lambda i: (i, 0)),
            ],
            out_specs=pl.BlockSpec((ROWS, LANES), lambda i: (i, 0)),
            interpret=interpret,
        )(n, x)

    return jax.jit(fn), (jax.ShapeDtypeStruct((m, T), jnp.float32),)


make.forms = ("fori", "hand_unrolled")
make.reference = lambda x: x.reshape(x.shape[0], -1, LANES).sum(axis=1)
