"""A jax.jit step donating by name (donate_argnames), with optax.chain (clipping, then adam)."""

import functools

import jax
import optax

from . import _mlp
from ._data import regression

EXPECT = "equal"


def make():
    params = _mlp.init()
    optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))
    opt_state = optimizer.init(params)

    @functools.partial(jax.jit, donate_argnames=("params", "opt_state"))
    def update(params, opt_state, batch):
        grads = jax.grad(_mlp.loss)(params, *batch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    loader = regression()
    return {"step": update, "args": (params, opt_state, next(loader)), "loader": loader}
