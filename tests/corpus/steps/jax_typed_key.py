"""A jax.jit step carrying a typed PRNG key (jax.random.key): dropout with a new key per call."""

import jax
import jax.numpy as jnp
import optax

from . import _mlp
from ._data import regression

EXPECT = "equal"


def make():
    params = _mlp.init()
    optimizer = optax.adam(1e-3)
    opt_state = optimizer.init(params)

    def dropout_loss(params, x, y, key):
        keep = jax.random.bernoulli(key, 0.9, x.shape)
        return _mlp.loss(params, jnp.where(keep, x / 0.9, 0.0), y)

    @jax.jit
    def train_step(params, opt_state, key, x, y):
        key, subkey = jax.random.split(key)
        loss, grads = jax.value_and_grad(dropout_loss)(params, x, y, subkey)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, key, loss

    x, y = next(regression())
    return {"step": train_step, "args": (params, opt_state, jax.random.key(0), x, y)}
