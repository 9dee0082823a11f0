"""A jax.jit step with donate_argnums=(0, 1): parameters and optimiser state donated."""

import functools

import jax
import optax

from . import _mlp
from ._data import regression

EXPECT = "equal"


def make():
    params = _mlp.init()
    optimizer = optax.adamw(1e-3)
    opt_state = optimizer.init(params)

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def train_step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(_mlp.loss)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    x, y = next(regression())
    return {"step": train_step, "args": (params, opt_state, x, y)}
