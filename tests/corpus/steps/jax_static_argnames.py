"""A jax.jit step with a static argument (static_argnames="lr"), the same value every call."""

import functools

import jax

from . import _mlp
from ._data import regression

EXPECT = "equal"


def make():
    @functools.partial(jax.jit, static_argnames="lr")
    def sgd_step(params, x, y, lr):
        grads = jax.grad(_mlp.loss)(params, x, y)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads)

    x, y = next(regression())
    return {"step": sgd_step, "args": (_mlp.init(), x, y, 0.01)}
