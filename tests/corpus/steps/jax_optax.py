"""optax's quick start: jax.jit step on a pytree of parameters, optax.adam."""

import jax
import optax

from . import _mlp
from ._data import regression

EXPECT = "equal"


def make():
    params = _mlp.init()
    optimizer = optax.adam(1e-3)
    opt_state = optimizer.init(params)

    @jax.jit
    def step(params, opt_state, batch):
        loss_value, grads = jax.value_and_grad(_mlp.loss)(params, *batch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return params, opt_state, loss_value

    loader = regression()
    return {"step": step, "args": (params, opt_state, next(loader)), "loader": loader}
