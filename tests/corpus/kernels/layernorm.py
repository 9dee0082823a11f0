"""A two-pass LayerNorm over long rows: the mean, then the variance around it (two loops, each
a per-row scalar carry), then one pass writing the normalised blocks."""

from __future__ import annotations

import jax.numpy as jnp
from jax.experimental import pallas as pl

import jaxperf

from ._rows import LANES, row_call


def layernorm_kernel(x_ref, o_ref, *, form):
    steps, n = x_ref.shape[1] // LANES, x_ref.shape[1]
    zeros = jnp.zeros((x_ref.shape[0], 1), jnp.float32)

    def block(k):
        return x_ref[:, pl.ds(k * LANES, LANES)]

    mean = (
        jaxperf.kernel_loop(0, steps, lambda k, s: s + block(k).sum(axis=1, keepdims=True), zeros, form=form)
        / n
    )

    def var_step(k, s):
        d = block(k) - mean
        return s + (d * d).sum(axis=1, keepdims=True)

    inv = 1.0 / jnp.sqrt(jaxperf.kernel_loop(0, steps, var_step, zeros, form=form) / n + 1e-5)

    def write(k, c):
        o_ref[:, pl.ds(k * LANES, LANES)] = (block(k) - mean) * inv
        return c

    jaxperf.kernel_loop(0, steps, write, 0, form=form)


def _reference(x):
    mean = x.mean(axis=1, keepdims=True)
    return (x - mean) / jnp.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5)


make = row_call(layernorm_kernel, lambda T: T)
make.reference = _reference
