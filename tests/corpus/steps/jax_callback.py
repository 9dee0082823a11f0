"""A jax.jit step that logs through jax.debug.callback (a host function per call)."""

import jax
import optax

from . import _mlp
from ._data import regression

EXPECT = "equal"
LOG = []


def make():
    params = _mlp.init()
    optimizer = optax.sgd(1e-2)
    opt_state = optimizer.init(params)

    @jax.jit
    def train_step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(_mlp.loss)(params, x, y)
        jax.debug.callback(lambda v: LOG.append(float(v)), loss)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return loss, optax.apply_updates(params, updates), opt_state

    x, y = next(regression())
    return {"step": train_step, "args": (params, opt_state, x, y)}
